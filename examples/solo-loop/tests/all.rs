//! solo-loop's one test binary: the agent against the mock over loopback (a tool call, an
//! autocompact, a reactive compaction, cache markers, every request valid), and its
//! dependency tree without the facade.

#[path = "suite/loopback.rs"]
mod loopback;
#[path = "suite/no_facade.rs"]
mod no_facade;
