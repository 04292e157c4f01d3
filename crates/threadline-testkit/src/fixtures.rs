//! Typed access to the canonical fixtures (`threadline-fixture/1`).
//!
//! Every function panics with a clear message when the fixtures are missing or
//! malformed: this is test support, and a broken fixture tree must fail loudly.
//! Parsed fixtures are cached for the life of the process.
//!
//! Names: a fixture is named `<source-folder>/<file-stem>` (for example
//! `pydantic__pydantic-ai/test_anthropic_model_instructions`); one exchange of it
//! is `<fixture name>#<index>` (for example `vercel__ai/anthropic-text.chunks#0`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

/// The `format` value of every canonical fixture file.
pub const FIXTURE_FORMAT: &str = "threadline-fixture/1";
/// The `format` value of `fixtures/canonical/index.json`.
pub const INDEX_FORMAT: &str = "threadline-fixture-index/1";
/// `index.json`'s `kind` for canonical API-traffic files.
pub const KIND_API: &str = "api_exchanges";
/// `index.json`'s `kind` for raw Claude Code transcripts.
pub const KIND_TRANSCRIPT: &str = "claude_code_transcript";

/// One canonical fixture file: the recorded exchanges of one raw recording.
#[derive(Debug, Clone, PartialEq)]
pub struct Fixture {
    /// `<source-folder>/<file-stem>`.
    pub name: String,
    /// What the recording is (from SOURCES.md) and how it was converted.
    pub docs: String,
    /// Attribution of the raw bytes.
    pub source: Source,
    /// The request/response pairs, in recording order.
    pub exchanges: Vec<Exchange>,
}

impl Fixture {
    /// `"<fixture name>#<index>"`, the name of one exchange.
    pub fn exchange_name(&self, index: usize) -> String {
        format!("{}#{index}", self.name)
    }
}

/// Where a fixture's raw bytes came from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// `owner/repo` on GitHub.
    pub repo: String,
    /// Path of the file in the source repository.
    pub path: String,
    /// Commit the bytes were copied from.
    pub commit: String,
    /// Licence of the source repository.
    pub licence: String,
    /// Raw copy, relative to the repository root (`fixtures/recorded/...`).
    pub raw: String,
    /// Raw recording format (`vcr-yaml`, `inline-snapshot-json`, `sse-text`,
    /// `nock-json`, `sse-data-chunks`, `response-body-json`).
    pub recording_format: String,
}

/// One HTTP exchange.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// The request, when it was recorded.
    pub request: Option<RecordedRequest>,
    /// The response.
    pub response: RecordedResponse,
}

/// A recorded request.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedRequest {
    /// HTTP method, upper case.
    pub method: String,
    /// `/v1/messages` or `/v1/messages/count_tokens`.
    pub endpoint: String,
    /// Query string without `?` (e.g. `beta=true`), if any.
    pub query: Option<String>,
    /// Only `anthropic-version`, `anthropic-beta` and `content-type`, lower-case names.
    pub headers: BTreeMap<String, String>,
    /// The JSON request body (object keys sorted).
    pub body: Value,
}

/// A recorded response.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedResponse {
    /// HTTP status; `None` when the source did not record it.
    pub status: Option<u16>,
    /// Only `content-type`, `request-id`, `retry-after`, `x-should-retry` and
    /// `anthropic-ratelimit-*`, lower-case names.
    pub headers: BTreeMap<String, String>,
    /// The body.
    pub body: Body,
}

/// A response body.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// A JSON body (message, count_tokens result or error), object keys sorted.
    Json(Value),
    /// A raw `text/event-stream` body, byte-exact as recorded.
    Sse(String),
}

impl Body {
    /// The JSON body, if this is one.
    pub fn as_json(&self) -> Option<&Value> {
        match self {
            Self::Json(v) => Some(v),
            Self::Sse(_) => None,
        }
    }

    /// The SSE text, if this is one.
    pub fn as_sse(&self) -> Option<&str> {
        match self {
            Self::Sse(s) => Some(s),
            Self::Json(_) => None,
        }
    }
}

/// One entry of `fixtures/canonical/index.json`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexEntry {
    /// `<source-folder>/<file-stem>`.
    pub name: String,
    /// [`KIND_API`] or [`KIND_TRANSCRIPT`].
    pub kind: String,
    /// Canonical file (API traffic) or raw transcript, relative to the repository root.
    pub path: String,
    /// Raw recording, relative to the repository root.
    pub raw: String,
    /// Raw recording format.
    pub recording_format: String,
    /// `owner/repo` of the source.
    pub repo: String,
    /// Licence of the source.
    pub licence: String,
    /// Model names seen (requests, responses, `message_start` events, transcript records).
    pub models: Vec<String>,
    /// Number of exchanges (0 for transcripts).
    pub exchanges: usize,
    /// Exchanges with a recorded request.
    pub requests: usize,
    /// Exchanges whose response is SSE.
    pub sse_responses: usize,
    /// Exchanges whose response is JSON.
    pub json_responses: usize,
    /// Whether any response is SSE.
    pub has_sse: bool,
    /// Distinct HTTP statuses, sorted; `None` = not recorded.
    pub statuses: Vec<Option<u16>>,
    /// JSON records in a transcript (transcripts only).
    #[serde(default)]
    pub records: Option<usize>,
}

/// Error while loading a fixture file.
#[derive(Debug)]
pub struct FixtureError {
    path: PathBuf,
    message: String,
}

impl fmt::Display for FixtureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for FixtureError {}

// --- on-disk shapes -------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRepr {
    format: String,
    name: String,
    docs: String,
    generated: String,
    source: Source,
    exchanges: Vec<ExchangeRepr>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExchangeRepr {
    request: Option<RecordedRequest>,
    response: ResponseRepr,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResponseRepr {
    status: Option<u16>,
    headers: BTreeMap<String, String>,
    kind: String,
    #[serde(default)]
    body: Option<Value>,
    #[serde(default)]
    sse: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IndexRepr {
    format: String,
    #[serde(rename = "docs")]
    _docs: String,
    #[serde(rename = "generated")]
    _generated: String,
    files: Vec<IndexEntry>,
}

/// Parses the text of one canonical fixture file (`path` is only used in errors).
pub fn parse_fixture(path: &Path, text: &str) -> Result<Fixture, FixtureError> {
    let err = |message: String| FixtureError {
        path: path.to_path_buf(),
        message,
    };
    let repr: FileRepr =
        serde_json::from_str(text).map_err(|e| err(format!("not a canonical fixture: {e}")))?;
    if repr.format != FIXTURE_FORMAT {
        return Err(err(format!(
            "format is `{}`, expected `{FIXTURE_FORMAT}`",
            repr.format
        )));
    }
    if !repr.generated.starts_with("by cargo xtask fixtures") {
        return Err(err(
            "`generated` does not name cargo xtask fixtures".to_owned()
        ));
    }
    let mut exchanges = Vec::with_capacity(repr.exchanges.len());
    for (i, exchange) in repr.exchanges.into_iter().enumerate() {
        let response = exchange.response;
        let body = match (response.kind.as_str(), response.body, response.sse) {
            ("json", Some(body), None) => Body::Json(body),
            ("sse", None, Some(sse)) => Body::Sse(sse),
            (kind, body, sse) => {
                return Err(err(format!(
                    "exchange {i}: kind `{kind}` with body present: {}, sse present: {}",
                    body.is_some(),
                    sse.is_some()
                )));
            }
        };
        exchanges.push(Exchange {
            request: exchange.request,
            response: RecordedResponse {
                status: response.status,
                headers: response.headers,
                body,
            },
        });
    }
    Ok(Fixture {
        name: repr.name,
        docs: repr.docs,
        source: repr.source,
        exchanges,
    })
}

// --- locating and loading -------------------------------------------------

fn find_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join("fixtures/canonical/index.json").is_file())
        .map(Path::to_path_buf)
}

/// The repository root: the nearest ancestor of `CARGO_MANIFEST_DIR` (of the
/// test being run, else of this crate) that contains `fixtures/canonical/index.json`.
pub fn repo_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let runtime = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
        runtime
            .as_deref()
            .and_then(find_root)
            .or_else(|| find_root(Path::new(env!("CARGO_MANIFEST_DIR"))))
            .unwrap_or_else(|| {
                panic!(
                    "cannot find fixtures/canonical/index.json above {} (run `cargo xtask fixtures`)",
                    env!("CARGO_MANIFEST_DIR")
                )
            })
    })
}

/// `<repo root>/fixtures/canonical`.
pub fn canonical_dir() -> PathBuf {
    repo_root().join("fixtures").join("canonical")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read fixture file {}: {e}", path.display()))
}

/// The entries of `fixtures/canonical/index.json`, sorted by name.
pub fn index() -> &'static [IndexEntry] {
    static INDEX: OnceLock<Vec<IndexEntry>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let path = canonical_dir().join("index.json");
        let repr: IndexRepr = serde_json::from_str(&read(&path))
            .unwrap_or_else(|e| panic!("{} is not a fixture index: {e}", path.display()));
        assert_eq!(
            repr.format,
            INDEX_FORMAT,
            "{}: unexpected index format",
            path.display()
        );
        repr.files
    })
}

/// Every canonical fixture (the `api_exchanges` entries of the index), sorted by name.
pub fn all_fixtures() -> &'static [Fixture] {
    static ALL: OnceLock<Vec<Fixture>> = OnceLock::new();
    ALL.get_or_init(|| {
        index()
            .iter()
            .filter(|entry| entry.kind == KIND_API)
            .map(|entry| {
                let path = repo_root().join(&entry.path);
                let fixture = parse_fixture(&path, &read(&path)).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(
                    fixture.name, entry.name,
                    "{}: name differs from index.json",
                    entry.path
                );
                fixture
            })
            .collect()
    })
}

/// The fixture named `name` (`<source-folder>/<file-stem>`); panics if unknown.
pub fn fixture(name: &str) -> &'static Fixture {
    all_fixtures()
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| {
            let names: Vec<&str> = all_fixtures().iter().map(|f| f.name.as_str()).collect();
            panic!("no fixture named `{name}`; known: {names:?}")
        })
}

/// `pick` applied to every exchange of every fixture, named `"<fixture>#<exchange>"`; the
/// exchanges it returns `None` for are left out.
fn each_exchange<T>(pick: impl Fn(&Exchange) -> Option<T>) -> Vec<(String, T)> {
    all_fixtures()
        .iter()
        .flat_map(|f| {
            f.exchanges
                .iter()
                .enumerate()
                .filter_map(|(i, e)| pick(e).map(|t| (f.exchange_name(i), t)))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every SSE response body: `("<fixture>#<exchange>", sse text)`.
pub fn sse_streams() -> Vec<(String, String)> {
    each_exchange(|e| e.response.body.as_sse().map(str::to_owned))
}

/// Every recorded request: `("<fixture>#<exchange>", request)`.
pub fn recorded_requests() -> Vec<(String, RecordedRequest)> {
    each_exchange(|e| e.request.clone())
}

/// Every JSON response body: `("<fixture>#<exchange>", status, body)`; errors
/// (status >= 400) included.
pub fn json_responses() -> Vec<(String, Option<u16>, Value)> {
    each_exchange(|e| {
        e.response
            .body
            .as_json()
            .map(|body| (e.response.status, body.clone()))
    })
    .into_iter()
    .map(|(name, (status, body))| (name, status, body))
    .collect()
}

/// Absolute paths of the raw Claude Code transcripts (`*.jsonl`), sorted.
pub fn transcripts() -> Vec<PathBuf> {
    index()
        .iter()
        .filter(|entry| entry.kind == KIND_TRANSCRIPT)
        .map(|entry| repo_root().join(&entry.path))
        .collect()
}
