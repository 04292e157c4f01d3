//! `threadline demo --compaction server`: the demo with server-side compaction
//! (`compact_20260112`) instead of the local autocompact.
//!
//! The API compacts at 50,000 input tokens at the least, far more than the demo's small
//! project weighs, so this variant adds archived measurement files to the scratch project and
//! two steps that read them (three files each, in parallel); the request after the second
//! batch crosses the trigger and the mock answers it with a `compaction` block first — the
//! summary the bundled scenario's summary step holds — then the scripted edit. The local
//! summary step is dropped: no summary request is sent. The rest of the session (the fix, the
//! tests, the `max_tokens` recovery) is the demo's.

use std::path::Path;

use threadline::mock::{Block, Scenario, Step};
use threadline::{Compaction, CompactionMode, ServerCompaction};

/// How `threadline demo` compacts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum DemoCompaction {
    /// The local autocompact: a summary request to the mock.
    #[default]
    Local,
    /// Server-side compaction: the request carries the `compact_20260112` edit and the mock
    /// compacts.
    Server,
}

/// The server-side trigger (the API's minimum is 50,000).
pub(crate) const TRIGGER: u64 = 60_000;

/// The archived files, and the bytes of each: under the tool-result budget (50,000
/// characters with the line numbers), six of them together over the trigger.
const ARCHIVES: usize = 6;
const ARCHIVE_BYTES: usize = 36_000;

/// Index of the bundled scenario's step that answers the local summary request.
const SUMMARY_STEP: usize = 4;

fn archive(i: usize) -> String {
    format!("data/archive-{i}.csv")
}

/// Writes the archived measurement files under `project`.
pub(crate) fn write_archives(project: &Path) -> std::io::Result<()> {
    for i in 1..=ARCHIVES {
        let mut text = String::with_capacity(ARCHIVE_BYTES + 64);
        text.push_str("day,site,value,note\n");
        let mut day = 0;
        while text.len() < ARCHIVE_BYTES {
            day += 1;
            text.push_str(&format!(
                "2025-{:02}-{:02},site-{i},{}.{:02},archived reading\n",
                day % 12 + 1,
                day % 28 + 1,
                (day * 7 + i) % 100,
                day % 100
            ));
        }
        std::fs::write(project.join(archive(i)), text)?;
    }
    Ok(())
}

/// The compaction settings: server-side at [`TRIGGER`] where the model supports it, and the
/// model's own thresholds for the local safety nets (the demo's small autocompact threshold
/// would make the blocking limit stop the session long before the server's trigger).
pub(crate) fn compaction(mut local: Compaction) -> Compaction {
    local.autocompact_at = None;
    local.with_server(
        CompactionMode::Server,
        ServerCompaction::default().with_trigger(TRIGGER),
    )
}

/// The bundled scenario for server-side compaction: the summary step replaced by two batches
/// of archive reads, its summary given to the step after them (whose request the mock
/// compacts). `None` when the scenario does not have the expected shape.
pub(crate) fn scenario(mut scenario: Scenario) -> Option<Scenario> {
    if scenario.steps.len() <= SUMMARY_STEP + 1 {
        return None;
    }
    let summary = match scenario.steps.remove(SUMMARY_STEP) {
        Step::Message(m) => m.content.into_iter().find_map(|b| match b {
            Block::Text { text } => Some(text),
            _ => None,
        })?,
        _ => return None,
    };
    let edit = scenario.steps.remove(SUMMARY_STEP);
    let reads = |first: usize, text: &str| {
        let mut content = vec![Block::Text {
            text: text.to_owned(),
        }];
        for i in first..first + ARCHIVES / 2 {
            content.push(Block::ToolUse {
                id: Some(format!("toolu_demo_archive_{i}")),
                name: "Read".to_owned(),
                input: serde_json::json!({"path": archive(i)}),
            });
        }
        Step::message(content)
    };
    let inserted = [
        reads(
            1,
            "The README is clear. Let me check the archived measurements the tests may use.",
        ),
        reads(ARCHIVES / 2 + 1, "And the rest of the archive."),
        edit.with_compaction_summary(summary),
    ];
    for (offset, step) in inserted.into_iter().enumerate() {
        scenario.steps.insert(SUMMARY_STEP + offset, step);
    }
    Some(scenario)
}
