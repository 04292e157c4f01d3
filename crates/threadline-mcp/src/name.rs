//! The loop name of a server tool: `mcp__<server>__<tool>`, as Claude Code names it.

/// The longest tool name the Messages API accepts (`^[a-zA-Z0-9_-]{1,64}$`).
pub const MAX_TOOL_NAME: usize = 64;

/// `mcp__<server>__<tool>` with every character outside `[A-Za-z0-9_-]` replaced by `_`,
/// cut to [`MAX_TOOL_NAME`] characters.
///
/// ```
/// assert_eq!(threadline_mcp::tool_name("my server", "get.sum"), "mcp__my_server__get_sum");
/// ```
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let mut name = format!("mcp__{}__{}", clean(server), clean(tool));
    name.truncate(MAX_TOOL_NAME);
    name
}
