//! What a session listing shows about a file: its ids, first time, title, tag and usage,
//! gathered from every record of the file in one pass before the records are placed.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::graph::{is_sidechain, uuid};
use super::lines::Record;
use super::records::{bool_field, str_field, u64_field};
use crate::response_usage::UsageTotals;

/// The longest first prompt used as a title, in characters (as the Agent SDK does).
pub const FIRST_PROMPT_CHARS: usize = 200;

/// Adds one response's `usage` record (Claude Code's JSON) to `totals`.
fn add_record_usage(totals: &mut UsageTotals, usage: &Map<String, Value>) {
    let field = |key| u64_field(Some(usage), key).unwrap_or(0);
    totals.responses += 1;
    totals.input_tokens = totals.input_tokens.saturating_add(field("input_tokens"));
    totals.output_tokens = totals.output_tokens.saturating_add(field("output_tokens"));
    let mut creation = field("cache_creation_input_tokens");
    if creation == 0 {
        // Before 2.1.152 the flat field could be 0 while the breakdown was not.
        let breakdown = usage.get("cache_creation").and_then(Value::as_object);
        creation = u64_field(breakdown, "ephemeral_5m_input_tokens")
            .unwrap_or(0)
            .saturating_add(u64_field(breakdown, "ephemeral_1h_input_tokens").unwrap_or(0));
    }
    totals.cache_creation_input_tokens =
        totals.cache_creation_input_tokens.saturating_add(creation);
    totals.cache_read_input_tokens = totals
        .cache_read_input_tokens
        .saturating_add(field("cache_read_input_tokens"));
}

/// What the records of a file say about its session, whichever chain they are on.
///
/// Gathered from every record in file order, before the main chain is chosen: the metadata
/// records (`custom-title`, `ai-title`, `last-prompt`, `tag`, `summary`) are outside the
/// graph, and the usage of a session is what all its responses cost, on abandoned branches
/// and before compactions too.
///
/// ```
/// use threadline_message::claude_code::{ImportOptions, import_claude_code};
///
/// let transcript = concat!(
///     r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s1","timestamp":"2026-01-01T10:00:00Z","message":{"role":"user","content":"fix the build"}}"#, "\n",
///     r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s1","requestId":"req_1","message":{"id":"msg_1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"…","signature":"c2ln"}],"usage":{"input_tokens":10,"output_tokens":6}}}"#, "\n",
///     r#"{"type":"assistant","uuid":"a2","parentUuid":"a1","sessionId":"s1","requestId":"req_1","message":{"id":"msg_1","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Done."}],"usage":{"input_tokens":10,"output_tokens":148}}}"#, "\n",
///     r#"{"type":"custom-title","customTitle":"CI fixes","sessionId":"s1"}"#, "\n",
/// );
/// let imported = import_claude_code(transcript, &ImportOptions::default());
/// assert_eq!(imported.title(), Some("CI fixes"));
/// assert_eq!(imported.session.first_prompt.as_deref(), Some("fix the build"));
/// assert_eq!(imported.session_id(), Some("s1"));
/// assert_eq!(imported.first_timestamp(), Some("2026-01-01T10:00:00Z"));
/// assert_eq!(imported.model(), Some("claude-sonnet-4-5"));
/// // Two fragments of one response: counted once, with the last fragment's output.
/// let usage = imported.usage();
/// assert_eq!((usage.responses, usage.input_tokens, usage.output_tokens), (1, 10, 148));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionInfo {
    /// The first non-empty `sessionId` in the file. A sub-agent's file carries its parent's
    /// session id, and a continued session can carry another session's: a caller that has
    /// the file's path should prefer a UUID file stem (`<sessionId>.jsonl`).
    pub session_id: Option<String>,
    /// The first `agentId` in the file (set in 2.x sub-agent files).
    pub agent_id: Option<String>,
    /// The first `timestamp` in file order (the Agent SDK's `created_at`). File order is not
    /// time order: this is the first written, not necessarily the earliest.
    pub first_timestamp: Option<String>,
    /// The first `cwd` in the file.
    pub cwd: Option<String>,
    /// The `message.model` of the last assistant record of the file's own conversation in
    /// file order (API error records and `<synthetic>` ones passed over), on whatever branch,
    /// before or after a compaction.
    pub model: Option<String>,
    /// The last Claude Code `version` in the file.
    pub version: Option<String>,
    /// Every user and assistant record is a sidechain: the file is a sub-agent's own
    /// conversation, imported as the main chain.
    pub all_sidechain: bool,
    /// The last non-blank `customTitle` (`/rename`).
    pub custom_title: Option<String>,
    /// The last non-blank `aiTitle`.
    pub ai_title: Option<String>,
    /// The last non-blank `lastPrompt`.
    pub last_prompt: Option<String>,
    /// The last non-blank `summary` record's text (which may name a leaf of another file).
    pub summary: Option<String>,
    /// The last `tag`; `None` when there is none or the last one cleared it (`""`).
    pub tag: Option<String>,
    /// The first prompt the user typed (see [`SessionInfo::title`]), trimmed, at most
    /// [`FIRST_PROMPT_CHARS`] characters; when the user typed none, the first slash command
    /// (`/init`), whose expanded prompt is meta text.
    pub first_prompt: Option<String>,
    /// The usage of the file's own conversation (its non-sidechain records, or all of them
    /// in a sub-agent's file), every branch, before and after compactions: one entry per
    /// `requestId` (else `message.id`), the last fragment's usage (earlier fragments carry a
    /// streaming placeholder `output_tokens`); `isApiErrorMessage` records never count.
    pub usage: UsageTotals,
    /// The same for the inline sidechains (1.x sub-agents written into the parent's file).
    pub sidechain_usage: UsageTotals,
}

impl SessionInfo {
    /// The session's title, as the Agent SDK picks it: the last custom title, else the last
    /// AI title, else the last prompt, else the last summary, else the first typed prompt.
    pub fn title(&self) -> Option<&str> {
        [
            &self.custom_title,
            &self.ai_title,
            &self.last_prompt,
            &self.summary,
            &self.first_prompt,
        ]
        .into_iter()
        .find_map(|t| t.as_deref())
    }

    /// Gathers the information of `records` (in file order).
    pub(super) fn gather(records: &[Record], all_sidechain: bool) -> SessionInfo {
        let mut info = SessionInfo {
            all_sidechain,
            ..SessionInfo::default()
        };
        // Usage per response key, last fragment wins; `true` for sidechain responses.
        let mut usage: HashMap<(bool, String), &Map<String, Value>> = HashMap::new();
        let mut unkeyed: Vec<(bool, &Map<String, Value>)> = Vec::new();
        let mut order: Vec<(bool, String)> = Vec::new();
        let mut first_command: Option<String> = None;
        for Record { object, .. } in records {
            let text = |key| str_field(object, key).filter(|s| !s.trim().is_empty());
            let first = |slot: &mut Option<String>, key| {
                if slot.is_none() {
                    *slot = text(key).map(str::to_owned);
                }
            };
            first(&mut info.session_id, "sessionId");
            first(&mut info.agent_id, "agentId");
            first(&mut info.first_timestamp, "timestamp");
            first(&mut info.cwd, "cwd");
            if let Some(version) = text("version") {
                info.version = Some(version.to_owned());
            }
            let side = !all_sidechain && is_sidechain(object);
            match str_field(object, "type") {
                Some("custom-title") => replace(&mut info.custom_title, text("customTitle")),
                Some("ai-title") => replace(&mut info.ai_title, text("aiTitle")),
                Some("last-prompt") => replace(&mut info.last_prompt, text("lastPrompt")),
                Some("summary") => replace(&mut info.summary, text("summary")),
                Some("tag") => {
                    if let Some(tag) = str_field(object, "tag") {
                        info.tag = (!tag.trim().is_empty()).then(|| tag.to_owned());
                    }
                }
                Some("user") if info.first_prompt.is_none() && !side => {
                    info.first_prompt = typed_prompt(object);
                    if first_command.is_none() {
                        first_command = command_name(object);
                    }
                }
                Some("assistant") if !bool_field(object, "isApiErrorMessage") => {
                    let message = object.get("message").and_then(Value::as_object);
                    let model = message.and_then(|m| str_field(m, "model"));
                    if model == Some("<synthetic>") {
                        continue;
                    }
                    if let (Some(model), false) = (model.filter(|m| !m.is_empty()), side) {
                        info.model = Some(model.to_owned());
                    }
                    let Some(record_usage) = message
                        .and_then(|m| m.get("usage"))
                        .and_then(Value::as_object)
                    else {
                        continue;
                    };
                    let key = str_field(object, "requestId")
                        .or_else(|| message.and_then(|m| str_field(m, "id")))
                        .filter(|k| !k.is_empty());
                    match key {
                        Some(key) => {
                            let key = (side, key.to_owned());
                            if usage.insert(key.clone(), record_usage).is_none() {
                                order.push(key);
                            }
                        }
                        None => unkeyed.push((side, record_usage)),
                    }
                }
                _ => {}
            }
        }
        let mut add = |side: bool, record_usage: &Map<String, Value>| {
            if side {
                add_record_usage(&mut info.sidechain_usage, record_usage);
            } else {
                add_record_usage(&mut info.usage, record_usage);
            }
        };
        for key in &order {
            if let Some(record_usage) = usage.get(key) {
                add(key.0, record_usage);
            }
        }
        for (side, record_usage) in unkeyed {
            add(side, record_usage);
        }
        if info.first_prompt.is_none() {
            info.first_prompt = first_command;
        }
        info
    }
}

fn replace(slot: &mut Option<String>, value: Option<&str>) {
    if let Some(value) = value {
        *slot = Some(value.to_owned());
    }
}

/// Texts Claude Code writes as user records that the user did not type (the Agent SDK's
/// `_SKIP_FIRST_PROMPT_PATTERN`, plus the slash-command records described in
/// docs/claude-code-transcripts.md#local-commands-and-interrupts).
const NOT_TYPED: &[&str] = &[
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "Caveat: The messages below were generated by the user while running local commands",
    "<command-name>",
    "<command-message>",
    "<session-start-hook>",
    "<tick>",
    "<goal>",
    "<system-reminder>",
    "[Request interrupted by user",
];

/// Whether `text` is harness text rather than a typed prompt.
pub(super) fn is_harness_text(text: &str) -> bool {
    let text = text.trim();
    text.is_empty()
        || NOT_TYPED.iter().any(|p| text.starts_with(p))
        || ["ide_opened_file", "ide_selection"].iter().any(|tag| {
            text.starts_with(&format!("<{tag}>")) && text.ends_with(&format!("</{tag}>"))
        })
}

/// The prompt a user record holds, if the user typed it: not meta, not a compact summary,
/// not harness text; its first typed text, trimmed and cut to [`FIRST_PROMPT_CHARS`].
fn typed_prompt(object: &Map<String, Value>) -> Option<String> {
    if uuid(object).is_none()
        || bool_field(object, "isMeta")
        || bool_field(object, "isCompactSummary")
    {
        return None;
    }
    let content = object.get("message")?.get("content")?;
    let text = match content {
        Value::String(text) => Some(text.as_str()),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .find(|t| !is_harness_text(t)),
        _ => None,
    }?;
    (!is_harness_text(text)).then(|| text.trim().chars().take(FIRST_PROMPT_CHARS).collect())
}

/// The `/command` of a slash-command record (`<command-name>/init</command-name>`).
fn command_name(object: &Map<String, Value>) -> Option<String> {
    if bool_field(object, "isMeta") {
        return None;
    }
    let text = object.get("message")?.get("content")?.as_str()?;
    let start = text.find("<command-name>")? + "<command-name>".len();
    let end = start + text[start..].find("</command-name>")?;
    let name = text[start..end].trim();
    (!name.is_empty()).then(|| name.chars().take(FIRST_PROMPT_CHARS).collect())
}
