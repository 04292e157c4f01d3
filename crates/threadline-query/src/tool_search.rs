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

use threadline_wire::ToolDefinition;
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

/// The estimated tokens of tool definitions: the workspace's one estimate.
pub use threadline_wire::tokens::tools_tokens;

/// Applies the policy to `tools` (the request's definitions, in their final order):
/// `always_loaded(name)` says which tools opted out. Returns the definitions to send on every
/// request, and what was decided.
pub fn apply(
    tools: Vec<ToolDefinition>,
    always_loaded: impl Fn(&str) -> bool,
    model: &Model,
    config: &ToolSearchConfig,
) -> (Vec<ToolDefinition>, DeferDecision) {
    let (mut tools, mut decision) = decide(tools, always_loaded, model, config);
    sanitize(&mut tools);
    decision.deferred = tools.iter().filter(|t| t.is_deferred()).count();
    (tools, decision)
}

/// What the API rejects in any case, whoever set it: a deferred tool's marker goes, and a set
/// in which every tool is deferred is sent with none deferred.
fn sanitize(tools: &mut [ToolDefinition]) {
    for tool in tools.iter_mut().filter(|t| t.is_deferred()) {
        tool.clear_cache_control();
    }
    if !tools.is_empty() && tools.iter().all(ToolDefinition::is_deferred) {
        tools.iter_mut().for_each(|t| t.set_deferred(false));
    }
}

fn decide(
    mut tools: Vec<ToolDefinition>,
    always_loaded: impl Fn(&str) -> bool,
    model: &Model,
    config: &ToolSearchConfig,
) -> (Vec<ToolDefinition>, DeferDecision) {
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
    let deferrable = |t: &ToolDefinition| {
        matches!(t, ToolDefinition::Custom(_)) && !always_loaded(t.name()) && !t.is_deferred()
    };
    let deferred = tools.iter().filter(|t| deferrable(t)).count();
    if deferred == 0 {
        return (tools, decision);
    }
    // Deferred tools are not in the cached prefix and may not carry a marker (a 400):
    // `sanitize` removes theirs.
    for tool in tools.iter_mut().filter(|t| deferrable(t)) {
        tool.set_deferred(true);
    }
    if declared.is_none() {
        tools.push(ToolDefinition::tool_search(kind));
        decision.search = Some(kind);
    } else if let Some(search) = tools
        .iter_mut()
        .find(|t| ToolSearchKind::of_tool(t).is_some())
    {
        // The search itself must be loaded, or every tool could end up deferred.
        search.set_deferred(false);
    }
    (tools, decision)
}

/// The run's `tools`: the tool set's definitions with the configured policy applied for the
/// configured model (what the loop sends on every request).
pub fn definitions(tools: &crate::ToolSet, config: &crate::QueryConfig) -> Vec<ToolDefinition> {
    let model = config.models.resolve(&config.model).model();
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

    fn tool(name: &str, description_chars: usize) -> ToolDefinition {
        ToolDefinition::Custom(
            CustomTool::new(name, serde_json::json!({"type": "object"}))
                .with_description("x".repeat(description_chars)),
        )
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
        let names: Vec<&str> = out.iter().map(ToolDefinition::name).collect();
        assert_eq!(names, ["a", "b", "keep", "tool_search_tool_bm25"]);
        let deferred: Vec<bool> = out.iter().map(ToolDefinition::is_deferred).collect();
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

    use proptest::prelude::*;

    /// A hostile tool: any of a few names (duplicates likely, the search tool's own name
    /// included), a description from empty to huge, maybe a marker, maybe deferred already,
    /// sometimes a versioned tool.
    fn hostile_tool() -> impl Strategy<Value = ToolDefinition> {
        (
            prop::sample::select(vec!["a", "b", "dup", "tool_search_tool_bm25", "web_search"]),
            prop_oneof![Just(0usize), 0usize..200, Just(2_000_000usize)],
            any::<bool>(),
            prop::option::of(any::<bool>()),
            any::<bool>(),
        )
            .prop_map(|(name, chars, marked, deferred, versioned)| {
                let mut t = if versioned {
                    ToolDefinition::Versioned(threadline_wire::tools::VersionedTool::new(
                        "web_search_20250305",
                        name,
                    ))
                } else {
                    tool(name, chars)
                };
                if marked {
                    *t.cache_control_mut() =
                        Some(Box::new(threadline_wire::CacheControl::ephemeral()));
                }
                if let Some(d) = deferred {
                    t.set_deferred(d);
                }
                t
            })
    }

    fn hostile_set() -> impl Strategy<Value = Vec<ToolDefinition>> {
        prop_oneof![
            Just(Vec::new()),
            hostile_tool().prop_map(|t| vec![t]),
            prop::collection::vec(hostile_tool(), 0..40),
            (1usize..3000).prop_map(|n| (0..n).map(|i| tool(&format!("t{i}"), 30)).collect()),
        ]
    }

    fn hostile_config() -> impl Strategy<Value = ToolSearchConfig> {
        let share = prop_oneof![
            Just(f64::NAN),
            Just(-1.0),
            Just(0.0),
            0.0f64..1.0,
            Just(7.0)
        ];
        (
            prop_oneof![
                Just(DeferMode::Off),
                Just(DeferMode::Always),
                share.prop_map(|share| DeferMode::Auto { share }),
            ],
            any::<bool>(),
        )
            .prop_map(|(mode, regex)| ToolSearchConfig {
                mode,
                kind: if regex {
                    ToolSearchKind::Regex
                } else {
                    ToolSearchKind::Bm25
                },
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        #[test]
        fn never_every_tool_deferred_and_never_a_marked_deferred_tool(
            tools in hostile_set(),
            config in hostile_config(),
            model_id in prop::sample::select(vec!["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5", "claude-unknown-9"]),
            opt_out in any::<bool>(),
        ) {
            let m = ModelTable::builtin().resolve(model_id).model();
            let (out, decision) = apply(tools.clone(), |n| opt_out && n == "a", m, &config);
            if !out.is_empty() {
                prop_assert!(!out.iter().all(ToolDefinition::is_deferred), "every tool deferred");
            }
            prop_assert!(out.iter().all(|t| !t.is_deferred() || t.cache_control().is_none()));
            prop_assert_eq!(decision.deferred, out.iter().filter(|t| t.is_deferred()).count());
            // Nothing is lost or reordered: the input's tools come first, by name.
            let names: Vec<&str> = out.iter().map(ToolDefinition::name).collect();
            let input: Vec<&str> = tools.iter().map(ToolDefinition::name).collect();
            prop_assert_eq!(&names[..input.len()], &input[..]);
            prop_assert!(out.len() <= input.len() + 1);
            if opt_out {
                // An opted-out tool is deferred only if it came deferred.
                let came_deferred = tools.iter().any(|i| i.name() == "a" && i.is_deferred());
                let ok = out
                    .iter()
                    .filter(|t| t.name() == "a")
                    .all(|t| !t.is_deferred() || came_deferred);
                prop_assert!(ok, "an opted-out tool was deferred");
            }
            // Deterministic.
            let again = apply(tools, |n| opt_out && n == "a", m, &config).0;
            prop_assert_eq!(again, out);
        }
    }

    #[test]
    fn the_same_input_gives_the_same_bytes() {
        let tools: Vec<ToolDefinition> = (0..50).map(|n| tool(&format!("t{n}"), 40)).collect();
        let m = model("claude-haiku-4-5");
        let once = apply(tools.clone(), |_| false, m, &ToolSearchConfig::always()).0;
        let twice = apply(tools, |_| false, m, &ToolSearchConfig::always()).0;
        assert_eq!(
            serde_json::to_string(&once).expect("serializes"),
            serde_json::to_string(&twice).expect("serializes")
        );
    }
}
