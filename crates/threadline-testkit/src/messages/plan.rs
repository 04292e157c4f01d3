//! Turn plans: what one user turn of a valid session holds, drawn by proptest and built into
//! messages by [`build_turn`] with deterministic headers.
//!
//! The plans carry only what varies (texts, which blocks, how a response was streamed); ids
//! are assigned at build time, so every tool use has a unique id and every result answers the
//! use before it, whatever the plans are — the session is valid by construction and shrinks
//! to simpler valid sessions.

use proptest::prelude::*;
use serde_json::{Value, json};
use threadline_message::{
    Attachment, CompactTrigger, DeltaAnnouncement, DeltaItem, Level, Message, SystemKind, TodoItem,
    tool_result_block,
};
use threadline_wire::{Content, ContentBlock};

use super::{
    SessionBuilder, document, image, redacted_thinking, server_tool_use, text, tool_use,
    web_search_result,
};

/// What the user starts a turn with.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    /// Typed text.
    Text(String),
    /// Typed text and a pasted image.
    TextAndImage(String),
    /// Typed text and a document.
    TextAndDocument(String),
    /// A pasted image alone.
    ImageOnly,
    /// A local command (`/cost`): its output is a `local_command` system message.
    LocalCommand(String),
    /// The compaction summary that starts a compacted session (after a compact boundary).
    CompactSummary(String),
}

/// The thinking at the start of a response.
#[derive(Debug, Clone, PartialEq)]
pub enum ThinkingPlan {
    /// Signed, summarized thinking.
    Signed(String),
    /// Signed thinking whose text was omitted (`display: "omitted"`).
    Omitted,
    /// Redacted thinking.
    Redacted,
}

/// How a response was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One assistant message.
    Whole,
    /// One assistant fragment per block, all sharing the API message id.
    Fragments,
    /// One fragment per block, each tool use's result recorded right after its fragment
    /// (streaming tool execution).
    Interleaved,
}

/// How the results of a response's tool uses were recorded (ignored by
/// [`Layout::Interleaved`], which records one message per result).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultsLayout {
    /// All results in one user message.
    OneMessage,
    /// One user message per result.
    OnePerTool,
}

/// What a tool returned.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Text output.
    Text(String),
    /// Text and an image (a screenshot, an image file read).
    TextAndImage(String),
    /// The tool failed.
    Error(String),
    /// The user denied the call.
    Denied,
}

/// One client tool call and its outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolPlan {
    /// Index into the tool names (`Bash`, `Read`, …).
    pub tool: usize,
    /// What it returned.
    pub outcome: Outcome,
}

/// Something recorded after a step's results.
#[derive(Debug, Clone, PartialEq)]
pub enum After {
    /// An attachment for the next request.
    Attachment(Attachment),
    /// A meta user message (hidden from the transcript view).
    Meta(String),
    /// A session event (never `local_command`).
    Event(SystemKind),
    /// A tool-use summary of the step's calls.
    Summary,
}

/// One model response that calls tools, and what follows it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepPlan {
    /// Thinking first.
    pub thinking: Option<ThinkingPlan>,
    /// Text before the calls.
    pub text: Option<String>,
    /// A web search (server tool use and its result, in the response).
    pub web_search: Option<String>,
    /// The client tool calls (at least one).
    pub tools: Vec<ToolPlan>,
    /// How the response was recorded.
    pub layout: Layout,
    /// How the results were recorded.
    pub results: ResultsLayout,
    /// Whether tool progress was recorded before the results.
    pub progress: bool,
    /// Whether a partial response was retracted (tombstone) before this one.
    pub retracted_partial: bool,
    /// Whether the API failed once (and was retried) before this response.
    pub api_retry: bool,
    /// What follows the results.
    pub after: Vec<After>,
}

/// The response that ends a turn.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerPlan {
    /// Thinking first.
    pub thinking: Option<ThinkingPlan>,
    /// The answer (never ends with whitespace).
    pub text: String,
    /// Whether it was recorded as fragments.
    pub fragmented: bool,
}

/// One user turn.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnPlan {
    /// Whether the session was compacted before this turn (compact boundary + summary).
    pub compacted: bool,
    /// Attachments recorded before the prompt (date change, todo reminder, …).
    pub before: Vec<Attachment>,
    /// A meta user message before the prompt (a command caveat).
    pub caveat: Option<String>,
    /// The prompt.
    pub prompt: Prompt,
    /// Attachments for what the prompt mentions (files, directories, agents).
    pub mentions: Vec<Attachment>,
    /// Whether a virtual (UI-only) user message follows the prompt.
    pub virtual_note: bool,
    /// The tool-calling responses.
    pub steps: Vec<StepPlan>,
    /// The final answer, if the turn got one.
    pub answer: Option<AnswerPlan>,
    /// Events at the end of the turn (turn duration, stop hooks, …).
    pub end: Vec<SystemKind>,
}

const TOOLS: &[&str] = &[
    "Bash",
    "Read",
    "Edit",
    "Grep",
    "Glob",
    "Write",
    "TodoWrite",
    "Task",
    "WebFetch",
];

fn tool_input(tool: usize, n: usize) -> Value {
    match TOOLS[tool % TOOLS.len()] {
        "Bash" => json!({"command": "cargo test -p threadline-wire", "description": "Run tests"}),
        "Read" => json!({"file_path": format!("/work/src/module_{n}.rs")}),
        "Edit" => json!({"file_path": "/work/src/lib.rs", "old_string": "a", "new_string": "b"}),
        "Grep" => json!({"pattern": "fn normalize", "path": "crates"}),
        "Glob" => json!({"pattern": "**/*.rs"}),
        "Write" => json!({"file_path": "/work/NOTES.md", "content": "# Notes\n"}),
        "TodoWrite" => {
            json!({"todos": [{"content": "write tests", "status": "in_progress", "activeForm": "Writing tests"}]})
        }
        "Task" => {
            json!({"description": "Explore", "prompt": "Find the parser", "subagent_type": "Explore"})
        }
        _ => json!({"url": "https://example.com/docs", "prompt": "Summarize"}),
    }
}

/// User-typed text: never blank; sometimes multi-line, non-ASCII, or with surrounding
/// whitespace.
pub fn prompt_text() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[A-Za-z][A-Za-z0-9 ,.?!'()-]{0,80}",
        1 => ("[a-z_]{1,10}", "[a-z ]{1,30}").prop_map(|(f, body)| format!(
            "Why does `{f}` fail?\n\n```\n{body}\n```\n"
        )),
        1 => "[A-Za-z]{1,20}".prop_map(|t| format!("  {t} \n")),
        1 => "\\PC{1,12}".prop_map(|s| if s.trim().is_empty() { format!("?{s}") } else { s }),
        1 => Just("Pourquoi ça échoue ? 🦀 消息 \"quoted\" \\ back".to_owned()),
    ]
}

/// Model text: never blank, never ending with whitespace.
fn model_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[A-Z][a-zA-Z0-9 ,'`]{0,80}".prop_map(|s| format!("{}.", s.trim_end())),
        1 => Just("Here is the plan:\n\n1. Read the parser\n2. Fix the bug".to_owned()),
    ]
}

fn tool_output() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-zA-Z0-9_./:]{1,16}( [a-zA-Z0-9_./:]{1,16}){0,6}", 1..10)
        .prop_map(|lines| lines.join("\n"))
}

fn thinking_plan() -> impl Strategy<Value = ThinkingPlan> {
    prop_oneof![
        4 => "[a-z][a-z ,]{0,60}".prop_map(ThinkingPlan::Signed),
        1 => Just(ThinkingPlan::Omitted),
        1 => Just(ThinkingPlan::Redacted),
    ]
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        6 => tool_output().prop_map(Outcome::Text),
        1 => tool_output().prop_map(Outcome::TextAndImage),
        2 => "[A-Za-z ]{1,40}".prop_map(|t| Outcome::Error(format!("<tool_use_error>{t}</tool_use_error>"))),
        1 => Just(Outcome::Denied),
    ]
}

fn tool_plan() -> impl Strategy<Value = ToolPlan> {
    (0..TOOLS.len(), outcome()).prop_map(|(tool, outcome)| ToolPlan { tool, outcome })
}

fn path() -> impl Strategy<Value = String> {
    "(src|crates/[a-z]{1,8}/src|docs)/[a-z_]{1,10}\\.(rs|md|toml)"
}

/// Attachments an `@`-mention produces: files (sometimes empty or cut), directories, nested
/// instructions, agents.
fn mention_attachment() -> impl Strategy<Value = Attachment> {
    prop_oneof![
        3 => (path(), prop_oneof![tool_output(), Just(String::new())], any::<bool>())
            .prop_map(|(path, content, truncated)| Attachment::File { path, content, truncated }),
        1 => (path(), prop::collection::vec("[a-z_]{1,10}(/|\\.rs)", 0..5), any::<bool>())
            .prop_map(|(path, entries, truncated)| Attachment::Directory { path, entries, truncated }),
        1 => (path(), tool_output()).prop_map(|(path, content)| Attachment::NestedInstructions { path, content }),
        1 => "[a-z-]{1,12}".prop_map(|agent| Attachment::AgentMention { agent }),
    ]
}

/// Attachments the agent adds on its own between requests.
fn context_attachment() -> impl Strategy<Value = Attachment> {
    let item = (
        "[a-z ]{1,20}",
        prop_oneof![Just("pending"), Just("in_progress"), Just("completed")],
    )
        .prop_map(|(content, status)| TodoItem {
            content,
            status: status.to_owned(),
        });
    let delta_item = ("[a-z_]{1,12}", "[a-z ]{0,20}")
        .prop_map(|(name, description)| DeltaItem { name, description });
    prop_oneof![
        1 => (1u32..=28).prop_map(|d| Attachment::DateChange { date: format!("2026-02-{d:02}") }),
        1 => prompt_text().prop_map(|prompt| Attachment::QueuedCommand { prompt }),
        2 => prop::collection::vec(item, 0..4).prop_map(|items| Attachment::TodoReminder { items }),
        1 => (0u64..200_000).prop_map(|used| Attachment::TokenUsage { used, total: 200_000 }),
        1 => (
            prop_oneof![Just("deferred_tools"), Just("agent_listing"), Just("mcp_instructions")],
            prop::collection::vec(delta_item, 0..3),
            prop::collection::vec("[a-z_]{1,12}", 0..2),
            any::<bool>(),
        )
            .prop_map(|(set, added, removed, initial)| Attachment::Delta(DeltaAnnouncement {
                set: set.to_owned(),
                added,
                removed,
                initial,
            })),
        2 => model_text().prop_map(|text| Attachment::Reminder { text }),
        1 => "[a-z ]{1,20}".prop_map(|label| Attachment::UiOnly { label }),
        1 => (path(), tool_output()).prop_map(|(path, content)| Attachment::NestedInstructions { path, content }),
    ]
}

/// Any attachment, every kind.
pub fn attachment() -> impl Strategy<Value = Attachment> {
    prop_oneof![mention_attachment(), context_attachment()]
}

/// Session events other than `local_command` (which is a prompt).
fn event() -> impl Strategy<Value = SystemKind> {
    prop_oneof![
        (
            "[a-z ]{1,30}",
            prop_oneof![Just(Level::Info), Just(Level::Warning), Just(Level::Error)]
        )
            .prop_map(|(content, level)| SystemKind::Informational { level, content }),
        (1u64..200_000).prop_map(|pre_tokens| SystemKind::CompactBoundary {
            trigger: CompactTrigger::Auto,
            pre_tokens,
            last_message_id: None,
        }),
        prop::collection::vec("toolu_[0-9]{6}", 0..3).prop_map(|ids| {
            SystemKind::MicrocompactBoundary {
                cleared_tool_use_ids: ids,
                tokens_saved: 1234,
            }
        }),
        "[a-z ]{1,20}".prop_map(|content| SystemKind::PermissionRetry { content }),
        (("[a-z ]{0,20}"), any::<bool>()).prop_map(|(content, prevented_continuation)| {
            SystemKind::StopHookSummary {
                content,
                prevented_continuation,
            }
        }),
        (1u64..600_000).prop_map(|duration_ms| SystemKind::TurnDuration { duration_ms }),
    ]
}

fn after() -> impl Strategy<Value = After> {
    prop_oneof![
        3 => context_attachment().prop_map(After::Attachment),
        1 => mention_attachment().prop_map(After::Attachment),
        1 => "[A-Za-z ]{1,30}".prop_map(|t| After::Meta(format!("<system-reminder>{t}</system-reminder>"))),
        1 => event().prop_map(After::Event),
        1 => Just(After::Summary),
    ]
}

fn step_plan() -> impl Strategy<Value = StepPlan> {
    (
        prop::option::weighted(0.4, thinking_plan()),
        prop::option::weighted(0.5, model_text()),
        prop::option::weighted(0.1, "[a-z ]{1,20}"),
        prop::collection::vec(tool_plan(), 1..4),
        prop_oneof![
            2 => Just(Layout::Whole),
            2 => Just(Layout::Fragments),
            1 => Just(Layout::Interleaved)
        ],
        prop_oneof![
            Just(ResultsLayout::OneMessage),
            Just(ResultsLayout::OnePerTool)
        ],
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.05),
        prop::bool::weighted(0.05),
        prop::collection::vec(after(), 0..3),
    )
        .prop_map(
            |(
                thinking,
                text,
                web_search,
                tools,
                layout,
                results,
                progress,
                retracted_partial,
                api_retry,
                after,
            )| StepPlan {
                thinking,
                text,
                web_search,
                tools,
                layout,
                results,
                progress,
                retracted_partial,
                api_retry,
                after,
            },
        )
}

fn prompt() -> impl Strategy<Value = Prompt> {
    prop_oneof![
        12 => prompt_text().prop_map(Prompt::Text),
        1 => prompt_text().prop_map(Prompt::TextAndImage),
        1 => prompt_text().prop_map(Prompt::TextAndDocument),
        1 => Just(Prompt::ImageOnly),
        1 => "[a-z ]{1,30}".prop_map(Prompt::LocalCommand),
    ]
}

fn answer_plan() -> impl Strategy<Value = AnswerPlan> {
    (
        prop::option::weighted(0.3, thinking_plan()),
        model_text(),
        any::<bool>(),
    )
        .prop_map(|(thinking, text, fragmented)| AnswerPlan {
            thinking,
            text,
            fragmented,
        })
}

/// One turn of a realistic session.
pub fn turn_plan() -> impl Strategy<Value = TurnPlan> {
    (
        prop::bool::weighted(0.05),
        prop::collection::vec(context_attachment(), 0..2),
        prop::option::weighted(0.1, "[A-Za-z ]{1,30}"),
        (prompt(), prompt_text()),
        prop::collection::vec(mention_attachment(), 0..2),
        prop::bool::weighted(0.05),
        prop::collection::vec(step_plan(), 0..4),
        prop::option::weighted(0.85, answer_plan()),
        prop::collection::vec(event(), 0..2),
    )
        .prop_map(
            |(
                compacted,
                before,
                caveat,
                (prompt, summary),
                mentions,
                virtual_note,
                steps,
                answer,
                end,
            )| TurnPlan {
                compacted,
                before,
                caveat: caveat.map(|c| format!("Caveat: {c}")),
                prompt: if compacted {
                    Prompt::CompactSummary(summary)
                } else {
                    prompt
                },
                mentions,
                virtual_note,
                steps,
                answer,
                end,
            },
        )
}

/// Builds a session from its turns, with a fresh [`SessionBuilder`].
pub fn build(turns: &[TurnPlan]) -> Vec<Message> {
    let mut builder = SessionBuilder::new();
    for turn in turns {
        build_turn(&mut builder, turn);
    }
    builder.into_messages()
}

/// Appends one turn's messages to `b`.
pub fn build_turn(b: &mut SessionBuilder, turn: &TurnPlan) {
    if turn.compacted {
        b.system(SystemKind::CompactBoundary {
            trigger: CompactTrigger::Auto,
            pre_tokens: 150_000,
            last_message_id: b.messages().last().map(|m| m.id().clone()),
        });
    }
    for attachment in &turn.before {
        b.attachment(attachment.clone());
    }
    if let Some(caveat) = &turn.caveat {
        b.meta(caveat.clone());
    }
    match &turn.prompt {
        Prompt::Text(t) => {
            b.user(t.clone());
        }
        Prompt::TextAndImage(t) => {
            b.push(Message::user_blocks(vec![text(t.clone()), image()]));
        }
        Prompt::TextAndDocument(t) => {
            b.push(Message::user_blocks(vec![
                document("line one\nline two"),
                text(t.clone()),
            ]));
        }
        Prompt::ImageOnly => {
            b.push(Message::user_blocks(vec![image()]));
        }
        Prompt::LocalCommand(output) => {
            b.system(SystemKind::LocalCommand {
                content: format!("<local-command-stdout>{output}</local-command-stdout>"),
            });
        }
        Prompt::CompactSummary(summary) => {
            b.push(Message::compact_summary(format!(
                "This session is being continued from a previous conversation. {summary}"
            )));
        }
    }
    for attachment in &turn.mentions {
        b.attachment(attachment.clone());
    }
    if turn.virtual_note {
        let id = b.user("(shown in the UI only)");
        if let Some(Message::User(user)) = b.messages_mut().last_mut() {
            debug_assert_eq!(user.header.id, id);
            user.is_virtual = true;
        }
    }
    for step in &turn.steps {
        build_step(b, step);
    }
    if let Some(answer) = &turn.answer {
        let api = b.response_id();
        let mut blocks = Vec::new();
        if let Some(t) = &answer.thinking {
            blocks.push(thinking_block(b, t));
        }
        blocks.push(text(answer.text.clone()));
        if answer.fragmented {
            for block in blocks {
                b.assistant(&api, vec![block]);
            }
        } else {
            b.assistant(&api, blocks);
        }
    }
    for kind in &turn.end {
        b.system(kind.clone());
    }
}

fn thinking_block(b: &mut SessionBuilder, plan: &ThinkingPlan) -> ContentBlock {
    match plan {
        ThinkingPlan::Signed(t) => b.thinking(t.clone()),
        ThinkingPlan::Omitted => b.thinking(""),
        ThinkingPlan::Redacted => {
            redacted_thinking("EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw")
        }
    }
}

fn result_block(id: &str, outcome: &Outcome) -> ContentBlock {
    match outcome {
        Outcome::Text(t) => tool_result_block(id, Content::Text(t.clone()), false),
        Outcome::TextAndImage(t) => {
            tool_result_block(id, Content::Blocks(vec![text(t.clone()), image()]), false)
        }
        Outcome::Error(t) => tool_result_block(id, Content::Text(t.clone()), true),
        Outcome::Denied => tool_result_block(
            id,
            Content::Text(
                "The user doesn't want to proceed with this tool use. The tool use was rejected."
                    .to_owned(),
            ),
            true,
        ),
    }
}

fn push_result(b: &mut SessionBuilder, blocks: Vec<ContentBlock>, raw: Option<Value>) {
    b.push(Message::user_blocks(blocks));
    if let Some(Message::User(user)) = b.messages_mut().last_mut() {
        user.tool_use_result = raw;
    }
}

fn build_step(b: &mut SessionBuilder, step: &StepPlan) {
    if step.api_retry {
        b.system(SystemKind::ApiError {
            message: "Overloaded".to_owned(),
            attempt: 1,
            max_attempts: 10,
            retry_in_ms: Some(500),
        });
    }
    if step.retracted_partial {
        let partial = b.response_id();
        let id = b.assistant(&partial, vec![text("Let me look at")]);
        b.push(Message::tombstone(id));
    }
    let api = b.response_id();
    let mut head = Vec::new();
    if let Some(t) = &step.thinking {
        head.push(thinking_block(b, t));
    }
    if let Some(t) = &step.text {
        head.push(text(t.clone()));
    }
    if let Some(query) = &step.web_search {
        let id = b.server_tool_use_id();
        head.push(server_tool_use(&id, query));
        head.push(web_search_result(&id));
    }
    let calls: Vec<(String, &ToolPlan)> = step
        .tools
        .iter()
        .map(|plan| (b.tool_use_id(), plan))
        .collect();
    let uses: Vec<ContentBlock> = calls
        .iter()
        .enumerate()
        .map(|(n, (id, plan))| {
            tool_use(id, TOOLS[plan.tool % TOOLS.len()], tool_input(plan.tool, n))
        })
        .collect();
    let raw = |plan: &ToolPlan| match &plan.outcome {
        Outcome::Text(t) | Outcome::TextAndImage(t) => {
            Some(json!({"stdout": t, "interrupted": false}))
        }
        Outcome::Error(t) => Some(Value::String(t.clone())),
        Outcome::Denied => None,
    };
    match step.layout {
        Layout::Whole | Layout::Fragments => {
            if step.layout == Layout::Whole {
                head.extend(uses);
                b.assistant(&api, head);
            } else {
                for block in head.into_iter().chain(uses) {
                    b.assistant(&api, vec![block]);
                }
            }
            if step.progress {
                for (id, _) in &calls {
                    b.push(Message::progress(
                        id.clone(),
                        json!({"type": "bash_progress", "output": "Compiling"}),
                    ));
                }
            }
            match step.results {
                ResultsLayout::OneMessage => {
                    let blocks = calls
                        .iter()
                        .map(|(id, plan)| result_block(id, &plan.outcome))
                        .collect();
                    push_result(b, blocks, None);
                }
                ResultsLayout::OnePerTool => {
                    for (id, plan) in &calls {
                        push_result(b, vec![result_block(id, &plan.outcome)], raw(plan));
                    }
                }
            }
        }
        Layout::Interleaved => {
            for block in head {
                b.assistant(&api, vec![block]);
            }
            for ((id, plan), use_block) in calls.iter().zip(uses) {
                b.assistant(&api, vec![use_block]);
                if step.progress {
                    b.push(Message::progress(
                        id.clone(),
                        json!({"type": "bash_progress", "output": "Running"}),
                    ));
                }
                push_result(b, vec![result_block(id, &plan.outcome)], raw(plan));
            }
        }
    }
    for after in &step.after {
        match after {
            After::Attachment(a) => {
                b.attachment(a.clone());
            }
            After::Meta(t) => {
                b.meta(t.clone());
            }
            After::Event(kind) => {
                b.system(kind.clone());
            }
            After::Summary => {
                let ids: Vec<String> = calls.iter().map(|(id, _)| id.clone()).collect();
                b.push(Message::tool_use_summary(
                    format!("Ran {} tools", ids.len()),
                    ids,
                ));
            }
        }
    }
}
