//! `threadline inspect TRANSCRIPT [--json] [--html FILE] [--plan STRATEGY]`: the report of
//! [`threadline_cli::inspect`], printed.

use std::path::Path;

use threadline_cli::inspect::{render_text, report, to_json};
use threadline_cli::inspect_html::render_html;
use threadline_cli::inspect_plan::{PlanStrategy, add_plan, render_plan};

use crate::error::CliError;
use crate::input::InputLimit;
use crate::session::{Sidechains, load_session_history};
use crate::terminal_text::terminal_safe;
use threadline_cli::stderr_line;

/// What `inspect` was asked.
pub(crate) struct InspectArgs<'a> {
    pub(crate) path: &'a str,
    pub(crate) json: bool,
    pub(crate) html: Option<&'a Path>,
    pub(crate) plan: Option<PlanStrategy>,
    pub(crate) model: Option<&'a str>,
    pub(crate) limit: InputLimit,
}

pub(crate) fn run(args: &InspectArgs<'_>) -> Result<(), CliError> {
    let session = load_session_history(args.path, Sidechains::WhenNoMainChain, args.limit)?;
    let mut report = report(&session, args.model);
    if let Some(strategy) = args.plan {
        add_plan(&mut report, &session, args.model, strategy);
    }
    if let Some(warning) = &report.model_warning {
        stderr_line!("threadline: {warning}");
    }
    if let Some(out) = args.html
        && let Err(e) = std::fs::write(out, render_html(&report, args.path))
    {
        return Err(CliError::output(
            None,
            format!("cannot write {}", out.display()),
            e,
        ));
    }
    if args.json {
        // Through its JSON value, whose keys are sorted: the output keeps its order.
        let json = to_json(&report)
            .and_then(|value| serde_json::to_string_pretty(&value))
            .map_err(|e| CliError::output(None, "cannot print the report", e))?;
        crate::output::print_json(&json);
    } else {
        // The table quotes the transcript (cache-break causes carry a command's output, which
        // Claude Code records with ANSI escapes): control characters are escaped.
        crate::output::print_line(&terminal_safe(&render_text(&report), true));
        if report.plan.is_some() {
            crate::output::print_line(&terminal_safe(&render_plan(&report), true));
        }
    }
    Ok(())
}
