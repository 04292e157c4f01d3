//! Pass 3: attachments become text the model reads.

use serde_json::json;
use threadline_message::{Attachment, DeltaAnnouncement, DeltaItem, TodoItem};
use threadline_wire::ContentBlock;

use crate::draft::{Draft, Item};

/// Drafts only: every attachment replaced by a user message holding its
/// [rendering](render_attachment), or removed when it renders to nothing.
///
/// The rendered messages are what Claude Code marks `is_meta` (the model sees them, the
/// transcript view hides them); the request has no such flag, so they are plain user
/// messages here, merged with their neighbours by
/// [`merge_consecutive_users`](super::merge_consecutive_users).
///
/// Assumes attachments are where [`reorder_attachments`](super::reorder_attachments) put
/// them. Guarantees: no attachment left; every text block produced is non-blank. A
/// conversion, never a repair.
pub(crate) fn render_attachments(items: Vec<Item<'_>>) -> Vec<Draft<'_>> {
    let mut drafts = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Item::Draft(draft) => drafts.push(draft),
            Item::Attachment { attachment, origin } => {
                let texts = render_attachment(attachment);
                if !texts.is_empty() {
                    let blocks = texts.into_iter().map(ContentBlock::text).collect();
                    drafts.push(Draft::user(blocks, Some(origin)));
                }
            }
        }
    }
    drafts
}

/// `text` wrapped in `<system-reminder>` tags, each on its own line.
fn system_reminder(text: &str) -> String {
    format!("<system-reminder>\n{text}\n</system-reminder>")
}

/// How the model is shown `attachment`: the text blocks of one user message, none when the
/// attachment is for the UI only (or says nothing).
///
/// Every text is wrapped in `<system-reminder>` tags. `@`-mentioned files and directories
/// render as the pair of texts a tool call would have produced ("Called the Read tool with
/// the following input: {…}" then "Result of calling the Read tool: …"), without a
/// `tool_use` id, so nothing has to be paired. A Claude Code attachment kept untyped
/// ([`Attachment::ClaudeCode`]) renders as one reminder holding its text only when its kind
/// is in [`CLAUDE_CODE_VISIBLE`]; any other kind (`prompt_snapshot` among them) is not sent.
/// One that carries Claude Code's own rendering ([`Attachment::ClaudeCodeRendered`]) renders
/// as exactly those texts.
/// The output depends on the attachment only: the same attachment renders byte-identically
/// every time.
///
/// ```
/// use threadline_message::Attachment;
/// use threadline_normalize::render_attachment;
///
/// let texts = render_attachment(&Attachment::DateChange { date: "2026-11-29".into() });
/// assert_eq!(texts.len(), 1);
/// assert!(texts[0].starts_with("<system-reminder>\nThe date has changed."));
/// assert!(render_attachment(&Attachment::UiOnly { label: "spinner".into() }).is_empty());
/// ```
pub fn render_attachment(attachment: &Attachment) -> Vec<String> {
    match attachment {
        Attachment::File {
            path,
            content,
            truncated,
        } => {
            let mut result = String::from("Result of calling the Read tool:\n");
            if content.is_empty() {
                result.push_str("(empty file)");
            } else {
                result.push_str(content);
            }
            if *truncated {
                result.push_str("\n[truncated: the file is longer than shown]");
            }
            vec![
                system_reminder(&format!(
                    "Called the Read tool with the following input: {}",
                    json!({ "file_path": path })
                )),
                system_reminder(&result),
            ]
        }
        Attachment::Directory {
            path,
            entries,
            truncated,
        } => {
            let mut result = String::from("Result of calling the LS tool:");
            if entries.is_empty() {
                result.push_str("\n(empty directory)");
            }
            for entry in entries {
                result.push_str("\n- ");
                result.push_str(entry);
            }
            if *truncated {
                result.push_str("\n[truncated: the directory has more entries than shown]");
            }
            vec![
                system_reminder(&format!(
                    "Called the LS tool with the following input: {}",
                    json!({ "path": path })
                )),
                system_reminder(&result),
            ]
        }
        Attachment::NestedInstructions { path, content } => {
            vec![system_reminder(&format!(
                "Contents of {path} (instructions for work in this directory):\n\n{content}"
            ))]
        }
        Attachment::DateChange { date } => vec![system_reminder(&format!(
            "The date has changed. Today's date is now {date}. DO NOT mention this to the user \
             explicitly because they are already aware."
        ))],
        Attachment::QueuedCommand { prompt } => vec![system_reminder(&format!(
            "The user sent the following message while you were working:\n{prompt}\n\n\
             Please address this message and continue with your tasks."
        ))],
        Attachment::TodoReminder { items } => vec![system_reminder(&todo_text(items))],
        Attachment::TokenUsage { used, total } => vec![system_reminder(&format!(
            "Token usage: {used}/{total}; {} remaining",
            total.saturating_sub(*used)
        ))],
        Attachment::Delta(delta) => delta_text(delta)
            .map(|text| vec![system_reminder(&text)])
            .unwrap_or_default(),
        Attachment::AgentMention { agent } => vec![system_reminder(&format!(
            "The user has expressed a desire to invoke the agent \"{agent}\". Please invoke \
             the agent appropriately, passing in the required context to it."
        ))],
        Attachment::Reminder { text } if !text.trim().is_empty() => vec![system_reminder(text)],
        Attachment::ClaudeCode {
            attachment_type,
            payload,
        } if CLAUDE_CODE_VISIBLE.contains(&attachment_type.as_str()) => claude_code_text(payload)
            .map(|text| vec![system_reminder(&text)])
            .unwrap_or_default(),
        // What Claude Code rendered, exactly (blank texts left out, as every rendering's).
        Attachment::ClaudeCodeRendered { texts, .. } => texts
            .iter()
            .filter(|text| !text.trim().is_empty())
            .cloned()
            .collect(),
        // `UiOnly`, blank reminders, and kinds this version does not know: nothing for the
        // model.
        _ => Vec::new(),
    }
}

/// The Claude Code attachment kinds the model sees (docs/claude-code-transcripts.md#attachments: "rendered into the
/// request: yes"), when the importer kept them untyped. Every other kind — `prompt_snapshot`,
/// `deferred_tools_record`, `command_permissions`, hook successes and permission decisions,
/// reference-only file kinds, and kinds this version does not know — is not sent.
pub const CLAUDE_CODE_VISIBLE: &[&str] = &[
    "environment",
    "model",
    "date",
    "date_change",
    "deferred_tools_delta",
    "agent_listing_delta",
    "mcp_instructions_delta",
    "skill_listing",
    "total_tokens_reminder",
    "silent_turn_reminder",
    "task_reminder",
    "todo_reminder",
    "queued_command",
    "edited_text_file",
    "file",
    "directory",
    "nested_memory",
    "relevant_memories",
    "instructions",
    "session_context",
    "invoked_skills",
    "auto_mode",
    "plan_mode",
    "output_style",
    "hook_additional_context",
    "hook_blocking_error",
];

/// The text of an untyped Claude Code attachment: its text fields in order (`text`,
/// `content`, `prompt`, `snippet` after the `filename`, and the `content` of each entry of
/// `files`, `skills`, `memories`, and the `addedLines`/`addedBlocks` lists); when it has none
/// of those fields, the payload without its `type` as JSON; `None` when there is nothing to
/// show (only blank texts, an empty payload). Claude Code's own wording
/// is not known (docs/claude-code-transcripts.md#attachments); this keeps the content and one reminder per attachment.
fn claude_code_text(payload: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let object = payload.as_object()?;
    let mut parts: Vec<String> = Vec::new();
    let push = |parts: &mut Vec<String>, text: &str| {
        if !text.trim().is_empty() {
            parts.push(text.to_owned());
        }
    };
    if let (Some(file), Some(snippet)) = (
        object.get("filename").and_then(Value::as_str),
        object.get("snippet").and_then(Value::as_str),
    ) {
        push(&mut parts, &format!("{file}:\n{snippet}"));
    }
    for key in ["text", "content", "prompt"] {
        if let Some(text) = object.get(key).and_then(Value::as_str) {
            push(&mut parts, text);
        }
    }
    for key in ["files", "skills", "memories", "addedLines", "addedBlocks"] {
        for entry in object
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match entry {
                Value::String(text) => push(&mut parts, text),
                Value::Object(entry) => {
                    let text = entry
                        .get("content")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    match entry.get("path").and_then(Value::as_str) {
                        Some(path) if !text.trim().is_empty() => {
                            push(&mut parts, &format!("{path}:\n{text}"))
                        }
                        _ => push(&mut parts, text),
                    }
                }
                _ => {}
            }
        }
    }
    const TEXT_KEYS: &[&str] = &[
        "text",
        "content",
        "prompt",
        "snippet",
        "files",
        "skills",
        "memories",
        "addedLines",
        "addedBlocks",
    ];
    if parts.is_empty() && !TEXT_KEYS.iter().any(|k| object.contains_key(*k)) {
        let rest: serde_json::Map<String, Value> = object
            .iter()
            .filter(|(k, _)| k.as_str() != "type")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if rest.is_empty() {
            return None;
        }
        push(&mut parts, &Value::Object(rest).to_string());
    }
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

fn todo_text(items: &[TodoItem]) -> String {
    if items.is_empty() {
        return "Your todo list is currently empty. DO NOT mention this to the user explicitly \
                because they are already aware."
            .to_owned();
    }
    let mut text = String::from(
        "Your todo list has changed or has not been looked at recently. Its current contents:\n",
    );
    for (n, item) in items.iter().enumerate() {
        text.push_str(&format!("\n{}. [{}] {}", n + 1, item.status, item.content));
    }
    text.push_str(
        "\n\nKeep working through it if it applies to the current task. DO NOT mention this \
         reminder to the user explicitly.",
    );
    text
}

/// A delta announcement's text; `None` when it announces nothing.
fn delta_text(delta: &DeltaAnnouncement) -> Option<String> {
    if delta.added.is_empty() && delta.removed.is_empty() {
        return None;
    }
    let set = set_title(&delta.set);
    let mut text = String::new();
    if !delta.added.is_empty() {
        if delta.initial {
            text.push_str(&format!("The following {set} are available:"));
        } else {
            text.push_str(&format!("The following {set} are now also available:"));
        }
        for item in &delta.added {
            if delta.set == MCP_INSTRUCTIONS {
                push_instructions(&mut text, item);
            } else {
                push_delta_item(&mut text, item);
            }
        }
    }
    if !delta.removed.is_empty() {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&format!("The following {set} are no longer available:"));
        for name in &delta.removed {
            text.push_str("\n- ");
            text.push_str(name);
        }
    }
    Some(text)
}

/// The set of server instructions, whose entries are paragraphs rather than one-liners.
const MCP_INSTRUCTIONS: &str = "mcp_instructions";

/// How a set is named to the model: the three sets an agent announces have names; any other
/// set id is shown with its underscores as spaces.
fn set_title(set: &str) -> String {
    match set {
        "deferred_tools" => {
            "deferred tools (their full definitions are loaded when first used)".to_owned()
        }
        "agent_listing" => "agents (sub-agents you can start for a task)".to_owned(),
        MCP_INSTRUCTIONS => "MCP servers' instructions".to_owned(),
        other => other.replace('_', " "),
    }
}

fn push_instructions(text: &mut String, item: &DeltaItem) {
    text.push_str("\n\n## ");
    text.push_str(&item.name);
    if !item.description.is_empty() {
        text.push('\n');
        text.push_str(&item.description);
    }
}

fn push_delta_item(text: &mut String, item: &DeltaItem) {
    text.push_str("\n- ");
    text.push_str(&item.name);
    if !item.description.is_empty() {
        text.push_str(": ");
        text.push_str(&item.description);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn what_claude_code_rendered_is_sent_exactly() {
        let rendered = Attachment::ClaudeCodeRendered {
            attachment_type: "session_context".into(),
            texts: vec![
                "<system-reminder>\nAs you answer…\n</system-reminder>".into(),
                " \n".into(),
                "second".into(),
            ],
            role: Some("user".into()),
            beside_tool_result: false,
            payload: json!({"type": "session_context", "snapshot": {"isGitRepo": true}}),
        };
        assert_eq!(
            render_attachment(&rendered),
            [
                "<system-reminder>\nAs you answer…\n</system-reminder>",
                "second"
            ]
        );
    }

    #[test]
    fn claude_code_attachments_render_only_when_the_model_sees_them() {
        let cc = |payload: serde_json::Value| Attachment::ClaudeCode {
            attachment_type: payload["type"].as_str().unwrap_or_default().to_owned(),
            payload,
        };
        let skills = render_attachment(&cc(json!({"type": "skill_listing",
            "content": "- pdf: read PDFs", "names": ["pdf"]})));
        assert_eq!(
            skills,
            ["<system-reminder>\n- pdf: read PDFs\n</system-reminder>"]
        );
        let edited = render_attachment(&cc(json!({"type": "edited_text_file",
            "filename": "a.rs", "snippet": "1 fn a() {}"})));
        assert_eq!(
            edited,
            ["<system-reminder>\na.rs:\n1 fn a() {}\n</system-reminder>"]
        );
        let instructions = render_attachment(&cc(json!({"type": "instructions",
            "files": [{"path": "CLAUDE.md", "type": "Project", "content": "Use tabs."}]})));
        assert_eq!(
            instructions,
            ["<system-reminder>\nCLAUDE.md:\nUse tabs.\n</system-reminder>"]
        );
        // No text field: the payload as JSON, without its type.
        let context = render_attachment(&cc(json!({"type": "session_context",
            "context": {"gitStatus": "clean"}})));
        assert_eq!(
            context,
            ["<system-reminder>\n{\"context\":{\"gitStatus\":\"clean\"}}\n</system-reminder>"]
        );
        // Never sent: the system-prompt record, bookkeeping, unknown kinds, empty payloads.
        for hidden in [
            json!({"type": "prompt_snapshot", "systemPrompt": ["You are Claude Code."]}),
            json!({"type": "deferred_tools_record", "entries": []}),
            json!({"type": "hook_success", "content": "ok"}),
            json!({"type": "a_kind_from_the_future", "text": "?"}),
            json!({"type": "total_tokens_reminder"}),
            json!({"type": "total_tokens_reminder", "text": "  "}),
            json!("not an object"),
        ] {
            assert!(
                render_attachment(&cc(hidden.clone())).is_empty(),
                "{hidden}"
            );
        }
    }

    fn delta(added: &[(&str, &str)], removed: &[&str], initial: bool) -> Attachment {
        Attachment::Delta(DeltaAnnouncement {
            set: "deferred tools".into(),
            added: added
                .iter()
                .map(|(name, description)| DeltaItem {
                    name: (*name).into(),
                    description: (*description).into(),
                })
                .collect(),
            removed: removed.iter().map(|n| (*n).to_string()).collect(),
            initial,
        })
    }

    #[test]
    fn a_file_mention_renders_as_a_read_call_and_its_result() {
        let texts = render_attachment(&Attachment::File {
            path: "src/\"odd\".rs".into(),
            content: "fn main() {}".into(),
            truncated: true,
        });
        assert_eq!(
            texts,
            [
                "<system-reminder>\nCalled the Read tool with the following input: \
                 {\"file_path\":\"src/\\\"odd\\\".rs\"}\n</system-reminder>",
                "<system-reminder>\nResult of calling the Read tool:\nfn main() {}\n\
                 [truncated: the file is longer than shown]\n</system-reminder>",
            ]
        );
    }

    #[test]
    fn a_directory_renders_as_a_listing() {
        let texts = render_attachment(&Attachment::Directory {
            path: "src".into(),
            entries: vec!["lib.rs".into(), "passes/".into()],
            truncated: false,
        });
        assert_eq!(texts.len(), 2);
        assert!(texts[0].contains(r#"{"path":"src"}"#), "{}", texts[0]);
        assert!(
            texts[1].ends_with("tool:\n- lib.rs\n- passes/\n</system-reminder>"),
            "{}",
            texts[1]
        );
    }

    #[test]
    fn deltas_list_what_was_added_and_removed() {
        let texts = render_attachment(&delta(
            &[("Grep", "search files"), ("Glob", "")],
            &["Ls"],
            false,
        ));
        assert_eq!(
            texts,
            [
                "<system-reminder>\nThe following deferred tools are now also available:\n\
              - Grep: search files\n- Glob\n\nThe following deferred tools are no longer \
              available:\n- Ls\n</system-reminder>"
            ]
        );
        let initial = render_attachment(&delta(&[("Grep", "")], &[], true));
        assert!(initial[0].contains("The following deferred tools are available:\n- Grep"));
        assert!(render_attachment(&delta(&[], &[], true)).is_empty());
    }

    #[test]
    fn every_kind_renders_non_blank_reminders_or_nothing() {
        let kinds = [
            Attachment::NestedInstructions {
                path: "a/AGENTS.md".into(),
                content: "be brief".into(),
            },
            Attachment::QueuedCommand {
                prompt: "also fix b".into(),
            },
            Attachment::TodoReminder { items: vec![] },
            Attachment::TodoReminder {
                items: vec![TodoItem {
                    content: "x".into(),
                    status: "pending".into(),
                }],
            },
            Attachment::TokenUsage { used: 10, total: 5 },
            Attachment::AgentMention {
                agent: "reviewer".into(),
            },
            Attachment::Reminder { text: "hi".into() },
        ];
        for kind in &kinds {
            let texts = render_attachment(kind);
            assert_eq!(texts.len(), 1, "{kind:?}");
            assert!(texts[0].starts_with("<system-reminder>\n"), "{}", texts[0]);
            assert!(texts[0].ends_with("\n</system-reminder>"), "{}", texts[0]);
        }
        assert!(render_attachment(&Attachment::Reminder { text: " \n".into() }).is_empty());
        assert!(render_attachment(&Attachment::UiOnly { label: "x".into() }).is_empty());
    }

    /// The exact model-visible text of every attachment kind, one snapshot each (blocks
    /// separated by a line of dashes; `(nothing)` for kinds the model never sees).
    #[test]
    fn every_kind_renders_exactly_this() {
        let item = |name: &str, description: &str| DeltaItem {
            name: name.into(),
            description: description.into(),
        };
        let announce = |set: &str, added: Vec<DeltaItem>, removed: &[&str], initial| {
            Attachment::Delta(DeltaAnnouncement {
                set: set.into(),
                added,
                removed: removed.iter().map(|r| (*r).to_owned()).collect(),
                initial,
            })
        };
        let cases = [
            (
                "file",
                Attachment::File {
                    path: "src/lib.rs".into(),
                    content: "pub fn answer() -> u32 {\n    42\n}\n".into(),
                    truncated: false,
                },
            ),
            (
                "file_truncated",
                Attachment::File {
                    path: "logs/huge.log".into(),
                    content: "line 1\nline 2".into(),
                    truncated: true,
                },
            ),
            (
                "file_empty",
                Attachment::File {
                    path: "empty.txt".into(),
                    content: String::new(),
                    truncated: false,
                },
            ),
            (
                "directory",
                Attachment::Directory {
                    path: "src".into(),
                    entries: vec!["lib.rs".into(), "passes/".into()],
                    truncated: false,
                },
            ),
            (
                "directory_truncated",
                Attachment::Directory {
                    path: ".".into(),
                    entries: vec!["a.rs".into()],
                    truncated: true,
                },
            ),
            (
                "directory_empty",
                Attachment::Directory {
                    path: "empty".into(),
                    entries: vec![],
                    truncated: false,
                },
            ),
            (
                "nested_instructions",
                Attachment::NestedInstructions {
                    path: "crates/web/AGENTS.md".into(),
                    content: "Run `npm test` before committing.".into(),
                },
            ),
            (
                "date_change",
                Attachment::DateChange {
                    date: "2026-12-01".into(),
                },
            ),
            (
                "queued_command",
                Attachment::QueuedCommand {
                    prompt: "also update the README".into(),
                },
            ),
            (
                "todo_reminder_empty",
                Attachment::TodoReminder { items: vec![] },
            ),
            (
                "todo_reminder",
                Attachment::TodoReminder {
                    items: vec![
                        TodoItem {
                            content: "write the parser".into(),
                            status: "completed".into(),
                        },
                        TodoItem {
                            content: "test it".into(),
                            status: "in_progress".into(),
                        },
                    ],
                },
            ),
            (
                "token_usage",
                Attachment::TokenUsage {
                    used: 51_234,
                    total: 200_000,
                },
            ),
            (
                "deferred_tools_delta_initial",
                announce(
                    "deferred_tools",
                    vec![
                        item("NotebookEdit", "edit Jupyter cells"),
                        item("WebFetch", ""),
                    ],
                    &[],
                    true,
                ),
            ),
            (
                "agent_listing_delta",
                announce(
                    "agent_listing",
                    vec![item("reviewer", "reviews a diff for bugs")],
                    &["planner"],
                    false,
                ),
            ),
            (
                "mcp_instructions_delta",
                announce(
                    "mcp_instructions",
                    vec![item("github", "Use `search_issues` before filing one.")],
                    &["jira"],
                    false,
                ),
            ),
            (
                "custom_delta_removed_only",
                announce("active_plugins", vec![], &["lint", "fmt"], false),
            ),
            ("delta_empty", announce("agent_listing", vec![], &[], true)),
            (
                "agent_mention",
                Attachment::AgentMention {
                    agent: "reviewer".into(),
                },
            ),
            (
                "reminder",
                Attachment::Reminder {
                    text: "Plan mode is on: do not edit files.".into(),
                },
            ),
            (
                "ui_only",
                Attachment::UiOnly {
                    label: "spinner".into(),
                },
            ),
        ];
        for (name, attachment) in &cases {
            let texts = render_attachment(attachment);
            let shown = if texts.is_empty() {
                "(nothing)".to_owned()
            } else {
                texts.join("\n-----\n")
            };
            insta::assert_snapshot!(*name, shown);
        }
    }

    #[test]
    fn rendering_replaces_each_attachment_in_place() {
        let messages = [user("q")];
        let ui = Attachment::UiOnly { label: "x".into() };
        let date = Attachment::DateChange { date: "d".into() };
        let items = vec![
            Item::Draft(drafts(&messages).remove(0)),
            Item::Attachment {
                attachment: &ui,
                origin: 1,
            },
            Item::Attachment {
                attachment: &date,
                origin: 2,
            },
        ];
        let drafts = render_attachments(items);
        assert_eq!(drafts.len(), 2);
        assert_eq!(drafts[1].origin, Some(2));
        assert!(drafts[1].is_user());
    }
}
