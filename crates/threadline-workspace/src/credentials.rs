//! The environment variables that hold a model credential: what no child process the agent
//! starts inherits (a shell command, an MCP server) and what no workspace configuration may
//! expand. The Claude API's (`ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN`, and every other
//! `ANTHROPIC_*` variable), and the cloud platforms' that the client reads
//! (`threadline_client::provider::platform_from_env`): AWS's key pair, session token and
//! Bedrock API key, Vertex's access token, Foundry's key and token.
//!
//! ```
//! use threadline_workspace::credentials::is_credential_variable;
//!
//! assert!(is_credential_variable("AWS_SECRET_ACCESS_KEY"));
//! assert!(is_credential_variable("ANTHROPIC_FOUNDRY_API_KEY"));
//! assert!(!is_credential_variable("AWS_REGION"));
//! assert!(!is_credential_variable("PATH"));
//! ```

/// The prefix of the Claude API's variables (and Claude Code's platform ones): every one is
/// treated as a credential.
pub const CREDENTIAL_PREFIX: &str = "ANTHROPIC_";

/// The credential variables named one by one: those of [`CREDENTIAL_PREFIX`] the client reads,
/// and the cloud platforms' outside it.
pub const CREDENTIAL_VARIABLES: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_VERTEX_ACCESS_TOKEN",
    "ANTHROPIC_FOUNDRY_API_KEY",
    "ANTHROPIC_FOUNDRY_AUTH_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
];

/// Whether the variable `name` holds a credential: an `ANTHROPIC_*` one or one of
/// [`CREDENTIAL_VARIABLES`].
pub fn is_credential_variable(name: &str) -> bool {
    name.starts_with(CREDENTIAL_PREFIX) || CREDENTIAL_VARIABLES.contains(&name)
}
