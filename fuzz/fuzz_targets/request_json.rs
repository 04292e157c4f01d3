//! Fuzz target `request_json`: see [`threadline_fuzz::targets::request_json`] for the properties it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| threadline_fuzz::targets::request_json(data));
