//! `threadline inspect`'s output, byte for byte: the table, the JSON (with a re-planning
//! comparison) and the HTML page of small synthetic sessions that reach what the fixture
//! transcripts do not (recorded cache diagnostics, server-side compaction passes, model
//! switches and an unknown model, usage near `u64::MAX`, no usage at all). The snapshots
//! were taken with the analysis still in the command line (the `serde_json::Value` reports)
//! and hold since it moved to `threadline-inspect`.

use std::path::Path;

use crate::common::threadline_in;

/// The session files beside this module.
const SESSIONS: [&str; 5] = [
    "diag.jsonl",
    "compaction.jsonl",
    "switch.jsonl",
    "huge.jsonl",
    "nousage.jsonl",
];

/// `inspect`'s stdout for `args`, run in `dir` (so the page's title is the file's name).
fn inspect(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["inspect"];
    all.extend_from_slice(args);
    let out = threadline_in(&all, dir);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn the_table_json_and_page_of_synthetic_sessions_are_unchanged() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite/inspect/output");
    let dir = tempfile::tempdir().expect("temp dir");
    for session in SESSIONS {
        std::fs::copy(here.join(session), dir.path().join(session)).expect("copied");
        let name = session.trim_end_matches(".jsonl");
        let text = inspect(dir.path(), &[session, "--plan", "stable_1h"]);
        insta::assert_snapshot!(format!("inspect_{name}_text"), text);
        let json = inspect(dir.path(), &[session, "--json", "--plan", "seed"]);
        insta::assert_snapshot!(format!("inspect_{name}_json"), json);
        inspect(dir.path(), &[session, "--html", "page.html"]);
        let page = std::fs::read_to_string(dir.path().join("page.html")).expect("the page");
        insta::assert_snapshot!(format!("inspect_{name}_html"), page);
    }
}
