//! Tool search: the `tool_reference` block, typed views of a `tool_search_tool_result`'s
//! content, and the two server tool definitions (`tool_search_tool_regex_20251119`,
//! `tool_search_tool_bm25_20251119`).
//!
//! A deferred tool (`defer_loading: true`) is declared in every request but loaded only once a
//! search finds it: the built-in search answers with a `tool_search_tool_result` whose content
//! lists `tool_reference`s, and a client's own search tool may answer a `tool_result` whose
//! content is `tool_reference` blocks. The API expands a reference into the tool's definition
//! where it stands in the conversation, so a discovery never changes `tools`.
//!
//! The result block itself stays a [`ServerToolResultBlock`] (its `content` a raw value that
//! is sent back byte-identical); [`ToolSearchContent::of`] reads it.

use serde_json::Value;

use crate::cache_control::CacheControl;
use crate::content::{ContentBlock, ServerToolResultBlock};
use crate::tools::{ToolDefinition, VersionedTool};

wire_struct! {
    /// `{"type":"tool_reference","tool_name":…}`: a reference to a declared tool, which the
    /// API expands into its definition. Found in a `tool_search_tool_result`'s
    /// `tool_references` and, from a client's own search tool, in `tool_result` content.
    /// As a field of a [`ContentBlock::ToolReference`] the block's `type` is the enum's tag;
    /// inside a search result's `tool_references` it is kept in `extra` (see
    /// [`ToolSearchContent::found`]).
    pub struct ToolReferenceBlock {
        required {
            /// The referenced tool's name (a tool declared in `tools`).
            pub tool_name: String,
        }
        optional {
            /// A prompt-cache breakpoint on this block (request only).
            pub cache_control: Box<CacheControl>,
        }
    }
}

impl ContentBlock {
    /// A `tool_reference` block (for a custom search tool's `tool_result` content).
    pub fn tool_reference(tool_name: impl Into<String>) -> Self {
        ContentBlock::ToolReference(ToolReferenceBlock::new(tool_name))
    }
}

wire_struct! {
    /// `{"type":"tool_search_tool_search_result","tool_references":[…]}`: what a search found
    /// (an empty list when nothing matched; that is not an error).
    pub struct ToolSearchSearchResult {
        required {
            /// The tools found, best first.
            pub tool_references: Vec<ToolReferenceBlock>,
        }
        optional {}
    }
}

wire_string_enum! {
    /// `error_code` of a failed tool search.
    pub enum ToolSearchErrorCode {
        /// The pattern or query is invalid (a bad regular expression, too long, …).
        InvalidToolInput = "invalid_tool_input",
        /// The search is unavailable.
        Unavailable = "unavailable",
        /// Too many searches.
        TooManyRequests = "too_many_requests",
        /// The search took too long.
        ExecutionTimeExceeded = "execution_time_exceeded",
        /// The pattern is too long (listed by the January 2026 documentation).
        PatternTooLong = "pattern_too_long",
    }
}

wire_struct! {
    /// `{"type":"tool_search_tool_result_error","error_code":…}`: a search that failed.
    pub struct ToolSearchError {
        required {
            /// Why.
            pub error_code: ToolSearchErrorCode,
        }
        optional {
            /// A human-readable explanation.
            pub error_message: String,
        }
    }
}

wire_enum! {
    /// The `content` of a `tool_search_tool_result` block, typed.
    pub enum ToolSearchContent (tag = "type") {
        /// The tools found.
        SearchResult(ToolSearchSearchResult) = "tool_search_tool_search_result",
        /// The search failed.
        Error(ToolSearchError) = "tool_search_tool_result_error",
    }
}

impl ToolSearchContent {
    /// The typed content of `block`, when it is a `tool_search_tool_result` whose content
    /// parses (an unknown content type reads as [`ToolSearchContent::Unknown`]).
    pub fn of(block: &ContentBlock) -> Option<ToolSearchContent> {
        match block {
            ContentBlock::ToolSearchToolResult(result) => Self::of_result(result),
            _ => None,
        }
    }

    /// The typed content of a server tool result block.
    pub fn of_result(result: &ServerToolResultBlock) -> Option<ToolSearchContent> {
        result
            .content
            .as_ref()
            .and_then(|c| serde_json::from_value(c.clone()).ok())
    }

    /// The names the search found (none for an error).
    pub fn tool_names(&self) -> Vec<&str> {
        match self {
            ToolSearchContent::SearchResult(found) => found
                .tool_references
                .iter()
                .map(|r| r.tool_name.as_str())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// A search result referencing `names`, in order (each reference `{"type":
    /// "tool_reference", "tool_name": …}`, as the API writes them).
    pub fn found<'a>(names: impl IntoIterator<Item = &'a str>) -> ToolSearchContent {
        let reference = |name: &str| {
            let mut r = ToolReferenceBlock::new(name);
            r.extra
                .insert("type".to_owned(), Value::from("tool_reference"));
            r
        };
        ToolSearchContent::SearchResult(ToolSearchSearchResult {
            tool_references: names.into_iter().map(reference).collect(),
            extra: crate::Extra::new(),
        })
    }

    /// A failed search.
    pub fn error(code: ToolSearchErrorCode, message: Option<String>) -> ToolSearchContent {
        ToolSearchContent::Error(ToolSearchError {
            error_code: code,
            error_message: message,
            extra: crate::Extra::new(),
        })
    }

    /// The content as the JSON value a `tool_search_tool_result` carries.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The names referenced by `block`: a `tool_reference` block, the `tool_reference` blocks of a
/// `tool_result`'s content, or the references of a `tool_search_tool_result`.
pub fn referenced_tools(block: &ContentBlock) -> Vec<&str> {
    match block {
        ContentBlock::ToolReference(r) => vec![r.tool_name.as_str()],
        ContentBlock::ToolResult(result) => match &result.content {
            Some(crate::content::Content::Blocks(blocks)) => blocks
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolReference(r) => Some(r.tool_name.as_str()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        },
        ContentBlock::ToolSearchToolResult(result) => result
            .content
            .as_ref()
            .and_then(|c| c.get("tool_references"))
            .and_then(Value::as_array)
            .map(|refs| {
                refs.iter()
                    .filter_map(|r| r.get("tool_name").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Which built-in search: a regular expression or BM25 over a natural-language query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ToolSearchKind {
    /// `tool_search_tool_regex_20251119`: Python `re.search`, case-insensitive, a pattern of
    /// at most [`MAX_REGEX_PATTERN_CHARS`] characters.
    Regex,
    /// `tool_search_tool_bm25_20251119`: a natural-language query of at most
    /// [`MAX_BM25_QUERY_CHARS`] characters.
    #[default]
    Bm25,
}

/// The longest regex pattern the API accepts.
pub const MAX_REGEX_PATTERN_CHARS: usize = 200;
/// The longest BM25 query the API accepts.
pub const MAX_BM25_QUERY_CHARS: usize = 500;
/// How many references a search returns when `limit` is not given.
pub const DEFAULT_SEARCH_LIMIT: u64 = 5;
/// The largest `limit` accepted.
pub const MAX_SEARCH_LIMIT: u64 = 10_000;

impl ToolSearchKind {
    /// The dated tool type.
    pub fn tool_type(self) -> &'static str {
        match self {
            ToolSearchKind::Regex => "tool_search_tool_regex_20251119",
            ToolSearchKind::Bm25 => "tool_search_tool_bm25_20251119",
        }
    }

    /// The tool's fixed name (also the `server_tool_use` name).
    pub fn tool_name(self) -> &'static str {
        match self {
            ToolSearchKind::Regex => "tool_search_tool_regex",
            ToolSearchKind::Bm25 => "tool_search_tool_bm25",
        }
    }

    /// The input field the search reads (`pattern` or `query`).
    pub fn input_field(self) -> &'static str {
        match self {
            ToolSearchKind::Regex => "pattern",
            ToolSearchKind::Bm25 => "query",
        }
    }

    /// The tool definition.
    pub fn definition(self) -> ToolDefinition {
        ToolDefinition::Versioned(VersionedTool {
            kind: self.tool_type().to_owned(),
            name: self.tool_name().to_owned(),
            cache_control: None,
            defer_loading: None,
            extra: crate::Extra::new(),
        })
    }

    /// The search a tool definition declares, by its type: dated or the undated alias.
    pub fn of_tool(tool: &ToolDefinition) -> Option<ToolSearchKind> {
        match tool {
            ToolDefinition::Versioned(t) => Self::of_type(&t.kind),
            ToolDefinition::Custom(_) => None,
        }
    }

    /// The search a tool type names (`tool_search_tool_regex`, `…_20251119`, …).
    pub fn of_type(kind: &str) -> Option<ToolSearchKind> {
        let base = kind.strip_prefix("tool_search_tool_")?;
        let variant = base.split('_').next()?;
        match variant {
            "regex" => Some(ToolSearchKind::Regex),
            "bm25" => Some(ToolSearchKind::Bm25),
            _ => None,
        }
    }

    /// The search a `server_tool_use` name calls.
    pub fn of_name(name: &str) -> Option<ToolSearchKind> {
        Self::of_type(name)
    }
}

impl ToolDefinition {
    /// The built-in tool search server tool of `kind`.
    pub fn tool_search(kind: ToolSearchKind) -> ToolDefinition {
        kind.definition()
    }

    /// This tool with `defer_loading` set (`true`) or removed (`false`).
    pub fn set_deferred(&mut self, deferred: bool) {
        let value = deferred.then_some(true);
        match self {
            ToolDefinition::Custom(t) => t.defer_loading = value,
            ToolDefinition::Versioned(t) => t.defer_loading = value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_reference_round_trips_in_a_tool_result() {
        let value = json!({"type":"tool_result","tool_use_id":"toolu_1","content":[
            {"type":"tool_reference","tool_name":"get_weather"},
            {"type":"tool_reference","tool_name":"deploy","cache_control":{"type":"ephemeral"}}]});
        let block: ContentBlock = serde_json::from_value(value.clone()).expect("parses");
        assert_eq!(referenced_tools(&block), ["get_weather", "deploy"]);
        let ContentBlock::ToolResult(result) = &block else {
            panic!("a tool result")
        };
        let Some(crate::content::Content::Blocks(blocks)) = &result.content else {
            panic!("blocks")
        };
        assert!(
            matches!(&blocks[0], ContentBlock::ToolReference(r) if r.tool_name == "get_weather")
        );
        assert!(blocks[1].cache_control().is_some());
        assert_eq!(serde_json::to_value(&block).expect("serializes"), value);
    }

    #[test]
    fn search_results_and_errors_read_typed() {
        let found = ContentBlock::ToolSearchToolResult(
            serde_json::from_value(json!({"tool_use_id":"srvtoolu_1","content":
                {"type":"tool_search_tool_search_result","tool_references":[
                    {"type":"tool_reference","tool_name":"a"},{"type":"tool_reference","tool_name":"b"}]}}))
            .expect("parses"),
        );
        let content = ToolSearchContent::of(&found).expect("typed");
        assert_eq!(content.tool_names(), ["a", "b"]);
        assert_eq!(content, ToolSearchContent::found(["a", "b"]));
        assert_eq!(
            Some(content.to_value()),
            found.server_tool_result().and_then(|r| r.content.clone())
        );
        assert_eq!(referenced_tools(&found), ["a", "b"]);

        let error = json!({"type":"tool_search_tool_result_error","error_code":"invalid_tool_input","error_message":"bad pattern"});
        let typed: ToolSearchContent = serde_json::from_value(error.clone()).expect("parses");
        assert_eq!(
            typed,
            ToolSearchContent::error(
                ToolSearchErrorCode::InvalidToolInput,
                Some("bad pattern".into())
            )
        );
        assert_eq!(typed.to_value(), error);
        let other: ToolSearchContent = serde_json::from_value(
            json!({"type":"tool_search_tool_result_error","error_code":"new_code"}),
        )
        .expect("parses");
        assert!(
            matches!(other, ToolSearchContent::Error(e) if e.error_code == ToolSearchErrorCode::Other("new_code".into()))
        );
    }

    #[test]
    fn the_two_definitions_are_the_api_shapes() {
        assert_eq!(
            serde_json::to_value(ToolDefinition::tool_search(ToolSearchKind::Regex))
                .expect("serializes"),
            json!({"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"})
        );
        assert_eq!(
            serde_json::to_value(ToolDefinition::tool_search(ToolSearchKind::Bm25))
                .expect("serializes"),
            json!({"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"})
        );
        for (kind, expected) in [
            ("tool_search_tool_regex", Some(ToolSearchKind::Regex)),
            ("tool_search_tool_bm25_20251119", Some(ToolSearchKind::Bm25)),
            ("tool_search_tool_other_20251119", None),
            ("web_search_20250305", None),
        ] {
            assert_eq!(ToolSearchKind::of_type(kind), expected, "{kind}");
        }
    }
}
