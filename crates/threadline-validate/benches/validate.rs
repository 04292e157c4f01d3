//! Validating a 100k-message request against serializing it with serde_json, in one run.
//!
//! Group `validate_100k_messages` (read by `cargo xtask bench`): `ours` runs
//! `threadline_validate::validate` on a valid 100,000-message tool-using conversation, `baseline`
//! serializes the same request with `serde_json::to_vec`. Validation must be cheap enough to
//! run before every request.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use threadline_validate::validate;
use threadline_wire::MessagesRequest;
use threadline_wire::model::ModelTable;

/// A valid conversation of `n` messages: text turns and tool use / tool result pairs.
fn request(n: usize) -> MessagesRequest {
    let mut messages = Vec::with_capacity(n);
    for i in 0..n {
        let message = match i % 4 {
            0 => {
                json!({"role": "user", "content": format!("Please look at file number {i} and tell me what it does.")})
            }
            1 => json!({"role": "assistant", "content": [
                {"type": "text", "text": "Let me read it."},
                {"type": "tool_use", "id": format!("toolu_{i:08}"), "name": "read_file", "input": {"path": format!("src/file_{i}.rs")}}
            ]}),
            2 => json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("toolu_{:08}", i - 1), "content": "fn main() { println!(\"hello\"); }"}
            ]}),
            _ => {
                json!({"role": "assistant", "content": [{"type": "text", "text": "It prints a greeting."}]})
            }
        };
        messages.push(message);
    }
    serde_json::from_value(json!({
        "model": "claude-sonnet-4-6",
        "max_tokens": 4096,
        "tools": [{"name": "read_file", "description": "Read a file", "input_schema": {"type": "object"}}],
        "messages": messages,
    }))
    .expect("the generated request parses")
}

fn validate_bench(c: &mut Criterion) {
    // 100,001 messages, so that the conversation ends with a user turn (no prefill).
    let request = request(100_001);
    let model = ModelTable::builtin().resolve("claude-sonnet-4-6").model();
    let violations = validate(&request, model);
    assert!(
        violations.is_empty(),
        "the benchmark request must be valid: {violations:?}"
    );
    let mut g = c.benchmark_group("validate_100k_messages");
    g.sample_size(10);
    g.bench_function("ours", |b| {
        b.iter(|| validate(black_box(&request), model).len())
    });
    g.bench_function("baseline", |b| {
        b.iter(|| {
            serde_json::to_vec(black_box(&request))
                .expect("serializes")
                .len()
        })
    });
    g.finish();
}

criterion_group!(benches, validate_bench);
criterion_main!(benches);
