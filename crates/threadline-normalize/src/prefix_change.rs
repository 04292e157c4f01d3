//! What changed, between two requests, in the part of a request a transcript does not show:
//! the tools and system prompt, and the model.
//!
//! A transcript records the messages, not the tools or system prompt the agent sent with
//! them; but some of what it records says they changed. Claude Code's `/mcp`, when it
//! (re)connects a server, re-renders the server's tools and instructions, which sit after the
//! part of the prompt shared across sessions, so everything after that part is new to the
//! prompt cache (the first request after `Reconnected to tidewave.` reads only the
//! cross-session prefix). A response naming another model than the one before it (`/model`)
//! means the request went to another model, whose cache holds nothing of this session.
//!
//! [`PrefixWatch`] reads the messages in order and reports these changes; [`crate::ImpliedRequests`]
//! gives each request the changes seen since the previous one.

use threadline_message::{Message, SystemKind};
use threadline_wire::ContentBlock;

/// A change of what a request sends besides its messages.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PrefixChange {
    /// A local command re-rendered the tool set or the dynamic part of the system prompt
    /// (`/mcp` connecting, reconnecting or disconnecting a server).
    ToolsReloaded {
        /// The command (`/mcp`).
        command: String,
        /// What it printed (`Reconnected to tidewave.`).
        output: String,
    },
    /// The response came from another model than the previous one.
    ModelSwitched {
        /// The previous response's model.
        from: String,
        /// This response's model.
        to: String,
    },
}

/// Reads messages in order and reports the [`PrefixChange`]s they record.
#[derive(Debug, Clone, Default)]
pub struct PrefixWatch {
    /// The last local command named (`/mcp`), until its output.
    command: Option<String>,
    /// The model of the last response.
    model: Option<String>,
}

/// The text between `<tag>` and `</tag>` in `text`.
fn tagged<'t>(text: &'t str, tag: &str) -> Option<&'t str> {
    let open = format!("<{tag}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find(&format!("</{tag}>"))? + start;
    Some(text[start..end].trim())
}

/// Whether `command` printing `output` changed the tool set: `/mcp` reporting a connection
/// change (connected, reconnected, disconnected, failed to reconnect), not a dialog closed
/// without one.
fn reloads_tools(command: &str, output: &str) -> bool {
    command == "/mcp" && output.to_ascii_lowercase().contains("connect")
}

impl PrefixWatch {
    /// A local command's name or output, as user text or a `local_command` record.
    fn text(&mut self, text: &str) -> Option<PrefixChange> {
        if let Some(name) = tagged(text, "command-name") {
            self.command = Some(name.to_owned());
            return None;
        }
        let output = tagged(text, "local-command-stdout")?;
        let command = self.command.take()?;
        reloads_tools(&command, output).then(|| PrefixChange::ToolsReloaded {
            command,
            output: output.to_owned(),
        })
    }

    /// A watch that has seen nothing.
    pub fn new() -> Self {
        PrefixWatch::default()
    }

    /// The change `message` records, if any. A response's model is compared with the
    /// previous response's (API errors and synthetic responses are not model output).
    pub fn observe(&mut self, message: &Message) -> Option<PrefixChange> {
        let mut change = None;
        match message {
            Message::User(u) => {
                for block in &u.content {
                    if let ContentBlock::Text(t) = block {
                        change = self.text(&t.text).or(change);
                    }
                }
            }
            Message::System(s) => {
                if let SystemKind::LocalCommand { content } = &s.kind {
                    change = self.text(content);
                }
            }
            Message::Assistant(a)
                if !a.is_api_error && !a.model.is_empty() && a.model != "<synthetic>" =>
            {
                if let Some(previous) = self.model.replace(a.model.clone())
                    && previous != a.model
                {
                    change = Some(PrefixChange::ModelSwitched {
                        from: previous,
                        to: a.model.clone(),
                    });
                }
            }
            _ => {}
        }
        change
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assistant(model: &str) -> Message {
        Message::assistant_fragment("msg", model, vec![ContentBlock::text("ok")])
    }

    #[test]
    fn an_mcp_reconnect_and_a_model_switch_are_changes() {
        let mut watch = PrefixWatch::new();
        assert_eq!(watch.observe(&assistant("claude-opus-4-6")), None);
        let command = Message::user_text(
            "<command-name>/mcp</command-name>\n  <command-message>mcp</command-message>",
        );
        assert_eq!(watch.observe(&command), None);
        let output = Message::user_text(
            "<local-command-stdout>Reconnected to tidewave.</local-command-stdout>",
        );
        assert_eq!(
            watch.observe(&output),
            Some(PrefixChange::ToolsReloaded {
                command: "/mcp".into(),
                output: "Reconnected to tidewave.".into()
            })
        );
        // The dialog closed without a connection change, as a system record: nothing.
        let dismissed = Message::system(SystemKind::LocalCommand {
            content: "<local-command-stdout>MCP dialog dismissed</local-command-stdout>".into(),
        });
        watch.observe(&Message::system(SystemKind::LocalCommand {
            content: "<command-name>/mcp</command-name>".into(),
        }));
        assert_eq!(watch.observe(&dismissed), None);
        // Another command's output changes nothing.
        watch.observe(&Message::user_text("<command-name>/cost</command-name>"));
        assert_eq!(
            watch.observe(&Message::user_text(
                "<local-command-stdout>Connected: $0.12</local-command-stdout>"
            )),
            None
        );
        assert_eq!(watch.observe(&assistant("claude-opus-4-6")), None);
        assert_eq!(watch.observe(&assistant("<synthetic>")), None);
        assert_eq!(
            watch.observe(&assistant("claude-sonnet-4-6")),
            Some(PrefixChange::ModelSwitched {
                from: "claude-opus-4-6".into(),
                to: "claude-sonnet-4-6".into()
            })
        );
    }
}
