//! The `messages` Claude Code sends next, from a 2.1.3xx transcript's own request records.
//!
//! The anchor is the last request Claude Code recorded for the conversation the import holds
//! (after its last compaction, rebuilt without error). Its messages are exactly what Claude
//! Code sent; what the conversation added after the record (the response, tool results,
//! attachments, the next prompt) is appended the way Claude Code 2.1.328 places it:
//!
//! * the fragments of one response (same `message.id`) are one assistant message, blocks in
//!   record order;
//! * one user message per turn: the tool results in the order their records were written
//!   (the order the tools finished), then the texts of the attachments Claude Code renders
//!   for the user role, in file order, then the prompt; a prompt alone stays a string;
//! * attachments Claude Code renders for the system role (`renderedRole: "system"`) go, their
//!   `<system-reminder>` wrapper removed and joined with a blank line, into one
//!   `role: "system"` message after that user message when the session uses system turns
//!   (its last `prompt_snapshot` says `systemTurns: true`; without one, the anchor holds a
//!   system message, or with no anchor the model table says the model in use takes system
//!   messages or does not document whether it does); otherwise they are user texts like the others, wrapper kept;
//! * a `file` attachment re-read after a compaction sends its first text ("Called the Read
//!   tool …") as a user message of its own before the turn's;
//! * the parts of a turn's user message are joined with newlines: the attachment texts as one
//!   part, then each user record (local command records, the summary, the prompt); every part
//!   but the last ends with a newline, although the records store none;
//! * with no request recorded since the last compaction, every message of the view is
//!   rendered; the effort an earlier request carried on its messages (`per-turn-control`
//!   beta) goes on the first system message, an effort-only one when the first turn has no
//!   system text. A session's first request has no earlier record, so its effort is unknown
//!   and left out;
//! * attachments without rendered texts, UI-only records and API error messages are not
//!   sent.
//!
//! docs/claude-code-transcripts.md ("What Claude Code sends next") has the observations
//! behind each rule.

use serde_json::Value;
use threadline_wire::betas::PER_TURN_CONTROL;
use threadline_wire::{Content, ContentBlock, MessageParam, Role};

use super::ImportResult;
use crate::attachment::Attachment;
use crate::message::Message;
use crate::system::SystemKind;

/// The request messages Claude Code sends next, and where they come from.
#[derive(Debug, Clone, PartialEq)]
pub struct NextRequest {
    /// The messages, in order.
    pub messages: Vec<MessageParam>,
    /// The index in [`ImportResult::requests`] of the recorded request they extend; `None`
    /// when no request was recorded since the last compaction and every message is rendered.
    pub anchor: Option<usize>,
    /// How many of them were rendered after the anchor's (0: the anchor's messages exactly,
    /// the transcript ends at that request).
    pub appended: usize,
}

impl ImportResult {
    /// The messages Claude Code sends next, or `None` when the transcript is not one of
    /// Claude Code 2.1.3xx (no request record, no rendered attachment after its last
    /// compaction): those are left to the normalizer. The rules are in docs/claude-code-transcripts.md ("What Claude Code sends next").
    pub fn next_claude_code_request(&self) -> Option<NextRequest> {
        let system_turns = self.system_turns();
        // The last request after the last compaction whose messages rebuild: found without
        // rebuilding the ones after it, then rebuilt.
        let rebuilds = self.requests.rebuilds();
        let anchor = (0..self.requests.len()).rev().find_map(|i| {
            let request = &self.requests[i];
            if request.before_compaction || !rebuilds[i] {
                return None;
            }
            let messages = self.requests.messages(i)?.ok()?;
            Some((i, request, messages))
        });
        if let Some((anchor, request, mut messages)) = anchor {
            let system_turns =
                system_turns.unwrap_or_else(|| messages.iter().any(|m| m.role == Role::System));
            let since = self.messages.get(request.messages_before..).unwrap_or(&[]);
            let added = render(since, system_turns, None);
            let appended = added.len();
            messages.extend(added);
            return Some(NextRequest {
                messages,
                anchor: Some(anchor),
                appended,
            });
        }
        let rendered_by_claude_code = self.messages.iter().any(|m| {
            matches!(m, Message::Attachment(a)
                if matches!(a.attachment, Attachment::ClaudeCodeRendered { .. }))
        });
        if !rendered_by_claude_code {
            return None;
        }
        // No request since the last compaction: the whole view, and the effort an earlier
        // request of the session carried on its messages, if any.
        let effort = self
            .requests
            .iter()
            .rev()
            .find(|r| r.betas().contains(&PER_TURN_CONTROL))
            .and_then(|r| r.params.get("output_config").cloned());
        let system_turns = system_turns.unwrap_or_else(|| {
            self.model_in_use().is_some_and(|model| {
                // Claude Code sends system turns to every model that takes them, and to
                // those whose documentation does not say (Haiku 5.5).
                let table = threadline_wire::model::ModelTable::builtin();
                let row = table.resolve(model).model();
                row.may_have(threadline_wire::model::Capability::SystemMessages)
            })
        });
        let messages = render(&self.messages, system_turns, effort);
        Some(NextRequest {
            appended: messages.len(),
            messages,
            anchor: None,
        })
    }

    /// The model the conversation talks to: the last `model` attachment's
    /// `identity.modelId` (Claude Code announces it before the first response), else the
    /// last response's model.
    fn model_in_use(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::Attachment(a) => match &a.attachment {
                    Attachment::ClaudeCodeRendered {
                        attachment_type,
                        payload,
                        ..
                    } if attachment_type == "model" => payload
                        .get("identity")
                        .and_then(|i| i.get("modelId"))
                        .and_then(Value::as_str),
                    _ => None,
                },
                _ => None,
            })
            .or_else(|| self.model())
    }

    /// What the last `prompt_snapshot` attachment says about system turns, if any says.
    fn system_turns(&self) -> Option<bool> {
        self.messages.iter().rev().find_map(|m| match m {
            Message::Attachment(a) => match &a.attachment {
                Attachment::ClaudeCode {
                    attachment_type,
                    payload,
                } if attachment_type == "prompt_snapshot" => {
                    payload.get("systemTurns").and_then(Value::as_bool)
                }
                _ => None,
            },
            _ => None,
        })
    }
}

/// A user turn being gathered.
#[derive(Default)]
struct Turn {
    /// Texts sent as user messages of their own before the turn's (the first text of a
    /// re-read `file` attachment).
    leading: Vec<String>,
    results: Vec<ContentBlock>,
    user_texts: Vec<ContentBlock>,
    /// The blocks of each user record of the turn (local command records, the prompt).
    prompt: Vec<Vec<ContentBlock>>,
    system_texts: Vec<String>,
}

impl Turn {
    fn is_empty(&self) -> bool {
        self.leading.is_empty()
            && self.results.is_empty()
            && self.user_texts.is_empty()
            && self.prompt.is_empty()
            && self.system_texts.is_empty()
    }

    /// Ends the turn: its messages go to `out`; `effort`, when given, goes on its system
    /// message (an effort-only one when it has none) and is used up.
    fn flush(&mut self, out: &mut Vec<MessageParam>, effort: &mut Option<Value>) {
        let turn = std::mem::take(self);
        if turn.is_empty() {
            return;
        }
        for text in turn.leading {
            out.push(MessageParam::new(Role::User, Content::Text(text)));
        }
        // A prompt alone, one plain text block, is sent as a string.
        let mut prompt_blocks = turn.prompt.iter().flatten();
        let only_prompt_text = match (prompt_blocks.next(), prompt_blocks.next()) {
            (Some(ContentBlock::Text(t)), None)
                if turn.results.is_empty()
                    && turn.user_texts.is_empty()
                    && t.cache_control.is_none()
                    && t.citations.is_none() =>
            {
                Some(t.text.clone())
            }
            _ => None,
        };
        if let Some(text) = only_prompt_text {
            out.push(MessageParam::new(Role::User, Content::Text(text)));
        } else {
            // Claude Code joins the parts of a turn's message with newlines: the attachment
            // texts as one part, then each user record; every part but the last ends with
            // a newline.
            let mut parts: Vec<Vec<ContentBlock>> = Vec::new();
            if !turn.user_texts.is_empty() {
                parts.push(turn.user_texts);
            }
            parts.extend(turn.prompt.into_iter().filter(|p| !p.is_empty()));
            let count = parts.len();
            let mut blocks = turn.results;
            for (n, mut part) in parts.into_iter().enumerate() {
                if n + 1 < count
                    && let Some(ContentBlock::Text(t)) = part.last_mut()
                    && !t.text.ends_with('\n')
                {
                    t.text.push('\n');
                }
                blocks.extend(part);
            }
            if !blocks.is_empty() {
                out.push(MessageParam::user(blocks));
            }
        }
        let effort = effort.take();
        let content = if turn.system_texts.is_empty() {
            Content::Blocks(Vec::new())
        } else {
            Content::Text(turn.system_texts.join("\n\n"))
        };
        if !turn.system_texts.is_empty() || effort.is_some() {
            let mut system = MessageParam::new(Role::System, content);
            if let Some(effort) = effort {
                system.extra.insert("output_config".to_owned(), effort);
            }
            out.push(system);
        }
    }
}

/// `text` without its `<system-reminder>` wrapper (and the newlines inside it).
fn unwrapped(text: &str) -> &str {
    let trimmed = text.trim_end_matches('\n');
    trimmed
        .strip_prefix("<system-reminder>\n")
        .and_then(|t| t.strip_suffix("\n</system-reminder>"))
        .unwrap_or(text)
}

/// The request messages Claude Code makes of `messages` (the records written after a
/// request, or a whole view); `effort` goes on the first system message.
fn render(
    messages: &[Message],
    system_turns: bool,
    mut effort: Option<Value>,
) -> Vec<MessageParam> {
    let mut out: Vec<MessageParam> = Vec::new();
    let mut turn = Turn::default();
    // The response being joined: its API id.
    let mut response: Option<Option<String>> = None;
    for message in messages {
        match message {
            Message::Assistant(a) if !a.is_api_error => {
                let same =
                    response.as_ref() == Some(&a.api_message_id) && a.api_message_id.is_some();
                if same && turn.is_empty() {
                    if let Some(last) = out.last_mut()
                        && let Content::Blocks(blocks) = &mut last.content
                    {
                        blocks.extend(a.content.iter().cloned());
                    }
                } else {
                    turn.flush(&mut out, &mut effort);
                    out.push(MessageParam::assistant(a.content.clone()));
                }
                response = Some(a.api_message_id.clone());
            }
            Message::User(u) if !u.is_virtual => {
                let (results, rest): (Vec<_>, Vec<_>) = u
                    .content
                    .iter()
                    .cloned()
                    .partition(|b| matches!(b, ContentBlock::ToolResult(_)));
                turn.results.extend(results);
                turn.prompt.push(rest);
            }
            Message::System(s) => {
                if let SystemKind::LocalCommand { content } = &s.kind {
                    turn.prompt.push(vec![ContentBlock::text(content.clone())]);
                }
            }
            Message::Attachment(a) => {
                if let Attachment::ClaudeCodeRendered {
                    texts,
                    role,
                    attachment_type,
                    ..
                } = &a.attachment
                {
                    let mut texts = texts.as_slice();
                    if attachment_type == "file"
                        && let [call, rest @ ..] = texts
                        && !rest.is_empty()
                    {
                        turn.leading.push(call.clone());
                        texts = rest;
                    }
                    if system_turns && role.as_deref() == Some("system") {
                        turn.system_texts
                            .extend(texts.iter().map(|t| unwrapped(t).to_owned()));
                    } else {
                        turn.user_texts
                            .extend(texts.iter().map(|t| ContentBlock::text(t.clone())));
                    }
                }
            }
            _ => {}
        }
    }
    turn.flush(&mut out, &mut effort);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::{ImportOptions, import_claude_code, message_hash};

    fn line(value: Value) -> String {
        let mut text = value.to_string();
        text.push('\n');
        text
    }

    fn chain(uuid: &str, parent: Option<&str>, mut record: Value) -> Value {
        record["uuid"] = json!(uuid);
        record["parentUuid"] = json!(parent);
        record["sessionId"] = json!("s");
        record["timestamp"] = json!("2026-12-02T07:00:00.000Z");
        record
    }

    fn attachment(kind: &str, role: &str, text: &str) -> Value {
        json!({"type": "attachment", "attachment": {"type": kind},
               "rendered": [{"content": format!("<system-reminder>\n{text}\n</system-reminder>\n")}],
               "renderedRole": role})
    }

    /// A session of one recorded request, then a response with a tool call, its result, an
    /// attribution reminder beside it and an environment reminder for the system role.
    fn transcript(system_turns: Option<bool>) -> String {
        let prompt = json!({"role": "user", "content": "Read it."});
        let env =
            json!({"role": "system", "content": "env", "output_config": {"effort": "medium"}});
        let call = json!({"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}});
        let mut text = String::new();
        text += &line(chain(
            "u1",
            None,
            json!({"type": "user", "message": prompt}),
        ));
        text +=
            &line(json!({"type": "api-request-blob", "hash": message_hash(&env), "message": env}));
        text += &line(json!({"type": "api-request", "id": "r1", "keep": 0,
            "params": {"model": "claude-opus-5-5", "max_tokens": 128000},
            "tail": [message_hash(&prompt), message_hash(&env)]}));
        text += &line(chain(
            "a1",
            Some("u1"),
            json!({"type": "assistant", "message":
            {"id": "msg_1", "role": "assistant", "content": [{"type": "text", "text": "I read."}]}}),
        ));
        text += &line(chain(
            "a2",
            Some("a1"),
            json!({"type": "assistant", "message":
            {"id": "msg_1", "role": "assistant", "content": [call]}}),
        ));
        text += &line(chain(
            "r1",
            Some("a2"),
            json!({"type": "user", "message": {"role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]}}),
        ));
        let mut beside = attachment("remote_session_change", "user", "Attribution");
        beside["renderedBesideToolResult"] = json!(true);
        text += &line(chain("t1", Some("r1"), beside));
        text += &line(chain(
            "t2",
            Some("t1"),
            attachment("date", "system", "Today is Wednesday."),
        ));
        let mut snapshot = json!({"type": "attachment", "attachment": {"type": "prompt_snapshot"}});
        if let Some(turns) = system_turns {
            snapshot["attachment"]["systemTurns"] = json!(turns);
        }
        text += &line(chain("t3", Some("t2"), snapshot));
        text
    }

    fn messages(next: &super::NextRequest) -> Vec<Value> {
        next.messages
            .iter()
            .map(|m| serde_json::to_value(m).expect("serializes"))
            .collect()
    }

    #[test]
    fn the_next_request_extends_the_last_recorded_one_as_claude_code_places_it() {
        let imported = import_claude_code(&transcript(Some(true)), &ImportOptions::default());
        let next = imported
            .next_claude_code_request()
            .expect("a recorded request");
        assert_eq!((next.anchor, next.appended), (Some(0), 3));
        assert_eq!(
            messages(&next)[2..],
            [
                json!({"role": "assistant", "content": [{"type": "text", "text": "I read."},
                    {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}]}),
                json!({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"},
                    {"type": "text", "text": "<system-reminder>\nAttribution\n</system-reminder>\n"}]}),
                json!({"role": "system", "content": "Today is Wednesday."}),
            ]
        );
        assert_eq!(
            messages(&next)[1],
            json!({"role": "system", "content": "env", "output_config": {"effort": "medium"}}),
            "the recorded messages are kept exactly"
        );
    }

    #[test]
    fn without_system_turns_system_reminders_are_user_texts_in_file_order() {
        let imported = import_claude_code(&transcript(Some(false)), &ImportOptions::default());
        let next = imported.next_claude_code_request().expect("recorded");
        let last = messages(&next).pop().expect("some");
        assert_eq!(last["role"], "user", "{last}");
        assert_eq!(
            last["content"][2]["text"],
            "<system-reminder>\nToday is Wednesday.\n</system-reminder>\n"
        );
        // No snapshot says: the anchor's system message says system turns are used.
        let imported = import_claude_code(&transcript(None), &ImportOptions::default());
        let next = imported.next_claude_code_request().expect("recorded");
        assert_eq!(messages(&next).last().expect("some")["role"], "system");
    }

    #[test]
    fn a_transcript_ending_at_its_record_is_that_request_and_none_without_records() {
        let text = transcript(Some(true));
        let upto: String = text.lines().take(3).map(|l| format!("{l}\n")).collect();
        let imported = import_claude_code(&upto, &ImportOptions::default());
        let next = imported.next_claude_code_request().expect("recorded");
        assert_eq!(next.appended, 0);
        assert_eq!(next.messages.len(), 2);
        let first: String = text.lines().take(1).map(|l| format!("{l}\n")).collect();
        let imported = import_claude_code(&first, &ImportOptions::default());
        assert_eq!(imported.next_claude_code_request(), None);
    }

    #[test]
    fn a_request_recorded_before_the_last_compaction_is_not_extended() {
        let mut text = transcript(Some(true));
        text += &line(chain(
            "c1",
            None,
            json!({"type": "system", "subtype": "compact_boundary",
            "content": "Conversation compacted", "compactMetadata": {"trigger": "manual", "preTokens": 10}}),
        ));
        text += &line(chain(
            "c2",
            Some("c1"),
            json!({"type": "user", "isCompactSummary": true,
            "message": {"role": "user", "content": "Summary."}}),
        ));
        let imported = import_claude_code(&text, &ImportOptions::default());
        assert!(imported.requests[0].before_compaction);
        assert_eq!(imported.next_claude_code_request(), None);
    }

    // Hostile files, at sizes where a quadratic import takes far longer than a linear one.

    /// Many requests after the last one that rebuilds, each keeping its long list of messages
    /// and adding one that does not parse: the anchor is found without rebuilding each of
    /// them (rebuilding would clone, hash and parse 4·10⁶ messages at this size).
    #[test]
    fn the_anchor_is_found_without_rebuilding_every_request_after_it() {
        const LONG: usize = 2_000;
        const FAILING: usize = 2_000;
        let prompt = json!({"role": "user", "content": "Go"});
        let mut text = line(chain(
            "u1",
            None,
            json!({"type": "user", "message": prompt}),
        ));
        text += &line(json!({"type": "api-request-blob", "hash": "bad",
                             "message": {"role": "robot", "content": 3}}));
        text += &line(json!({"type": "api-request", "id": "r0",
                             "tail": vec![message_hash(&prompt); LONG]}));
        for n in 0..FAILING {
            text += &line(json!({"type": "api-request", "id": format!("r{}", n + 1),
                                 "base": "r0", "keep": LONG, "tail": ["bad"]}));
        }
        let imported = import_claude_code(&text, &ImportOptions::default());
        assert_eq!(imported.requests.len(), FAILING + 1);
        let next = imported
            .next_claude_code_request()
            .expect("a recorded request");
        assert_eq!((next.anchor, next.appended), (Some(0), 0));
        assert_eq!(next.messages.len(), LONG);
    }

    /// Many requests after the last one that rebuilds, each naming one long message and
    /// marking it with a marker it does not take: whether the marked block parses is found
    /// once, not once per request (which would clone, hash and parse 10⁹ bytes at this
    /// size).
    #[test]
    fn the_anchor_is_found_without_parsing_a_marked_message_per_request() {
        const MARKING: usize = 1_000;
        let prompt = json!({"role": "user", "content": "Go"});
        let long =
            json!({"role": "user", "content": [{"type": "text", "text": "x".repeat(1 << 20)}]});
        let mut text = line(chain(
            "u1",
            None,
            json!({"type": "user", "message": prompt}),
        ));
        text += &line(json!({"type": "api-request-blob", "hash": "long", "message": long}));
        text += &line(json!({"type": "api-request", "id": "r0", "tail": [message_hash(&prompt)]}));
        for n in 0..MARKING {
            text += &line(
                json!({"type": "api-request", "id": format!("r{}", n + 1), "tail": ["long"],
                "cacheControl": [{"path": ["messages", 0, "content", 0], "value": 3}]}),
            );
        }
        let imported = import_claude_code(&text, &ImportOptions::default());
        assert!(matches!(
            imported.requests.messages(MARKING),
            Some(Err(super::super::RequestRecordError::BadMessage { .. }))
        ));
        let next = imported
            .next_claude_code_request()
            .expect("a recorded request");
        assert_eq!((next.anchor, next.appended), (Some(0), 0));
        assert_eq!(next.messages.len(), 1);
    }
}
