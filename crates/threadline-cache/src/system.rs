//! The system prompt as up to four text blocks, split at a dynamic-boundary marker.
//!
//! | block | content | cache scope |
//! |---|---|---|
//! | attribution header | a version tag | none |
//! | static prefix | everything before [`DYNAMIC_BOUNDARY`] | global (the same for every session) |
//! | dynamic suffix | everything after it (memory, environment, MCP instructions) | session |
//! | appended text | the caller's extra system text | none |
//!
//! Empty parts are left out (the API refuses markers on empty text blocks). The planner puts
//! its stable system marker on the static prefix ([`SystemBlocks::static_index`]).

use threadline_wire::{SystemPrompt, TextBlock};

/// The marker that separates the static prefix of a system prompt from its dynamic suffix.
pub const DYNAMIC_BOUNDARY: &str = "__SYSTEM_PROMPT_DYNAMIC_BOUNDARY__";

/// How widely a system block's cache entry can be shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheScope {
    /// Not cached on its own.
    None,
    /// The same bytes for every session and organization: cacheable globally.
    Global,
    /// The same bytes within one session.
    Session,
}

/// What the system prompt is made of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SystemParts<'a> {
    /// The attribution header (a version tag), uncached.
    pub attribution: Option<&'a str>,
    /// The prompt, possibly holding [`DYNAMIC_BOUNDARY`] once.
    pub prompt: &'a str,
    /// Text appended by the caller, uncached.
    pub append: Option<&'a str>,
}

/// The system prompt as blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemBlocks {
    /// The blocks (at most four, none empty).
    pub blocks: Vec<TextBlock>,
    /// The scope of each block.
    pub scopes: Vec<CacheScope>,
}

impl SystemBlocks {
    /// The index of the static prefix block, if there is one.
    pub fn static_index(&self) -> Option<usize> {
        self.scopes.iter().position(|s| *s == CacheScope::Global)
    }

    /// The `system` field of a request.
    pub fn to_system(&self) -> Option<SystemPrompt> {
        (!self.blocks.is_empty()).then(|| SystemPrompt::Blocks(self.blocks.clone()))
    }
}

/// Splits the system prompt into its blocks.
///
/// ```
/// use threadline_cache::system::{split_system_prompt, CacheScope, SystemParts, DYNAMIC_BOUNDARY};
/// let prompt = format!("You are a coding agent.\n{DYNAMIC_BOUNDARY}\nCwd: /repo");
/// let split = split_system_prompt(&SystemParts {
///     attribution: Some("x-version: 1.2"),
///     prompt: &prompt,
///     append: None,
/// });
/// assert_eq!(split.scopes, [CacheScope::None, CacheScope::Global, CacheScope::Session]);
/// assert_eq!(split.blocks[1].text, "You are a coding agent.");
/// assert_eq!(split.blocks[2].text, "Cwd: /repo");
/// ```
pub fn split_system_prompt(parts: &SystemParts<'_>) -> SystemBlocks {
    let (static_part, dynamic_part) = match parts.prompt.split_once(DYNAMIC_BOUNDARY) {
        Some((before, after)) => (
            before.trim_end_matches('\n'),
            after.trim_start_matches('\n'),
        ),
        None => (parts.prompt, ""),
    };
    let candidates = [
        (parts.attribution.unwrap_or(""), CacheScope::None),
        (static_part, CacheScope::Global),
        (dynamic_part, CacheScope::Session),
        (parts.append.unwrap_or(""), CacheScope::None),
    ];
    let mut blocks = Vec::new();
    let mut scopes = Vec::new();
    for (text, scope) in candidates {
        if !text.trim().is_empty() {
            blocks.push(TextBlock::new(text));
            scopes.push(scope);
        }
    }
    SystemBlocks { blocks, scopes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_four_blocks_and_none_empty() {
        let prompt = format!("static{DYNAMIC_BOUNDARY}dynamic");
        let split = split_system_prompt(&SystemParts {
            attribution: Some("a"),
            prompt: &prompt,
            append: Some("b"),
        });
        assert_eq!(split.blocks.len(), 4);
        assert_eq!(split.static_index(), Some(1));
        let bare = split_system_prompt(&SystemParts {
            attribution: Some(""),
            prompt: "only",
            append: None,
        });
        assert_eq!(bare.blocks.len(), 1);
        assert_eq!(bare.scopes, [CacheScope::Global]);
        let empty = split_system_prompt(&SystemParts::default());
        assert!(empty.blocks.is_empty() && empty.to_system().is_none());
    }
}
