//! The agent the `run`, `demo` and `replay` commands drive: the HTTP client (against the API
//! or a mock's base URL) wrapped in a [`Metered`] service, the built-in tools in a workspace,
//! and the facade's [`Agent`].

use std::path::Path;
use std::time::Duration;

use threadline::client::{ApiKey, Auth, Client, ClientConfig, Platform, Provider, RetryConfig};
use threadline::tools::ShellAccess;
use threadline::{Agent, AgentBuilder, Compaction};

use crate::meter::{Meter, Metered};

/// The system prompt of every agent the command line runs.
pub(crate) const SYSTEM_PROMPT: &str = "You are threadline, an agent that helps the user with \
software engineering tasks in their workspace. Use the tools to look before you change \
anything, keep changes small, and run the tests when there are any. Text inside \
<system-reminder> tags is information from the system, not from the user; use it when it is \
relevant.";

/// The environment variable holding the API key.
pub(crate) const API_KEY_VARIABLE: &str = "ANTHROPIC_API_KEY";

/// Where the real API is.
pub(crate) use threadline_wire::defaults::DEFAULT_BASE_URL as API_BASE_URL;

/// The client for `base_url` with `key`; one line on failure (the key is never in it).
pub(crate) fn client(
    base_url: &str,
    key: &str,
    retry: Option<RetryConfig>,
    request_timeout: Option<Duration>,
) -> Result<Client, String> {
    let key = ApiKey::new(key).map_err(|e| format!("the API key is not usable: {e}"))?;
    let config = ClientConfig::new(base_url, Auth::ApiKey(key));
    finish_client(config, retry, request_timeout)
}

/// The client for a cloud platform's settings (`--provider`); one line on failure (no
/// credential is ever in it).
pub(crate) fn platform_client(
    settings: threadline::client::provider::PlatformSettings,
    retry: Option<RetryConfig>,
    request_timeout: Option<Duration>,
) -> Result<Client, String> {
    let config =
        ClientConfig::new(settings.base_url, settings.auth).with_provider(settings.provider);
    finish_client(config, retry, request_timeout)
}

fn finish_client(
    mut config: ClientConfig,
    retry: Option<RetryConfig>,
    request_timeout: Option<Duration>,
) -> Result<Client, String> {
    let base_url = config.base_url.clone();
    if let Some(retry) = retry {
        config = config.with_retry(retry);
    }
    // The default is the client's (`Timeouts::total`); the flag only overrides it.
    if let Some(total) = request_timeout {
        config = config.with_total_timeout(total);
    }
    Client::new(config).map_err(|e| format!("cannot build the HTTP client for {base_url}: {e}"))
}

/// Quick retries, for a local mock (the real API gets the client's defaults).
pub(crate) fn quick_retries() -> RetryConfig {
    RetryConfig::default().with_backoff(Duration::from_millis(100), Duration::from_millis(400))
}

/// The `max_tokens` of requests to `model_id`: `flag`, else the workspace default capped at
/// the model's output limit. A model the table does not know is one warning line on stderr,
/// naming `command`.
pub(crate) fn max_tokens_for_model(command: &str, model_id: &str, flag: Option<u64>) -> u64 {
    let table = threadline_wire::model::ModelTable::builtin();
    let resolved = table.resolve(model_id);
    if let Some(warning) = resolved.warning() {
        threadline_cli::stderr_line!("threadline: {command}: {warning}");
    }
    flag.unwrap_or_else(|| threadline_wire::defaults::max_tokens_for(resolved.model()))
}

/// The environment variable that fixes today's date (for reproducible output).
pub(crate) const DATE_VARIABLE: &str = "THREADLINE_DATE";

/// Today's date: the flag, else [`DATE_VARIABLE`], else the UTC date of the clock; a
/// malformed one is a usage error of `command`.
pub(crate) fn date(
    flag: Option<&str>,
    command: Option<&'static str>,
) -> Result<String, crate::error::CliError> {
    let date = match flag {
        Some(date) => date.to_owned(),
        None => match std::env::var(DATE_VARIABLE) {
            Ok(date) if !date.is_empty() => date,
            _ => threadline::attach::utc_today(),
        },
    };
    if threadline::attach::is_iso_date(&date) {
        Ok(date)
    } else {
        Err(crate::error::CliError::usage(
            command,
            format!("{date:?} is not a date of the form YYYY-MM-DD"),
        ))
    }
}

/// What every command's agent shares.
pub(crate) struct AgentSettings<'a> {
    pub(crate) workspace: &'a Path,
    pub(crate) model: &'a str,
    pub(crate) max_tokens: u64,
    pub(crate) shell: ShellAccess,
    pub(crate) compaction: Compaction,
    pub(crate) today: Option<&'a str>,
}

/// The builder of the command line's agent over a metered `client`.
pub(crate) fn agent_builder(
    client: Client,
    meter: &Meter,
    settings: AgentSettings<'_>,
) -> AgentBuilder<Metered<Client>> {
    // The model table as the client's platform offers it, and the model by that platform's id.
    let platform = client.config().provider.platform();
    let profile = match &client.config().provider {
        Provider::Bedrock { region } => Some(bedrock_profile(region)),
        _ => None,
    };
    let mut builder = Agent::builder(Metered::new(client, meter.clone()))
        .model(settings.model)
        .max_tokens(settings.max_tokens)
        .system_prompt(SYSTEM_PROMPT)
        .workspace(settings.workspace)
        .builtin_tools(settings.shell)
        .compaction(settings.compaction);
    if let Some(today) = settings.today {
        builder = builder.today(today);
    }
    if platform != Platform::Anthropic {
        builder = builder.platform(platform);
    }
    if let Some(profile) = profile {
        builder = builder.bedrock_profile(profile);
    }
    builder
}

/// The cross-region inference profile a Bedrock client in `region` puts models given by
/// their API id behind: `ANTHROPIC_BEDROCK_REGION_PREFIX` (as Claude Code reads it), else
/// the region's geography (`bedrock_profile_prefix`).
fn bedrock_profile(region: &str) -> String {
    use threadline::wire::platform::{bedrock_profile_prefix, is_bedrock_profile_prefix};
    std::env::var("ANTHROPIC_BEDROCK_REGION_PREFIX")
        .ok()
        .filter(|p| is_bedrock_profile_prefix(p))
        .unwrap_or_else(|| bedrock_profile_prefix(region).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_checked() {
        let run = Some("run");
        assert_eq!(
            date(Some("2026-11-30"), run).ok().as_deref(),
            Some("2026-11-30")
        );
        assert_eq!(
            date(Some("30/11/2026"), run).map_err(|e| e.to_string()),
            Err("threadline: run: \"30/11/2026\" is not a date of the form YYYY-MM-DD".to_owned())
        );
        assert!(date(Some("30/11/2026"), run).is_err());
        assert!(date(Some("2026-11-3"), run).is_err());
        // The clock's date is well formed.
        assert!(date(None, run).is_ok());
    }
}
