//! An agent with one typed tool, in one call: `ANTHROPIC_API_KEY=… cargo run -p quickstart`
//! (`ANTHROPIC_BASE_URL` for another server, a `threadline mock` say).

use schemars::JsonSchema;
use serde::Deserialize;
use threadline::{Agent, client::Client, query::typed_tool};

/// The city to look up.
#[derive(Deserialize, JsonSchema)]
struct Weather {
    /// The city's name.
    city: String,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let weather = typed_tool(
        "weather",
        "The weather in a city.",
        |args: Weather, _ctx| async move { format!("{}: sunny, 21 °C", args.city) },
    );
    let agent = Agent::builder(Client::from_env()?).tool(weather).build()?;
    let answer = agent.prompt("What is the weather in Lyon?").await?;
    let (output, input) = (answer.usage.output_tokens, answer.usage.total());
    println!("{}", answer.text);
    println!("tokens: {} in, {output} out", input - output);
    println!("cost: ${:.6}", answer.cost);
    Ok(())
}
