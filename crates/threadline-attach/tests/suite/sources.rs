//! The built-in sources, one behaviour each.

use threadline_attach::{
    AgentMentions, Collected, Collector, DateChange, DeltaSource, FileMentions, Limits,
    NestedInstructions, Note, QueuedCommands, Source, TodoReminders, TokenUsage, Turn, Workspace,
};
use threadline_message::{Attachment, CompactTrigger, DeltaItem, Message, SystemKind, TodoItem};
use threadline_wire::content::ToolUseBlock;
use threadline_wire::{ContentBlock, Usage};

fn run(source: impl Source + 'static, turn: &Turn<'_>) -> Collected {
    Collector::new()
        .with(source)
        .collect_blocking(turn)
        .expect("runtime")
}

fn boundary() -> Message {
    Message::system(SystemKind::CompactBoundary {
        trigger: CompactTrigger::Auto,
        pre_tokens: 1,
        last_message_id: None,
    })
}

#[test]
fn directories_are_listed_sorted_with_a_slash_and_cut_at_the_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["b.rs", "a.rs", "c.rs"] {
        std::fs::write(dir.path().join(name), "x").expect("file");
    }
    std::fs::create_dir(dir.path().join("sub")).expect("sub");
    let workspace = Workspace::new(dir.path()).expect("workspace");
    let turn = Turn::new(&[])
        .with_input("@. and @sub")
        .with_workspace(&workspace);
    let collected = run(FileMentions::new(), &turn);
    assert_eq!(
        collected.attachments,
        [
            Attachment::Directory {
                path: ".".into(),
                entries: vec!["a.rs".into(), "b.rs".into(), "c.rs".into(), "sub/".into()],
                truncated: false,
            },
            Attachment::Directory {
                path: "sub".into(),
                entries: vec![],
                truncated: false,
            },
        ]
    );
    let cut = run(
        FileMentions::with_limits(Limits::default().with_max_entries(2)),
        &turn,
    );
    assert!(
        matches!(&cut.attachments[0], Attachment::Directory { entries, truncated: true, .. } if entries == &["a.rs", "b.rs"])
    );
    assert_eq!(
        cut.report[0].to_string(),
        "attachment source `file_mentions`: @.: truncated: cut at the limit of 2 entries"
    );
}

#[test]
fn mentions_without_a_workspace_fail_the_source_only() {
    let turn = Turn::new(&[]).with_input("@a.rs");
    let collected = run(FileMentions::new(), &turn);
    assert!(collected.attachments.is_empty());
    assert_eq!(
        collected.report[0].to_string(),
        "attachment source `file_mentions`: failed: files were mentioned but the turn has no workspace"
    );
}

#[test]
fn nested_instructions_between_the_root_and_a_mention_are_attached_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir_all(root.join("a/b")).expect("dirs");
    std::fs::write(
        root.join("AGENTS.md"),
        "root rules (the context message has these)",
    )
    .expect("root");
    std::fs::write(root.join("a/CLAUDE.md"), "rules for a").expect("a");
    std::fs::write(root.join("a/b/AGENTS.md"), "rules for b").expect("b");
    std::fs::write(root.join("a/b/x.rs"), "fn x() {}").expect("x");
    std::fs::write(root.join("a/y.rs"), "fn y() {}").expect("y");
    let workspace = Workspace::new(root).expect("workspace");
    let collector = Collector::new()
        .with(FileMentions::new())
        .with(NestedInstructions::new());
    let input = "@a/b/x.rs @a/y.rs";
    let collected = collector
        .collect_blocking(&Turn::new(&[]).with_input(input).with_workspace(&workspace))
        .expect("runtime");
    let nested: Vec<(&str, &str)> = collected
        .attachments
        .iter()
        .filter_map(|a| match a {
            Attachment::NestedInstructions { path, content } => {
                Some((path.as_str(), content.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        nested,
        [
            ("a/CLAUDE.md", "rules for a"),
            ("a/b/AGENTS.md", "rules for b")
        ]
    );

    // Already in the history since the last compaction: not attached again.
    let history = collected.messages();
    let again = collector
        .collect_blocking(
            &Turn::new(&history)
                .with_input(input)
                .with_workspace(&workspace),
        )
        .expect("runtime");
    assert!(
        !again
            .attachments
            .iter()
            .any(|a| matches!(a, Attachment::NestedInstructions { .. }))
    );
    // After a compaction they are.
    let mut compacted = history.clone();
    compacted.push(boundary());
    let after = collector
        .collect_blocking(
            &Turn::new(&compacted)
                .with_input(input)
                .with_workspace(&workspace),
        )
        .expect("runtime");
    assert_eq!(
        after
            .attachments
            .iter()
            .filter(|a| matches!(a, Attachment::NestedInstructions { .. }))
            .count(),
        2
    );
}

#[test]
fn the_date_change_is_announced_once() {
    let source = || DateChange::new("2026-11-29");
    let same = run(source(), &Turn::new(&[]).with_today("2026-11-29"));
    assert!(same.attachments.is_empty());
    let moved = run(source(), &Turn::new(&[]).with_today("2026-11-30"));
    assert_eq!(
        moved.attachments,
        [Attachment::DateChange {
            date: "2026-11-30".into()
        }]
    );
    let history = moved.messages();
    let told = run(source(), &Turn::new(&history).with_today("2026-11-30"));
    assert!(told.attachments.is_empty());
    let no_clock = run(source(), &Turn::new(&history));
    assert!(no_clock.attachments.is_empty());
}

#[test]
fn queued_commands_are_attached_in_order_blank_ones_dropped() {
    let queued = vec![
        "also fix b".to_owned(),
        "  ".to_owned(),
        "then c".to_owned(),
    ];
    let collected = run(
        QueuedCommands,
        &Turn::new(&[]).with_queued_commands(&queued),
    );
    assert_eq!(
        collected.attachments,
        [
            Attachment::QueuedCommand {
                prompt: "also fix b".into()
            },
            Attachment::QueuedCommand {
                prompt: "then c".into()
            },
        ]
    );
}

fn response(id: &str, blocks: Vec<ContentBlock>) -> Message {
    Message::assistant_fragment(id, "claude-sonnet-5", blocks)
}

fn todo_write() -> ContentBlock {
    ContentBlock::ToolUse(ToolUseBlock::new(
        "toolu_todo",
        "TodoWrite",
        serde_json::json!({}),
    ))
}

#[test]
fn todo_reminders_follow_their_cadence() {
    let todos = || {
        vec![TodoItem {
            content: "write tests".into(),
            status: "in_progress".into(),
        }]
    };
    let source = || TodoReminders::new(todos).with_cadence(3);
    let mut history = vec![response("msg_0", vec![todo_write()])];
    for n in 1..=2 {
        history.push(Message::user_text("go on"));
        // Two fragments of one response count once.
        history.push(response(&format!("msg_{n}"), vec![ContentBlock::text("a")]));
        history.push(response(&format!("msg_{n}"), vec![ContentBlock::text("b")]));
    }
    assert_eq!(source().responses_since_last_look(&history), 2);
    assert!(run(source(), &Turn::new(&history)).attachments.is_empty());
    history.push(response("msg_3", vec![ContentBlock::text("c")]));
    let reminded = run(source(), &Turn::new(&history));
    assert_eq!(
        reminded.attachments,
        [Attachment::TodoReminder { items: todos() }]
    );
    // The reminder resets the count.
    history.extend(reminded.messages());
    assert_eq!(source().responses_since_last_look(&history), 0);
    assert!(run(source(), &Turn::new(&history)).attachments.is_empty());
}

#[test]
fn token_usage_reports_the_latest_response_and_only_on_the_main_thread() {
    let mut answer = response("msg_1", vec![ContentBlock::text("ok")]);
    if let Message::Assistant(a) = &mut answer {
        let usage = Usage::new()
            .with_input_tokens(100)
            .with_cache_read_input_tokens(5000)
            .with_cache_creation_input_tokens(20)
            .with_output_tokens(7);
        a.usage = Some(Box::new(usage));
    }
    let history = vec![Message::user_text("hi"), answer];
    let collected = run(TokenUsage::new(200_000), &Turn::new(&history));
    assert_eq!(
        collected.attachments,
        [Attachment::TokenUsage {
            used: 5127,
            total: 200_000
        }]
    );
    let sub = run(
        TokenUsage::new(200_000),
        &Turn::new(&history).with_thread(threadline_attach::Thread::SubAgent),
    );
    assert!(sub.attachments.is_empty());
    assert!(
        run(TokenUsage::new(1), &Turn::new(&[]))
            .attachments
            .is_empty()
    );
}

#[test]
fn agent_mentions_attach_known_agents_and_report_unknown_ones() {
    let turn = Turn::new(&[]).with_input("ask @agent-reviewer and @agent-ghost about @src/x.rs");
    let any = run(AgentMentions::new(), &turn);
    assert_eq!(
        any.attachments,
        [
            Attachment::AgentMention {
                agent: "reviewer".into()
            },
            Attachment::AgentMention {
                agent: "ghost".into()
            },
        ]
    );
    let known = run(AgentMentions::known(["reviewer"]), &turn);
    assert_eq!(
        known.attachments,
        [Attachment::AgentMention {
            agent: "reviewer".into()
        }]
    );
    assert!(
        matches!(known.report[0].note(), Some(Note::Ignored { subject, .. }) if subject == "@agent-ghost")
    );
}

#[test]
fn the_three_delta_instances_announce_their_own_sets() {
    let item = |name: &str| DeltaItem {
        name: name.into(),
        description: String::new(),
    };
    let collector = Collector::new()
        .with(DeltaSource::deferred_tools(move || vec![item("WebSearch")]))
        .with(DeltaSource::agent_listing(move || vec![item("reviewer")]))
        .with(DeltaSource::mcp_instructions(move || vec![item("github")]));
    assert_eq!(
        collector.source_names(),
        [
            "deferred_tools_delta",
            "agent_listing_delta",
            "mcp_instructions_delta"
        ]
    );
    let first = collector
        .collect_blocking(&Turn::new(&[]))
        .expect("runtime");
    let sets: Vec<&str> = first
        .attachments
        .iter()
        .map(|a| match a {
            Attachment::Delta(d) => d.set.as_str(),
            _ => "?",
        })
        .collect();
    assert_eq!(
        sets,
        ["deferred_tools", "agent_listing", "mcp_instructions"]
    );
    let history = first.messages();
    let second = collector
        .collect_blocking(&Turn::new(&history))
        .expect("runtime");
    assert!(second.attachments.is_empty());
}

#[test]
fn mentions_at_the_end_of_a_sentence_lose_the_punctuation_unless_the_file_has_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.rs"), "a").expect("a");
    std::fs::write(dir.path().join("odd."), "odd").expect("odd");
    let workspace = Workspace::new(dir.path()).expect("workspace");
    let turn = Turn::new(&[])
        .with_input("see @a.rs, then @odd. and @agent-reviewer.")
        .with_workspace(&workspace);
    let collected = Collector::new()
        .with(FileMentions::new())
        .with(AgentMentions::new())
        .collect_blocking(&turn)
        .expect("runtime");
    let paths: Vec<String> = collected
        .attachments
        .iter()
        .map(|a| match a {
            Attachment::File { path, .. } => path.clone(),
            Attachment::AgentMention { agent } => format!("agent {agent}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(paths, ["a.rs", "odd.", "agent reviewer"]);
}
