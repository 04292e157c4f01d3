//! The defer policy: when the tools' definitions take too large a share of the context
//! window, they are sent with `defer_loading: true` and the tool search server tool is added,
//! so the model loads only the tools it finds.
//!
//! Claude Code defers its MCP tools once their definitions exceed 10 % of the context window;
//! [`ToolSearchConfig::default`] does the same for every tool that does not opt out
//! ([`Tool::always_load`](crate::Tool::always_load)). Only on models whose table row has
//! [`Feature::ToolSearch`]. The result is a pure function of the tool set, the model and the
//! configuration, computed once per run: the `tools` array (order and bytes) is the same on
//! every request of a session, so the cached prefix survives every discovery (a discovery
//! appends `tool_reference`s to the conversation, which the API expands in place).
//!
//! Two invariants hold for any input (a property test holds them): the policy never defers
//! every tool (the search tool it adds is never deferred, and without it nothing is
//! deferred), and a deferred tool never carries a `cache_control` marker.

use threadline_cache::tokens::{Estimate, Piece, TokenCounter as _};
use threadline_wire::Tool;
use threadline_wire::model::{Feature, Model};
use threadline_wire::tool_search::ToolSearchKind;

/// When tools are deferred.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum DeferMode {
    /// Never: every tool is loaded up front.
    Off,
    /// When the definitions' estimated tokens exceed this share of the model's context
    /// window (Claude Code: 0.10).
    Auto {
        /// The share, in `0.0..=1.0`.
        share: f64,
    },
    /// Always (every tool that does not opt out), however small the set.
    Always,
}

/// The share of the context window above which [`DeferMode::Auto`] defers (Claude Code's).
pub const DEFAULT_DEFER_SHARE: f64 = 0.10;

/// How the loop uses tool search.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolSearchConfig {
    /// When tools are deferred.
    pub mode: DeferMode,
    /// Which search the model gets.
    pub kind: ToolSearchKind,
}

impl Default for ToolSearchConfig {
    /// Auto at [`DEFAULT_DEFER_SHARE`], with the BM25 search.
    fn default() -> Self {
        ToolSearchConfig {
            mode: DeferMode::Auto {
                share: DEFAULT_DEFER_SHARE,
            },
            kind: ToolSearchKind::Bm25,
        }
    }
}

impl ToolSearchConfig {
    /// Never defer.
    pub fn off() -> Self {
        ToolSearchConfig {
            mode: DeferMode::Off,
            ..ToolSearchConfig::default()
        }
    }

    /// Defer above `share` of the context window.
    pub fn auto(share: f64) -> Self {
        ToolSearchConfig {
            mode: DeferMode::Auto { share },
            ..ToolSearchConfig::default()
        }
    }

    /// Always defer.
    pub fn always() -> Self {
        ToolSearchConfig {
            mode: DeferMode::Always,
            ..ToolSearchConfig::default()
        }
    }

    /// This configuration with another search.
    pub fn with_kind(mut self, kind: ToolSearchKind) -> Self {
        self.kind = kind;
        self
    }
}

/// What the policy decided, for events and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeferDecision {
    /// The estimated tokens of the definitions as given.
    pub tool_tokens: u64,
    /// The threshold they were compared with (`None` when not in auto mode or not applied).
    pub threshold: Option<u64>,
    /// How many tools are deferred.
    pub deferred: usize,
    /// The search tool added, if any.
    pub search: Option<ToolSearchKind>,
}

/// The estimated tokens of `tools` (the workspace's estimate: `threadline_cache::tokens`).
pub fn tools_tokens(tools: &[Tool]) -> u64 {
    tools
        .iter()
        .map(|t| Estimate.count(Piece::Tool(t), 0))
        .fold(0u64, u64::saturating_add)
}

/// Applies the policy to `tools` (the request's definitions, in their final order):
/// `always_loaded(name)` says which tools opted out. Returns the definitions to send on every
/// request, and what was decided.
pub fn apply(
    mut tools: Vec<Tool>,
    always_loaded: impl Fn(&str) -> bool,
    model: &Model,
    config: &ToolSearchConfig,
) -> (Vec<Tool>, DeferDecision) {
    let tool_tokens = tools_tokens(&tools);
    let mut decision = DeferDecision {
        tool_tokens,
        threshold: None,
        deferred: 0,
        search: None,
    };
    if tools.is_empty() || model.is_guess() || !model.supports(Feature::ToolSearch) {
        return (tools, decision);
    }
    let wanted = match config.mode {
        DeferMode::Off => false,
        DeferMode::Always => true,
        DeferMode::Auto { share } => {
            let share = if share.is_finite() {
                share.clamp(0.0, 1.0)
            } else {
                1.0
            };
            let threshold = (model.context_window as f64 * share) as u64;
            decision.threshold = Some(threshold);
            model.context_window > 0 && tool_tokens > threshold
        }
    };
    if !wanted {
        return (tools, decision);
    }
    // A search tool already declared is used as it is; a client tool holding the search
    // tool's name would make two tools of one name: then nothing is deferred.
    let declared = tools.iter().find_map(ToolSearchKind::of_tool);
    let kind = declared.unwrap_or(config.kind);
    if declared.is_none() && tools.iter().any(|t| t.name() == kind.tool_name()) {
        return (tools, decision);
    }
    let deferrable =
        |t: &Tool| matches!(t, Tool::Custom(_)) && !always_loaded(t.name()) && !t.is_deferred();
    let deferred = tools.iter().filter(|t| deferrable(t)).count();
    if deferred == 0 {
        return (tools, decision);
    }
    for tool in tools.iter_mut().filter(|t| deferrable(t)) {
        tool.set_deferred(true);
    }
    // Deferred tools are not in the cached prefix and may not carry a marker (a 400); a
    // tool that came deferred keeps its flag and loses its marker too.
    for tool in tools.iter_mut().filter(|t| t.is_deferred()) {
        *tool.cache_control_mut() = None;
    }
    if declared.is_none() {
        tools.push(Tool::tool_search(kind));
        decision.search = Some(kind);
    } else if let Some(search) = tools
        .iter_mut()
        .find(|t| ToolSearchKind::of_tool(t).is_some())
    {
        // The search itself must be loaded, or every tool could end up deferred.
        search.set_deferred(false);
    }
    decision.deferred = tools.iter().filter(|t| t.is_deferred()).count();
    (tools, decision)
}

/// The run's `tools`: the tool set's definitions with the configured policy applied for the
/// configured model (what the loop sends on every request).
pub fn definitions(tools: &crate::ToolSet, config: &crate::QueryConfig) -> Vec<Tool> {
    let model = threadline_wire::model::ModelTable::builtin()
        .resolve(&config.model)
        .model();
    apply(
        tools.definitions(),
        |name| tools.is_always_loaded(name),
        model,
        &config.tool_search,
    )
    .0
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadline_wire::model::ModelTable;
    use threadline_wire::tools::CustomTool;

    fn tool(name: &str, description_chars: usize) -> Tool {
        Tool::Custom(CustomTool {
            name: name.to_owned(),
            input_schema: serde_json::json!({"type": "object"}),
            kind: None,
            description: Some("x".repeat(description_chars)),
            cache_control: None,
            strict: None,
            defer_loading: None,
            extra: threadline_wire::Extra::new(),
        })
    }

    fn model(id: &'static str) -> &'static Model {
        ModelTable::builtin().resolve(id).model()
    }

    #[test]
    fn auto_defers_above_the_share_and_adds_the_search_last() {
        let m = model("claude-sonnet-4-6");
        let window = m.context_window;
        // Just under 10 %: nothing changes.
        let small = vec![tool("a", 100), tool("b", 100)];
        let (out, decision) = apply(small.clone(), |_| false, m, &ToolSearchConfig::default());
        assert_eq!(out, small);
        assert_eq!(decision.threshold, Some(window / 10));
        assert_eq!(decision.deferred, 0);
        // Over it (4 chars a token): every tool but the opted-out one is deferred.
        let chars = (window as usize / 10) * 4;
        let big = vec![tool("a", chars / 2), tool("b", chars / 2), tool("keep", 10)];
        let (out, decision) = apply(big, |n| n == "keep", m, &ToolSearchConfig::default());
        let names: Vec<&str> = out.iter().map(Tool::name).collect();
        assert_eq!(names, ["a", "b", "keep", "tool_search_tool_bm25"]);
        let deferred: Vec<bool> = out.iter().map(Tool::is_deferred).collect();
        assert_eq!(deferred, [true, true, false, false]);
        assert_eq!(decision.deferred, 2);
        assert_eq!(decision.search, Some(ToolSearchKind::Bm25));
    }

    #[test]
    fn only_models_with_tool_search_and_only_when_asked() {
        let tools = vec![tool("a", 10)];
        for (id, config) in [
            ("claude-opus-4-1", ToolSearchConfig::always()),
            ("claude-from-the-future", ToolSearchConfig::always()),
            ("claude-sonnet-4-6", ToolSearchConfig::off()),
        ] {
            let (out, decision) = apply(tools.clone(), |_| false, model(id), &config);
            assert_eq!(out, tools, "{id}");
            assert_eq!(decision.deferred, 0, "{id}");
        }
        let (out, _) = apply(
            tools,
            |_| false,
            model("claude-sonnet-4-6"),
            &ToolSearchConfig::always().with_kind(ToolSearchKind::Regex),
        );
        assert_eq!(
            serde_json::to_value(&out).expect("serializes"),
            serde_json::json!([
                {"name": "a", "description": "xxxxxxxxxx", "input_schema": {"type": "object"}, "defer_loading": true},
                {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}
            ])
        );
    }

    #[test]
    fn the_same_input_gives_the_same_bytes() {
        let tools: Vec<Tool> = (0..50).map(|n| tool(&format!("t{n}"), 40)).collect();
        let m = model("claude-haiku-4-5");
        let once = apply(tools.clone(), |_| false, m, &ToolSearchConfig::always()).0;
        let twice = apply(tools, |_| false, m, &ToolSearchConfig::always()).0;
        assert_eq!(
            serde_json::to_string(&once).expect("serializes"),
            serde_json::to_string(&twice).expect("serializes")
        );
    }
}
