//! Whatever the model's stream holds — blocks out of order, unknown events and deltas,
//! hostile text, tool uses with odd input, `error` events, no `message_stop` — the loop
//! neither panics nor leaves an invalid history, and every emitted tool use is answered.

use crate::common;

use common::{Log, Sleeper, assert_history_valid, run};
use proptest::prelude::*;
use serde_json::{Value, json};
use threadline_message::Message;
use threadline_query::scripted::{Reply, ScriptedService, Step};
use threadline_query::{Query, QueryConfig, State, ToolSet};
use threadline_wire::{ContentBlock, StreamEvent};

const MODEL: &str = threadline_query::scripted::SCRIPTED_MODEL;

fn message_start() -> Value {
    json!({"type": "message_start", "message": {"id": "msg_h", "type": "message", "role": "assistant", "content": [], "model": MODEL, "usage": {"input_tokens": 1, "output_tokens": 1}}})
}

fn steps(events: &[Value]) -> Vec<Step> {
    std::iter::once(message_start())
        .chain(events.iter().cloned())
        .filter_map(|v| serde_json::from_value::<StreamEvent>(v).ok())
        .map(Step::Event)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn hostile_streams_leave_a_valid_history(
        events in prop::collection::vec(threadline_testkit::strategies::stream_event(), 0..24)
    ) {
        let log = Log::default();
        let tools = ToolSet::new().with(Sleeper::new("read", true, &log));
        let service = ScriptedService::new([Reply::stream(steps(&events)), Reply::stream(steps(&events))]);
        let query = Query::new(service.clone(), QueryConfig::new(MODEL, 1024).with_max_turns(2))
            .with_tools(tools.clone());
        let out = common::paused_runtime()
            .block_on(run(query, State::default(), vec![Message::user_text("go")]));
        prop_assert!(service.violations().is_empty(), "{:?}", service.violations());
        assert_history_valid(&out.state.messages, &tools);
        // Every tool use in the history has exactly one result.
        let uses: Vec<String> = out.state.messages.iter().filter_map(|m| match m {
            Message::Assistant(a) => Some(a.content.iter().filter_map(|b| match b {
                ContentBlock::ToolUse(t) => Some(t.id.clone()),
                _ => None,
            }).collect::<Vec<_>>()),
            _ => None,
        }).flatten().collect();
        let results = common::tool_result_ids(&out.state.messages);
        prop_assert_eq!(uses, results);
    }
}
