//! [`Agent::prompt`](crate::Agent::prompt)'s result: the answer's text, what the run used
//! and cost, and how it ended.

use std::collections::HashSet;

use futures::StreamExt as _;
use threadline_message::UsageTotals;
use threadline_message::response_usage::{ResponseUsage, response_key};
use threadline_message::{Message, Record, fold_rewrites};
use threadline_query::{Event, Terminal};
use threadline_wire::ContentBlock;
use threadline_wire::model::ModelTable;

use crate::agent::{AgentRun, RunError};

/// What one [`Agent::prompt`](crate::Agent::prompt) gave: the final text, the tokens and
/// cost of the run's model calls, how the run ended.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Answer {
    /// The text of the run's last response (its text blocks joined with blank lines; empty
    /// when it had none, after a refusal say).
    pub text: String,
    /// Tokens summed over the run's responses, each counted once (the billed figures:
    /// `usage.iterations` included). An autocompact summary's call, not in the history, is
    /// not counted.
    pub usage: UsageTotals,
    /// What those responses cost in US dollars by the agent's model table's prices
    /// (`QueryConfig::models`, the built-in table unless the agent was given another)
    /// ([`ModelTable::cost`]: each response by the model that answered it, the cache
    /// writes and reads at their own prices); 0 for a model the table does not price.
    pub cost: f64,
    /// Why the run ended ([`Terminal::Completed`] when the model finished).
    pub terminal: Terminal,
    /// The tool-using turns the run took.
    pub turns: u32,
    /// The messages the run appended, in order (the input first).
    pub messages: Vec<Message>,
}

impl Answer {
    /// Whether the model finished its answer ([`Terminal::Completed`]).
    pub fn is_complete(&self) -> bool {
        self.terminal == Terminal::Completed
    }
}

/// A prompt found no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    /// The run could not start.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The model call failed (after the service's retries); what the run appended before
    /// stays in the agent's state.
    #[error("the model call failed: {message}")]
    Model {
        /// The error, as one line.
        message: String,
        /// The HTTP status, when there was one.
        status: Option<u16>,
    },
    /// The run's stream ended without its `Finished` event.
    #[error("the run ended without finishing")]
    Unfinished,
}

/// Drives `run` to its end and makes the [`Answer`], priced by `models` (the agent's table).
pub(crate) async fn collect(
    run: Result<AgentRun, RunError>,
    models: threadline_wire::model::SharedModelTable,
) -> Result<Answer, PromptError> {
    let mut run = run?;
    // As the transcript records them: each message appended, each rewrite (a budget
    // preview, a cleared result) with its place in the loop's history.
    let mut records = Vec::new();
    let mut appended = 0;
    let mut finished = None;
    while let Some(event) = run.next().await {
        match event {
            Event::Message(message) => {
                appended += 1;
                records.push(Record::Appended(message));
            }
            Event::Rewritten { index, message } => {
                records.push(Record::Rewritten { at: index, message });
            }
            Event::Finished(end) => finished = Some(end),
            _ => {}
        }
    }
    let finished = finished.ok_or(PromptError::Unfinished)?;
    // The run's messages are the last of the loop's history, which only grows: a place in
    // the history is one among them from `start` on, and a rewrite of a message from before
    // the run changes nothing the answer holds.
    let start = finished.state.messages.len().saturating_sub(appended);
    let messages = fold_rewrites(records.into_iter().filter_map(|record| match record {
        Record::Rewritten { at, message } => Some(Record::Rewritten {
            at: at.checked_sub(start)?,
            message,
        }),
        appended => Some(appended),
    }));
    if let Terminal::ModelError { message, status } = &finished.terminal {
        return Err(PromptError::Model {
            message: message.clone(),
            status: *status,
        });
    }
    let (usage, cost) = usage_and_cost(&messages, &models);
    Ok(Answer {
        text: last_response_text(&messages),
        usage,
        cost,
        terminal: finished.terminal.clone(),
        turns: finished.state.run_turns,
        messages,
    })
}

/// The responses of `messages`, each once (its last fragment's usage), summed and priced.
pub(crate) fn usage_and_cost(messages: &[Message], table: &ModelTable) -> (UsageTotals, f64) {
    let usages = ResponseUsage::of(messages);
    let mut seen = HashSet::new();
    let mut totals = UsageTotals::default();
    let mut cost = 0.0;
    for message in messages {
        let Message::Assistant(assistant) = message else {
            continue;
        };
        let Some(usage) = usages.of_message(message) else {
            continue;
        };
        if let Some(key) = response_key(message)
            && !seen.insert(key)
        {
            continue;
        }
        totals.add_billed(usage);
        cost += table.cost(&assistant.model, usage);
    }
    (totals, cost)
}

/// The text blocks of the last response of `messages` (every fragment sharing its key).
pub(crate) fn last_response_text(messages: &[Message]) -> String {
    let Some(last) = messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant(a) if !a.is_api_error))
    else {
        return String::new();
    };
    let key = response_key(&messages[last]);
    let fragments: Vec<&Message> = match key {
        Some(key) => messages
            .iter()
            .filter(|m| response_key(m) == Some(key))
            .collect(),
        None => vec![&messages[last]],
    };
    let mut texts = Vec::new();
    for fragment in fragments {
        if let Message::Assistant(assistant) = fragment {
            for block in &assistant.content {
                if let ContentBlock::Text(text) = block
                    && !text.text.is_empty()
                {
                    texts.push(text.text.as_str());
                }
            }
        }
    }
    texts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use threadline_wire::Usage;

    use super::*;

    fn fragment(id: &str, text: &str, usage: Option<Usage>) -> Message {
        let mut message =
            Message::assistant_fragment(id, "claude-sonnet-4-5", vec![ContentBlock::text(text)]);
        if let Message::Assistant(a) = &mut message {
            a.usage = usage.map(Box::new);
        }
        message
    }

    /// A rewrite names its place in the loop's history: a message from before the run is not
    /// in the answer (its copy, kept by the run's compaction, stays as it is), and a rewrite
    /// of the run's own message takes that message's place, not its later copy's.
    #[test]
    fn a_rewrite_lands_on_its_place_not_on_a_later_copy() {
        use threadline_query::{Finished, State};
        let before = Message::user_text("from before the run");
        let own = Message::user_text("the run's own");
        let changed = |message: &Message| {
            let mut message = message.clone();
            if let Message::User(user) = &mut message {
                user.content = vec![ContentBlock::text("cleared")];
            }
            message
        };
        // The history held one message; the run appends its own, then copies of both.
        let run_messages = vec![own.clone(), before.clone(), own.clone()];
        let mut state = State::default();
        state.messages = std::iter::once(before.clone())
            .chain(run_messages.iter().cloned())
            .collect();
        let mut events: Vec<Event> = run_messages.into_iter().map(Event::Message).collect();
        events.push(Event::Rewritten {
            index: 0,
            message: changed(&before),
        });
        events.push(Event::Rewritten {
            index: 1,
            message: changed(&own),
        });
        events.push(Event::Finished(Box::new(Finished::new(
            Terminal::Completed,
            state,
        ))));
        let run: AgentRun = futures::stream::iter(events).boxed();
        let answer = futures::executor::block_on(collect(
            Ok(run),
            threadline_wire::model::SharedModelTable::default(),
        ))
        .expect("an answer");
        assert_eq!(answer.messages, [changed(&own), before, own]);
    }

    #[test]
    fn each_response_is_counted_once_and_priced_by_the_table() {
        let first = Usage::new().with_input_tokens(100).with_output_tokens(10);
        let second = Usage::new()
            .with_input_tokens(5)
            .with_output_tokens(20)
            .with_cache_read_input_tokens(1000)
            .with_cache_creation_input_tokens(50);
        let messages = vec![
            Message::user_text("hi"),
            fragment("msg_1", "a", Some(first.clone())),
            fragment("msg_1", "b", Some(first.clone())),
            fragment("msg_2", "done", Some(second.clone())),
        ];
        let table = ModelTable::builtin();
        let (usage, cost) = usage_and_cost(&messages, table);
        assert_eq!(usage.responses, 2);
        assert_eq!(usage.input_tokens, 105);
        assert_eq!(usage.output_tokens, 30);
        assert_eq!(usage.cache_read_input_tokens, 1000);
        assert_eq!(usage.cache_creation_input_tokens, 50);
        let expected =
            table.cost("claude-sonnet-4-5", &first) + table.cost("claude-sonnet-4-5", &second);
        assert!(
            (cost - expected).abs() < 1e-12 && cost > 0.0,
            "{cost} vs {expected}"
        );
    }

    #[test]
    fn the_text_is_the_last_response_s_every_fragment() {
        let messages = vec![
            fragment("msg_1", "thinking about it", None),
            Message::user_text("tool result stand-in"),
            fragment("msg_2", "Part one.", None),
            fragment("msg_2", "Part two.", None),
        ];
        assert_eq!(last_response_text(&messages), "Part one.\n\nPart two.");
        assert_eq!(last_response_text(&[Message::user_text("x")]), "");
    }
}
