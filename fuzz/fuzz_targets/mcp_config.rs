//! Fuzz target `mcp_config`: see [`threadline_fuzz::targets::mcp_config`] for the properties it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| threadline_fuzz::targets::mcp_config(data));
