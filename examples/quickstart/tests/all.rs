//! quickstart's one test binary: the program against the mock over loopback.

#[path = "suite/mock.rs"]
mod mock;
