//! Shows a run's events as they happen and keeps the tallies of the closing summary: requests,
//! tools (and which started while the model was still streaming, which ran in parallel),
//! compactions, transitions, the terminal reason.

use std::collections::BTreeMap;
use std::time::Instant;

use threadline::message::{AssistantMessage, CompactTrigger, Message, SystemKind, UserMessage};
use threadline::query::{Event, TRANSCRIPT_WARNING, Terminal, Transition};
use threadline::wire::stream_event::ContentDelta;
use threadline::wire::{Content, ContentBlock, StreamEvent};

use crate::output::print_line;
use crate::terminal_text::terminal_safe;

/// How much is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// Every step with its time since the start (the demo).
    Timeline,
    /// The model's text as it streams, tools as one line each (`run`).
    Conversation,
}

/// A compaction seen in the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CompactionSeen {
    pub(crate) trigger: CompactTrigger,
    pub(crate) pre_tokens: u64,
}

/// The tallies of one or more runs.
#[derive(Debug)]
pub(crate) struct Progress {
    style: Style,
    started: Instant,
    streaming: bool,
    in_flight: BTreeMap<String, String>,
    batch: Vec<String>,
    text_open: bool,
    /// Messages a compaction appended (summary, kept tail, re-attached files) since its
    /// boundary; `None` outside a compaction.
    compacted: Option<usize>,
    pub(crate) requests: u32,
    pub(crate) tool_calls: u32,
    pub(crate) tool_errors: u32,
    pub(crate) started_while_streaming: u32,
    pub(crate) parallel_batches: Vec<Vec<String>>,
    pub(crate) compactions: Vec<CompactionSeen>,
    pub(crate) transitions: Vec<Transition>,
    pub(crate) terminal: Option<Terminal>,
    pub(crate) turns: u32,
    pub(crate) warnings: Vec<String>,
    /// The first warning saying that the transcript could not be written: the session is
    /// not fully recorded.
    pub(crate) unrecorded: Option<String>,
}

impl Progress {
    pub(crate) fn new(style: Style) -> Progress {
        Progress {
            style,
            started: Instant::now(),
            streaming: false,
            in_flight: BTreeMap::new(),
            batch: Vec::new(),
            text_open: false,
            compacted: None,
            requests: 0,
            tool_calls: 0,
            tool_errors: 0,
            started_while_streaming: 0,
            parallel_batches: Vec::new(),
            compactions: Vec::new(),
            transitions: Vec::new(),
            terminal: None,
            turns: 0,
            warnings: Vec::new(),
            unrecorded: None,
        }
    }

    fn say(&mut self, line: &str) {
        self.end_text();
        // Lines quote the model (tool inputs, text): nothing in them may drive the terminal.
        let line = terminal_safe(line, false);
        match self.style {
            Style::Timeline => {
                let ms = self.started.elapsed().as_millis();
                print_line(&format!("[{ms:>6} ms] {line}"));
            }
            Style::Conversation => print_line(&format!("  {line}")),
        }
    }

    fn end_text(&mut self) {
        if self.text_open {
            self.text_open = false;
            print_line("");
        }
    }

    /// Takes one event.
    pub(crate) fn on_event(&mut self, event: &Event) {
        match event {
            Event::Request(info) => {
                if let Some(kept) = self.compacted.take() {
                    self.say(&format!(
                        "the history now starts at the summary, followed by {} messages \
                         (the recent tail, re-attached files)",
                        kept.saturating_sub(1)
                    ));
                }
                self.requests += 1;
                self.streaming = true;
                if self.style == Style::Timeline {
                    self.say(&format!(
                        "request {} ({} messages, max_tokens {})",
                        self.requests, info.messages, info.max_tokens
                    ));
                }
            }
            Event::Stream(stream) => self.on_stream(stream),
            Event::ToolStarted { tool_use_id, name } => {
                self.tool_calls += 1;
                let while_streaming = self.streaming;
                if while_streaming {
                    self.started_while_streaming += 1;
                }
                if !self.in_flight.is_empty() {
                    if self.batch.is_empty() {
                        self.batch.extend(self.in_flight.values().cloned());
                    }
                    self.batch.push(name.clone());
                }
                self.in_flight.insert(tool_use_id.clone(), name.clone());
                let when = if while_streaming {
                    "while the model is still streaming"
                } else {
                    "after the response ended"
                };
                let parallel = if self.in_flight.len() > 1 {
                    format!(", {} tools running", self.in_flight.len())
                } else {
                    String::new()
                };
                if self.style == Style::Timeline {
                    self.say(&format!("tool {name} started {when}{parallel}"));
                }
            }
            Event::Message(message) => self.on_message(message),
            Event::Transition(transition) => {
                self.transitions.push(*transition);
                if self.style == Style::Timeline {
                    self.say(&format!("transition: {transition}"));
                }
            }
            Event::Warning(warning) => {
                if self.unrecorded.is_none() && warning.starts_with(TRANSCRIPT_WARNING) {
                    self.unrecorded = Some(warning.clone());
                }
                self.warnings.push(warning.clone());
                self.say(&format!("warning: {warning}"));
            }
            Event::Finished(finished) => {
                self.turns = finished.state.turn_count;
                self.terminal = Some(finished.terminal.clone());
                if self.style == Style::Timeline {
                    self.say(&format!("finished: {}", finished.terminal));
                }
            }
            _ => {}
        }
    }

    fn on_stream(&mut self, event: &StreamEvent) {
        match event {
            StreamEvent::MessageStop(_) => self.streaming = false,
            StreamEvent::ContentBlockDelta(delta) if self.style == Style::Conversation => {
                if let ContentDelta::Text(text) = &delta.delta {
                    self.text_open = true;
                    crate::output::print(&terminal_safe(&text.text, true));
                }
            }
            _ => {}
        }
    }

    fn on_message(&mut self, message: &Message) {
        if let Some(kept) = self.compacted.as_mut()
            && !matches!(message, Message::System(_))
        {
            // The compaction's output: the summary and copies of messages already shown.
            *kept += 1;
            return;
        }
        match message {
            Message::Assistant(assistant) if self.style == Style::Timeline => {
                self.on_response(assistant);
            }
            Message::Assistant(assistant) => {
                for block in &assistant.content {
                    if let ContentBlock::ToolUse(tool_use) = block {
                        let input = tool_use.input.to_string();
                        self.say(&format!("> {}({})", tool_use.name, first_line(&input, 80)));
                    }
                }
            }
            Message::User(user) => self.on_tool_results(user),
            Message::System(system) => {
                if let SystemKind::CompactBoundary {
                    trigger,
                    pre_tokens,
                    ..
                } = &system.kind
                {
                    self.on_compact_boundary(*trigger, *pre_tokens);
                }
            }
            Message::Tombstone(_) if self.style == Style::Timeline => {
                self.say("retracted the cut response (it is asked again with a higher limit)");
            }
            _ => {}
        }
    }

    /// A response on the timeline: its text, a server-side compaction, how it ended.
    fn on_response(&mut self, assistant: &AssistantMessage) {
        for block in &assistant.content {
            match block {
                ContentBlock::Text(text) => {
                    self.say(&format!("model: {}", first_line(&text.text, 100)));
                }
                ContentBlock::Compaction(c) => self.say(&format!(
                    "server-side compaction: the API summarised the conversation ({}); later requests start at this block",
                    c.content.as_deref().map_or_else(
                        || "no summary: a failed compaction, sent back as is".to_owned(),
                        |s| format!("{} characters", s.chars().count())
                    )
                )),
                _ => {}
            }
        }
        if let (Some(stop), Some(usage)) = (&assistant.stop_reason, &assistant.usage) {
            let read = usage.cache_read_input_tokens.unwrap_or(0);
            let context = usage.total_input_tokens();
            self.say(&format!(
                "response ended ({}): {context} tokens in, {read} of them read from the cache",
                stop.as_str()
            ));
        }
    }

    /// The tool results of a user message, one line each; a parallel batch ends when no tool
    /// is left in flight.
    fn on_tool_results(&mut self, user: &UserMessage) {
        for block in &user.content {
            if let ContentBlock::ToolResult(result) = block {
                let name = self
                    .in_flight
                    .remove(&result.tool_use_id)
                    .unwrap_or_else(|| "tool".to_owned());
                let is_error = result.is_error == Some(true);
                if is_error {
                    self.tool_errors += 1;
                }
                let text = match &result.content {
                    Some(Content::Text(text)) => text.clone(),
                    Some(Content::Blocks(blocks)) => blocks
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(t.text.as_str()),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join("\n"),
                    None => String::new(),
                };
                let lines = text.lines().count();
                let status = if is_error { "error" } else { "result" };
                self.say(&format!(
                    "{status} of {name}: {} line{} ({})",
                    lines,
                    if lines == 1 { "" } else { "s" },
                    first_line(&text, 60)
                ));
            }
        }
        if self.in_flight.is_empty() && !self.batch.is_empty() {
            let batch = std::mem::take(&mut self.batch);
            self.parallel_batches.push(batch);
        }
    }

    /// A local compaction's boundary: what follows is its output until the next response.
    fn on_compact_boundary(&mut self, trigger: CompactTrigger, pre_tokens: u64) {
        self.compactions.push(CompactionSeen {
            trigger,
            pre_tokens,
        });
        let kind = match trigger {
            CompactTrigger::Reactive => "reactive compact",
            _ => "autocompact",
        };
        self.say(&format!(
            "{kind}: the context reached ~{pre_tokens} tokens; the model was asked \
             for a summary (a request of its own)"
        ));
        self.compacted = Some(0);
    }

    /// Prints a line of the caller's in the same style.
    pub(crate) fn note(&mut self, line: &str) {
        self.say(line);
    }

    /// Autocompactions seen.
    pub(crate) fn autocompacts(&self) -> usize {
        self.compactions
            .iter()
            .filter(|c| c.trigger == CompactTrigger::Auto)
            .count()
    }

    /// The transitions as `a, b, c`.
    pub(crate) fn transition_names(&self) -> String {
        let names: Vec<&str> = self.transitions.iter().map(|t| t.name()).collect();
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    }

    /// Ends any open line of streamed text.
    pub(crate) fn finish_output(&mut self) {
        self.end_text();
    }
}

/// The first line of `text`, cut at `max` characters.
pub(crate) fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut cut: String = line.chars().take(max).collect();
    if line.chars().count() > max {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_lines_skip_blank_lines_and_are_cut_at_a_character_boundary() {
        assert_eq!(first_line("\n\n  \nhello\nworld", 80), "hello");
        assert_eq!(first_line("ééééé", 3), "ééé…");
        assert_eq!(first_line("", 3), "");
    }

    #[test]
    fn parallel_batches_are_tools_started_while_others_ran() {
        let mut progress = Progress::new(Style::Conversation);
        for (id, name) in [("t1", "LS"), ("t2", "Glob")] {
            progress.on_event(&Event::ToolStarted {
                tool_use_id: id.to_owned(),
                name: name.to_owned(),
            });
        }
        for id in ["t1", "t2"] {
            progress.on_event(&Event::Message(Message::tool_result(
                id,
                Content::Text("ok".to_owned()),
                false,
            )));
        }
        assert_eq!(
            progress.parallel_batches,
            [vec!["LS".to_owned(), "Glob".to_owned()]]
        );
        assert_eq!(progress.tool_calls, 2);
        // A tool alone is no batch.
        progress.on_event(&Event::ToolStarted {
            tool_use_id: "t3".to_owned(),
            name: "Edit".to_owned(),
        });
        progress.on_event(&Event::Message(Message::tool_result(
            "t3",
            Content::Text("ok".to_owned()),
            false,
        )));
        assert_eq!(progress.parallel_batches.len(), 1);
    }
}
