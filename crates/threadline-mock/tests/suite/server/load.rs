//! The load test of a security review: with the default limits, 500 idle connections and
//! 50 oversized uploads in flight (declared, chunked, trickled), a normal request is answered
//! in under a second, the process's memory stays bounded and no refused body is recorded.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use threadline_mock::{MockServer, Scenario, Step};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::server::http::{PATIENCE, chunk, head, message_body, post};

const IDLE_CONNECTIONS: usize = 500;
const OVERSIZED_UPLOADS: usize = 50;
/// Past the default (the API's) 32 MiB limit.
const OVERSIZED_BYTES: usize = 33 * 1024 * 1024;
/// How much the process's peak memory may grow over the test (both the server and the
/// clients are in it). The uploads together send 1.6 GB.
const RSS_GROWTH_BOUND_KB: u64 = 300 * 1024;

/// `VmRSS` or `VmHWM` (peak) of this process, in kB.
fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

/// Raises the soft limit on open files as far as the hard limit allows (the clients' and the
/// server's sockets are all in this process).
pub(crate) fn raise_open_file_limit(wanted: u64) -> u64 {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let hard = limit.maximum.unwrap_or(u64::MAX);
    let soft = limit.current.unwrap_or(u64::MAX);
    if soft >= wanted {
        return soft;
    }
    let raised = wanted.min(hard);
    let _ = setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(raised),
            maximum: limit.maximum,
        },
    );
    getrlimit(Resource::Nofile).current.unwrap_or(raised)
}

/// How an upload sends its oversized body.
#[derive(Clone, Copy)]
enum Upload {
    /// Declared in `content-length`, sent as fast as the server takes it.
    Declared,
    /// Chunked without a length, as fast as the server takes it.
    Chunked,
    /// Chunked, a kilobyte every 20 ms until `release`, then as fast as it can.
    Trickled,
}

/// Sends an oversized body. The server may answer and close at any point: errors are
/// expected and end the upload.
async fn upload(addr: SocketAddr, how: Upload, release: Arc<AtomicBool>) {
    let Ok(mut stream) = TcpStream::connect(addr).await else {
        return;
    };
    let length = matches!(how, Upload::Declared).then_some(OVERSIZED_BYTES);
    if stream
        .write_all(head(length, true).as_bytes())
        .await
        .is_err()
    {
        return;
    }
    let mut sent = 0;
    if let Upload::Trickled = how {
        let piece = chunk(&[b' '; 1024]);
        while !release.load(Ordering::Relaxed) && sent < OVERSIZED_BYTES {
            if stream.write_all(&piece).await.is_err() {
                return;
            }
            sent += 1024;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let piece = vec![b' '; 64 * 1024];
    let framed = if length.is_some() {
        piece.clone()
    } else {
        chunk(&piece)
    };
    while sent < OVERSIZED_BYTES {
        if stream.write_all(&framed).await.is_err() {
            return;
        }
        sent += piece.len();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_normal_request_is_answered_in_under_a_second_while_500_idle_connections_and_50_oversized_uploads_are_in_flight()
 {
    let needed = u64::try_from(2 * (IDLE_CONNECTIONS + OVERSIZED_UPLOADS) + 200).expect("small");
    let open_files = raise_open_file_limit(needed);
    assert!(
        open_files >= needed,
        "this test needs {needed} open files and the hard limit allows {open_files}"
    );
    let server = MockServer::start(Scenario::new([Step::text("Hello!")]).repeating_last())
        .await
        .expect("the mock listens");
    let addr = server.addr();
    let rss_before = status_kb("VmRSS:");

    let mut idle = Vec::with_capacity(IDLE_CONNECTIONS);
    for _ in 0..IDLE_CONNECTIONS {
        idle.push(TcpStream::connect(addr).await.expect("connects"));
    }
    let release = Arc::new(AtomicBool::new(false));
    let kinds = [Upload::Declared, Upload::Chunked, Upload::Trickled];
    let uploads: Vec<_> = (0..OVERSIZED_UPLOADS)
        .map(|i| tokio::spawn(upload(addr, kinds[i % 3], Arc::clone(&release))))
        .collect();
    // Let the uploads get going.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let in_flight = uploads.iter().filter(|u| !u.is_finished()).count();
    assert!(
        in_flight >= OVERSIZED_UPLOADS / 3,
        "only {in_flight} uploads still in flight"
    );

    let started = Instant::now();
    let answer = tokio::time::timeout(PATIENCE, post(addr, &message_body("normal")))
        .await
        .expect("the normal request was not answered at all")
        .expect("the normal request failed");
    let took = started.elapsed();
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(answer.body.contains("Hello!"), "{}", answer.body);
    assert!(
        took < Duration::from_secs(1),
        "a normal request took {took:?} to be answered with {IDLE_CONNECTIONS} idle connections \
         and {OVERSIZED_UPLOADS} oversized uploads in flight (the bound is 1 s)"
    );

    release.store(true, Ordering::Relaxed);
    for upload in uploads {
        tokio::time::timeout(PATIENCE * 4, upload)
            .await
            .expect("an upload hung")
            .expect("an upload panicked");
    }
    let growth = status_kb("VmHWM:").saturating_sub(rss_before);
    eprintln!(
        "normal request answered in {took:?} with {in_flight} uploads in flight; \
         peak memory growth {} MB",
        growth / 1024
    );
    assert!(
        growth < RSS_GROWTH_BOUND_KB,
        "peak memory grew by {} MB (the bound is {} MB)",
        growth / 1024,
        RSS_GROWTH_BOUND_KB / 1024
    );
    let requests = server.requests();
    let refused: Vec<_> = requests.iter().filter(|r| r.status != Some(200)).collect();
    assert!(
        refused.iter().all(|r| r.body.is_none()),
        "a refused body was recorded"
    );
    assert!(
        requests.iter().all(|r| r.body_bytes <= 32 * 1024 * 1024),
        "a body past the limit was read whole"
    );
    let normal: Vec<_> = requests.iter().filter(|r| r.status == Some(200)).collect();
    assert_eq!(normal.len(), 1, "{requests:#?}");
    assert!(normal[0].body.is_some());
    drop(idle);
}
