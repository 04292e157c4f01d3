//! The example's one test binary.

#[path = "suite/export.rs"]
mod export;
