//! The tool schema snapshot: tools serialized once per session and sent byte-for-byte the same
//! on every request.
//!
//! A tool set can change under a running session (a feature flag flips, an MCP server
//! reconnects and lists its tools in another order); every such change rewrites the start of
//! the prompt and so invalidates the whole cache. The snapshot freezes the tools' JSON at the
//! start of the session; what varies per request (a cache marker, `defer_loading`) is an
//! overlay applied to a copy, never to the snapshot. A caller that does want the new tools
//! takes a new snapshot, and [`ToolSnapshot::change`] names the change as a cache break.

use threadline_wire::ToolDefinition;

use crate::breaks::{BreakCause, CacheBreak};
use crate::prefix::{Location, Ttl};

/// The tools of a session, frozen.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSnapshot {
    tools: Vec<ToolDefinition>,
    bytes: Vec<String>,
}

/// Per-request additions to the snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolOverlay<'a> {
    /// A marker on the last tool.
    pub marker: Option<Ttl>,
    /// Tools sent with `defer_loading: true` (found by tool search, not in the prefix).
    pub deferred: &'a [&'a str],
}

impl ToolSnapshot {
    /// Freezes `tools` (any marker or `defer_loading` they carry is dropped: those are
    /// overlays).
    pub fn new(tools: &[ToolDefinition]) -> Self {
        let tools: Vec<ToolDefinition> = tools
            .iter()
            .cloned()
            .map(|mut tool| {
                tool.clear_cache_control();
                match &mut tool {
                    ToolDefinition::Custom(t) => t.defer_loading = None,
                    ToolDefinition::Versioned(t) => t.defer_loading = None,
                }
                tool
            })
            .collect();
        let bytes = tools
            .iter()
            .map(|t| serde_json::to_string(t).unwrap_or_default())
            .collect();
        ToolSnapshot { tools, bytes }
    }

    /// The frozen tools.
    pub fn tools(&self) -> &[ToolDefinition] {
        &self.tools
    }

    /// The frozen JSON of each tool.
    pub fn bytes(&self) -> &[String] {
        &self.bytes
    }

    /// The `tools` of one request: copies of the snapshot with the overlay applied.
    pub fn for_request(&self, overlay: &ToolOverlay<'_>) -> Vec<ToolDefinition> {
        let mut tools = self.tools.clone();
        for tool in &mut tools {
            if overlay.deferred.contains(&tool.name()) {
                match tool {
                    ToolDefinition::Custom(t) => t.defer_loading = Some(true),
                    ToolDefinition::Versioned(t) => t.defer_loading = Some(true),
                }
            }
        }
        if let Some(ttl) = overlay.marker
            && let Some(last) = tools
                .iter_mut()
                .rev()
                .find(|t| !overlay.deferred.contains(&t.name()))
        {
            last.set_cache_control(ttl.marker());
        }
        tools
    }

    /// How `current` differs from the snapshot, as a cache break (`None`: the same bytes).
    pub fn change(&self, current: &[ToolDefinition]) -> Option<CacheBreak> {
        let now = ToolSnapshot::new(current);
        let n = self.bytes.len().max(now.bytes.len());
        (0..n)
            .find(|&i| self.bytes.get(i) != now.bytes.get(i))
            .map(|index| CacheBreak {
                location: Some(Location::Tool { index }),
                cause: BreakCause::ToolsChanged {
                    name: now
                        .tools
                        .get(index)
                        .or(self.tools.get(index))
                        .map(|t| t.name().to_owned()),
                },
            })
    }
}
