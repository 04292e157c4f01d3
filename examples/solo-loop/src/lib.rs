//! An agent from the crates alone: `threadline-query`'s loop with `threadline-compact`'s
//! policy, `threadline-cache`'s markers and `threadline-tools`' tools, over
//! `threadline-client`. No facade.

use std::path::Path;
use std::sync::Arc;

use futures::StreamExt as _;
use threadline_cache::{LookbackAware, Planner};
use threadline_client::Client;
use threadline_compact::{Compaction, TailOptions};
use threadline_message::Message;
use threadline_query::{CompactionPolicy, Event, Query, QueryConfig, SharedPlanner, State};
use threadline_tools::{ShellAccess, Workspace, builtin};
use threadline_wire::SystemPrompt;

/// Autocompact at `tokens`, keeping a short verbatim tail and re-attaching no files.
pub fn compaction(tokens: u64) -> Compaction {
    let mut compaction = Compaction::default().autocompact_at(tokens);
    compaction.autocompact.tail = TailOptions {
        min_tokens: 100,
        min_text_messages: 1,
        max_tokens: 2_000,
    };
    compaction.autocompact.reattach.max_files = 0;
    compaction
}

/// The instructions every request starts with.
pub const SYSTEM: &str = "You work on the files of one directory.";

/// Runs `prompt` in `dir` to the end (the last event is `Event::Finished`).
pub async fn run(client: Client, dir: &Path, compaction: Compaction, prompt: &str) -> Run {
    let tools = builtin(Arc::new(Workspace::new(dir)?), ShellAccess::Ask);
    let mut config = QueryConfig::new("claude-sonnet-4-5", 4_096);
    config.system = Some(SystemPrompt::Text(SYSTEM.to_owned()));
    let policy = CompactionPolicy::new(client.clone(), compaction, &config);
    let query = Query::new(client, config)
        .with_tools(tools)
        .with_policy(policy)
        .with_cache_planner(SharedPlanner::new(Planner::new(LookbackAware)));
    let input = vec![Message::user_text(prompt)];
    Ok(query.run(State::default(), input).collect().await)
}

/// The events of a run, or why the directory cannot be used.
pub type Run = std::io::Result<Vec<Event>>;
