//! A mock that runs out of file descriptors (the finding: 300 idle sockets against a mock
//! with `ulimit -n 256` starved a normal request). The mock runs in a child process — this
//! test binary again, with its soft `RLIMIT_NOFILE` lowered to 256 — so the limit is real and
//! touches no other test.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use threadline_mock::{MockConfig, MockServer, Scenario, ServerLimits, Step};
use tokio::net::TcpStream;

use crate::server::http::{PATIENCE, message_body, post};
use crate::server::load::raise_open_file_limit;

const CHILD: &str = "THREADLINE_MOCK_TEST_DESCRIPTOR_CHILD";
const TEST: &str = "a_mock_out_of_file_descriptors_closes_idle_connections_to_answer_a_request";
const CHILD_OPEN_FILES: u64 = 256;
const IDLE_CONNECTIONS: usize = 300;

/// [`TEST`]'s name as the harness filters it: its module path below the test binary's root
/// (the same in a binary of its own and as a module of a larger one).
fn harness_name() -> String {
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::{TEST}"),
        None => TEST.to_owned(),
    }
}

/// In the child: the mock with 256 open files and no connection limit below that, so only
/// the descriptors run out; serves until its stdin closes (or a minute passes).
async fn serve_with_few_descriptors() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(CHILD_OPEN_FILES),
            maximum: limit.maximum,
        },
    )
    .expect("the soft limit can be lowered");
    let limits = ServerLimits::default().with_max_connections(10_000);
    let scenario = Scenario::new([Step::text("Hello!")]).repeating_last();
    let server = MockServer::start_with(MockConfig::new(scenario).with_limits(limits))
        .await
        .expect("the mock listens");
    println!("ADDR={}", server.addr());
    // A plain thread, so that the runtime never waits for it.
    let (closed, stdin_closed) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        let _ = closed.send(());
    });
    let _ = tokio::time::timeout(Duration::from_secs(60), stdin_closed).await;
}

#[tokio::test]
async fn a_mock_out_of_file_descriptors_closes_idle_connections_to_answer_a_request() {
    if std::env::var_os(CHILD).is_some() {
        serve_with_few_descriptors().await;
        return;
    }
    let wanted = u64::try_from(IDLE_CONNECTIONS).expect("small") + 100;
    assert!(
        raise_open_file_limit(wanted) >= wanted,
        "this test needs {wanted} open files"
    );
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .arg(harness_name())
        .args(["--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the child starts");
    let stdout = child.stdout.take().expect("piped");
    let addr: SocketAddr = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        // libtest may print the test name on the same line first.
        .find_map(|line| {
            line.split_once("ADDR=")
                .map(|(_, addr)| addr.trim().to_owned())
        })
        .expect("the child prints its address")
        .parse()
        .expect("an address");

    let mut idle = Vec::with_capacity(IDLE_CONNECTIONS);
    for _ in 0..IDLE_CONNECTIONS {
        idle.push(
            TcpStream::connect(addr)
                .await
                .expect("connects (the backlog takes it)"),
        );
    }
    // Let the child run into its limit.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let answer = tokio::time::timeout(PATIENCE, post(addr, &message_body("normal"))).await;
    let took = started.elapsed();
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
    let answer = answer
        .unwrap_or_else(|_| {
            panic!("{IDLE_CONNECTIONS} idle connections starved a request for {PATIENCE:?}")
        })
        .expect("the request was answered");
    assert_eq!(answer.status, 200, "{}", answer.body);
    eprintln!(
        "answered in {took:?} with {IDLE_CONNECTIONS} idle connections and {CHILD_OPEN_FILES} open files"
    );
    drop(idle);
}
