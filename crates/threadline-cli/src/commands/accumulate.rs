//! `threadline accumulate FILE`: raw SSE bytes to the final message.

use std::process::ExitCode;

use threadline_wire::message_stream::read_message;

use crate::input::read_input;

/// The SSE bodies in the input: the input itself, or every SSE body of a canonical fixture.
fn sse_bodies(bytes: &[u8]) -> Vec<(Option<String>, Vec<u8>)> {
    let fixture = serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .filter(|v| v.get("format").and_then(|f| f.as_str()) == Some("threadline-fixture/1"));
    let Some(fixture) = fixture else {
        return vec![(None, bytes.to_vec())];
    };
    let exchanges = fixture.get("exchanges").and_then(|e| e.as_array());
    exchanges
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, exchange)| {
            let sse = exchange.get("response")?.get("sse")?.as_str()?;
            Some((Some(format!("exchange {i}")), sse.as_bytes().to_vec()))
        })
        .collect()
}

pub(crate) fn run(path: &str) -> ExitCode {
    let bytes = match read_input(path) {
        Ok(bytes) => bytes,
        Err(line) => {
            eprintln!("{line}");
            return ExitCode::from(2);
        }
    };
    let bodies = sse_bodies(&bytes);
    if bodies.is_empty() {
        eprintln!("threadline: {path}: the fixture holds no SSE response");
        return ExitCode::from(1);
    }
    let mut failed = false;
    for (label, body) in bodies {
        let prefix = label
            .map(|l| format!("{path}: {l}: "))
            .unwrap_or_else(|| format!("{path}: "));
        match read_message(&body) {
            Ok(message) => print_json(&message),
            Err(error) => {
                failed = true;
                if let Some(partial) = error.partial() {
                    print_json(partial);
                }
                eprintln!("threadline: {prefix}{error}");
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn print_json(message: &threadline_wire::Message) {
    match serde_json::to_string_pretty(message) {
        Ok(json) => crate::output::print_line(&json),
        Err(e) => eprintln!("threadline: cannot print the message: {e}"),
    }
}
