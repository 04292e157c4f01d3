//! Tool search over loopback HTTP: 300 generated tools whose definitions exceed 10 % of the
//! window are deferred behind the BM25 search; the mock searches the request's deferred
//! tools, the model calls what it found, the tool runs, the session finishes. And the split
//! case: the search and a client tool in one response, the search's result beginning the
//! next response.

use std::sync::Mutex;

use threadline_cache::Simulator;
use threadline_mock::ToolSearchScript;
use threadline_query::tool_search::{self, ToolSearchConfig};
use threadline_query::{Tool as QueryTool, ToolContext, ToolOutput, ToolStream, tool_result};
use threadline_wire::tool_search::ToolSearchKind;

use super::*;

/// The services and what each does, for generated tools that read like an MCP server's.
const SERVICES: &[(&str, &str)] = &[
    ("github", "a GitHub repository"),
    ("jira", "a Jira project"),
    ("slack", "a Slack workspace"),
    ("calendar", "the team calendar"),
    ("billing", "the billing system"),
    ("crm", "the customer relationship database"),
    ("drive", "the shared document drive"),
    ("pager", "the on-call paging service"),
    ("metrics", "the metrics and dashboards service"),
    ("deploy", "the deployment pipeline"),
];
const VERBS: &[(&str, &str)] = &[
    ("create", "Creates"),
    ("list", "Lists"),
    ("get", "Fetches"),
    ("update", "Updates"),
    ("delete", "Deletes"),
    ("archive", "Archives"),
];
const OBJECTS: &[(&str, &str)] = &[
    ("item", "an item"),
    ("comment", "a comment"),
    ("label", "a label"),
    ("owner", "the owner"),
    ("attachment", "an attachment"),
];

/// The tool the model looks for (the only one about weather).
const TARGET: &str = "weather_get_forecast";

/// A generated tool: logs each call, answers a fixed text.
struct Generated {
    name: String,
    description: String,
    calls: Arc<Mutex<Vec<Value>>>,
    always: bool,
}

impl QueryTool for Generated {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "id": {"type": "string", "description": "The identifier of the record to act on."},
            "city": {"type": "string", "description": "A city name, for location-aware tools."},
            "dry_run": {"type": "boolean", "description": "Validate the request without applying it."}
        }})
    }
    fn always_load(&self) -> bool {
        self.always
    }
    fn call(&self, input: Value, _ctx: ToolContext) -> ToolStream {
        self.calls.lock().expect("lock").push(input);
        let name = self.name.clone();
        tool_result(async move { ToolOutput::text(format!("{name}: sunny, 21 °C")) })
    }
}

/// 299 generated tools plus the weather tool (300), all sharing one call log; `keep` is an
/// extra always-loaded tool.
fn generated_tools(calls: &Arc<Mutex<Vec<Value>>>, keep: Option<&str>) -> ToolSet {
    let mut set = ToolSet::new();
    let mut add = |name: String, description: String, always: bool| {
        set.insert(Arc::new(Generated {
            name,
            description,
            calls: Arc::clone(calls),
            always,
        }));
    };
    let mut n = 0;
    'outer: for (service, what) in SERVICES {
        for (verb, does) in VERBS {
            for (object, thing) in OBJECTS {
                if n == 299 {
                    break 'outer;
                }
                n += 1;
                add(
                    format!("{service}_{verb}_{object}"),
                    format!(
                        "{does} {thing} in {what}. Needs the record id; set dry_run to check the \
                         request first. Returns the record as JSON with its timestamps, author \
                         and permalink, or an error naming the missing permission."
                    ),
                    false,
                );
            }
        }
    }
    add(
        TARGET.to_owned(),
        "Gets the weather forecast for a city: temperature, wind and rain for the next days."
            .to_owned(),
        false,
    );
    if let Some(keep) = keep {
        add(
            keep.to_owned(),
            "Reads a note from the notebook.".to_owned(),
            true,
        );
    }
    set
}

/// The recorded bodies, parsed.
fn requests(mock: &MockServer) -> Vec<MessagesRequest> {
    mock.requests()
        .iter()
        .map(|r| serde_json::from_value(r.body.clone().expect("a body")).expect("a request"))
        .collect()
}

/// The checks both tests make on the requests' `tools`: byte-identical on every request, no
/// deferred tool marked, `deferred` deferred tools and the search tool loaded.
fn assert_tools_frozen(bodies: &[Value], deferred: usize) {
    let first = serde_json::to_string(&bodies[0]["tools"]).expect("json");
    for (i, body) in bodies.iter().enumerate() {
        assert_eq!(
            serde_json::to_string(&body["tools"]).expect("json"),
            first,
            "request {i}: the tools changed"
        );
    }
    let tools: Vec<threadline_wire::ToolDefinition> =
        serde_json::from_value(bodies[0]["tools"].clone()).expect("tools");
    assert_eq!(tools.iter().filter(|t| t.is_deferred()).count(), deferred);
    assert!(
        tools
            .iter()
            .filter(|t| t.is_deferred())
            .all(|t| t.cache_control().is_none()),
        "a deferred tool carries a cache marker"
    );
    let search: Vec<&threadline_wire::ToolDefinition> = tools
        .iter()
        .filter(|t| ToolSearchKind::of_tool(t).is_some())
        .collect();
    assert_eq!(search.len(), 1);
    assert!(!search[0].is_deferred());
    // The planner's tool marker sits on a loaded tool (the search tool, last).
    assert_eq!(
        tools.iter().rposition(|t| t.cache_control().is_some()),
        Some(tools.len() - 1)
    );
}

#[tokio::test(flavor = "current_thread")]
async fn three_hundred_deferred_tools_the_model_searches_finds_and_calls_one() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let tools = generated_tools(&calls, None);
    assert_eq!(tools.len(), 300);
    // The definitions exceed 10 % of the window: the default policy defers them.
    let model = ModelTable::builtin().resolve(MODEL).model();
    let definitions = tools.definitions();
    let tokens = tool_search::tools_tokens(&definitions);
    assert!(
        tokens > model.context_window / 10,
        "{tokens} tokens of tools, window {}",
        model.context_window
    );

    let mut search = ToolSearchScript::new("weather forecast for a city");
    search.call = Some(json!({"city": "Paris"}));
    let steps = [
        Step::text("Let me find a tool for that.").with_tool_search(search),
        Step::text("It is sunny in Paris."),
    ];
    let mock = mock(steps).await;
    // A system prompt as long as an agent's: the loaded prefix (system and the search tool;
    // deferred tools are not in it) is then above the model's cacheable minimum.
    let system: String = (0..120)
        .map(|n| format!("Rule {n}: prefer the tools you find with the search over guessing. "))
        .collect();
    let config = config().with_system(system);
    let query = query(client(&mock, 0), config, &tools);
    let out = run(query).await;
    assert_eq!(out.path(), [Transition::NextTurn]);
    assert_eq!(out.terminal, Terminal::Completed);
    check(&mock, &out, &tools, &[Some(200), Some(200)], &[]);

    // The executor ran the discovered tool, once, with the model's input.
    assert_eq!(*calls.lock().expect("lock"), [json!({"city": "Paris"})]);
    let bodies: Vec<Value> = mock
        .requests()
        .into_iter()
        .map(|r| r.body.expect("a body"))
        .collect();
    assert_tools_frozen(&bodies, 300);
    // The search blocks are sent back verbatim, paired, before the call and its result.
    let messages = bodies[1]["messages"].as_array().expect("messages");
    assert_eq!(messages[1]["role"], "assistant");
    let assistant = messages[1]["content"].as_array().expect("blocks").clone();
    assert_eq!(
        messages[2]["content"][0]["tool_use_id"], assistant[3]["id"],
        "the tool's result answers the call"
    );
    assert_eq!(
        types(&assistant),
        [
            "text",
            "server_tool_use",
            "tool_search_tool_result",
            "tool_use"
        ]
    );
    assert_eq!(assistant[1]["name"], "tool_search_tool_bm25");
    assert_eq!(
        assistant[1]["input"],
        json!({"query": "weather forecast for a city"})
    );
    assert_eq!(assistant[2]["tool_use_id"], assistant[1]["id"]);
    assert_eq!(
        assistant[2]["content"]["tool_references"][0],
        json!({"type": "tool_reference", "tool_name": TARGET})
    );
    assert_eq!(assistant[3]["name"], TARGET);

    // The simulator: the request after the discovery reads back the prefix the first
    // request cached (the tools did not change; the discovery is appended).
    let parsed = requests(&mock);
    let mut sim = Simulator::new(model);
    let first = sim.step(0, &parsed[0]).usage;
    let second = sim.step(2_000, &parsed[1]).usage;
    let cached_before = first.cache_creation_input_tokens + first.cache_read_input_tokens;
    assert!(cached_before > 0, "{first:?}");
    let share = second.cache_read_input_tokens as f64 / cached_before as f64;
    eprintln!(
        "tool search: {tokens} estimated tokens of tool definitions (window {}); request 0 \
         cached {cached_before} tokens, request 1 read {} ({share:.3})",
        model.context_window, second.cache_read_input_tokens
    );
    assert!(
        share >= 0.95,
        "read {share:.3} of the cached prefix: {second:?}"
    );
    assert_eq!(second.cache_read_input_tokens, cached_before, "all of it");
}

#[tokio::test(flavor = "current_thread")]
async fn a_search_beside_a_client_tool_is_answered_at_the_start_of_the_next_response() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let tools = generated_tools(&calls, Some("notes_read"));
    let config =
        config().with_tool_search(ToolSearchConfig::always().with_kind(ToolSearchKind::Regex));
    let srv = "srvtoolu_01H4HgrFsi9xizPtvnx1Tm7D";
    let steps = [
        // As recorded by vercel/ai: a client tool and the search in one response, the search
        // left pending, `stop_reason: tool_use`.
        Step::message(vec![
            text("Reading the note, then finding a tool."),
            tool_use("toolu_01", "notes_read", json!({"id": "n1"})),
            Block::ServerToolUse {
                id: Some(srv.to_owned()),
                name: "tool_search_tool_regex".to_owned(),
                input: json!({"pattern": "weather|forecast"}),
            },
        ])
        .with_stop_reason("tool_use"),
        // The next response begins with the pending result.
        Step::message(vec![
            Block::Verbatim {
                block: json!({"type": "tool_search_tool_result", "tool_use_id": srv, "content":
                    {"type": "tool_search_tool_search_result", "tool_references": [
                        {"type": "tool_reference", "tool_name": TARGET}]}}),
            },
            tool_use("toolu_02", TARGET, json!({"city": "Oslo"})),
        ]),
        Step::text("Done."),
    ];
    let mock = mock(steps).await;
    let query = query(client(&mock, 0), config, &tools);
    let out = run(query).await;
    assert_eq!(out.path(), [Transition::NextTurn, Transition::NextTurn]);
    assert_eq!(out.terminal, Terminal::Completed);
    check(&mock, &out, &tools, &[Some(200), Some(200), Some(200)], &[]);
    assert_eq!(
        *calls.lock().expect("lock"),
        [json!({"id": "n1"}), json!({"city": "Oslo"})]
    );
    let bodies: Vec<Value> = mock
        .requests()
        .into_iter()
        .map(|r| r.body.expect("a body"))
        .collect();
    assert_tools_frozen(&bodies, 300);
    // Request 2 resumes the pending search: the server_tool_use is sent back, unanswered,
    // followed by the client tool's result alone.
    let messages = bodies[1]["messages"].as_array().expect("messages");
    let last_two = &messages[messages.len() - 2..];
    assert_eq!(
        types(last_two[0]["content"].as_array().expect("blocks")),
        ["text", "tool_use", "server_tool_use"]
    );
    assert_eq!(
        types(last_two[1]["content"].as_array().expect("blocks")),
        ["tool_result"]
    );
    // Request 3: the result stays the first block of its own (the next) assistant message.
    let messages = bodies[2]["messages"].as_array().expect("messages");
    let blocks: Vec<Vec<Value>> = messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m["content"].as_array().expect("blocks").clone())
        .collect();
    assert_eq!(types(&blocks[0]), ["text", "tool_use", "server_tool_use"]);
    assert_eq!(types(&blocks[1]), ["tool_search_tool_result", "tool_use"]);
    assert_eq!(blocks[1][0]["tool_use_id"], srv);
}
