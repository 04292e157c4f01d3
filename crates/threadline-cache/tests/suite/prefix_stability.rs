//! Prefix stability: over whole multi-turn sessions, everything up to the last marker of
//! request N is byte-identical in request N+1 (markers aside: they move), unless a compaction
//! happened in between. Checked with the default planner over every fixture Claude Code
//! transcript and over long generated sessions (with tools and a split system prompt, wide
//! turns), and with every strategy over one of them.

use crate::sessions;

use threadline_cache::prefix::{Location, clear_markers};
use threadline_cache::{LookbackAware, Planner, Seed, Stable1h};
use threadline_message::claude_code::{ImportOptions, import_claude_code};
use threadline_testkit::fixtures;
use threadline_wire::content::Content;
use threadline_wire::{ContentBlock, MessagesRequest};

/// The bytes of each piece of a request in prefix order (markers cleared), with the message
/// role on message pieces, and the location of the last marker.
fn pieces(request: &MessagesRequest) -> (Vec<String>, Option<usize>) {
    let planned =
        threadline_cache::Prefix::of(request, &threadline_cache::Estimate, Default::default());
    let last = planned.breakpoints().last().map(|&(p, _)| p);
    let mut bare = request.clone();
    clear_markers(&mut bare);
    let mut out = Vec::new();
    for tool in bare.tools.iter().flatten() {
        out.push(json(tool));
    }
    for block in bare.system.as_ref().map(|s| s.blocks()).unwrap_or_default() {
        out.push(json(&block));
    }
    for message in &bare.messages {
        let role = serde_json::to_string(&message.role).unwrap_or_default();
        let blocks = match &message.content {
            Content::Text(t) => vec![ContentBlock::text(t.clone())],
            Content::Blocks(b) => b.clone(),
        };
        for (i, block) in blocks.iter().enumerate() {
            out.push(format!(
                "{role}{}{}",
                if i == 0 { "|start|" } else { "|" },
                json(block)
            ));
        }
    }
    assert_eq!(out.len(), planned.pieces.len());
    (out, last)
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Checks a session of requests (each with whether a compaction came before it); returns how
/// many consecutive pairs were compared.
fn check_session(
    name: &str,
    planner: &mut Planner,
    requests: Vec<(MessagesRequest, bool)>,
) -> usize {
    let mut previous: Option<(Vec<String>, Option<usize>, Option<Location>)> = None;
    let mut compared = 0;
    for (n, (mut request, after_compaction)) in requests.into_iter().enumerate() {
        if after_compaction {
            planner.reset();
        }
        let plan = planner.plan(&mut request);
        let (now, last) = pieces(&request);
        if let Some((before, Some(upto), location)) = &previous
            && !after_compaction
        {
            compared += 1;
            for i in 0..=*upto {
                assert_eq!(
                    before.get(i),
                    now.get(i),
                    "{name}: request {n} differs from request {} at piece {i}, before its last marker ({location:?})",
                    n - 1
                );
            }
        }
        previous = Some((now, last, plan.locations.last().copied()));
    }
    compared
}

fn transcript_requests(text: &str) -> Vec<(MessagesRequest, bool)> {
    let imported = import_claude_code(text, &ImportOptions::default());
    let messages = if imported.messages.is_empty() {
        import_claude_code(text, &ImportOptions::default().with_sidechains(true)).messages
    } else {
        imported.messages
    };
    threadline_normalize::implied_requests(&messages)
        .into_iter()
        .map(|r| {
            (
                MessagesRequest::new(sessions::MODEL, 1024, r.messages),
                r.after_compaction,
            )
        })
        .collect()
}

#[test]
fn fixture_transcripts_keep_their_prefix() {
    let mut total = 0;
    for path in fixtures::transcripts() {
        let text = std::fs::read_to_string(&path).expect("readable");
        let mut planner = Planner::default();
        total += check_session(
            &path.display().to_string(),
            &mut planner,
            transcript_requests(&text),
        );
    }
    assert!(total >= 25, "only {total} request pairs compared");
}

#[test]
fn generated_long_sessions_keep_their_prefix() {
    for seed in 1..=3 {
        let (session, static_index) = sessions::generated_session(500, seed, 6);
        let requests = session.into_iter().map(|(_, r)| (r, false)).collect();
        let mut planner = Planner::default().with_static_system(static_index);
        let compared = check_session(&format!("generated seed {seed}"), &mut planner, requests);
        assert!(compared > 50, "{compared}");
    }
}

#[test]
fn testkit_long_sessions_keep_their_prefix_with_every_strategy() {
    let messages = threadline_testkit::messages::long_session(1_000, 11);
    for mut planner in [
        Planner::new(Seed),
        Planner::new(LookbackAware),
        Planner::new(Stable1h),
    ] {
        let requests = threadline_normalize::implied_requests(&messages)
            .into_iter()
            .map(|r| {
                (
                    MessagesRequest::new(sessions::MODEL, 1024, r.messages),
                    r.after_compaction,
                )
            })
            .collect();
        let name = planner.strategy_name();
        assert!(check_session(name, &mut planner, requests) > 60);
    }
}
