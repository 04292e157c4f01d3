//! A working agent in a dozen lines: the HTTP client against the mock server on loopback
//! (swap the base URL and key for `https://api.anthropic.com` and `ANTHROPIC_API_KEY`), the
//! built-in tools in a scratch directory.
//!
//! `cargo run -p threadline --example agent`

use futures::StreamExt as _;
use threadline::Agent;
use threadline::client::{ApiKey, Auth, Client, ClientConfig};
use threadline::query::Event;
use threadline::tools::ShellAccess;
use threadline_mock::{MockServer, Scenario, Step};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("notes.txt"), "buy milk\n")?;
    let mock = MockServer::start(Scenario::new([
        Step::tool_use("Read", serde_json::json!({"path": "notes.txt"})),
        Step::text("You need milk."),
    ]))
    .await?;

    let auth = Auth::ApiKey(ApiKey::new("sk-ant-example")?);
    let client = Client::new(ClientConfig::new(mock.base_url(), auth))?;
    let mut agent = Agent::builder(client)
        .system_prompt("You help with notes.")
        .workspace(dir.path())
        .builtin_tools(ShellAccess::Ask)
        .build()?;
    let mut events = agent.run("What do I need?");
    while let Some(event) = events.next().await {
        match event {
            Event::ToolStarted { name, .. } => println!("tool: {name}"),
            Event::Transition(transition) => println!("transition: {transition}"),
            Event::Finished(finished) => println!("finished: {}", finished.terminal),
            _ => {}
        }
    }
    Ok(())
}
