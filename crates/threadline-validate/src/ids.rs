//! The API's id and name patterns, checked by hand (no regex engine needed for these classes).

/// Whether `id` matches `^[a-zA-Z0-9_-]+$`, the pattern of a `tool_use` id.
///
/// ```
/// use threadline_validate::is_valid_tool_use_id;
/// assert!(is_valid_tool_use_id("toolu_01A09q90qw90lq917835lq9"));
/// assert!(!is_valid_tool_use_id("call_x|fc_y"));
/// assert!(!is_valid_tool_use_id(""));
/// ```
pub fn is_valid_tool_use_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Whether `id` matches `^srvtoolu_[a-zA-Z0-9_]+$`, the pattern of a `server_tool_use` id.
///
/// ```
/// use threadline_validate::is_valid_server_tool_use_id;
/// assert!(is_valid_server_tool_use_id("srvtoolu_01EoSNE7k4dUJyGatASCV5qs"));
/// assert!(!is_valid_server_tool_use_id("toolu_01"));
/// assert!(!is_valid_server_tool_use_id("srvtoolu_"));
/// ```
pub fn is_valid_server_tool_use_id(id: &str) -> bool {
    id.strip_prefix("srvtoolu_").is_some_and(|rest| {
        !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

/// Whether `name` matches `^[a-zA-Z0-9_-]{1,max_len}$`, the pattern of a custom tool name.
///
/// ```
/// use threadline_validate::is_valid_tool_name;
/// assert!(is_valid_tool_name("get_weather", 64));
/// assert!(!is_valid_tool_name("get.weather", 64));
/// assert!(!is_valid_tool_name(&"a".repeat(65), 64));
/// ```
pub fn is_valid_tool_name(name: &str, max_len: usize) -> bool {
    // Every accepted character is ASCII, so the byte length is the character count.
    (1..=max_len).contains(&name.len()) && is_valid_tool_use_id(name)
}
