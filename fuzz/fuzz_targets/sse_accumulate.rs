//! Fuzz target `sse_accumulate`: see [`threadline_fuzz::targets::sse_accumulate`] for the properties it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| threadline_fuzz::targets::sse_accumulate(data));
