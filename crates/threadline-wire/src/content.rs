//! Content blocks: what a message is made of, in requests and in responses.
//!
//! One [`ContentBlock`] type serves both directions: the API echoes response blocks back in the
//! next request, so keeping one type means a response block is re-sent byte-for-byte.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::cache_control::CacheControl;

wire_struct! {
    /// `{"type":"text"}`: plain text, optionally with citations.
    pub struct TextBlock {
        required {
            /// The text.
            pub text: String,
        }
        optional {
            /// Citations supporting the text (responses; `citations_delta` in streams).
            pub citations: Vec<Citation>,
            /// A prompt-cache breakpoint on this block.
            pub cache_control: Box<CacheControl>,
        }
    }
}

wire_struct! {
    /// `{"type":"image"}`: an image given inline, by URL or by file id.
    pub struct ImageBlock {
        required {
            /// Where the image comes from.
            pub source: Box<MediaSource>,
        }
        optional {
            /// A prompt-cache breakpoint on this block.
            pub cache_control: Box<CacheControl>,
        }
    }
}

wire_struct! {
    /// `{"type":"document"}`: a PDF, plain text or custom-content document.
    pub struct DocumentBlock {
        required {
            /// Where the document comes from.
            pub source: Box<MediaSource>,
        }
        optional {
            /// A title the model may cite.
            pub title: String,
            /// Context about the document, not cited.
            pub context: String,
            /// `{"enabled": bool}`: whether the model may cite it.
            pub citations: Value,
            /// A prompt-cache breakpoint on this block.
            pub cache_control: Box<CacheControl>,
        }
    }
}

wire_struct! {
    /// `{"type":"search_result"}`: a search result the model may cite.
    pub struct SearchResultBlock {
        required {
            /// The source (URL or identifier).
            pub source: String,
            /// The result's title.
            pub title: String,
            /// The result's text blocks.
            pub content: Vec<ContentBlock>,
        }
        optional {
            /// `{"enabled": bool}`.
            pub citations: Value,
            /// A prompt-cache breakpoint on this block.
            pub cache_control: Box<CacheControl>,
        }
    }
}

wire_struct! {
    /// `{"type":"tool_use"}`: the model calls a client tool.
    pub struct ToolUseBlock {
        required {
            /// The call id (`toolu_…`), matched by the `tool_result`.
            pub id: String,
            /// The tool's name.
            pub name: String,
            /// The arguments, a JSON object.
            pub input: Value,
        }
        optional {
            /// Who called it (`{"type":"direct"}` or a code-execution caller).
            pub caller: Value,
            /// A prompt-cache breakpoint on this block.
            pub cache_control: Box<CacheControl>,
        }
    }
}

wire_struct! {
    /// `{"type":"tool_result"}`: the client's answer to a `tool_use`.
    pub struct ToolResultBlock {
        required {
            /// The id of the `tool_use` this answers.
            pub tool_use_id: String,
        }
        optional {
            /// The result, text or blocks.
            pub content: Content,
            /// Whether the tool failed.
            pub is_error: bool,
            /// A prompt-cache breakpoint on this block.
            pub cache_control: Box<CacheControl>,
        }
    }
}

wire_struct! {
    /// `{"type":"thinking"}`: the model's extended thinking, with the signature that lets it be
    /// sent back.
    pub struct ThinkingBlock {
        required {
            /// The (possibly summarized or omitted) thinking text.
            pub thinking: String,
        }
        optional {
            /// The signature; required when the block is sent back.
            pub signature: String,
        }
    }
}

wire_struct! {
    /// `{"type":"redacted_thinking"}`: encrypted thinking, sent back as is.
    pub struct RedactedThinkingBlock {
        required {
            /// The encrypted data.
            pub data: String,
        }
        optional {}
    }
}

wire_struct! {
    /// `{"type":"server_tool_use"}` (and `mcp_tool_use`): a tool the API runs itself.
    pub struct ServerToolUseBlock {
        required {
            /// The call id (`srvtoolu_…`).
            pub id: String,
            /// The server tool's name (`web_search`, `code_execution`, …).
            pub name: String,
        }
        optional {
            /// The arguments.
            pub input: Value,
            /// Who called it.
            pub caller: Value,
            /// A prompt-cache breakpoint on this block.
            pub cache_control: Box<CacheControl>,
        }
    }
}

wire_struct! {
    /// The result of a server tool (`web_search_tool_result`, `code_execution_tool_result`, …).
    pub struct ServerToolResultBlock {
        required {
            /// The id of the `server_tool_use` this answers.
            pub tool_use_id: String,
        }
        optional {
            /// The result payload (its shape depends on the tool).
            pub content: Value,
            /// A prompt-cache breakpoint on this block.
            pub cache_control: Box<CacheControl>,
        }
    }
}

wire_struct! {
    /// `{"type":"container_upload"}`: a file made available to the code-execution container.
    pub struct ContainerUploadBlock {
        required {
            /// The uploaded file's id.
            pub file_id: String,
        }
        optional {
            /// A prompt-cache breakpoint on this block.
            pub cache_control: Box<CacheControl>,
        }
    }
}

wire_struct! {
    /// `{"type":"compaction"}` (beta): a server-side summary of everything before it. Threshold
    /// compaction (`compact_20260112`) writes `content` and `encrypted_content`; on-demand
    /// compaction (`compact-2026-09-04`) writes `content` and `signature`. Either is sent back
    /// byte for byte.
    pub struct CompactionBlock {
        required {}
        optional {
            /// The summary, or `null` when compaction failed.
            pub content: String,
            /// The encrypted state that must be sent back (threshold compaction).
            pub encrypted_content: String,
            /// The signature binding the summary (on-demand compaction).
            pub signature: String,
            /// A prompt-cache breakpoint on this block.
            pub cache_control: Box<CacheControl>,
        }
    }
}

wire_enum! {
    /// One block of a message's content.
    pub enum ContentBlock (tag = "type") {
        /// Plain text.
        Text(TextBlock) = "text",
        /// An image.
        Image(ImageBlock) = "image",
        /// A document.
        Document(DocumentBlock) = "document",
        /// A search result.
        SearchResult(SearchResultBlock) = "search_result",
        /// A client tool call.
        ToolUse(ToolUseBlock) = "tool_use",
        /// A client tool result.
        ToolResult(ToolResultBlock) = "tool_result",
        /// Extended thinking.
        Thinking(ThinkingBlock) = "thinking",
        /// Redacted thinking.
        RedactedThinking(RedactedThinkingBlock) = "redacted_thinking",
        /// A server tool call.
        ServerToolUse(ServerToolUseBlock) = "server_tool_use",
        /// An MCP connector tool call (beta).
        McpToolUse(ServerToolUseBlock) = "mcp_tool_use",
        /// Web search results.
        WebSearchToolResult(ServerToolResultBlock) = "web_search_tool_result",
        /// Web fetch results.
        WebFetchToolResult(ServerToolResultBlock) = "web_fetch_tool_result",
        /// Code execution results.
        CodeExecutionToolResult(ServerToolResultBlock) = "code_execution_tool_result",
        /// Bash code execution results.
        BashCodeExecutionToolResult(ServerToolResultBlock) = "bash_code_execution_tool_result",
        /// Text editor code execution results.
        TextEditorCodeExecutionToolResult(ServerToolResultBlock) = "text_editor_code_execution_tool_result",
        /// Tool search results.
        ToolSearchToolResult(ServerToolResultBlock) = "tool_search_tool_result",
        /// MCP connector results (beta).
        McpToolResult(ServerToolResultBlock) = "mcp_tool_result",
        /// A container upload.
        ContainerUpload(ContainerUploadBlock) = "container_upload",
        /// A server-side compaction summary (beta).
        Compaction(CompactionBlock) = "compaction",
        /// A reference to a declared tool (tool search; see [`crate::tool_search`]).
        ToolReference(crate::tool_search::ToolReferenceBlock) = "tool_reference",
        /// A tool offered from here on (mid-conversation system messages only; beta).
        ToolAddition(crate::tool_change::ToolChangeBlock) = "tool_addition",
        /// A tool withdrawn from here on (mid-conversation system messages only; beta).
        ToolRemoval(crate::tool_change::ToolChangeBlock) = "tool_removal",
    }
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextBlock::new(text))
    }

    /// The result of a server tool, whichever tool it is.
    pub fn server_tool_result(&self) -> Option<&ServerToolResultBlock> {
        match self {
            ContentBlock::WebSearchToolResult(b)
            | ContentBlock::WebFetchToolResult(b)
            | ContentBlock::CodeExecutionToolResult(b)
            | ContentBlock::BashCodeExecutionToolResult(b)
            | ContentBlock::TextEditorCodeExecutionToolResult(b)
            | ContentBlock::ToolSearchToolResult(b)
            | ContentBlock::McpToolResult(b) => Some(b),
            _ => None,
        }
    }

    /// The result of a server tool, whichever tool it is, for changing it.
    pub fn server_tool_result_mut(&mut self) -> Option<&mut ServerToolResultBlock> {
        match self {
            ContentBlock::WebSearchToolResult(b)
            | ContentBlock::WebFetchToolResult(b)
            | ContentBlock::CodeExecutionToolResult(b)
            | ContentBlock::BashCodeExecutionToolResult(b)
            | ContentBlock::TextEditorCodeExecutionToolResult(b)
            | ContentBlock::ToolSearchToolResult(b)
            | ContentBlock::McpToolResult(b) => Some(b),
            _ => None,
        }
    }

    /// Whether this is a thinking or redacted-thinking block.
    pub fn is_thinking(&self) -> bool {
        matches!(
            self,
            ContentBlock::Thinking(_) | ContentBlock::RedactedThinking(_)
        )
    }
}

/// A message's content, or a tool result's: the string shorthand or a list of blocks.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// The shorthand for a single text block.
    Text(String),
    /// A list of blocks.
    Blocks(Vec<ContentBlock>),
}

impl Content {
    /// The content as blocks (the string shorthand becomes one text block; an empty string
    /// becomes an empty text block, exactly as the API reads it).
    pub fn to_blocks(&self) -> Vec<ContentBlock> {
        match self {
            Content::Text(text) => vec![ContentBlock::text(text.clone())],
            Content::Blocks(blocks) => blocks.clone(),
        }
    }

    /// Whether there is nothing in it (`""` or `[]`).
    pub fn is_empty(&self) -> bool {
        match self {
            Content::Text(text) => text.is_empty(),
            Content::Blocks(blocks) => blocks.is_empty(),
        }
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Content::Text(text.to_owned())
    }
}

impl From<Vec<ContentBlock>> for Content {
    fn from(blocks: Vec<ContentBlock>) -> Self {
        Content::Blocks(blocks)
    }
}

impl Serialize for Content {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Content::Text(text) => serializer.serialize_str(text),
            Content::Blocks(blocks) => blocks.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> serde::de::Visitor<'de> for ContentVisitor {
            type Value = Content;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Content, E> {
                Ok(Content::Text(v.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Content, E> {
                Ok(Content::Text(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Content, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
                while let Some(block) = seq.next_element()? {
                    blocks.push(block);
                }
                Ok(Content::Blocks(blocks))
            }
        }
        deserializer.deserialize_any(ContentVisitor)
    }
}

wire_struct! {
    /// `{"type":"base64"}` source: inline data.
    pub struct Base64Source {
        required {
            /// `image/png`, `application/pdf`, …
            pub media_type: String,
            /// Base64 data.
            pub data: String,
        }
        optional {}
    }
}

wire_struct! {
    /// `{"type":"text"}` document source: plain text.
    pub struct PlainTextSource {
        required {
            /// `text/plain`.
            pub media_type: String,
            /// The text.
            pub data: String,
        }
        optional {}
    }
}

wire_struct! {
    /// `{"type":"url"}` source.
    pub struct UrlSource {
        required {
            /// The URL.
            pub url: String,
        }
        optional {}
    }
}

wire_struct! {
    /// `{"type":"file"}` source: a Files API id.
    pub struct FileSource {
        required {
            /// The file id.
            pub file_id: String,
        }
        optional {}
    }
}

wire_struct! {
    /// `{"type":"content"}` document source: custom content blocks.
    pub struct BlocksSource {
        required {
            /// The document's content.
            pub content: Content,
        }
        optional {}
    }
}

wire_enum! {
    /// Where an image or document comes from.
    pub enum MediaSource (tag = "type") {
        /// Inline base64 data.
        Base64(Base64Source) = "base64",
        /// Plain text (documents).
        Text(PlainTextSource) = "text",
        /// Custom content blocks (documents).
        Content(BlocksSource) = "content",
        /// A URL.
        Url(UrlSource) = "url",
        /// A Files API id.
        File(FileSource) = "file",
    }
}

wire_struct! {
    /// Fields common to every citation kind; the location fields stay in `extra`.
    pub struct CitationFields {
        required {}
        optional {
            /// The cited text.
            pub cited_text: String,
            /// The cited document's index.
            pub document_index: u64,
            /// The cited document's title.
            pub document_title: String,
            /// A URL (web search citations).
            pub url: String,
            /// A title (web search and search result citations).
            pub title: String,
        }
    }
}

wire_enum! {
    /// A citation attached to a text block.
    pub enum Citation (tag = "type") {
        /// A character range of a plain-text document.
        CharLocation(CitationFields) = "char_location",
        /// A page range of a PDF.
        PageLocation(CitationFields) = "page_location",
        /// A block range of a custom-content document.
        ContentBlockLocation(CitationFields) = "content_block_location",
        /// A web search result.
        WebSearchResultLocation(CitationFields) = "web_search_result_location",
        /// A search result block.
        SearchResultLocation(CitationFields) = "search_result_location",
    }
}

wire_string_enum! {
    /// Who wrote a message.
    pub enum Role {
        /// The user (and tool results).
        User = "user",
        /// The model.
        Assistant = "assistant",
        /// A mid-conversation system message (newer models only).
        System = "system",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Blocks sit by the hundred thousand in long sessions, and every validation, clone and
    /// normalization walks them: the rare large parts (cache markers, media sources) are boxed
    /// so that a block stays within this size. (It was 256 bytes, four cache lines, before.)
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_content_block_stays_small() {
        let size = std::mem::size_of::<ContentBlock>();
        assert!(size <= 152, "ContentBlock grew to {size} bytes");
        assert!(std::mem::size_of::<crate::MessageParam>() <= 80);
    }

    #[test]
    fn every_known_block_round_trips() {
        let blocks = json!([
            {"type": "text", "text": "hi", "citations": null},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "d"}, "title": "t"},
            {"type": "tool_use", "id": "toolu_1", "name": "get", "input": {}, "caller": {"type": "direct"}},
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "r"}], "is_error": false},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "plain"},
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "redacted_thinking", "data": "xyz"},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
            {"type": "compaction", "content": null, "encrypted_content": null},
            {"type": "hologram", "depth": 3}
        ]);
        let parsed: Vec<ContentBlock> = serde_json::from_value(blocks.clone()).expect("parses");
        assert!(matches!(parsed[11], ContentBlock::Unknown(_)));
        assert!(matches!(
            parsed[5],
            ContentBlock::ToolResult(ToolResultBlock {
                content: Some(Content::Text(_)),
                ..
            })
        ));
        assert_eq!(serde_json::to_value(&parsed).expect("serializes"), blocks);
    }

    #[test]
    fn string_content_is_one_text_block() {
        let content: Content = serde_json::from_str(r#""hello""#).expect("parses");
        assert_eq!(content.to_blocks(), vec![ContentBlock::text("hello")]);
        assert!(serde_json::from_str::<Content>("3").is_err());
    }
}

wire_struct! {
    /// `{"model": …}`: one end of a server-side fallback hop.
    pub struct FallbackModelRef {
        required {
            /// The model (`from`: the string the request sent; `to`: the canonical id).
            pub model: String,
        }
        optional {}
    }
}

wire_struct! {
    /// A server-side `fallback` block, `{type: "fallback", from: {model}, to: {model}, trigger:
    /// {type: "refusal", category}}`: where a model declined and another served. Not a
    /// [`ContentBlock`] variant: it travels as [`ContentBlock::Unknown`] and must go back
    /// exactly in place; this is a typed view of it ([`FallbackBlock::of`]).
    pub struct FallbackBlock {
        required {
            /// `fallback`.
            pub kind: String => "type",
            /// The model that declined.
            pub from: FallbackModelRef,
            /// The model that served.
            pub to: FallbackModelRef,
        }
        optional {
            /// What triggered the hop (`{type: "refusal", category}`).
            pub trigger: Value,
        }
    }
}

impl FallbackBlock {
    /// The typed view of `block`, when it is a `fallback` block.
    pub fn of(block: &ContentBlock) -> Option<FallbackBlock> {
        match block {
            ContentBlock::Unknown(value)
                if value.get("type").and_then(Value::as_str) == Some("fallback") =>
            {
                serde_json::from_value(value.clone()).ok()
            }
            _ => None,
        }
    }
}
