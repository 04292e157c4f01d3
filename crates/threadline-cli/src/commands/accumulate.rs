//! `threadline accumulate FILE`: raw SSE bytes to the final message.
//!
//! SSE is streamed through the wire crate's incremental reader as it is read (so its per-event
//! bound cuts a runaway event early); a canonical fixture is read whole. Both stop at the
//! input limit (`--max-input-bytes`).

use std::io::Read as _;

use threadline_wire::message_stream::{MessageStreamReader, StreamReadError, read_message};

use crate::error::CliError;
use crate::input::{InputError, InputLimit, open_input, too_large};
use threadline_cli::stderr_line;

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

/// The input, read: a body held whole (a canonical fixture, or a JSON document), or the result
/// of a stream read as it came.
enum Input {
    Whole(Vec<u8>),
    Streamed(Box<Result<threadline_wire::ResponseMessage, StreamReadError>>),
}

/// Reads the input: SSE is fed to the incremental reader chunk by chunk (its per-event bound
/// applies as the bytes come, and nothing is held but the message); an input that starts with
/// `{` (a fixture) is read whole. Both stop at the input limit.
fn read(path: &str, limit: InputLimit) -> Result<Input, InputError> {
    let mut input = open_input(path, limit)?;
    let cannot = |source: std::io::Error| InputError::Read {
        name: path.to_owned(),
        source,
    };
    let mut chunk = vec![0u8; 64 * 1024];
    let mut leading = Vec::new();
    // The leading whitespace, then the first chunk that says which format this is.
    let first = loop {
        let n = input.read(&mut chunk).map_err(cannot)?;
        if n == 0 {
            break None;
        }
        leading.extend_from_slice(&chunk[..n]);
        if let Some(&byte) = leading.iter().find(|b| !b.is_ascii_whitespace()) {
            break Some(byte);
        }
        if input.over_limit() {
            return Err(too_large(path, limit));
        }
    };
    if first.is_none_or(|byte| byte == b'{') {
        input.read_to_end(&mut leading).map_err(cannot)?;
        if input.over_limit() {
            return Err(too_large(path, limit));
        }
        return Ok(Input::Whole(leading));
    }
    let mut reader = MessageStreamReader::new();
    let mut pushed = reader.push(&leading, |_, _| {});
    while pushed.is_ok() {
        if input.over_limit() {
            return Err(too_large(path, limit));
        }
        let n = input.read(&mut chunk).map_err(cannot)?;
        if n == 0 {
            break;
        }
        pushed = reader.push(&chunk[..n], |_, _| {});
    }
    if input.over_limit() {
        return Err(too_large(path, limit));
    }
    Ok(Input::Streamed(Box::new(
        pushed.and_then(|()| reader.finish()),
    )))
}

pub(crate) fn run(path: &str, limit: InputLimit) -> Result<(), CliError> {
    let bodies: Vec<_> = match read(path, limit)? {
        Input::Whole(bytes) => sse_bodies(&bytes)
            .into_iter()
            .map(|(label, body)| (label, read_message(&body)))
            .collect(),
        Input::Streamed(result) => vec![(None, *result)],
    };
    if bodies.is_empty() {
        return Err(CliError::Broken {
            what: format!("{path}: the fixture holds no SSE response"),
            source: None,
        });
    }
    let mut failed = 0;
    for (label, result) in bodies {
        let prefix = label
            .map(|l| format!("{path}: {l}: "))
            .unwrap_or_else(|| format!("{path}: "));
        match result {
            Ok(message) => print_json(&message),
            Err(error) => {
                failed += 1;
                if let Some(partial) = error.partial() {
                    print_json(partial);
                }
                stderr_line!("threadline: {prefix}{error}");
            }
        }
    }
    if failed > 0 {
        // Each broken stream was reported after its partial message.
        Err(CliError::Found { problems: failed })
    } else {
        Ok(())
    }
}

fn print_json(message: &threadline_wire::ResponseMessage) {
    match serde_json::to_string_pretty(message) {
        Ok(json) => crate::output::print_json(&json),
        Err(e) => stderr_line!("threadline: cannot print the message: {e}"),
    }
}
