//! The conformance suite every [`SessionStore`] backend passes: the Claude Agent SDK's
//! contracts 1–13 and ours (X1 idempotent append, X2 concurrent appenders, X3 large entries,
//! X4 byte identity, X7 hostile keys, X8 delete then read).
//!
//! [`run_all`] runs every contract on one store. Each contract touches only projects named
//! `{namespace}-{contract}` (plus a suffix), so one shared backend run with a fresh namespace
//! each time is isolated from earlier runs and from other data. It needs no test framework and
//! no async runtime of its own: await it on any executor.
//!
//! ```
//! # #[cfg(feature = "conformance")] {
//! use threadline_store::{MemoryStore, conformance};
//!
//! let store = MemoryStore::new();
//! let report = futures::executor::block_on(conformance::run_all(&store, "doc"))
//!     .expect("every contract passes");
//! assert!(report.passed.contains(&"x1_idempotent_append"));
//! # }
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use futures::future::{BoxFuture, join_all};

use crate::entry::{Entry, MAX_ENTRY_BYTES};
use crate::error::StoreError;
use crate::key::SessionKey;
use crate::store::{Appended, SessionStore};

/// What passed: every contract's name, in the order run.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// The names of the contracts that passed.
    pub passed: Vec<&'static str>,
}

/// One contract that did not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Failure {
    /// The contract's name (one of [`CONTRACTS`]).
    pub contract: &'static str,
    /// What was expected and what came back.
    pub message: String,
}

/// The contracts that did not hold (at least one).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Failures(pub Vec<Failure>);

impl fmt::Display for Failures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} store contract(s) failed", self.0.len())?;
        for failure in &self.0 {
            write!(f, "\n- {}: {}", failure.contract, failure.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for Failures {}

/// The names of the contracts [`run_all`] runs, in order.
pub const CONTRACTS: &[&str] = &[
    "c01_append_then_load_keeps_order",
    "c02_unknown_key_loads_none",
    "c03_appends_keep_call_order",
    "c04_empty_append_is_a_no_op",
    "c05_subpath_stored_apart",
    "c06_projects_isolated",
    "c07_list_sessions",
    "c08_list_sessions_leaves_out_subpaths",
    "c09_delete_main",
    "c10_delete_main_cascades",
    "c11_delete_subpath_only",
    "c12_list_subkeys_of_this_session",
    "c13_list_subkeys_leaves_out_main",
    "x1_idempotent_append",
    "x2_concurrent_appenders",
    "x3_large_entries",
    "x4_byte_identity",
    "x7_hostile_keys",
    "x8_delete_then_read",
];

/// Runs every contract of [`CONTRACTS`] on `store`, in order, each on projects named
/// `{namespace}-{contract}` (plus a suffix); a contract failing does not stop the others.
///
/// `Ok`: all passed. `Err`: the failures, each saying what was expected and what came back.
pub async fn run_all(store: &dyn SessionStore, namespace: &str) -> Result<Report, Failures> {
    let mut passed = Vec::new();
    let mut failures = Vec::new();
    for &contract in CONTRACTS {
        let ctx = Ctx {
            store,
            project: format!("{namespace}-{contract}"),
        };
        match run_one(contract, &ctx).await {
            Ok(()) => passed.push(contract),
            Err(message) => failures.push(Failure { contract, message }),
        }
    }
    if failures.is_empty() {
        Ok(Report { passed })
    } else {
        Err(Failures(failures))
    }
}

async fn run_one(contract: &'static str, ctx: &Ctx<'_>) -> Result<(), String> {
    match contract {
        "c01_append_then_load_keeps_order" => c01(ctx).await,
        "c02_unknown_key_loads_none" => c02(ctx).await,
        "c03_appends_keep_call_order" => c03(ctx).await,
        "c04_empty_append_is_a_no_op" => c04(ctx).await,
        "c05_subpath_stored_apart" => c05(ctx).await,
        "c06_projects_isolated" => c06(ctx).await,
        "c07_list_sessions" => c07(ctx).await,
        "c08_list_sessions_leaves_out_subpaths" => c08(ctx).await,
        "c09_delete_main" => c09(ctx).await,
        "c10_delete_main_cascades" => c10(ctx).await,
        "c11_delete_subpath_only" => c11(ctx).await,
        "c12_list_subkeys_of_this_session" => c12(ctx).await,
        "c13_list_subkeys_leaves_out_main" => c13(ctx).await,
        "x1_idempotent_append" => x1(ctx).await,
        "x2_concurrent_appenders" => x2(ctx).await,
        "x3_large_entries" => x3(ctx).await,
        "x4_byte_identity" => x4(ctx).await,
        "x7_hostile_keys" => x7(ctx).await,
        "x8_delete_then_read" => x8(ctx).await,
        other => Err(format!("unknown contract {other}")),
    }
}

type Outcome = Result<(), String>;

/// One contract's view of the store: its project prefix and helpers that turn store errors
/// into messages.
struct Ctx<'a> {
    store: &'a dyn SessionStore,
    project: String,
}

impl Ctx<'_> {
    /// The project `{namespace}-{contract}{suffix}`.
    fn project(&self, suffix: &str) -> String {
        format!("{}{suffix}", self.project)
    }

    fn key(&self, suffix: &str, session: &str) -> Result<SessionKey, String> {
        SessionKey::new(self.project(suffix), session).map_err(|e| format!("key {session}: {e}"))
    }

    fn sub(&self, suffix: &str, session: &str, subpath: &str) -> Result<SessionKey, String> {
        self.key(suffix, session)?
            .with_subpath(subpath)
            .map_err(|e| format!("subkey {session}/{subpath}: {e}"))
    }

    async fn append(&self, key: &SessionKey, entries: &[Entry]) -> Result<Appended, String> {
        self.store
            .append(key, entries)
            .await
            .map_err(|e| format!("append of {} entries to {key:?} failed: {e}", entries.len()))
    }

    async fn load(&self, key: &SessionKey) -> Result<Option<Vec<Entry>>, String> {
        self.store
            .load(key)
            .await
            .map_err(|e| format!("load of {key:?} failed: {e}"))
    }

    /// The listed session ids of `project`, and their mtimes.
    async fn list(&self, project: &str) -> Result<Vec<(String, u64)>, String> {
        let infos = self
            .store
            .list_sessions(project)
            .await
            .map_err(|e| format!("list_sessions({project:?}) failed: {e}"))?;
        Ok(infos.into_iter().map(|i| (i.session, i.mtime_ms)).collect())
    }

    async fn list_ids(&self, project: &str) -> Result<Vec<String>, String> {
        Ok(self
            .list(project)
            .await?
            .into_iter()
            .map(|(s, _)| s)
            .collect())
    }

    async fn delete(&self, key: &SessionKey) -> Outcome {
        self.store
            .delete(key)
            .await
            .map_err(|e| format!("delete of {key:?} failed: {e}"))
    }

    async fn subkeys(&self, key: &SessionKey) -> Result<Vec<String>, String> {
        self.store
            .list_subkeys(key)
            .await
            .map_err(|e| format!("list_subkeys({key:?}) failed: {e}"))
    }

    /// Checks that `key` loads exactly `expected` (byte for byte, in order).
    async fn expect_entries(&self, key: &SessionKey, expected: &[Entry]) -> Outcome {
        let got = self.load(key).await?;
        expect_same(key, got.as_deref(), Some(expected))
    }

    /// Checks that `key` loads `None`.
    async fn expect_none(&self, key: &SessionKey) -> Outcome {
        let got = self.load(key).await?;
        expect_same(key, got.as_deref(), None)
    }
}

/// The entries' bytes as text, for messages.
fn show(entries: Option<&[Entry]>) -> String {
    match entries {
        None => "None".into(),
        Some(entries) => {
            let lines: Vec<String> = entries
                .iter()
                .map(|e| {
                    let text = String::from_utf8_lossy(e.bytes());
                    if text.len() > 120 {
                        format!(
                            "<{} bytes: {}…>",
                            e.bytes().len(),
                            &text[..floor(&text, 80)]
                        )
                    } else {
                        text.into_owned()
                    }
                })
                .collect();
            format!("Some([{}])", lines.join(", "))
        }
    }
}

/// The largest char boundary of `text` at or below `at`.
fn floor(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn expect_same(key: &SessionKey, got: Option<&[Entry]>, expected: Option<&[Entry]>) -> Outcome {
    let same = match (got, expected) {
        (None, None) => true,
        (Some(g), Some(e)) => {
            g.len() == e.len() && g.iter().zip(e).all(|(g, e)| g.bytes() == e.bytes())
        }
        _ => false,
    };
    if same {
        Ok(())
    } else {
        Err(format!(
            "load({key:?}): expected {}, got {}",
            show(expected),
            show(got)
        ))
    }
}

fn expect_eq<T: PartialEq + fmt::Debug>(what: &str, got: T, expected: T) -> Outcome {
    if got == expected {
        Ok(())
    } else {
        Err(format!("{what}: expected {expected:?}, got {got:?}"))
    }
}

fn appended(written: usize, duplicates: usize) -> Appended {
    Appended {
        written,
        duplicates,
    }
}

/// An entry `{"type":…,"uuid":…,"n":…}` (Claude Code lines carry `type` and `uuid`).
fn entry(kind: &str, uuid: &str, n: usize) -> Result<Entry, String> {
    let text = format!(r#"{{"type":"{kind}","uuid":"{uuid}","n":{n}}}"#);
    raw(&text)
}

/// An entry of exactly these bytes.
fn raw(text: &str) -> Result<Entry, String> {
    Entry::new(text.as_bytes().to_vec()).map_err(|e| format!("building the entry {text}: {e}"))
}

fn entries(prefix: &str, count: usize) -> Result<Vec<Entry>, String> {
    (0..count)
        .map(|i| entry("user", &format!("{prefix}-{i}"), i))
        .collect()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

// ---- the Claude Agent SDK's contracts ----

async fn c01(ctx: &Ctx<'_>) -> Outcome {
    let key = ctx.key("", "s1")?;
    let batch = entries("c01", 3)?;
    let done = ctx.append(&key, &batch).await?;
    expect_eq("append of 3 new entries", done, appended(3, 0))?;
    ctx.expect_entries(&key, &batch).await
}

async fn c02(ctx: &Ctx<'_>) -> Outcome {
    let key = ctx.key("", "never")?;
    ctx.expect_none(&key).await?;
    let main = ctx.key("", "s1")?;
    ctx.append(&main, &entries("c02", 1)?).await?;
    ctx.expect_none(
        &main
            .with_subpath("subagents/none")
            .map_err(|e| e.to_string())?,
    )
    .await?;
    ctx.expect_none(&ctx.key("-other", "s1")?).await
}

async fn c03(ctx: &Ctx<'_>) -> Outcome {
    let key = ctx.key("", "s1")?;
    let all = entries("c03", 6)?;
    ctx.append(&key, &all[..1]).await?;
    ctx.append(&key, &all[1..3]).await?;
    ctx.append(&key, &all[3..4]).await?;
    ctx.append(&key, &all[4..]).await?;
    ctx.expect_entries(&key, &all).await
}

async fn c04(ctx: &Ctx<'_>) -> Outcome {
    let key = ctx.key("", "s1")?;
    expect_eq(
        "append of no entries",
        ctx.append(&key, &[]).await?,
        appended(0, 0),
    )?;
    ctx.expect_none(&key).await?;
    expect_eq(
        "list_sessions after an empty append",
        ctx.list_ids(&ctx.project("")).await?,
        Vec::<String>::new(),
    )?;
    let sub = key.with_subpath("subagents/a").map_err(|e| e.to_string())?;
    ctx.append(&sub, &[]).await?;
    expect_eq(
        "list_subkeys after an empty append to a subpath",
        ctx.subkeys(&key).await?,
        Vec::<String>::new(),
    )?;
    let batch = entries("c04", 2)?;
    ctx.append(&key, &batch).await?;
    ctx.append(&key, &[]).await?;
    ctx.expect_entries(&key, &batch).await
}

async fn c05(ctx: &Ctx<'_>) -> Outcome {
    let main = ctx.key("", "s1")?;
    let sub = ctx.sub("", "s1", "subagents/agent-1")?;
    let m = entries("c05-main", 2)?;
    let s = entries("c05-sub", 3)?;
    ctx.append(&main, &m).await?;
    ctx.append(&sub, &s).await?;
    ctx.expect_entries(&main, &m).await?;
    ctx.expect_entries(&sub, &s).await
}

async fn c06(ctx: &Ctx<'_>) -> Outcome {
    let a = ctx.key("-a", "s1")?;
    let b = ctx.key("-b", "s1")?;
    let ea = entries("c06-a", 2)?;
    let eb = entries("c06-b", 1)?;
    ctx.append(&a, &ea).await?;
    ctx.append(&b, &eb).await?;
    ctx.append(&ctx.key("-b", "s2")?, &entries("c06-b2", 1)?)
        .await?;
    ctx.expect_entries(&a, &ea).await?;
    ctx.expect_entries(&b, &eb).await?;
    expect_eq(
        "list_sessions of project a",
        ctx.list_ids(&ctx.project("-a")).await?,
        vec!["s1".to_owned()],
    )?;
    expect_eq(
        "list_sessions of project b",
        ctx.list_ids(&ctx.project("-b")).await?,
        vec!["s1".to_owned(), "s2".to_owned()],
    )
}

async fn c07(ctx: &Ctx<'_>) -> Outcome {
    let before = now_ms();
    for session in ["s2", "s1", "s3"] {
        ctx.append(
            &ctx.key("", session)?,
            &entries(&format!("c07-{session}"), 1)?,
        )
        .await?;
    }
    let listed = ctx.list(&ctx.project("")).await?;
    let ids: Vec<&str> = listed.iter().map(|(s, _)| s.as_str()).collect();
    expect_eq("list_sessions (sorted by id)", ids, vec!["s1", "s2", "s3"])?;
    let after = now_ms();
    for (session, mtime) in &listed {
        // Milliseconds since the epoch, not seconds; a file system may round down a little.
        if *mtime < 1_000_000_000_000 || *mtime + 2_000 < before || *mtime > after + 60_000 {
            return Err(format!(
                "list_sessions: {session}'s mtime_ms: expected milliseconds in [{before}, {after}] \
                 (give or take a file system's rounding), got {mtime}"
            ));
        }
    }
    expect_eq(
        "list_sessions of an unknown project",
        ctx.list_ids(&ctx.project("-unknown")).await?,
        Vec::<String>::new(),
    )
}

async fn c08(ctx: &Ctx<'_>) -> Outcome {
    ctx.append(&ctx.key("", "s1")?, &entries("c08-main", 1)?)
        .await?;
    ctx.append(&ctx.sub("", "s1", "subagents/a")?, &entries("c08-a", 1)?)
        .await?;
    ctx.append(&ctx.sub("", "s1", "subagents/b")?, &entries("c08-b", 1)?)
        .await?;
    // A session with only a sub-session is listed too (once).
    ctx.append(&ctx.sub("", "s2", "subagents/a")?, &entries("c08-s2", 1)?)
        .await?;
    let listed = ctx.list(&ctx.project("")).await?;
    let ids: Vec<&str> = listed.iter().map(|(s, _)| s.as_str()).collect();
    expect_eq(
        "list_sessions (each session once, no subpath)",
        ids,
        vec!["s1", "s2"],
    )?;
    if let Some((_, mtime)) = listed.iter().find(|(s, _)| s == "s2")
        && *mtime < 1_000_000_000_000
    {
        return Err(format!(
            "list_sessions: a sub-session-only session's mtime_ms: expected milliseconds, got {mtime}"
        ));
    }
    Ok(())
}

async fn c09(ctx: &Ctx<'_>) -> Outcome {
    let key = ctx.key("", "s1")?;
    ctx.append(&key, &entries("c09", 2)?).await?;
    ctx.delete(&key).await?;
    ctx.expect_none(&key).await?;
    ctx.delete(&ctx.key("", "never")?).await?;
    ctx.delete(&ctx.sub("", "never", "subagents/x")?).await?;
    ctx.delete(&ctx.key("-never", "never")?).await?;
    ctx.delete(&key).await
}

async fn c10(ctx: &Ctx<'_>) -> Outcome {
    let main = ctx.key("", "s1")?;
    let a = ctx.sub("", "s1", "subagents/a")?;
    let b = ctx.sub("", "s1", "subagents/b")?;
    let other = ctx.key("", "s2")?;
    let other_sub = ctx.sub("", "s2", "subagents/a")?;
    let other_project = ctx.key("-other", "s1")?;
    let other_project_sub = ctx.sub("-other", "s1", "subagents/a")?;
    for (key, tag) in [
        (&main, "main"),
        (&a, "a"),
        (&b, "b"),
        (&other, "other"),
        (&other_sub, "other-sub"),
        (&other_project, "other-project"),
        (&other_project_sub, "other-project-sub"),
    ] {
        ctx.append(key, &entries(&format!("c10-{tag}"), 1)?).await?;
    }
    ctx.delete(&main).await?;
    ctx.expect_none(&main).await?;
    ctx.expect_none(&a).await?;
    ctx.expect_none(&b).await?;
    expect_eq(
        "list_subkeys of the deleted session",
        ctx.subkeys(&main).await?,
        vec![],
    )?;
    expect_eq(
        "list_sessions after the delete",
        ctx.list_ids(&ctx.project("")).await?,
        vec!["s2".to_owned()],
    )?;
    ctx.expect_entries(&other, &entries("c10-other", 1)?)
        .await?;
    ctx.expect_entries(&other_sub, &entries("c10-other-sub", 1)?)
        .await?;
    ctx.expect_entries(&other_project, &entries("c10-other-project", 1)?)
        .await?;
    ctx.expect_entries(&other_project_sub, &entries("c10-other-project-sub", 1)?)
        .await?;
    expect_eq(
        "list_subkeys of the other project's same session id",
        ctx.subkeys(&other_project).await?,
        vec!["subagents/a".to_owned()],
    )
}

async fn c11(ctx: &Ctx<'_>) -> Outcome {
    let main = ctx.key("", "s1")?;
    let a = ctx.sub("", "s1", "subagents/a")?;
    let b = ctx.sub("", "s1", "subagents/b")?;
    let em = entries("c11-main", 2)?;
    let eb = entries("c11-b", 2)?;
    ctx.append(&main, &em).await?;
    ctx.append(&a, &entries("c11-a", 2)?).await?;
    ctx.append(&b, &eb).await?;
    ctx.delete(&a).await?;
    ctx.expect_none(&a).await?;
    ctx.expect_entries(&main, &em).await?;
    ctx.expect_entries(&b, &eb).await?;
    expect_eq(
        "list_subkeys after deleting one",
        ctx.subkeys(&main).await?,
        vec!["subagents/b".to_owned()],
    )?;
    expect_eq(
        "list_sessions after deleting a subpath",
        ctx.list_ids(&ctx.project("")).await?,
        vec!["s1".to_owned()],
    )
}

async fn c12(ctx: &Ctx<'_>) -> Outcome {
    let s1 = ctx.key("", "s1")?;
    for sub in ["subagents/b", "subagents/a", "x"] {
        ctx.append(
            &s1.with_subpath(sub).map_err(|e| e.to_string())?,
            &entries(sub, 1)?,
        )
        .await?;
    }
    ctx.append(&ctx.sub("", "s2", "subagents/c")?, &entries("c12-c", 1)?)
        .await?;
    ctx.append(
        &ctx.sub("-other", "s1", "subagents/d")?,
        &entries("c12-d", 1)?,
    )
    .await?;
    let want = vec![
        "subagents/a".to_owned(),
        "subagents/b".to_owned(),
        "x".to_owned(),
    ];
    expect_eq(
        "list_subkeys (sorted, this session only)",
        ctx.subkeys(&s1).await?,
        want.clone(),
    )?;
    // Asked through one of its subkeys, the answer is the same session's.
    let through_sub = s1.with_subpath("x").map_err(|e| e.to_string())?;
    expect_eq(
        "list_subkeys through a subkey",
        ctx.subkeys(&through_sub).await?,
        want,
    )
}

async fn c13(ctx: &Ctx<'_>) -> Outcome {
    let key = ctx.key("", "s1")?;
    ctx.append(&key, &entries("c13", 2)?).await?;
    expect_eq(
        "list_subkeys of a main-only session",
        ctx.subkeys(&key).await?,
        vec![],
    )?;
    expect_eq(
        "list_subkeys of an unknown session",
        ctx.subkeys(&ctx.key("", "never")?).await?,
        vec![],
    )?;
    expect_eq(
        "list_subkeys of an unknown project",
        ctx.subkeys(&ctx.key("-never", "s1")?).await?,
        vec![],
    )
}

// ---- ours ----

async fn x1(ctx: &Ctx<'_>) -> Outcome {
    let key = ctx.key("", "s1")?;
    let all = entries("x1", 5)?;
    let batch = &all[..3];
    expect_eq(
        "first append of a batch",
        ctx.append(&key, batch).await?,
        appended(3, 0),
    )?;
    expect_eq(
        "second append of the same batch",
        ctx.append(&key, batch).await?,
        appended(0, 3),
    )?;
    expect_eq(
        "third append of the same batch",
        ctx.append(&key, batch).await?,
        appended(0, 3),
    )?;
    ctx.expect_entries(&key, batch).await?;
    expect_eq(
        "append of an overlapping batch",
        ctx.append(&key, &all[1..]).await?,
        appended(2, 2),
    )?;
    ctx.expect_entries(&key, &all).await?;

    // Duplicates inside one call: the first occurrence wins, even with other bytes.
    let dup_key = ctx.key("", "s2")?;
    let f = entry("user", "x1-f", 1)?;
    let f_other = raw(r#"{"type":"user","uuid":"x1-f","n":"other bytes"}"#)?;
    let g = entry("user", "x1-g", 2)?;
    expect_eq(
        "append of [f, f', g, f] (f' has f's id)",
        ctx.append(
            &dup_key,
            &[f.clone(), f_other.clone(), g.clone(), f.clone()],
        )
        .await?,
        appended(2, 2),
    )?;
    ctx.expect_entries(&dup_key, &[f.clone(), g.clone()])
        .await?;
    expect_eq(
        "append of f' (f's id, other bytes) later",
        ctx.append(&dup_key, &[f_other]).await?,
        appended(0, 1),
    )?;
    ctx.expect_entries(&dup_key, &[f.clone(), g.clone()])
        .await?;

    // Entries without an id are never deduplicated.
    let anon = raw(r#"{"type":"summary","summary":"no uuid"}"#)?;
    let num_id = raw(r#"{"type":"x","uuid":7}"#)?;
    expect_eq(
        "append of two equal entries without a string uuid",
        ctx.append(&dup_key, &[anon.clone(), anon.clone()]).await?,
        appended(2, 0),
    )?;
    expect_eq(
        "append of an entry whose uuid is a number, twice",
        ctx.append(&dup_key, &[num_id.clone(), num_id.clone()])
            .await?,
        appended(2, 0),
    )?;
    ctx.expect_entries(
        &dup_key,
        &[f.clone(), g, anon.clone(), anon, num_id.clone(), num_id],
    )
    .await?;

    // Ids are per key: the same id in another key (a sub-session, another session) is new.
    let sub = dup_key
        .with_subpath("subagents/a")
        .map_err(|e| e.to_string())?;
    expect_eq(
        "append of f to a subkey",
        ctx.append(&sub, std::slice::from_ref(&f)).await?,
        appended(1, 0),
    )?;
    expect_eq(
        "append of f to another session",
        ctx.append(&key, &[f]).await?,
        appended(1, 0),
    )?;
    Ok(())
}

async fn x2(ctx: &Ctx<'_>) -> Outcome {
    const APPENDERS: usize = 8;
    const EACH: usize = 50;
    let key = ctx.key("", "s1")?;
    let mut expected: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut plans: Vec<Vec<Entry>> = Vec::new();
    for a in 0..APPENDERS {
        let mut plan = Vec::new();
        for i in 0..EACH {
            // Different sizes, so a torn or interleaved write would show.
            let pad = "x".repeat((a * 37 + i * 11) % 300);
            let text = format!(
                r#"{{"type":"user","uuid":"x2-{a}-{i}","appender":{a},"i":{i},"pad":"{pad}"}}"#
            );
            let e = raw(&text)?;
            expected.insert(format!("x2-{a}-{i}"), text.into_bytes());
            plan.push(e);
        }
        plans.push(plan);
    }
    let appenders: Vec<BoxFuture<'_, Result<(), String>>> = plans
        .iter()
        .enumerate()
        .map(|(a, plan)| {
            let key = &key;
            let fut: BoxFuture<'_, Result<(), String>> = Box::pin(async move {
                // Alternate single appends and batches of 3.
                let mut i = 0;
                while i < plan.len() {
                    let n = if (a + i) % 2 == 0 {
                        1
                    } else {
                        3.min(plan.len() - i)
                    };
                    let done = ctx.append(key, &plan[i..i + n]).await?;
                    expect_eq(
                        &format!("appender {a}'s append at {i}"),
                        done,
                        appended(n, 0),
                    )?;
                    i += n;
                }
                Ok(())
            });
            fut
        })
        .collect();
    for outcome in join_all(appenders).await {
        outcome?;
    }
    let loaded = ctx.load(&key).await?.unwrap_or_default();
    expect_eq(
        "entries after the concurrent appends",
        loaded.len(),
        APPENDERS * EACH,
    )?;
    let mut next = [0usize; APPENDERS];
    let mut seen = BTreeSet::new();
    for (at, e) in loaded.iter().enumerate() {
        let id = e.id().ok_or_else(|| {
            format!(
                "entry {at} has no id: {}",
                show(Some(std::slice::from_ref(e)))
            )
        })?;
        let want = expected
            .get(id)
            .ok_or_else(|| format!("entry {at} has an unknown id {id}"))?;
        if e.bytes()[..] != want[..] {
            return Err(format!(
                "entry {at} ({id}): expected {}, got {}",
                String::from_utf8_lossy(want),
                String::from_utf8_lossy(e.bytes())
            ));
        }
        if !seen.insert(id.to_owned()) {
            return Err(format!("entry {at} ({id}) is a duplicate"));
        }
        let (a, i) = id
            .strip_prefix("x2-")
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(a, i)| Some((a.parse::<usize>().ok()?, i.parse::<usize>().ok()?)))
            .ok_or_else(|| format!("entry {at}: unparsable id {id}"))?;
        let slot = next
            .get_mut(a)
            .ok_or_else(|| format!("entry {at}: appender {a} out of range"))?;
        if *slot != i {
            return Err(format!(
                "appender {a}'s order: expected its entry {} at position {at}, got {i}",
                *slot
            ));
        }
        *slot += 1;
    }
    Ok(())
}

/// An entry of exactly `len` bytes: `{"type":"big","uuid":"<uuid>","pad":"xxx…"}`.
fn sized(uuid: &str, len: usize) -> Result<Vec<u8>, String> {
    let head = format!(r#"{{"type":"big","uuid":"{uuid}","pad":""#);
    let tail = "\"}";
    let pad = len
        .checked_sub(head.len() + tail.len())
        .ok_or_else(|| format!("{len} bytes is too small for an entry"))?;
    let mut bytes = Vec::with_capacity(len);
    bytes.extend_from_slice(head.as_bytes());
    // Not all one byte, so a shifted or truncated copy would show.
    bytes.extend((0..pad).map(|i| b'a' + (i % 26) as u8));
    bytes.extend_from_slice(tail.as_bytes());
    Ok(bytes)
}

async fn x3(ctx: &Ctx<'_>) -> Outcome {
    let key = ctx.key("", "s1")?;
    let small = entry("user", "x3-small", 0)?;
    let mib = Entry::new(sized("x3-mib", 1024 * 1024)?).map_err(|e| format!("1 MiB entry: {e}"))?;
    let max = Entry::new(sized("x3-max", MAX_ENTRY_BYTES)?)
        .map_err(|e| format!("an entry of exactly MAX_ENTRY_BYTES: {e}"))?;
    match Entry::new(sized("x3-over", MAX_ENTRY_BYTES + 1)?) {
        Err(StoreError::EntryTooLarge { bytes, max }) => expect_eq(
            "EntryTooLarge's sizes",
            (bytes, max),
            (MAX_ENTRY_BYTES + 1, MAX_ENTRY_BYTES),
        )?,
        Err(other) => {
            return Err(format!(
                "Entry::new of MAX_ENTRY_BYTES + 1: expected EntryTooLarge, got {other}"
            ));
        }
        Ok(_) => {
            return Err("Entry::new of MAX_ENTRY_BYTES + 1: expected EntryTooLarge, got Ok".into());
        }
    }
    expect_eq(
        "append of [small, 1 MiB, MAX_ENTRY_BYTES]",
        ctx.append(&key, &[small.clone(), mib.clone(), max.clone()])
            .await?,
        appended(3, 0),
    )?;
    let after = entry("user", "x3-after", 1)?;
    ctx.append(&key, std::slice::from_ref(&after)).await?;
    ctx.expect_entries(&key, &[small, mib, max.clone(), after])
        .await?;
    // Alone in a key of its own, too.
    let alone = ctx.key("", "s2")?;
    ctx.append(&alone, std::slice::from_ref(&max)).await?;
    ctx.expect_entries(&alone, &[max]).await
}

/// Lines whose bytes a re-serializing store would change.
const ODD_LINES: &[&str] = &[
    r#"{ "uuid" : "x4-1" , "type":"user" }"#,
    r#"{"type":"assistant","uuid":"x4-2","z":1,"a":2,"m":{"y":[1,2,{"b":null,"a":true}],"x":{}}}"#,
    r#"{"uuid":"x4-3","type":"n","n":1.0e10,"m":-0.0,"big":12345678901234567890123,"f":1.50,"e":1E-7}"#,
    r#"{"uuid":"x4-4","type":"s","s":"\u00e9\u4e2d\ud83d\ude00\n\t\"\\\/","raw":"é中😀"}"#,
    r#"{"uuid":"x4-5","type":"u","unknownField":{"deep":[[[[[{"k":"v"}]]]]]},"futureVersion":3}"#,
    "{\"uuid\":\"x4-6\",\t\"type\":\"tabs\"  ,\"sp\" :\t[ 1 ,2 ]}",
    r#"{"type":"dup-keys","uuid":"x4-7","k":1,"k":2}"#,
    r#"{"type":"no-id","text":"an entry without a uuid, with \u0000 escaped"}"#,
    r#"{"uuid":"x4-9","type":"empty-strings","":"","e":[],"o":{}}"#,
];

async fn x4(ctx: &Ctx<'_>) -> Outcome {
    let key = ctx.key("", "s1")?;
    let lines: Vec<Entry> = ODD_LINES.iter().map(|l| raw(l)).collect::<Result<_, _>>()?;
    ctx.append(&key, &lines[..4]).await?;
    ctx.append(&key, &lines[4..]).await?;
    ctx.expect_entries(&key, &lines).await?;
    let sub = key.with_subpath("subagents/a").map_err(|e| e.to_string())?;
    ctx.append(&sub, &lines).await?;
    ctx.expect_entries(&sub, &lines).await
}

/// Key parts a store must keep opaque: path traversal, separators, percent signs, unicode.
const HOSTILE: &[&str] = &[
    "../x",
    "..",
    ".",
    ".hidden",
    "a/b",
    "a%2Fb",
    "%2F",
    "/",
    "a\\b",
    ":",
    "a:b",
    "C:",
    "x.jsonl",
    "x",
    "NUL",
    "con",
    "a b",
    "ünïcødé",
    "中文/😀",
    "~",
    "*?\"<>|",
];

async fn x7(ctx: &Ctx<'_>) -> Outcome {
    // Hostile projects (after the contract's prefix) and hostile sessions in one project.
    let suffixes = ["/../x", "/a/b", ":", "%2F", "/ünï"];
    for (i, suffix) in suffixes.iter().enumerate() {
        let key = ctx.key(suffix, "s")?;
        ctx.append(&key, &entries(&format!("x7-project-{i}"), 1)?)
            .await?;
    }
    for (i, suffix) in suffixes.iter().enumerate() {
        ctx.expect_entries(
            &ctx.key(suffix, "s")?,
            &entries(&format!("x7-project-{i}"), 1)?,
        )
        .await?;
        expect_eq(
            &format!("list_sessions of project {:?}", ctx.project(suffix)),
            ctx.list_ids(&ctx.project(suffix)).await?,
            vec!["s".to_owned()],
        )?;
    }
    for (i, session) in HOSTILE.iter().enumerate() {
        let key = ctx.key("", session)?;
        ctx.append(&key, &entries(&format!("x7-session-{i}"), 1)?)
            .await?;
        for (j, subpath) in HOSTILE.iter().enumerate().filter(|(j, _)| j % 4 == i % 4) {
            let sub = key.with_subpath(*subpath).map_err(|e| e.to_string())?;
            ctx.append(&sub, &entries(&format!("x7-sub-{i}-{j}"), 1)?)
                .await?;
        }
    }
    let mut want: Vec<String> = HOSTILE.iter().map(|s| (*s).to_owned()).collect();
    want.sort();
    expect_eq(
        "list_sessions of hostile session ids",
        ctx.list_ids(&ctx.project("")).await?,
        want,
    )?;
    for (i, session) in HOSTILE.iter().enumerate() {
        let key = ctx.key("", session)?;
        ctx.expect_entries(&key, &entries(&format!("x7-session-{i}"), 1)?)
            .await?;
        let mut subs: Vec<String> = Vec::new();
        for (j, subpath) in HOSTILE.iter().enumerate().filter(|(j, _)| j % 4 == i % 4) {
            let sub = key.with_subpath(*subpath).map_err(|e| e.to_string())?;
            ctx.expect_entries(&sub, &entries(&format!("x7-sub-{i}-{j}"), 1)?)
                .await?;
            subs.push((*subpath).to_owned());
        }
        subs.sort();
        expect_eq(
            &format!("list_subkeys of hostile session {session:?}"),
            ctx.subkeys(&key).await?,
            subs,
        )?;
    }
    // Deleting `a/b` leaves `a%2Fb`, `a` and `b` alone.
    ctx.delete(&ctx.key("", "a/b")?).await?;
    ctx.expect_none(&ctx.key("", "a/b")?).await?;
    let at = HOSTILE.iter().position(|s| *s == "a%2Fb").unwrap_or(0);
    ctx.expect_entries(
        &ctx.key("", "a%2Fb")?,
        &entries(&format!("x7-session-{at}"), 1)?,
    )
    .await?;
    let ids = ctx.list_ids(&ctx.project("")).await?;
    expect_eq(
        "list_sessions after deleting a/b",
        ids.len(),
        HOSTILE.len() - 1,
    )
}

async fn x8(ctx: &Ctx<'_>) -> Outcome {
    let key = ctx.key("", "s1")?;
    let sub = key.with_subpath("subagents/a").map_err(|e| e.to_string())?;
    let batch = entries("x8", 2)?;
    ctx.append(&key, &batch).await?;
    ctx.append(&sub, &batch).await?;
    ctx.delete(&key).await?;
    expect_eq(
        "list_sessions after deleting the only session",
        ctx.list_ids(&ctx.project("")).await?,
        Vec::<String>::new(),
    )?;
    ctx.expect_none(&key).await?;
    ctx.expect_none(&sub).await?;
    expect_eq(
        "list_subkeys after the delete",
        ctx.subkeys(&key).await?,
        vec![],
    )?;
    // The deleted ids are gone too: appending them again writes them again.
    expect_eq(
        "append of the deleted entries again",
        ctx.append(&key, &batch).await?,
        appended(2, 0),
    )?;
    ctx.expect_entries(&key, &batch).await?;
    ctx.expect_none(&sub).await?;
    expect_eq(
        "list_sessions after appending again",
        ctx.list_ids(&ctx.project("")).await?,
        vec!["s1".to_owned()],
    )?;
    // Deleting a sub-session, then the session: nothing is left.
    ctx.append(&sub, &batch).await?;
    ctx.delete(&sub).await?;
    expect_eq(
        "list_subkeys after deleting the subkey",
        ctx.subkeys(&key).await?,
        vec![],
    )?;
    ctx.delete(&key).await?;
    ctx.delete(&key).await?;
    expect_eq(
        "list_sessions after deleting everything",
        ctx.list_ids(&ctx.project("")).await?,
        Vec::<String>::new(),
    )
}
