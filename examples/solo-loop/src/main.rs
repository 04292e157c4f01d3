//! `solo-loop PROMPT…`: one run in the current directory against `ANTHROPIC_BASE_URL`
//! (default: the API) with `ANTHROPIC_API_KEY`, which a base URL makes optional (as
//! `threadline run --base-url` does).

use threadline_client::{ApiKey, Auth, Client, ClientConfig};
use threadline_query::Event;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let prompt = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let base = std::env::var("ANTHROPIC_BASE_URL").ok();
    let key = match (std::env::var("ANTHROPIC_API_KEY"), &base) {
        (Ok(key), _) if !key.trim().is_empty() => key,
        (_, Some(_)) => "threadline-no-key".to_owned(),
        _ => return Err("ANTHROPIC_API_KEY is not set".into()),
    };
    let base = base.as_deref().unwrap_or("https://api.anthropic.com");
    let auth = Auth::ApiKey(ApiKey::new(&key)?);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let dir = std::env::current_dir()?;
    let compaction = solo_loop::compaction(20_000);
    let events = runtime.block_on(async {
        let client = Client::new(ClientConfig::new(base, auth))?;
        Ok::<_, Box<dyn std::error::Error>>(
            solo_loop::run(client, &dir, compaction, &prompt).await?,
        )
    })?;
    if let Some(Event::Finished(f)) = events.last() {
        println!("{:?} after {:?}", f.terminal, f.state.path);
    }
    Ok(())
}
