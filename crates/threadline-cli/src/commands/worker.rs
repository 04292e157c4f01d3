//! `threadline worker --listen ADDR`: serves the durable `Session` object (threadline-restate)
//! to a Restate server, over HTTP/2 cleartext.
//!
//! Every session the server sends here runs the command line's agent: the HTTP client against
//! the API or `--base-url`, the built-in tools in `--workspace`, and the loop configuration of
//! `threadline run`. Each model call and each tool call is a journaled step of the session's
//! Restate invocation, so when this process dies the server continues the session on another
//! worker behind the same deployment address without repeating a journaled step. The first
//! stdout line is `listening on http://ADDR` (flushed); SIGTERM or Ctrl-C stops serving.
//!
//! Whoever reaches the worker drives it (its tools, its API key, the answers to pending
//! questions), so with `--identity-key` it obeys only requests signed by that Restate server
//! (request identity) and without one it listens on a loopback address only.

use std::io::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use threadline_restate::{IdentityKey, PermissionMode, Worker};

use crate::agent_setup::{API_BASE_URL, client, platform_client, quick_retries};
use crate::commands::run::DEFAULT_MAX_TURNS;
use crate::commands::run_live::api_key;
use crate::commands::run_live::{LiveArgs, live_builder};
use crate::error::CliError;
use crate::meter::Meter;
use threadline_cli::stderr_line;

/// The subcommand, as error lines name it.
const WORKER: Option<&str> = Some("worker");

/// What `threadline worker` was asked.
/// The longest `--inactivity-timeout` or `--abort-timeout`: a year. The worker advertises
/// them to the Restate server in milliseconds, as a 64-bit number the SDK casts to; far beyond
/// this they would wrap to a short limit that cuts every step.
const MAX_TIMEOUT_SECS: u64 = 365 * 24 * 3600;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct WorkerArgs {
    /// Where to serve the Restate endpoint (port 0 picks a free port). A non-loopback
    /// address needs --identity-key.
    #[arg(long, value_name = "ADDR")]
    listen: SocketAddr,
    /// Obey only requests signed by the Restate server with this public key (`publickeyv1_…`,
    /// logged by a server started with `worker.invoker.request-identity-private-key-pem-file`);
    /// anything else is answered 401. Repeatable (several servers, a key rotation).
    #[arg(long, value_name = "KEY")]
    identity_key: Vec<String>,
    /// Send model requests here instead of https://api.anthropic.com (e.g. a `threadline
    /// mock`); `ANTHROPIC_API_KEY` is then optional.
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// The platform, as for `threadline run --provider`: anthropic (default), bedrock,
    /// vertex or foundry, each read from the variables Claude Code reads.
    #[arg(long, value_name = "PLATFORM", value_parser = ["anthropic", "bedrock", "vertex", "foundry"])]
    provider: Option<String>,
    /// The workspace directory the tools work in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<std::path::PathBuf>,
    /// The model (default: `claude-sonnet-5`, see `threadline_wire::defaults`).
    #[arg(long, value_name = "MODEL")]
    model: Option<String>,
    /// `max_tokens` of each request (default: as `threadline run`, 8192 capped at the
    /// model's output limit).
    #[arg(long, value_name = "N")]
    max_tokens: Option<u64>,
    /// More MCP servers beside the workspace's approved `.mcp.json` ones (as `run
    /// --mcp-config`); their tools' calls are journaled steps like the built-in tools'.
    #[arg(long, value_name = "FILE")]
    mcp_config: Option<std::path::PathBuf>,
    /// Autocompact at TOKENS instead of the model's threshold (as `run --autocompact-at`).
    #[arg(long, value_name = "TOKENS")]
    autocompact_at: Option<u64>,
    /// How the context is compacted (as `run --compaction`).
    #[arg(long, value_name = "MODE", value_enum, default_value_t = super::run::RunCompaction::Local)]
    compaction: super::run::RunCompaction,
    /// Today's date for the system context, YYYY-MM-DD (default: `THREADLINE_DATE`, else
    /// the UTC date when the worker starts).
    #[arg(long, value_name = "YYYY-MM-DD")]
    date: Option<String>,
    /// Let the model run shell commands without asking.
    #[arg(long)]
    allow_shell: bool,
    /// Calls a tool would ask about become questions to the client (`threadline run
    /// --restate` answers them); without it they are denied.
    #[arg(long)]
    ask: bool,
    /// Declare a tool idempotent, safe to run again when a worker died during its call (the
    /// read-only tools are; a shell command is not unless the operator says so). Repeatable.
    #[arg(long, value_name = "TOOL")]
    idempotent_tool: Vec<String>,
    /// Keep the sessions this worker ran last in memory, up to this many MiB of their stored
    /// state (default: 128), so that a session's next turn here continues from its loop
    /// state instead of parsing and normalizing the history again; 0 keeps none.
    #[arg(long, value_name = "MIB")]
    session_cache_mib: Option<usize>,
    /// Pause this many milliseconds after each journaled step, outside any step (for tests
    /// that stop a worker between two steps).
    #[arg(long, value_name = "MS", default_value_t = 0, hide = true)]
    step_delay_ms: u64,
    /// Seconds a step may go without progress before the server aborts the attempt (set it
    /// above the longest model stream or tool call; at most a year: the server takes the
    /// limit in milliseconds, and a larger one would wrap to a short one).
    #[arg(long, value_name = "SECS", default_value_t = 1800,
          value_parser = clap::value_parser!(u64).range(1..=MAX_TIMEOUT_SECS))]
    inactivity_timeout: u64,
    /// Seconds after the inactivity timeout before the attempt is killed (at most a year).
    #[arg(long, value_name = "SECS", default_value_t = 3600,
          value_parser = clap::value_parser!(u64).range(1..=MAX_TIMEOUT_SECS))]
    abort_timeout: u64,
    /// Register this worker with the Restate server whose admin API is at URL
    /// (`http://127.0.0.1:9070`) once it serves (`POST /deployments`, replacing a deployment
    /// at the same address).
    #[arg(long, value_name = "ADMIN_URL")]
    register: Option<String>,
    /// With --register: the address the server reaches this worker at (default: the
    /// listening address; behind a proxy or a load balancer, its address).
    #[arg(long, value_name = "URL", requires = "register")]
    advertise: Option<String>,
}

/// The identity keys of `args`: a malformed one is refused, and so is a non-loopback
/// `--listen` without any.
fn identity_keys(args: &WorkerArgs) -> Result<Vec<IdentityKey>, CliError> {
    let keys = args
        .identity_key
        .iter()
        .map(|key| {
            IdentityKey::new(key).map_err(|e| CliError::Usage {
                command: Some("worker"),
                message: format!("--identity-key {key}: {e}"),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if keys.is_empty() && !threadline_restate::is_loopback(args.listen) {
        return Err(CliError::Usage {
            command: Some("worker"),
            message: format!(
                "--listen {}: not a loopback address, and without --identity-key anyone who reaches the worker drives it; give the Restate server's public key (--identity-key publickeyv1_...) or listen on 127.0.0.1",
                args.listen
            ),
        });
    }
    Ok(keys)
}

pub(crate) fn run(args: &WorkerArgs) -> Result<(), CliError> {
    let identity_keys = identity_keys(args)?;
    let platform = crate::commands::run_live::platform(
        WORKER,
        args.provider.as_deref(),
        args.base_url.as_deref(),
    )?;
    let key = match platform {
        Some(_) => None,
        None => Some(api_key(args.base_url.as_deref())?),
    };
    let base_url = args.base_url.as_deref().unwrap_or(API_BASE_URL);
    let workspace = match &args.workspace {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .map_err(|e| CliError::start(WORKER, "cannot read the current directory", e))?,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::runtime(WORKER, e))?;
    let retry = args.base_url.is_some().then(quick_retries);
    let client = runtime
        .block_on(async {
            match (platform, &key) {
                (Some(settings), _) => platform_client(settings, retry, None),
                (None, key) => client(base_url, key.as_deref().unwrap_or_default(), retry, None),
            }
        })
        .map_err(|line| CliError::start_line(WORKER, line))?;
    drop(key);
    let model = args
        .model
        .clone()
        .unwrap_or_else(|| threadline_wire::defaults::DEFAULT_MODEL.to_owned());
    let max_tokens = crate::agent_setup::max_tokens_for_model("worker", &model, args.max_tokens);
    let date = crate::agent_setup::date(args.date.as_deref(), WORKER)?;
    // The agent of `threadline run`, built by the same code (`live_builder`): each durable
    // turn runs its loop (system prompt, built-in and approved MCP tools, attachments, cache
    // planning, compaction), so a turn's requests are those `run` and `run --dry-run` build
    // for the same workspace, flags and prompt.
    let live = LiveArgs {
        prompt: None,
        workspace: &workspace,
        model: &model,
        max_tokens,
        date: &date,
        base_url: args.base_url.as_deref(),
        provider: args.provider.as_deref(),
        allow_shell: args.allow_shell,
        transcript: None,
        history: None,
        max_turns: DEFAULT_MAX_TURNS,
        mcp_config: args.mcp_config.as_deref(),
        request_timeout: None,
        autocompact_at: args.autocompact_at,
        compaction: args.compaction.mode(),
    };
    let mcp_config = crate::mcp_setup::load(&workspace, args.mcp_config.as_deref(), "worker")
        .map_err(|line| CliError::unusable(WORKER, line, None))?;
    let mcp = runtime.block_on(crate::mcp_setup::connect(&mcp_config, "worker"));
    let agent = live_builder(&live, client.clone(), &Meter::default(), &mcp)
        .build()
        .map_err(|source| CliError::Agent {
            command: "worker",
            source,
        })?;
    let config = agent.config().clone();
    let mut worker = Worker::new(client, config)
        .with_turn_loop(agent)
        .with_permission(if args.ask {
            PermissionMode::Ask
        } else {
            PermissionMode::Deny
        })
        .with_step_delay(Duration::from_millis(args.step_delay_ms))
        .with_timeouts(
            Duration::from_secs(args.inactivity_timeout),
            Duration::from_secs(args.abort_timeout),
        );
    if let Some(mib) = args.session_cache_mib {
        worker = worker.with_session_cache(mib.saturating_mul(1 << 20));
    }
    for name in &args.idempotent_tool {
        if !worker.has_tool(name) {
            return Err(CliError::Usage {
                command: Some("worker"),
                message: format!("--idempotent-tool {name}: there is no such tool"),
            });
        }
        worker = worker.with_idempotent_tool(name);
    }
    for key in identity_keys {
        worker = worker.with_identity_key(key);
    }
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .map_err(|e| CliError::start(WORKER, format!("cannot listen on {}", args.listen), e))?;
        let address = listener
            .local_addr()
            .map_err(|e| CliError::start(WORKER, "cannot read the listening address", e))?;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on http://{address}")
            .and_then(|()| stdout.flush())
            .map_err(|e| CliError::output(WORKER, "the listening line", e))?;
        drop(stdout);
        let serving = threadline_restate::serve(listener, worker, shutdown());
        let Some(admin) = &args.register else {
            return serving
                .await
                .map_err(|e| CliError::start(WORKER, "cannot serve", e));
        };
        let uri = args
            .advertise
            .clone()
            .unwrap_or_else(|| format!("http://{address}"));
        // The server discovers the endpoint while it serves: register alongside.
        let register = register(admin, &uri);
        tokio::pin!(serving);
        tokio::select! {
            served = &mut serving => served.map_err(|e| CliError::start(WORKER, "cannot serve", e)),
            registered = register => {
                registered?;
                serving.await.map_err(|e| CliError::start(WORKER, "cannot serve", e))
            }
        }
    });
    crate::mcp_setup::stop(&runtime, mcp);
    served
}

/// Registers the deployment at `uri` with the admin API at `admin`; one line on stderr.
async fn register(admin: &str, uri: &str) -> Result<(), CliError> {
    let client = threadline_restate::Admin::new(admin).map_err(|e| CliError::Usage {
        command: Some("worker"),
        message: format!("--register {admin}: {e}"),
    })?;
    let id = client
        .register_deployment(uri, true)
        .await
        .map_err(|e| CliError::start(WORKER, format!("cannot register {uri} with {admin}"), e))?;
    stderr_line!("threadline: worker: registered {uri} as deployment {id}");
    Ok(())
}

/// Completes on SIGTERM or Ctrl-C.
async fn shutdown() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
