//! Sessions as sequences of timestamped requests, for the tests and the strategy benchmark.
//!
//! * [`clock`]: timestamps for the requests an internal message array implies
//!   (`threadline_normalize::implied_requests`, shared with `threadline inspect`).
//! * [`generated_session`]: a long deterministic session (`threadline_testkit`'s realistic turn
//!   mix) with a realistic tool set and system prompt, wide turns (a dozen parallel tool calls:
//!   more than 20 blocks added between two requests), and a clock: seconds between the steps
//!   of a tool loop, minutes between user prompts, and idle gaps of 6 to 50 minutes.
#![allow(dead_code, unreachable_pub, missing_docs)]

use serde_json::json;
use threadline_cache::system::{DYNAMIC_BOUNDARY, SystemParts, split_system_prompt};
use threadline_cache::tools::{ToolOverlay, ToolSnapshot};
use threadline_message::Message;
use threadline_normalize::{ImpliedRequest, implied_requests};
use threadline_testkit::messages::{SessionBuilder, extend_session, tool_use};
use threadline_wire::tools::CustomTool;
use threadline_wire::{MessagesRequest, ToolDefinition};

/// The model the generated sessions talk to.
pub const MODEL: &str = "claude-sonnet-4-6";

/// A small deterministic generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x5851_f42d_4c95_7f2d)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// A coding agent's tool set (schemas of realistic size).
pub fn agent_tools() -> Vec<ToolDefinition> {
    let names = [
        "Read",
        "Write",
        "Edit",
        "Bash",
        "Grep",
        "Glob",
        "WebFetch",
        "TodoWrite",
    ];
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let description = format!(
                "{name}: {}",
                "Performs the operation on the workspace, following the rules of the session. "
                    .repeat(12 + i * 3)
            );
            ToolDefinition::Custom(
                CustomTool::new(
                    *name,
                    json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "The absolute path of the file or directory to operate on."},
                        "pattern": {"type": "string", "description": "A glob or regular expression, depending on the tool."},
                        "content": {"type": "string", "description": "The text to write, or the command to run."},
                        "limit": {"type": "integer", "description": "The most lines or results to return."}
                    },
                    "required": ["path"],
                    "additionalProperties": false
                    }),
                )
                .with_description(description),
            )
        })
        .collect()
}

/// A coding agent's system prompt: attribution, a static prefix, a dynamic suffix.
pub fn agent_system_prompt() -> String {
    format!(
        "{}\n{DYNAMIC_BOUNDARY}\n{}",
        "You are an agent that helps with software engineering tasks. Be concise and precise. "
            .repeat(120),
        "Environment: working directory /repo, platform linux, today's date 2026-01-01. "
            .repeat(20)
    )
}

/// Appends a wide turn: a prompt, one response with `width` parallel tool calls, their
/// results, and the answer.
fn wide_turn(b: &mut SessionBuilder, width: usize) {
    b.user("Look at every module of the crate and tell me which ones lack tests.");
    let msg = b.response_id();
    let mut uses = vec![threadline_testkit::messages::text(
        "I'll read all of them at once.",
    )];
    let mut ids = Vec::new();
    for k in 0..width {
        let id = b.tool_use_id();
        uses.push(tool_use(
            &id,
            "Read",
            json!({"path": format!("/repo/src/module_{k}.rs")}),
        ));
        ids.push(id);
    }
    b.assistant(&msg, uses);
    let results = ids
        .iter()
        .enumerate()
        .map(|(k, id)| {
            threadline_message::tool_result_block(
                id,
                threadline_wire::Content::Text(format!(
                    "pub fn f{k}() {{}}\n{}",
                    "// body line\n".repeat(20 + k)
                )),
                false,
            )
        })
        .collect();
    b.tool_results(results);
    let answer = b.response_id();
    b.assistant(
        &answer,
        vec![threadline_testkit::messages::text(
            "Modules 2, 5 and 7 lack tests.",
        )],
    );
}

/// A generated session: at least `n` internal messages, deterministic in `seed`, with wide
/// turns about every `wide_every` turns (0: none).
pub fn generated_messages(n: usize, seed: u64, wide_every: usize) -> Vec<Message> {
    let mut rng = Rng::new(seed);
    let mut b = SessionBuilder::new();
    let mut turn = 0u64;
    while b.messages().len() < n {
        turn += 1;
        let target = b.messages().len() + 1;
        extend_session(
            &mut b,
            target,
            seed.wrapping_mul(1_000_003).wrapping_add(turn),
        );
        if wide_every > 0 && rng.chance(100 / wide_every as u64) {
            wide_turn(&mut b, rng.range(11, 16) as usize);
        }
    }
    b.into_messages()
}

/// Timestamps (ms) for `requests`: a few seconds within a tool loop, up to a few minutes after
/// a user prompt, and an idle gap of 6–50 minutes before about one user prompt in ten.
pub fn clock(requests: &[ImpliedRequest], seed: u64) -> Vec<u64> {
    let mut rng = Rng::new(seed ^ 0xc10c);
    let mut at = 0u64;
    requests
        .iter()
        .map(|r| {
            let after_prompt = r.messages.last().is_some_and(|m| match &m.content {
                threadline_wire::content::Content::Text(_) => true,
                threadline_wire::content::Content::Blocks(blocks) => !blocks
                    .iter()
                    .any(|b| matches!(b, threadline_wire::ContentBlock::ToolResult(_))),
            });
            at += if after_prompt {
                if rng.chance(10) {
                    rng.range(6 * 60, 50 * 60) * 1000
                } else {
                    rng.range(10, 200) * 1000
                }
            } else {
                rng.range(2, 40) * 1000
            };
            at
        })
        .collect()
}

/// The full requests of a generated session (tools from a snapshot, the split system prompt),
/// with their timestamps; markers are left to the planner.
pub fn generated_session(
    n: usize,
    seed: u64,
    wide_every: usize,
) -> (Vec<(u64, MessagesRequest)>, Option<usize>) {
    let messages = generated_messages(n, seed, wide_every);
    let requests = implied_requests(&messages);
    let times = clock(&requests, seed);
    let snapshot = ToolSnapshot::new(&agent_tools());
    let prompt = agent_system_prompt();
    let system = split_system_prompt(&SystemParts {
        attribution: Some("x-agent-version: 1.0.0"),
        prompt: &prompt,
        append: None,
    });
    let out = requests
        .into_iter()
        .zip(times)
        .map(|(r, at)| {
            let mut request = MessagesRequest::new(MODEL, 8192, r.messages);
            request.tools = Some(snapshot.for_request(&ToolOverlay::default()));
            request.system = system.to_system();
            (at, request)
        })
        .collect();
    (out, system.static_index())
}

/// Plans every request of `session` with `planner` and simulates it: the per-request usage.
pub fn evaluate(
    planner: &mut threadline_cache::Planner,
    session: &[(u64, MessagesRequest)],
    model: &threadline_wire::model::Model,
) -> Vec<threadline_cache::Predicted> {
    let mut sim = threadline_cache::Simulator::new(model);
    session
        .iter()
        .map(|(at, request)| {
            let mut request = request.clone();
            planner.plan(&mut request);
            let prefix = planner.planned_prefix().expect("just planned");
            sim.step_prefix(*at, prefix, Some(&request)).usage
        })
        .collect()
}

/// The ideal cache's usage for `session` (see `threadline_cache::oracle`).
pub fn best(
    session: &[(u64, MessagesRequest)],
    model: &threadline_wire::model::Model,
    ttl: threadline_cache::Ttl,
) -> Vec<threadline_cache::Predicted> {
    let prefixes: Vec<(u64, threadline_cache::Prefix)> = session
        .iter()
        .map(|(at, r)| {
            (
                *at,
                threadline_cache::Prefix::of(r, &threadline_cache::Estimate, Default::default()),
            )
        })
        .collect();
    threadline_cache::oracle::best_usage(model, &prefixes, ttl)
}
