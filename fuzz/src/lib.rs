//! What the fuzz targets share: how an input is cut into chunks, where a target writes the
//! input it reads back as a file, and the normalization check every transcript reader's output
//! must pass.
//!
//! Each target in `fuzz_targets/` is a thin `fuzz_target!` over one function of this crate, so
//! the properties can also be checked from a unit test (`cargo test` in `fuzz/`) on a stable
//! toolchain without libFuzzer.
#![forbid(unsafe_code)]

pub mod targets;

use std::path::PathBuf;
use std::sync::OnceLock;

use threadline_message::Message;
use threadline_normalize::{Options, normalize, to_internal};
use threadline_wire::model::ModelTable;
use threadline_validate::validate;
use threadline_wire::MessagesRequest;

/// The model normalized requests are validated against: it accepts prefill, as the
/// normalizer's guarantee requires (`threadline_normalize` crate docs, "Guarantees").
pub const MODEL: &str = "claude-sonnet-4-5";

/// Cuts `data` into chunks at points chosen by a generator seeded from the bytes themselves,
/// so that a crash reproduces from its input alone and every mutation tries other cut points.
/// Chunks are 1 to 64 bytes, with an occasional long one; empty chunks are included too (a
/// reader must accept them).
pub fn chunks(data: &[u8]) -> Vec<&[u8]> {
    let mut state = seed(data);
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let roll = next(&mut state);
        let len = match roll % 16 {
            0 => 0,
            1 => (roll >> 8) as usize % 4096,
            _ => 1 + (roll >> 8) as usize % 64,
        };
        let end = at.saturating_add(len).min(data.len());
        out.push(&data[at..end]);
        at = end;
    }
    out
}

/// FNV-1a of the bytes: the seed of [`chunks`].
fn seed(data: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in data {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash | 1
}

/// xorshift64*.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

/// A file private to this process (and the thread, should libFuzzer run several), rewritten
/// by each execution of the file readers' targets.
pub fn scratch_file(label: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "threadline-fuzz-{label}-{}-{:?}.jsonl",
        std::process::id(),
        std::thread::current().id()
    ))
}

/// Invariant 2 on what a reader produced: `normalize` never panics, its output passes the
/// validator (for [`MODEL`], no tools, no thinking), and normalizing the output again changes
/// nothing.
///
/// # Panics
///
/// When the property does not hold: the fuzzer reports the panic as a crash.
pub fn assert_normalizes(messages: &[Message]) {
    let normalized = normalize(messages, &Options::default());
    let request = MessagesRequest::new(MODEL, 1024, normalized.messages.clone());
    let violations = validate(&request, model());
    assert!(
        violations.is_empty(),
        "normalize output fails validation: {}",
        violations
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    );
    let again = normalize(&to_internal(&normalized.messages), &Options::default());
    assert_eq!(
        again.messages, normalized.messages,
        "normalize is not idempotent"
    );
    assert!(
        again.report.repairs.is_empty(),
        "normalizing normalized output repaired: {}",
        again.report.summary()
    );
}

/// The built-in entry for [`MODEL`], looked up once.
pub fn model() -> &'static threadline_wire::model::Model {
    static MODEL_ENTRY: OnceLock<&'static threadline_wire::model::Model> = OnceLock::new();
    MODEL_ENTRY.get_or_init(|| ModelTable::builtin().resolve(MODEL).model())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_input_in_order() {
        for len in [0usize, 1, 2, 3, 17, 100, 5000, 20_000] {
            let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let joined: Vec<u8> = chunks(&data).concat();
            assert_eq!(joined, data, "len {len}");
        }
    }

    /// Every target on real inputs: the recorded SSE bodies and transcripts, the committed
    /// seeds, and a request body.
    #[test]
    fn targets_accept_the_recorded_inputs() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let files = |dir: &std::path::Path, ext: &str| -> Vec<std::path::PathBuf> {
            let mut found = Vec::new();
            for entry in std::fs::read_dir(dir).expect("fixture dir").flatten() {
                let path = entry.path();
                if path.is_dir() {
                    found.extend(
                        std::fs::read_dir(&path)
                            .expect("fixture dir")
                            .flatten()
                            .map(|e| e.path())
                            .filter(|p| p.to_string_lossy().ends_with(ext)),
                    );
                } else if path.to_string_lossy().ends_with(ext) {
                    found.push(path);
                }
            }
            found
        };
        let recorded = root.join("fixtures/recorded");
        let sse = files(&recorded, ".txt");
        assert!(!sse.is_empty());
        for path in sse {
            targets::sse_accumulate(&std::fs::read(&path).expect("fixture"));
        }
        for path in files(&recorded, ".jsonl") {
            targets::claude_code_import(&std::fs::read(&path).expect("fixture"));
        }
        let seeds = files(&root.join("fuzz/seeds/transcript_jsonl"), ".jsonl");
        assert!(!seeds.is_empty());
        for path in seeds {
            targets::transcript_jsonl(&std::fs::read(&path).expect("seed"));
        }
        targets::request_json(
            br#"{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"future":[1]}"#,
        );
        let seeds = files(&root.join("fuzz/seeds/mcp_config"), ".json");
        assert!(!seeds.is_empty());
        for path in seeds {
            targets::mcp_config(&std::fs::read(&path).expect("seed"));
        }
    }

    #[test]
    fn chunks_depend_only_on_the_input() {
        let data = b"event: ping\ndata: {}\n\n".repeat(20);
        assert_eq!(chunks(&data), chunks(&data));
        let other = b"event: pong\ndata: {}\n\n".repeat(20);
        let lengths = |c: Vec<&[u8]>| c.iter().map(|c| c.len()).collect::<Vec<_>>();
        assert_ne!(lengths(chunks(&data)), lengths(chunks(&other)));
    }
}
