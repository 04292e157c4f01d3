//! The quickstart binary against `threadline-mock` on loopback (`ANTHROPIC_BASE_URL`): the
//! model calls the typed tool, reads its result and answers; the program prints the answer,
//! the tokens and the cost of that one call.

use serde_json::json;
use threadline_mock::{MockServer, Scenario, Step};

#[tokio::test(flavor = "current_thread")]
async fn the_quickstart_calls_its_typed_tool_and_prints_answer_tokens_and_cost() {
    let mock = MockServer::start(Scenario::new([
        Step::tool_use("weather", json!({"city": "Lyon"})),
        Step::text("It is sunny in Lyon, 21 °C."),
    ]))
    .await
    .expect("mock");
    let base_url = mock.base_url();
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_quickstart"))
            .env("ANTHROPIC_API_KEY", "sk-ant-quickstart-test")
            .env("ANTHROPIC_BASE_URL", base_url)
            .output()
    })
    .await
    .expect("joins")
    .expect("runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "It is sunny in Lyon, 21 °C.", "{stdout}");
    let tokens = lines[1].strip_prefix("tokens: ").expect("a tokens line");
    let (input, output_tokens) = tokens.split_once(" in, ").expect("in and out");
    let input: u64 = input.parse().expect("a count");
    let output_tokens: u64 = output_tokens
        .strip_suffix(" out")
        .and_then(|n| n.parse().ok())
        .expect("a count");
    assert!(input > 0 && output_tokens > 0, "{stdout}");
    let cost: f64 = lines[2]
        .strip_prefix("cost: $")
        .and_then(|c| c.parse().ok())
        .expect("a cost");
    assert!(cost > 0.0, "{stdout}");

    // Two requests: the second carries the typed tool's result for the model.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].body.as_ref().expect("a JSON body").to_string();
    assert!(second.contains("Lyon: sunny, 21 °C"), "{second}");
    let tools = requests[0].body.as_ref().expect("a JSON body")["tools"].clone();
    assert_eq!(tools[0]["name"], "weather");
    assert_eq!(tools[0]["input_schema"]["required"], json!(["city"]));
}

/// The program is the advertised size: at most 30 non-blank lines.
#[test]
fn main_rs_is_at_most_30_non_blank_lines() {
    let source = include_str!("../../src/main.rs");
    let lines = source.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(lines <= 30, "{lines} non-blank lines");
}
