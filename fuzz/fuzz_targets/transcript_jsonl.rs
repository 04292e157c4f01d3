//! Fuzz target `transcript_jsonl`: see [`threadline_fuzz::targets::transcript_jsonl`] for the properties it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| threadline_fuzz::targets::transcript_jsonl(data));
