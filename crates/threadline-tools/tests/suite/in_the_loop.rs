//! The built-in tools inside the query loop, against the scripted service: a write, a denied
//! shell command (nobody to ask), a read of what was written, and an edit — every request
//! valid, the files as the model left them.

use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::json;
use threadline_message::Message;
use threadline_query::scripted::{Reply, Response, SCRIPTED_MODEL, ScriptedService};
use threadline_query::{Event, Permission, Query, QueryConfig, State, Terminal, Transition};
use threadline_tools::{ShellAccess, builtin};
use threadline_wire::{ContentBlock, StopReason};
use threadline_workspace::Workspace;

#[tokio::test]
async fn the_model_writes_reads_and_edits_a_file_and_is_refused_the_shell() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workspace = Arc::new(Workspace::new(dir.path()).expect("workspace"));
    let tools = builtin(workspace, ShellAccess::Ask);
    let service = ScriptedService::new([
        Reply::stream(
            Response::new("msg_1")
                .tool_use("toolu_1", "Write", json!({"path": "src/main.rs", "content": "fn main() {}\n"}))
                .tool_use("toolu_2", "Bash", json!({"command": "rm -rf /"}))
                .stop(StopReason::ToolUse),
        ),
        Reply::stream(
            Response::new("msg_2")
                .tool_use("toolu_3", "Read", json!({"path": "src/main.rs"}))
                .tool_use("toolu_4", "Edit", json!({"path": "src/main.rs", "old_string": "{}", "new_string": "{ println!(\"hi\"); }"}))
                .stop(StopReason::ToolUse),
        ),
        Reply::stream(Response::new("msg_3").text("Done.").stop(StopReason::EndTurn)),
    ]);
    let query =
        Query::new(service.clone(), QueryConfig::new(SCRIPTED_MODEL, 1024)).with_tools(tools);
    let events: Vec<Event> = query
        .run(State::default(), vec![Message::user_text("Write a main.")])
        .collect()
        .await;
    let Some(Event::Finished(finished)) = events.last() else {
        panic!("finished");
    };
    assert_eq!(finished.terminal, Terminal::Completed);
    assert_eq!(
        finished.state.path,
        [Transition::NextTurn, Transition::NextTurn]
    );
    assert!(service.violations().is_empty());
    let results: Vec<(String, String)> = finished
        .state
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User(u) => u.content.iter().find_map(|b| match b {
                ContentBlock::ToolResult(r) => Some((
                    r.tool_use_id.clone(),
                    match &r.content {
                        Some(threadline_wire::Content::Text(t)) => t.clone(),
                        _ => String::new(),
                    },
                )),
                _ => None,
            }),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            (
                "toolu_1".to_owned(),
                "Wrote 13 bytes to src/main.rs".to_owned()
            ),
            ("toolu_2".to_owned(), Permission::NOT_GRANTED.to_owned()),
            ("toolu_3".to_owned(), "     1\tfn main() {}\n".to_owned()),
            (
                "toolu_4".to_owned(),
                "Edited src/main.rs: 1 replacement".to_owned()
            ),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/main.rs")).expect("read"),
        "fn main() { println!(\"hi\"); }\n"
    );
}
