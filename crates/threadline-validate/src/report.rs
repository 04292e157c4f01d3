//! Where a violation points, and the collector that orders what the checks report.

use super::{Report, Rule, ValidateOptions, Violation};
use threadline_wire::model::{Capability, Model};

/// A place in the request, both as sent (for [`Violation::path`]) and as the API names it after
/// merging consecutive same-role messages (for the message text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Loc {
    /// A top-level parameter; the number orders parameters among themselves.
    Param(&'static str, usize),
    /// `tools.N`.
    Tool(usize),
    /// `tool_choice`.
    ToolChoice,
    /// `system` (a string) or `system.N` (a block).
    System(Option<usize>),
    /// `messages` itself.
    Messages,
    /// `messages.N`: `msg` as sent, `turn` after merging.
    Message { msg: usize, turn: usize },
    /// A content block: `messages.N.content[.M][.content.K]` as sent; `messages.T.content.B
    /// [.content.K]` after merging. `block` is `None` for string content.
    Block {
        msg: usize,
        block: Option<usize>,
        nested: Option<usize>,
        turn: usize,
        merged: usize,
    },
    /// The top-level `cache_control`.
    TopCache,
}

impl Loc {
    /// The path in the request as sent.
    pub(super) fn path(&self) -> String {
        match *self {
            Loc::Param(name, _) => name.to_owned(),
            Loc::Tool(n) => format!("tools.{n}"),
            Loc::ToolChoice => "tool_choice".to_owned(),
            Loc::System(None) => "system".to_owned(),
            Loc::System(Some(n)) => format!("system.{n}"),
            Loc::Messages => "messages".to_owned(),
            Loc::Message { msg, .. } => format!("messages.{msg}"),
            Loc::Block {
                msg, block, nested, ..
            } => {
                let mut path = format!("messages.{msg}.content");
                if let Some(block) = block {
                    path.push_str(&format!(".{block}"));
                }
                if let Some(nested) = nested {
                    path.push_str(&format!(".content.{nested}"));
                }
                path
            }
            Loc::TopCache => "cache_control".to_owned(),
        }
    }

    /// The path as the API writes it in its messages (merged message and block indices).
    pub(super) fn api(&self) -> String {
        match *self {
            Loc::Message { turn, .. } => format!("messages.{turn}"),
            Loc::Block {
                nested,
                turn,
                merged,
                ..
            } => match nested {
                Some(nested) => format!("messages.{turn}.content.{merged}.content.{nested}"),
                None => format!("messages.{turn}.content.{merged}"),
            },
            Loc::System(Some(n)) => format!("system.{n}"),
            _ => self.path(),
        }
    }

    /// The place of the `index`-th block nested in this block's `content`.
    pub(super) fn nested(&self, index: usize) -> Loc {
        match *self {
            Loc::Block {
                msg,
                block,
                turn,
                merged,
                ..
            } => Loc::Block {
                msg,
                block,
                nested: Some(index),
                turn,
                merged,
            },
            other => other,
        }
    }

    /// The message-level place of the message holding this block.
    pub(super) fn message(&self) -> Loc {
        match *self {
            Loc::Block { msg, turn, .. } => Loc::Message { msg, turn },
            other => other,
        }
    }

    /// The path of this place's `cache_control.ttl`, as sent and as the API names it.
    pub(super) fn ttl_paths(&self) -> (String, String) {
        match self {
            Loc::TopCache => (
                "cache_control.ttl".to_owned(),
                "cache_control.ttl".to_owned(),
            ),
            _ => (
                self.field("cache_control.ttl"),
                format!("{}.cache_control.ttl", self.api()),
            ),
        }
    }

    /// The path of a field of this place, as sent (`messages.1.content.0` + `text`).
    pub(super) fn field(&self, field: &str) -> String {
        format!("{}.{field}", self.path())
    }

    /// The sort key: request order (parameters, tools, tool_choice, system, messages by
    /// original index, then the top-level cache marker); a message-level place sorts before
    /// its blocks.
    fn key(&self) -> (u8, usize, usize, usize) {
        match *self {
            Loc::Param(_, order) => (0, order, 0, 0),
            Loc::Tool(n) => (1, n, 0, 0),
            Loc::ToolChoice => (2, 0, 0, 0),
            Loc::System(n) => (3, n.map_or(0, |n| n + 1), 0, 0),
            Loc::Messages => (4, 0, 0, 0),
            Loc::Message { msg, .. } => (4, msg, 0, 0),
            Loc::Block {
                msg, block, nested, ..
            } => (
                4,
                msg,
                block.map_or(1, |b| b + 1),
                nested.map_or(0, |k| k + 1),
            ),
            Loc::TopCache => (5, 0, 0, 0),
        }
    }
}

/// How sure a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Severity {
    /// The API rejects the request for it.
    Violation,
    /// The API may accept the request: a model-specific rule checked against a row that does
    /// not describe the model (the conservative default of an unknown id), a capability the
    /// row lists as undocumented, or a rule no recorded response or documented rule bounds.
    Warning,
}

type Key = (u8, usize, usize, usize);

/// What the checks share: the model row, the options, and the findings so far.
/// A point in the run of the checks ([`Ctx::mark`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Mark(usize);

pub(super) struct Ctx<'a> {
    pub(super) model: &'a Model,
    pub(super) options: &'a ValidateOptions,
    found: Vec<(Key, Severity, Violation)>,
}

impl<'a> Ctx<'a> {
    pub(super) fn new(model: &'a Model, options: &'a ValidateOptions) -> Self {
        Ctx {
            model,
            options,
            found: Vec::new(),
        }
    }

    /// Reports a violation at `loc` whose path is `loc` itself.
    pub(super) fn report(&mut self, rule: Rule, loc: Loc, message: String) {
        let path = loc.path();
        self.report_at(rule, loc, path, message);
    }

    /// Reports a violation sorted as `loc` but whose path is `path` (a field of `loc`).
    pub(super) fn report_at(&mut self, rule: Rule, loc: Loc, path: String, message: String) {
        self.push(Severity::Violation, rule, loc, path, message);
    }

    /// Reports the finding of a model-specific rule (one that reads the model row) at `loc`:
    /// a violation when the row describes a model the table knows, a warning when it is the
    /// conservative default of an unknown id, whose limits are guesses.
    pub(super) fn report_model(&mut self, rule: Rule, loc: Loc, message: String) {
        let path = loc.path();
        self.report_model_at(rule, loc, path, message);
    }

    /// [`report_model`](Self::report_model) with a path that is a field of `loc`.
    pub(super) fn report_model_at(&mut self, rule: Rule, loc: Loc, path: String, message: String) {
        let severity = if self.model.is_guess() {
            Severity::Warning
        } else {
            Severity::Violation
        };
        self.push(severity, rule, loc, path, message);
    }

    /// Reports the finding of a model-specific rule that fires because the row does not claim
    /// `capability` (its message `refusal`, `api` the place as the API names it): as
    /// [`report_model_at`](Self::report_model_at), but when the row lists `capability` as
    /// `undocumented` (the documentation is silent on it for that model) a warning that says
    /// so, never a violation. On a platform that does not offer `capability` on any model
    /// ([`Model::withheld`](threadline_wire::model::Model::withheld)), a violation in the
    /// platform's words, whatever the row.
    pub(super) fn report_capability_at(
        &mut self,
        capability: Capability,
        rule: Rule,
        (loc, path, api): (Loc, String, &str),
        refusal: String,
    ) {
        if let Some(withheld) = self.model.withheld(capability) {
            let platform = self.model.platform();
            let message = super::rule::withheld(api, platform, capability, &withheld.refusal);
            self.push(Severity::Violation, rule, loc, path, message);
        } else if !self.model.is_guess() && self.model.is_undocumented(capability) {
            let message = super::rule::undocumented(api, &self.model.id, capability, &refusal);
            self.push(Severity::Warning, rule, loc, path, message);
        } else {
            self.report_model_at(rule, loc, path, refusal);
        }
    }

    /// Reports a warning at `loc`: a finding the API may well accept.
    pub(super) fn warn(&mut self, rule: Rule, loc: Loc, message: String) {
        let path = loc.path();
        self.push(Severity::Warning, rule, loc, path, message);
    }

    fn push(&mut self, severity: Severity, rule: Rule, loc: Loc, path: String, message: String) {
        let violation = Violation {
            rule,
            path,
            message,
        };
        self.found.push((loc.key(), severity, violation));
    }

    /// The point reached in the run of the checks, for [`run_as_at`](Self::run_as_at).
    pub(super) fn mark(&self) -> Mark {
        Mark(self.found.len())
    }

    /// Runs `check` now, its findings placed as if it had run at `mark`: before those of the
    /// checks run since, where they tie with them.
    pub(super) fn run_as_at(&mut self, mark: Mark, check: impl FnOnce(&mut Self)) {
        let start = self.found.len();
        check(self);
        let added = self.found.len() - start;
        if let Some(since) = self.found.get_mut(mark.0..) {
            since.rotate_right(added);
        }
    }

    /// The violations and the warnings, each in request order; ties keep the order the checks
    /// ran in.
    pub(super) fn finish(mut self) -> Report {
        self.found.sort_by_key(|(key, _, _)| *key);
        let mut report = Report::default();
        for (_, severity, violation) in self.found {
            match severity {
                Severity::Violation => report.violations.push(violation),
                Severity::Warning => report.warnings.push(violation),
            }
        }
        report
    }
}
