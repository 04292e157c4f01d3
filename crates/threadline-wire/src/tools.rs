//! Tool definitions and `tool_choice`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::cache_control::CacheControl;

wire_struct! {
    /// A client tool: `{name, description, input_schema}` (`type` absent or `custom`).
    pub struct CustomTool {
        required {
            /// The tool's name (`^[a-zA-Z0-9_-]{1,64}$`).
            pub name: String,
            /// A JSON Schema (draft 2020-12) object for the input.
            pub input_schema: Value,
        }
        optional {
            /// `custom` when given; usually absent.
            pub kind: String => "type",
            /// What the tool does, for the model.
            pub description: String,
            /// A prompt-cache breakpoint after this tool.
            pub cache_control: Box<CacheControl>,
            /// Strict schema adherence.
            pub strict: bool,
            /// Load only when found by tool search.
            pub defer_loading: bool,
        }
    }
}

wire_struct! {
    /// A versioned server or client-schema tool (`web_search_20250305`, `bash_20250124`, …).
    /// Its settings stay in `extra`.
    pub struct VersionedTool {
        required {
            /// The versioned type, e.g. `web_search_20250305`.
            pub kind: String => "type",
            /// The fixed name the type requires.
            pub name: String,
        }
        optional {
            /// A prompt-cache breakpoint after this tool.
            pub cache_control: Box<CacheControl>,
            /// Load only when found by tool search.
            pub defer_loading: bool,
        }
    }
}

/// A tool definition: an entry of the request's `tools`.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolDefinition {
    /// A client tool with a JSON schema.
    Custom(CustomTool),
    /// A versioned tool the API defines.
    Versioned(VersionedTool),
}

impl ToolDefinition {
    /// The tool's name.
    pub fn name(&self) -> &str {
        match self {
            ToolDefinition::Custom(t) => &t.name,
            ToolDefinition::Versioned(t) => &t.name,
        }
    }

    /// The tool's cache marker, if any.
    pub fn cache_control(&self) -> Option<&CacheControl> {
        match self {
            ToolDefinition::Custom(t) => t.cache_control.as_deref(),
            ToolDefinition::Versioned(t) => t.cache_control.as_deref(),
        }
    }

    /// Whether the tool is sent with `defer_loading: true`: loaded only when tool search finds
    /// it, not part of the cached prefix, and never allowed a `cache_control` marker.
    pub fn is_deferred(&self) -> bool {
        match self {
            ToolDefinition::Custom(t) => t.defer_loading == Some(true),
            ToolDefinition::Versioned(t) => t.defer_loading == Some(true),
        }
    }

    /// The tool's cache marker slot, for planners that place markers.
    pub fn cache_control_mut(&mut self) -> &mut Option<Box<CacheControl>> {
        match self {
            ToolDefinition::Custom(t) => &mut t.cache_control,
            ToolDefinition::Versioned(t) => &mut t.cache_control,
        }
    }
}

impl From<CustomTool> for ToolDefinition {
    fn from(tool: CustomTool) -> Self {
        ToolDefinition::Custom(tool)
    }
}

impl From<VersionedTool> for ToolDefinition {
    fn from(tool: VersionedTool) -> Self {
        ToolDefinition::Versioned(tool)
    }
}

impl Serialize for ToolDefinition {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ToolDefinition::Custom(t) => t.serialize(serializer),
            ToolDefinition::Versioned(t) => t.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ToolDefinition {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Tools are few and the tag is optional, so buffering the object is cheap and simple.
        let value = Value::deserialize(deserializer)?;
        let custom = match value.get("type") {
            None => true,
            Some(Value::String(t)) => t == "custom",
            Some(_) => false,
        };
        if custom {
            CustomTool::deserialize(value)
                .map(ToolDefinition::Custom)
                .map_err(serde::de::Error::custom)
        } else {
            VersionedTool::deserialize(value)
                .map(ToolDefinition::Versioned)
                .map_err(serde::de::Error::custom)
        }
    }
}

wire_struct! {
    /// The fields of `tool_choice` kinds `auto`, `any` and `none`.
    pub struct ToolChoiceOptions {
        required {}
        optional {
            /// At most one tool use per response.
            pub disable_parallel_tool_use: bool,
        }
    }
}

wire_struct! {
    /// `{"type":"tool","name":…}`: force one tool.
    pub struct ToolChoiceTool {
        required {
            /// The tool that must be used.
            pub name: String,
        }
        optional {
            /// At most one tool use per response.
            pub disable_parallel_tool_use: bool,
        }
    }
}

wire_enum! {
    /// How the model may use tools.
    pub enum ToolChoice (tag = "type") {
        /// The model decides.
        Auto(ToolChoiceOptions) = "auto",
        /// The model must use some tool.
        Any(ToolChoiceOptions) = "any",
        /// The model must use the named tool.
        Tool(ToolChoiceTool) = "tool",
        /// The model must not use tools.
        None(ToolChoiceOptions) = "none",
    }
}

impl ToolChoice {
    /// Whether this forces a tool use (`any` or `tool`).
    pub fn forces_tool_use(&self) -> bool {
        matches!(self, ToolChoice::Any(_) | ToolChoice::Tool(_))
    }
}
