//! Mid-conversation tool changes (beta `mid-conversation-tool-changes-2026-07-01`): the
//! `tool_addition` and `tool_removal` blocks of a `role: "system"` message.
//!
//! A change never carries a definition: every tool stays declared in `tools` (a tool first
//! offered later is declared with `defer_loading: true`), and a change names one by
//! reference. An addition offers the referenced tool from its place in the conversation on,
//! a removal withdraws it; the `tools` array, and so the cached prefix, stays as it was.
//!
//! ```
//! use threadline_wire::tool_change::{ToolChangeBlock, ToolRef};
//! use threadline_wire::ContentBlock;
//!
//! let block: ContentBlock = serde_json::from_str(
//!     r#"{"type":"tool_addition","tool":{"type":"tool_reference","name":"deploy"}}"#,
//! )?;
//! let ContentBlock::ToolAddition(change) = &block else { panic!("a tool_addition") };
//! assert_eq!(change.tool.name(), Some("deploy"));
//! assert_eq!(ContentBlock::ToolAddition(ToolChangeBlock::tool("deploy")), block);
//! # Ok::<(), serde_json::Error>(())
//! ```

use crate::cache_control::CacheControl;

wire_struct! {
    /// `{"type":"tool_reference","name"}`: a tool declared directly in `tools` (the composed
    /// `{server}_{name}` form of an MCP tool is not accepted: use [`McpToolRef`]).
    pub struct ToolNameRef {
        required {
            /// The declared tool's name.
            pub name: String,
        }
        optional {}
    }
}

wire_struct! {
    /// `{"type":"mcp_tool_reference","server_name","name"}`: one tool of an MCP server.
    pub struct McpToolRef {
        required {
            /// The MCP server's name.
            pub server_name: String,
            /// The tool's name on that server.
            pub name: String,
        }
        optional {}
    }
}

wire_struct! {
    /// `{"type":"mcp_toolset_reference","server_name"}`: every tool of an MCP server.
    pub struct McpToolsetRef {
        required {
            /// The MCP server's name.
            pub server_name: String,
        }
        optional {}
    }
}

wire_enum! {
    /// What a tool change refers to.
    pub enum ToolRef (tag = "type") {
        /// A tool declared in `tools`.
        Tool(ToolNameRef) = "tool_reference",
        /// One tool of an MCP server.
        McpTool(McpToolRef) = "mcp_tool_reference",
        /// Every tool of an MCP server.
        McpToolset(McpToolsetRef) = "mcp_toolset_reference",
    }
}

impl ToolRef {
    /// A reference to the tool declared as `name`.
    pub fn tool(name: impl Into<String>) -> ToolRef {
        ToolRef::Tool(ToolNameRef {
            name: name.into(),
            extra: crate::Extra::new(),
        })
    }

    /// The tool's name (`tool_reference`, `mcp_tool_reference`); `None` for a whole toolset
    /// or an unknown kind.
    pub fn name(&self) -> Option<&str> {
        match self {
            ToolRef::Tool(r) => Some(&r.name),
            ToolRef::McpTool(r) => Some(&r.name),
            _ => None,
        }
    }

    /// The MCP server named (`mcp_tool_reference`, `mcp_toolset_reference`).
    pub fn server_name(&self) -> Option<&str> {
        match self {
            ToolRef::McpTool(r) => Some(&r.server_name),
            ToolRef::McpToolset(r) => Some(&r.server_name),
            _ => None,
        }
    }
}

wire_struct! {
    /// The body of a `tool_addition` or `tool_removal` block: `{tool, cache_control?}`.
    pub struct ToolChangeBlock {
        required {
            /// The tool (or toolset) referred to.
            pub tool: Box<ToolRef>,
        }
        optional {
            /// A prompt-cache breakpoint on this block.
            pub cache_control: Box<CacheControl>,
        }
    }
}

impl ToolChangeBlock {
    /// A change referring to the tool declared as `name`, without a cache marker.
    pub fn tool(name: impl Into<String>) -> ToolChangeBlock {
        ToolChangeBlock {
            tool: Box::new(ToolRef::tool(name)),
            cache_control: None,
            extra: crate::Extra::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::request::MessagesRequest;
    use crate::{ContentBlock, Role};

    #[test]
    fn every_reference_kind_round_trips_in_a_system_message() {
        let body = json!({
            "model": "claude-opus-4-8", "max_tokens": 1024,
            "tools": [{"name": "get_weather", "input_schema": {"type": "object"}},
                      {"name": "deploy", "input_schema": {"type": "object"}, "defer_loading": true}],
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "system", "content": [
                    {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "get_weather"}},
                    {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "deploy"},
                     "cache_control": {"type": "ephemeral"}},
                    {"type": "tool_addition", "tool": {"type": "mcp_tool_reference", "server_name": "gh", "name": "pr"}},
                    {"type": "tool_removal", "tool": {"type": "mcp_toolset_reference", "server_name": "jira"}},
                    {"type": "tool_addition", "tool": {"type": "hologram_reference", "id": 7}, "x": 1},
                    {"type": "text", "text": "Deploys are now allowed."}
                ]}
            ]
        });
        let request: MessagesRequest = serde_json::from_value(body.clone()).expect("parses");
        assert_eq!(request.messages[1].role, Role::System);
        let crate::Content::Blocks(blocks) = &request.messages[1].content else {
            panic!("blocks")
        };
        let ContentBlock::ToolRemoval(removal) = &blocks[0] else {
            panic!("a removal: {:?}", blocks[0])
        };
        assert_eq!(removal.tool.name(), Some("get_weather"));
        assert!(blocks[1].cache_control().is_some());
        let ContentBlock::ToolAddition(mcp) = &blocks[2] else {
            panic!("an addition")
        };
        assert_eq!(
            (mcp.tool.server_name(), mcp.tool.name()),
            (Some("gh"), Some("pr"))
        );
        let ContentBlock::ToolRemoval(set) = &blocks[3] else {
            panic!("a removal")
        };
        assert_eq!(
            (set.tool.server_name(), set.tool.name()),
            (Some("jira"), None)
        );
        let ContentBlock::ToolAddition(unknown) = &blocks[4] else {
            panic!("an addition")
        };
        assert!(matches!(*unknown.tool, super::ToolRef::Unknown(_)));
        assert_eq!(serde_json::to_value(&request).expect("serializes"), body);
    }
}
