//! The example runs offline and the exporter prints the spans with their GenAI attributes.

use std::process::Command;

#[test]
fn the_stdout_exporter_prints_the_genai_spans() {
    let output = Command::new(env!("CARGO_BIN_EXE_otel-export"))
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status.code()
    );
    for expected in [
        "Name         : chat claude-sonnet-5",
        "Name         : execute_tool clock",
        "Name         : invoke_agent",
        "gen_ai.request.model: String(Owned(\"claude-sonnet-5\"))",
        "gen_ai.tool.name: String(Owned(\"clock\"))",
        "gen_ai.conversation.id: String(Owned(\"otel-example\"))",
    ] {
        assert!(stdout.contains(expected), "`{expected}` missing:\n{stdout}");
    }
    assert!(
        stdout.contains("gen_ai.usage.input_tokens: I64(10)"),
        "{stdout}"
    );
    // `otel.name` and `otel.kind` are consumed by the bridge, not exported as attributes.
    assert!(!stdout.contains("otel.name"), "{stdout}");
}
