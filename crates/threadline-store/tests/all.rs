//! threadline-store's backends against the conformance suite and their own hazards: reopening,
//! a torn JSONL tail, four processes appending to one file or database (this binary re-run in
//! a child mode), hostile keys kept under the root, and property tests of idempotent append.

#[path = "suite/common.rs"]
mod common;
#[path = "suite/conformance.rs"]
mod conformance;
#[path = "suite/jsonl.rs"]
mod jsonl;
#[path = "suite/props.rs"]
mod props;
#[path = "suite/sqlite.rs"]
mod sqlite;
