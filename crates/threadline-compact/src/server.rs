//! Server-side compaction: the `compact_20260112` context edit, and the choice between it and
//! the local autocompact.
//!
//! With the edit, the API itself summarises the conversation once a request's input reaches
//! the trigger: the answer starts with a `compaction` block (kept byte-identical and sent
//! back; the API ignores everything before it) and `usage.iterations` bills the summary's
//! pass. The model named in the request writes the summary, so only models whose row of the
//! table has [`Feature::ServerCompaction`] get the edit. The request then needs the
//! `compact-2026-01-12` beta, which `threadline_wire::betas` derives from the body.
//!
//! ```
//! use threadline_compact::server::{CompactionMode, ServerCompaction};
//! use threadline_wire::MessagesRequest;
//! use threadline_wire::model::ModelTable;
//!
//! let table = ModelTable::builtin();
//! let server = ServerCompaction::default().with_trigger(60_000);
//! let mut request = MessagesRequest::new("claude-sonnet-4-6", 1024, Vec::new());
//! assert!(server.apply(&mut request, table.resolve("claude-sonnet-4-6").model()));
//! assert_eq!(
//!     serde_json::to_value(&request.context_management)?,
//!     serde_json::json!({"edits": [{"type": "compact_20260112",
//!         "trigger": {"type": "input_tokens", "value": 60000}, "pause_after_compaction": false}]}),
//! );
//! // Haiku 4.5 cannot compact server-side: the local autocompact stays in charge.
//! let haiku = table.resolve("claude-haiku-4-5").model();
//! let chosen = CompactionMode::Server.choose(haiku);
//! assert!(chosen.local && !chosen.server);
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde_json::json;
use threadline_wire::MessagesRequest;
use threadline_wire::model::{Feature, Model};
use threadline_wire::request::{CompactEdit, ContextEdit, ContextManagement};

/// The smallest trigger the API accepts (documented; a smaller one is a 400).
pub const MIN_TRIGGER_INPUT_TOKENS: u64 = 50_000;
/// The API's default trigger.
pub const DEFAULT_TRIGGER_INPUT_TOKENS: u64 = 150_000;

/// The `compact_20260112` edit's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerCompaction {
    /// Compact when a request's input reaches this many tokens (at least
    /// [`MIN_TRIGGER_INPUT_TOKENS`]; default [`DEFAULT_TRIGGER_INPUT_TOKENS`]).
    pub trigger_input_tokens: u64,
    /// Replaces the API's summarisation prompt (`None`: the API's own).
    pub instructions: Option<String>,
    /// Stop with `stop_reason: compaction` right after the summary (the loop continues the
    /// turn: `Transition::ServerCompactionPause`).
    pub pause_after_compaction: bool,
    /// On-demand compaction ([`CompactionMode::OnDemand`]) summarizes only the older part
    /// and keeps the recent turns verbatim after the block, thinking included (from the
    /// prompt that starts the tail the local autocompact would keep,
    /// [`keep_recent_cut`](crate::on_demand::keep_recent_cut)): the API's keep-recent-turns.
    /// Off by default: the whole history is summarized.
    pub keep_recent_turns: bool,
}

impl Default for ServerCompaction {
    fn default() -> Self {
        ServerCompaction {
            trigger_input_tokens: DEFAULT_TRIGGER_INPUT_TOKENS,
            instructions: None,
            pause_after_compaction: false,
            keep_recent_turns: false,
        }
    }
}

impl ServerCompaction {
    /// Compacts at `tokens` of input, raised to [`MIN_TRIGGER_INPUT_TOKENS`] if lower (the
    /// API refuses less).
    pub fn with_trigger(mut self, tokens: u64) -> Self {
        self.trigger_input_tokens = tokens.max(MIN_TRIGGER_INPUT_TOKENS);
        self
    }

    /// With summarisation instructions (they replace the API's prompt).
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Keeping the recent turns verbatim after an on-demand compaction's block, or not
    /// ([`ServerCompaction::keep_recent_turns`]).
    pub fn keeping_recent_turns(mut self, keep: bool) -> Self {
        self.keep_recent_turns = keep;
        self
    }

    /// Pausing (`stop_reason: compaction`) after each summary, or not.
    pub fn pausing(mut self, pause: bool) -> Self {
        self.pause_after_compaction = pause;
        self
    }

    /// The edit (its trigger never under [`MIN_TRIGGER_INPUT_TOKENS`]).
    pub fn edit(&self) -> CompactEdit {
        let mut edit = CompactEdit::new()
            .with_trigger(json!({"type": "input_tokens",
                "value": self.trigger_input_tokens.max(MIN_TRIGGER_INPUT_TOKENS)}))
            .with_pause_after_compaction(self.pause_after_compaction);
        edit.instructions = self.instructions.clone();
        edit
    }

    /// The `context_management` carrying only this edit, when `model` supports it.
    pub fn context_management(&self, model: &Model) -> Option<ContextManagement> {
        model
            .supports(Feature::ServerCompaction)
            .then(|| ContextManagement::new(vec![ContextEdit::Compact(self.edit())]))
    }

    /// Adds the edit to `request` (replacing an earlier `compact_20260112` edit, after the
    /// other edits) when `model` supports it; whether it did. The other edits are kept.
    pub fn apply(&self, request: &mut MessagesRequest, model: &Model) -> bool {
        if !model.supports(Feature::ServerCompaction) {
            return false;
        }
        let management = request
            .context_management
            .get_or_insert_with(|| ContextManagement::new(Vec::new()));
        management
            .edits
            .retain(|e| !matches!(e, ContextEdit::Compact(_)));
        management.edits.push(ContextEdit::Compact(self.edit()));
        true
    }
}

/// Which compaction the agent asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CompactionMode {
    /// The local layers only (autocompact writes the summary with a model call).
    #[default]
    Local,
    /// Server-side compaction where the model supports it; the local autocompact where it
    /// does not.
    Server,
    /// Both: the server compacts at its trigger, the local autocompact stays as the safety
    /// net at its own (higher) threshold.
    Both,
    /// On-demand compaction (`compact-2026-09-04`) where the model supports it: at the
    /// autocompact threshold the API writes the summary as a signed block
    /// ([`crate::on_demand`]); the local autocompact where it does not, and whenever the API
    /// gives no summary.
    OnDemand,
}

/// What runs for one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Chosen {
    /// The local autocompact runs.
    pub local: bool,
    /// Requests carry the `compact_20260112` edit.
    pub server: bool,
    /// The autocompact threshold sends an on-demand compaction request first.
    pub on_demand: bool,
}

impl CompactionMode {
    /// What runs for `model`: the server only where the model supports it, the local
    /// autocompact whenever the server does not run.
    pub fn choose(self, model: &Model) -> Chosen {
        let supported = model.supports(Feature::ServerCompaction);
        match self {
            CompactionMode::Local => Chosen {
                local: true,
                server: false,
                on_demand: false,
            },
            CompactionMode::Server => Chosen {
                local: !supported,
                server: supported,
                on_demand: false,
            },
            CompactionMode::Both => Chosen {
                local: true,
                server: supported,
                on_demand: false,
            },
            CompactionMode::OnDemand => Chosen {
                local: true,
                server: false,
                on_demand: crate::on_demand::supported(model),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_wire::model::ModelTable;
    use threadline_wire::request::ClearThinkingEdit;

    #[test]
    fn the_trigger_never_goes_under_the_minimum_and_other_edits_stay() {
        let server = ServerCompaction::default()
            .with_trigger(10)
            .with_instructions("No tools.")
            .pausing(true);
        assert_eq!(server.trigger_input_tokens, MIN_TRIGGER_INPUT_TOKENS);
        let model = ModelTable::builtin().resolve("claude-sonnet-4-6").model();
        let mut request = MessagesRequest::new("claude-sonnet-4-6", 1024, Vec::new());
        request.context_management = Some(ContextManagement::new(vec![
            ContextEdit::ClearThinking(ClearThinkingEdit::new()),
            ContextEdit::Compact(CompactEdit::new()),
        ]));
        assert!(server.apply(&mut request, model));
        assert!(server.apply(&mut request, model));
        assert_eq!(
            serde_json::to_value(&request.context_management).expect("serializes"),
            json!({"edits": [{"type": "clear_thinking_20251015"},
                {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50000},
                 "pause_after_compaction": true, "instructions": "No tools."}]})
        );
        assert_eq!(
            threadline_wire::betas::required(&request),
            vec![
                threadline_wire::betas::CONTEXT_MANAGEMENT,
                threadline_wire::betas::COMPACT
            ]
        );
    }

    #[test]
    fn a_model_without_the_feature_gets_no_edit_and_keeps_local() {
        let table = ModelTable::builtin();
        let haiku = table.resolve("claude-haiku-4-5").model();
        let sonnet = table.resolve("claude-sonnet-4-6").model();
        let mut request = MessagesRequest::new("claude-haiku-4-5", 1024, Vec::new());
        assert!(!ServerCompaction::default().apply(&mut request, haiku));
        assert_eq!(request.context_management, None);
        assert_eq!(ServerCompaction::default().context_management(haiku), None);
        let both = |local, server| Chosen {
            local,
            server,
            on_demand: false,
        };
        assert_eq!(CompactionMode::Local.choose(sonnet), both(true, false));
        assert_eq!(CompactionMode::Server.choose(sonnet), both(false, true));
        assert_eq!(CompactionMode::Server.choose(haiku), both(true, false));
        assert_eq!(CompactionMode::Both.choose(sonnet), both(true, true));
        assert_eq!(CompactionMode::Both.choose(haiku), both(true, false));
        // On demand where the row says so, the local autocompact as the fallback everywhere.
        let opus = table.resolve("claude-opus-5-5").model();
        let on_demand = CompactionMode::OnDemand.choose(opus);
        assert!(on_demand.on_demand && on_demand.local && !on_demand.server);
        assert_eq!(CompactionMode::OnDemand.choose(haiku), both(true, false));
    }
}
