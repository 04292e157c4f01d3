//! The integration tests of `threadline-message`, in one test binary: each module under
//! `suite/` was a test binary of its own (its documentation says what it tests), and they share
//! no module.

#[path = "suite/claude_code_import.rs"]
mod claude_code_import;
#[path = "suite/transcript.rs"]
mod transcript;
