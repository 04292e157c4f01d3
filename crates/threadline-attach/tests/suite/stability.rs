//! Byte stability: the same session state gives byte-identical attachment text on every run,
//! so attachments never break the prompt cache.

use std::path::Path;
use std::time::Duration;

use threadline_attach::{
    AgentMentions, Collector, DateChange, DeltaSource, FileMentions, NestedInstructions, Phase,
    QueuedCommands, Source, SourceContext, SourceFuture, SourceOutput, TodoReminders, TokenUsage,
    Turn, Workspace,
};
use threadline_message::{Attachment, DeltaItem, Message, TodoItem};
use threadline_normalize::{Options, normalize, render_attachment};

/// Lays out the same workspace, creating files in the given order (so directory order on
/// disk differs between layouts).
fn lay_out(root: &Path, reversed: bool) {
    let mut files = vec![
        ("src/AGENTS.md", "Prefer iterators.\n"),
        ("src/lib.rs", "pub mod a;\npub mod b;\n"),
        ("src/a.rs", "pub fn a() {}\n"),
        ("src/b.rs", "pub fn b() {}\n"),
        ("src/zz/deep.rs", "// deep\n"),
        ("README.md", "# demo\n"),
    ];
    if reversed {
        files.reverse();
    }
    for (path, content) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("dirs");
        std::fs::write(path, content).expect("write");
    }
}

/// A source whose speed differs between runs: the order of attachments must not.
struct Jittery(u64);

impl Source for Jittery {
    fn name(&self) -> &str {
        "jittery"
    }
    fn phase(&self) -> Phase {
        Phase::Environment
    }
    fn collect<'a>(&'a self, _cx: &'a SourceContext<'a>) -> SourceFuture<'a> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(self.0)).await;
            Ok(SourceOutput::attachments(vec![Attachment::Reminder {
                text: "jittery".into(),
            }]))
        })
    }
}

fn collector(jitter: u64, tools: Vec<&'static str>) -> Collector {
    let item = |name: &str| DeltaItem {
        name: name.into(),
        description: format!("the {name} tool"),
    };
    Collector::new()
        .with(Jittery(jitter))
        .with(FileMentions::new())
        .with(AgentMentions::new())
        .with(NestedInstructions::new())
        .with(DateChange::new("2026-11-29"))
        .with(QueuedCommands)
        .with(
            TodoReminders::new(|| {
                vec![TodoItem {
                    content: "ship".into(),
                    status: "pending".into(),
                }]
            })
            .with_cadence(1),
        )
        .with(TokenUsage::new(200_000))
        .with(DeltaSource::deferred_tools(move || {
            tools.iter().map(|t| item(t)).collect()
        }))
}

/// The model-visible text of one turn's attachments in a workspace laid out one way.
fn turn_text(reversed: bool, jitter: u64, tools: Vec<&'static str>) -> (String, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    lay_out(dir.path(), reversed);
    let workspace = Workspace::new(dir.path()).expect("workspace");
    let input = "explain @src and @src/zz/deep.rs to @agent-reviewer";
    let mut answer = Message::assistant_fragment(
        "msg_1",
        "claude-sonnet-5",
        vec![threadline_wire::ContentBlock::text("ok")],
    );
    if let Message::Assistant(a) = &mut answer {
        let usage = threadline_wire::Usage::new()
            .with_input_tokens(1200)
            .with_output_tokens(34);
        a.usage = Some(Box::new(usage));
    }
    let history = vec![
        Message::user_text("earlier"),
        answer,
        Message::user_text(input),
    ];
    let queued = vec!["and the README".to_owned()];
    let turn = Turn::new(&history)
        .with_input(input)
        .with_workspace(&workspace)
        .with_today("2026-11-30")
        .with_queued_commands(&queued);
    let collected = collector(jitter, tools)
        .collect_blocking(&turn)
        .expect("runtime");
    assert!(collected.report.is_empty(), "{:?}", collected.report);
    let rendered: String = collected
        .attachments
        .iter()
        .flat_map(render_attachment)
        .collect::<Vec<_>>()
        .join("\n---\n");
    let mut session = history.clone();
    session.extend(collected.messages());
    let request = serde_json::to_string(&normalize(&session, &Options::default()).messages)
        .expect("serializes");
    (rendered, request)
}

#[test]
fn the_same_state_renders_byte_identically() {
    let tools = || vec!["WebSearch", "NotebookEdit", "WebFetch"];
    let (text, request) = turn_text(false, 1, tools());
    // Another directory, files created in the other order, sources finishing in another
    // order, the set given in another order: the same bytes.
    let (again_text, again_request) = turn_text(
        true,
        30,
        vec!["WebFetch", "WebSearch", "NotebookEdit", "WebSearch"],
    );
    assert_eq!(text, again_text);
    assert_eq!(request, again_request);
    for _ in 0..3 {
        assert_eq!(turn_text(false, 1, tools()).0, text);
    }
    // Every source contributed, so the comparison covers every kind they produce.
    for needle in [
        "Called the LS tool",
        "Called the Read tool",
        "Prefer iterators.",
        "reviewer",
        "2026-11-30",
        "and the README",
        "ship",
        "Token usage",
        "WebSearch",
        "jittery",
    ] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
    insta::assert_snapshot!("one_turn_of_attachments", text);
}
