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

#[test]
fn what_a_diagnosis_record_says_cannot_forge_a_row() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite/inspect/output");
    let session = std::fs::read_to_string(here.join("diag.jsonl")).expect("the session");
    // The loop's prediction and verdict are free text in the file: a newline that would start
    // a forged row, a title-setting OSC and a screen-clearing CSI.
    let hostile = session.replacen(
        r#""agreement": "agrees", "predicted": "system""#,
        r#""agreement": "\u001b[2J", "predicted": "system\n      diagnostics: forged\u001b]0;owned\u0007""#,
        1,
    );
    assert_ne!(hostile, session, "the record was changed");
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("hostile.jsonl"), hostile).expect("written");
    let text = inspect(dir.path(), &["hostile.jsonl"]);
    let rows = text
        .lines()
        .filter(|line| line.trim_start().starts_with("diagnostics:"))
        .count();
    assert_eq!(rows, 4, "one diagnostics row per request: {text}");
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
}
