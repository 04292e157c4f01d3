//! `fallbacks` (server-side fallback, docs/api-notes.md#refusals-and-fallbacks): its beta, its shape, and
//! what it cannot be combined with.
//!
//! The API's text is known for one rule only: a beta-only field sent without its beta is
//! ``fallbacks: Extra inputs are not permitted`` (the pattern observed for other beta-only
//! fields, docs/api-notes.md#request-body). The list's limits (at most three entries, each distinct from
//! the others and from `model`), the list-only version of the beta, and the hard 400 for
//! `fallback_credit_token` beside `fallbacks` are documented without their texts: those texts
//! are ours, written in the API's validation style.

use std::collections::HashSet;

use super::View;
use super::report::{Ctx, Loc};
use super::rule::Rule;
use threadline_wire::betas::SERVER_SIDE_FALLBACK;
use threadline_wire::model::Capability;
use threadline_wire::request::Fallbacks;

const FALLBACKS: Loc = Loc::Param("fallbacks", 7);

/// The most entries a `fallbacks` list may have.
pub(crate) const MAX_FALLBACKS: usize = 3;

/// The version of the beta that takes a list only (`"default"` needs `…-2026-07-01`).
const LIST_ONLY_BETA: &str = "server-side-fallback-2026-06-01";

pub(super) fn check(ctx: &mut Ctx<'_>, view: &View<'_>) {
    let Some(fallbacks) = view.fallbacks else {
        return;
    };
    // A platform without server-side fallbacks refuses the field, whatever it holds.
    if ctx
        .model
        .withheld(Capability::ServerSideFallbacks)
        .is_some()
    {
        let at = (FALLBACKS, "fallbacks".to_owned(), "fallbacks");
        let refusal = "fallbacks: Extra inputs are not permitted".to_owned();
        ctx.report_capability_at(
            Capability::ServerSideFallbacks,
            Rule::FallbacksInvalid,
            at,
            refusal,
        );
        return;
    }
    if ctx.options.names_beta(SERVER_SIDE_FALLBACK) == Some(false) {
        let message = "fallbacks: Extra inputs are not permitted".to_owned();
        ctx.report_at(
            Rule::BetaHeaderMissing,
            FALLBACKS,
            "fallbacks".to_owned(),
            message,
        );
    }
    if view.has_fallback_credit_token {
        let message =
            "fallback_credit_token: cannot be combined with fallbacks; send one or the other"
                .to_owned();
        ctx.report_at(
            Rule::FallbacksInvalid,
            FALLBACKS,
            "fallback_credit_token".to_owned(),
            message,
        );
    }
    match fallbacks {
        Fallbacks::Default => {
            if only_list_beta(ctx) {
                let message = format!(
                    "fallbacks: \"default\" requires {SERVER_SIDE_FALLBACK}; {LIST_ONLY_BETA} takes a list of models only"
                );
                ctx.report_at(
                    Rule::FallbacksInvalid,
                    FALLBACKS,
                    "fallbacks".to_owned(),
                    message,
                );
            }
        }
        Fallbacks::List(list) => {
            if list.is_empty() || list.len() > MAX_FALLBACKS {
                let message = format!(
                    "fallbacks: List should have between 1 and {MAX_FALLBACKS} items, not {}",
                    list.len()
                );
                ctx.report_at(
                    Rule::FallbacksInvalid,
                    FALLBACKS,
                    "fallbacks".to_owned(),
                    message,
                );
            }
            let mut seen: HashSet<&str> = HashSet::with_capacity(list.len().min(16));
            seen.insert(view.model);
            // Bounded: a hostile list is reported once for its length above, and only its
            // first entries are compared.
            for (n, entry) in list.iter().enumerate().take(64) {
                if !seen.insert(entry.model.as_str()) {
                    let message = format!(
                        "fallbacks.{n}.model: each fallback model must differ from `model` and from the other fallbacks ({})",
                        entry.model
                    );
                    ctx.report_at(
                        Rule::FallbacksInvalid,
                        FALLBACKS,
                        format!("fallbacks.{n}.model"),
                        message,
                    );
                }
            }
        }
        Fallbacks::Other(_) => {
            let message =
                "fallbacks: Input should be 'default' or a list of fallback models".to_owned();
            ctx.report_at(
                Rule::FallbacksInvalid,
                FALLBACKS,
                "fallbacks".to_owned(),
                message,
            );
        }
    }
}

/// Whether the header is known and names only the list-only version of the beta.
fn only_list_beta(ctx: &Ctx<'_>) -> bool {
    ctx.options.betas.as_ref().is_some_and(|betas| {
        let named: Vec<&str> = betas
            .iter()
            .map(|b| b.trim())
            .filter(|b| threadline_wire::betas::header_names(b, SERVER_SIDE_FALLBACK))
            .collect();
        !named.is_empty() && named.iter().all(|b| *b == LIST_ONLY_BETA)
    })
}
