//! The settings of every layer together ([`Compaction`]): what a loop's context policy reads
//! to decide which layer runs, and when. The decisions themselves are the crate's
//! ([`Thresholds`], [`CompactionMode::choose`]); a loop adapter (`threadline-query`'s
//! `CompactionPolicy`, feature `compact`) only wires them in.

use std::path::PathBuf;
use std::sync::Arc;

use threadline_wire::model::Model;
use threadline_wire::request::{ContextEdit, ContextManagement};

use crate::autocompact::AutocompactOptions;
use crate::budget::BudgetOptions;
use crate::microcompact::MicrocompactOptions;
use crate::server::{CompactionMode, ServerCompaction};
use crate::tail::TailOptions;
use crate::thresholds::Thresholds;
use threadline_wire::service::CountTokens;

/// How an agent keeps its context under the model's window.
///
/// ```
/// use threadline_compact::{Compaction, Thresholds};
/// use threadline_wire::model::ModelTable;
///
/// let model = ModelTable::builtin().resolve("claude-sonnet-4-5").model();
/// assert_eq!(Compaction::default().thresholds(model).autocompact, 167_000);
/// let small = Compaction::default().autocompact_at(4_000);
/// assert_eq!(small.thresholds(model), Thresholds::with_autocompact(4_000));
/// assert!(!Compaction::off().enabled);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Compaction {
    /// Whether any layer runs.
    pub enabled: bool,
    /// Autocompact when the context reaches this many tokens (default: the model's
    /// threshold, `window − min(max_output, 20k) − 13k`).
    pub autocompact_at: Option<u64>,
    /// The tool-result budget.
    pub budget: BudgetOptions,
    /// Where results over the budget are saved (default: kept in memory).
    pub side_dir: Option<PathBuf>,
    /// Time-based microcompact (`None`: off).
    pub microcompact: Option<MicrocompactOptions>,
    /// The summary's tail and re-attachments.
    pub autocompact: AutocompactOptions,
    /// Counts the request exactly (the API's `count_tokens`) once the estimate is within
    /// [`EXACT_COUNT_BAND`](crate::EXACT_COUNT_BAND) of the autocompact threshold; the count
    /// decides ([`Thresholds::autocompact_due`]). `None` (the default): the estimate decides
    /// alone.
    pub token_counter: Option<SharedTokenCounter>,
    /// Local, server-side or both ([`CompactionMode::choose`]: the server only where the
    /// model supports it, the local autocompact wherever the server does not run).
    pub mode: CompactionMode,
    /// The server-side edit's settings (used when [`Compaction::mode`] asks for the server).
    pub server: ServerCompaction,
}

/// A [`CountTokens`] a policy can share across runs (and show in `Debug`).
#[derive(Clone)]
pub struct SharedTokenCounter(Arc<dyn CountTokens + Send + Sync>);

impl SharedTokenCounter {
    /// Shares `counter`.
    pub fn new(counter: impl CountTokens + Send + Sync + 'static) -> SharedTokenCounter {
        SharedTokenCounter(Arc::new(counter))
    }
}

impl CountTokens for SharedTokenCounter {
    fn count_tokens(
        &self,
        request: threadline_wire::CountTokensRequest,
    ) -> threadline_wire::service::CountFuture<'_> {
        self.0.count_tokens(request)
    }
}

impl std::fmt::Debug for SharedTokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedTokenCounter(..)")
    }
}

impl Default for Compaction {
    fn default() -> Self {
        Compaction {
            enabled: true,
            autocompact_at: None,
            budget: BudgetOptions::default(),
            side_dir: None,
            microcompact: Some(MicrocompactOptions::default()),
            autocompact: AutocompactOptions::default(),
            token_counter: None,
            mode: CompactionMode::Local,
            server: ServerCompaction::default(),
        }
    }
}

impl Compaction {
    /// No compaction at all (a loop without a context policy).
    pub fn off() -> Compaction {
        Compaction {
            enabled: false,
            ..Compaction::default()
        }
    }

    /// Server-side compaction (`compact_20260112`) with `server`'s settings where the model
    /// supports it, instead of the local autocompact; the local autocompact where it does
    /// not. The other local layers (budget, microcompact) stay.
    pub fn server(server: ServerCompaction) -> Compaction {
        Compaction {
            mode: CompactionMode::Server,
            server,
            ..Compaction::default()
        }
    }

    /// These settings with another mode (local, server, both or on demand), the server
    /// settings kept (their `instructions` also serve on-demand compaction).
    pub fn with_mode(mut self, mode: CompactionMode) -> Compaction {
        self.mode = mode;
        self
    }

    /// These settings with another mode (local, server or both) and server settings.
    pub fn with_server(mut self, mode: CompactionMode, server: ServerCompaction) -> Compaction {
        self.mode = mode;
        self.server = server;
        self
    }

    /// The `context_management` every request carries for `model` (`None` when the server
    /// does not compact for it).
    pub fn context_management(&self, model: &Model) -> Option<ContextManagement> {
        if !self.enabled || !self.mode.choose(model).server {
            return None;
        }
        self.server.context_management(model)
    }

    /// The `context_management` of a request for `model` whose caller asked for `caller`'s
    /// edits: the caller's edits stay, in their order (`clear_thinking` first, …), and the
    /// compaction edit, when the server compacts for `model`, replaces any earlier one, after
    /// them. `caller` unchanged when the server does not compact.
    pub fn context_management_with(
        &self,
        model: &Model,
        caller: Option<ContextManagement>,
    ) -> Option<ContextManagement> {
        let Some(management) = self.context_management(model) else {
            return caller;
        };
        match caller {
            Some(mut existing) => {
                existing
                    .edits
                    .retain(|e| !matches!(e, ContextEdit::Compact(_)));
                existing.edits.extend(management.edits);
                Some(existing)
            }
            None => Some(management),
        }
    }

    /// Whether the local autocompact runs for `model` (enabled, and the mode keeps it there).
    pub fn local_autocompact(&self, model: &Model) -> bool {
        self.enabled && self.mode.choose(model).local
    }

    /// The time-based microcompact's settings for `model`: `None` when compaction is off,
    /// the layer is off, or `model` binds thinking to its prefix (clearing a result already
    /// sent would invalidate every later thinking block, [`crate::binding`]).
    pub fn local_microcompact(&self, model: &Model) -> Option<&MicrocompactOptions> {
        self.microcompact
            .as_ref()
            .filter(|_| self.enabled && crate::binding::local_edits_allowed(model))
    }

    /// Autocompact at `tokens` instead of the model's threshold (small windows, demos).
    pub fn autocompact_at(mut self, tokens: u64) -> Compaction {
        self.autocompact_at = Some(tokens);
        self
    }

    /// The verbatim tail kept after a summary.
    pub fn with_tail(mut self, tail: TailOptions) -> Compaction {
        self.autocompact.tail = tail;
        self
    }

    /// Saves results over the budget under `dir`.
    pub fn with_side_dir(mut self, dir: impl Into<PathBuf>) -> Compaction {
        self.side_dir = Some(dir.into());
        self
    }

    /// Counts the request exactly with `counter` near the autocompact threshold (see
    /// [`Compaction::token_counter`]); a failed count leaves the decision to the estimate.
    pub fn with_token_counter(
        mut self,
        counter: impl CountTokens + Send + Sync + 'static,
    ) -> Compaction {
        self.token_counter = Some(SharedTokenCounter::new(counter));
        self
    }

    /// The thresholds for `model`: [`Compaction::autocompact_at`] when set, else the model's.
    pub fn thresholds(&self, model: &Model) -> Thresholds {
        Thresholds::for_model_or(model, self.autocompact_at)
    }
}

#[cfg(test)]
mod tests {
    use threadline_wire::model::ModelTable;

    use super::*;

    #[test]
    fn the_local_autocompact_follows_the_mode_and_the_switch() {
        let model = ModelTable::builtin().resolve("claude-sonnet-4-5").model();
        assert!(Compaction::default().local_autocompact(model));
        assert!(!Compaction::off().local_autocompact(model));
        assert_eq!(Compaction::off().context_management(model), None);
        assert_eq!(Compaction::default().context_management(model), None);
    }

    #[test]
    fn the_microcompact_never_edits_the_past_of_a_binding_model() {
        let table = ModelTable::builtin();
        let free = table.resolve("claude-sonnet-4-5").model();
        let bound = table.resolve("claude-opus-5-5").model();
        assert!(Compaction::default().local_microcompact(free).is_some());
        assert!(Compaction::default().local_microcompact(bound).is_none());
        assert!(Compaction::off().local_microcompact(free).is_none());
    }

    #[test]
    fn the_callers_edits_stay_and_the_compaction_edit_comes_last() {
        use threadline_wire::request::{ClearThinkingEdit, CompactEdit};
        let model = ModelTable::builtin().resolve("claude-sonnet-4-6").model();
        let clear = ContextEdit::ClearThinking(ClearThinkingEdit::new());
        let old = ContextEdit::Compact(CompactEdit::new().with_instructions("old".to_owned()));
        let caller = ContextManagement::new(vec![old, clear.clone()]);
        let server = ServerCompaction::default();
        let merged = Compaction::server(server.clone())
            .context_management_with(model, Some(caller.clone()))
            .expect("the server compacts for this model");
        assert_eq!(merged.edits, [clear, ContextEdit::Compact(server.edit())]);
        // Without server compaction the caller's edits go as given.
        let local = Compaction::default().context_management_with(model, Some(caller.clone()));
        assert_eq!(local, Some(caller));
        assert_eq!(
            Compaction::default().context_management_with(model, None),
            None
        );
        let alone = Compaction::server(server.clone()).context_management_with(model, None);
        assert_eq!(alone, server.context_management(model));
    }
}
