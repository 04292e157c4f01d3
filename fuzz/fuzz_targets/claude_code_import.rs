//! Fuzz target `claude_code_import`: see [`threadline_fuzz::targets::claude_code_import`] for the properties it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| threadline_fuzz::targets::claude_code_import(data));
