//! `cargo xtask fixtures [--check]`: converts the raw recordings under
//! `fixtures/recorded/` into the canonical `threadline-fixture/1` format under
//! `fixtures/canonical/`, plus `fixtures/canonical/index.json`.
//!
//! The format is documented in `fixtures/README.md`. Output is deterministic:
//! struct fields in a fixed order, JSON object keys inside bodies sorted,
//! pretty-printed with two-space indents and a trailing newline.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::sources::{self, SourceFile, Sources};
use crate::util::{Context, Failure, XResult, read_text, rel_path, write_file};

/// Value of the `format` field of every canonical fixture file.
pub(crate) const FIXTURE_FORMAT: &str = "threadline-fixture/1";
/// Value of the `format` field of `index.json`.
pub(crate) const INDEX_FORMAT: &str = "threadline-fixture-index/1";
/// Raw recordings, relative to the repository root.
pub(crate) const RECORDED_DIR: &str = "fixtures/recorded";
/// Generated canonical files, relative to the repository root.
pub(crate) const CANONICAL_DIR: &str = "fixtures/canonical";

/// Request headers kept in canonical files (everything else is transport noise).
const KEPT_REQUEST_HEADERS: &[&str] = &["anthropic-beta", "anthropic-version", "content-type"];
/// Response headers kept in canonical files, besides `anthropic-ratelimit-*`.
const KEPT_RESPONSE_HEADERS: &[&str] = &[
    "content-type",
    "request-id",
    "retry-after",
    "x-should-retry",
];
/// Endpoints a canonical request may name.
const ENDPOINTS: &[&str] = &["/v1/messages", "/v1/messages/count_tokens"];

// ---------------------------------------------------------------------------
// Canonical model (serialization order = field order).

/// One canonical fixture file.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CanonicalFixture {
    pub(crate) format: &'static str,
    pub(crate) name: String,
    pub(crate) docs: String,
    pub(crate) generated: String,
    pub(crate) source: SourceBlock,
    pub(crate) exchanges: Vec<Exchange>,
}

/// Where the raw bytes came from.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SourceBlock {
    pub(crate) repo: String,
    pub(crate) path: String,
    pub(crate) commit: String,
    pub(crate) licence: String,
    pub(crate) raw: String,
    pub(crate) recording_format: &'static str,
}

/// One HTTP request/response pair (the request may be unknown).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Exchange {
    pub(crate) request: Option<Request>,
    pub(crate) response: Response,
}

/// A recorded request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) endpoint: String,
    pub(crate) query: Option<String>,
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) body: Value,
}

/// A recorded response: `kind` says whether `body` (JSON) or `sse` (text) is present.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Response {
    pub(crate) status: Option<u16>,
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) kind: ResponseKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) body: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sse: Option<String>,
}

/// How a response body is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ResponseKind {
    Json,
    Sse,
}

impl Response {
    fn json(status: Option<u16>, headers: BTreeMap<String, String>, body: Value) -> Self {
        Self {
            status,
            headers,
            kind: ResponseKind::Json,
            body: Some(body),
            sse: None,
        }
    }

    fn sse(status: Option<u16>, headers: BTreeMap<String, String>, text: String) -> Self {
        Self {
            status,
            headers,
            kind: ResponseKind::Sse,
            body: None,
            sse: Some(text),
        }
    }
}

/// One entry of `index.json`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct IndexEntry {
    pub(crate) name: String,
    pub(crate) kind: &'static str,
    pub(crate) path: String,
    pub(crate) raw: String,
    pub(crate) recording_format: &'static str,
    pub(crate) repo: String,
    pub(crate) licence: String,
    pub(crate) models: Vec<String>,
    pub(crate) exchanges: usize,
    pub(crate) requests: usize,
    pub(crate) sse_responses: usize,
    pub(crate) json_responses: usize,
    pub(crate) has_sse: bool,
    pub(crate) statuses: Vec<Option<u16>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) records: Option<usize>,
}

#[derive(Debug, Clone, Serialize)]
struct Index {
    format: &'static str,
    docs: &'static str,
    generated: &'static str,
    files: Vec<IndexEntry>,
}

const INDEX_DOCS: &str = "Index of the canonical API-traffic fixtures (kind \"api_exchanges\", path under fixtures/canonical/) and of the raw Claude Code transcripts (kind \"claude_code_transcript\", path under fixtures/recorded/, not converted). statuses: distinct HTTP statuses, null = not recorded. See fixtures/README.md.";
const INDEX_GENERATED: &str =
    "by cargo xtask fixtures from fixtures/recorded/ and fixtures/recorded/SOURCES.md; do not edit";

// ---------------------------------------------------------------------------
// Recording formats.

/// The raw recording formats understood by the converter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordingFormat {
    /// pydantic-ai VCR YAML cassette.
    VcrYaml,
    /// Ruby VCR 6 cassette (`http_interactions:`; bodies as `body.string`, `!binary` base64).
    RubyVcrYaml,
    /// anthropic-sdk-python inline-snapshot JSON (list of request/response).
    InlineSnapshot,
    /// Raw SSE text, response only.
    SseText,
    /// nock recording (list of scope/method/path/body/status/response/rawHeaders).
    Nock,
    /// vercel/ai `*.chunks.txt`: one SSE data payload per line.
    DataChunks,
    /// A bare non-streaming response body.
    ResponseBody,
    /// Claude Code transcript JSONL (not converted).
    Transcript,
}

impl RecordingFormat {
    /// Name written to `source.recording_format`.
    pub(crate) fn id(self) -> &'static str {
        match self {
            Self::VcrYaml => "vcr-yaml",
            Self::RubyVcrYaml => "ruby-vcr-yaml",
            Self::InlineSnapshot => "inline-snapshot-json",
            Self::SseText => "sse-text",
            Self::Nock => "nock-json",
            Self::DataChunks => "sse-data-chunks",
            Self::ResponseBody => "response-body-json",
            Self::Transcript => "claude-code-transcript-jsonl",
        }
    }

    /// What the conversion did, appended to the `docs` field.
    fn conversion_note(self) -> &'static str {
        match self {
            Self::VcrYaml => {
                "Converted from a VCR YAML cassette: JSON bodies (stored as YAML `parsed_body`) are re-serialized with sorted keys; SSE bodies are byte-exact copies of `body.string`, whitespace padding included; headers other than the kept ones dropped."
            }
            Self::RubyVcrYaml => {
                "Converted from a Ruby VCR 6 cassette: `body.string` decoded (Ruby's `!binary` tag is base64, decoded to the UTF-8 text it holds); JSON bodies re-serialized with sorted keys; SSE bodies byte-exact; headers other than the kept ones dropped (the filtered `X-Api-Key` with them)."
            }
            Self::InlineSnapshot => {
                "Converted from an inline-snapshot JSON recording: JSON bodies re-serialized with sorted keys; SSE bodies byte-exact; headers other than the kept ones dropped."
            }
            Self::SseText => {
                "Response only, converted from a raw SSE text file kept byte-exact; the request and HTTP status were not recorded (null)."
            }
            Self::Nock => {
                "Converted from a nock recording: request headers were not recorded; JSON bodies re-serialized with sorted keys; response headers other than the kept ones dropped."
            }
            Self::DataChunks => {
                "Response only (request and HTTP status not recorded: null). The source stores only the SSE `data:` payloads, one JSON per line; the `event:` lines were RECONSTRUCTED by cargo xtask fixtures from each payload's \"type\" and every event is written as `event: <type>\\ndata: <payload line verbatim>\\n\\n`. Several concatenated streams are split into one exchange per `message_start`."
            }
            Self::ResponseBody => {
                "Response only: a non-streaming response body, re-serialized with sorted keys; the request and HTTP status were not recorded (null)."
            }
            Self::Transcript => "Claude Code transcript; not API traffic, not converted.",
        }
    }
}

/// Chooses the format of a raw file from its name and, for `.json`, its shape.
fn detect_format(file: &str, text: &str) -> XResult<RecordingFormat> {
    let lower = file.to_ascii_lowercase();
    if lower.ends_with(".yaml") || lower.ends_with(".yml") {
        // Ruby's VCR names its list `http_interactions`, Python's vcrpy `interactions`.
        let ruby = text
            .lines()
            .any(|line| line.starts_with("http_interactions:"));
        return Ok(if ruby {
            RecordingFormat::RubyVcrYaml
        } else {
            RecordingFormat::VcrYaml
        });
    }
    if lower.ends_with(".jsonl") {
        return Ok(RecordingFormat::Transcript);
    }
    if lower.ends_with(".chunks.txt") {
        return Ok(RecordingFormat::DataChunks);
    }
    if lower.ends_with(".txt") || lower.ends_with(".sse") {
        return Ok(RecordingFormat::SseText);
    }
    if lower.ends_with(".json") {
        let value: Value =
            serde_json::from_str(text).context(|| format!("{file} is not valid JSON"))?;
        return match &value {
            Value::Array(items) => {
                let first = items.first().and_then(Value::as_object);
                match first {
                    Some(obj) if obj.contains_key("request") && obj.contains_key("response") => {
                        Ok(RecordingFormat::InlineSnapshot)
                    }
                    Some(obj) if obj.contains_key("scope") && obj.contains_key("path") => {
                        Ok(RecordingFormat::Nock)
                    }
                    _ => Err(Failure::new(format!(
                        "{file}: JSON array is neither an inline-snapshot recording ({{request, response}}) nor a nock recording ({{scope, path, ...}})"
                    ))),
                }
            }
            Value::Object(_) => Ok(RecordingFormat::ResponseBody),
            _ => Err(Failure::new(format!(
                "{file}: JSON is neither a list of exchanges nor a response body"
            ))),
        };
    }
    Err(Failure::new(format!(
        "{file}: unknown recording format (expected .yaml, .json, .txt, .chunks.txt or .jsonl)"
    )))
}

// ---------------------------------------------------------------------------
// Small helpers.

fn field<'a>(obj: &'a Value, key: &str, ctx: &str) -> XResult<&'a Value> {
    obj.get(key)
        .ok_or_else(|| Failure::new(format!("{ctx}: missing `{key}`")))
}

fn str_field<'a>(obj: &'a Value, key: &str, ctx: &str) -> XResult<&'a str> {
    field(obj, key, ctx)?
        .as_str()
        .ok_or_else(|| Failure::new(format!("{ctx}: `{key}` is not a string")))
}

fn status_from(value: &Value, ctx: &str) -> XResult<u16> {
    value
        .as_u64()
        .and_then(|n| u16::try_from(n).ok())
        .ok_or_else(|| Failure::new(format!("{ctx}: HTTP status `{value}` is not a number")))
}

/// Header value as text; VCR stores lists of strings.
fn header_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().filter_map(header_text).collect();
            Some(parts.join(", "))
        }
        _ => None,
    }
}

fn is_kept_request_header(name: &str) -> bool {
    KEPT_REQUEST_HEADERS.contains(&name)
}

fn is_kept_response_header(name: &str) -> bool {
    KEPT_RESPONSE_HEADERS.contains(&name) || name.starts_with("anthropic-ratelimit-")
}

/// Lower-cases header names and keeps those accepted by `keep`.
fn filter_headers<'a>(
    pairs: impl IntoIterator<Item = (&'a str, String)>,
    keep: fn(&str) -> bool,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (name, value) in pairs {
        let name = name.to_ascii_lowercase();
        if keep(&name) {
            out.insert(name, value);
        }
    }
    out
}

/// Header map from a JSON object (values: string or list) or a flat
/// `[name, value, name, value, ...]` array (older nock).
fn header_pairs(value: Option<&Value>) -> Vec<(&str, String)> {
    match value {
        Some(Value::Object(map)) => map
            .iter()
            .filter_map(|(k, v)| header_text(v).map(|t| (k.as_str(), t)))
            .collect(),
        Some(Value::Array(flat)) => flat
            .chunks(2)
            .filter_map(|pair| match pair {
                [Value::String(k), v] => header_text(v).map(|t| (k.as_str(), t)),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Splits a URL or path into (endpoint path, query).
pub(crate) fn split_url(url: &str, ctx: &str) -> XResult<(String, Option<String>)> {
    let path_and_query = match url.find("://") {
        Some(scheme_end) => {
            let after = &url[scheme_end + 3..];
            after.find('/').map_or("/", |slash| &after[slash..])
        }
        None => url,
    };
    let (path, query) = match path_and_query.split_once('?') {
        Some((p, q)) => (p, Some(q.to_owned()).filter(|q| !q.is_empty())),
        None => (path_and_query, None),
    };
    if !ENDPOINTS.contains(&path) {
        return Err(Failure::new(format!(
            "{ctx}: request to `{url}`: endpoint `{path}` is not one of {ENDPOINTS:?}"
        )));
    }
    Ok((path.to_owned(), query))
}

fn content_type(headers: &BTreeMap<String, String>) -> &str {
    headers.get("content-type").map_or("", String::as_str)
}

/// Builds a response from a body that may be parsed JSON or text.
fn response_from_body(
    status: Option<u16>,
    headers: BTreeMap<String, String>,
    body: &Value,
    ctx: &str,
) -> XResult<Response> {
    match body {
        Value::String(text) => {
            if content_type(&headers).contains("text/event-stream") || looks_like_sse(text) {
                Ok(Response::sse(status, headers, text.clone()))
            } else {
                let parsed: Value = serde_json::from_str(text).context(|| {
                    format!("{ctx}: response body is a string that is neither SSE nor JSON")
                })?;
                Ok(Response::json(status, headers, parsed))
            }
        }
        other => Ok(Response::json(status, headers, other.clone())),
    }
}

fn looks_like_sse(text: &str) -> bool {
    text.starts_with("event:") || text.starts_with("data:")
}

/// Request body: parsed JSON, or a JSON string to parse, or null.
fn request_body(body: Option<&Value>, ctx: &str) -> XResult<Value> {
    match body {
        None | Some(Value::Null) => Ok(Value::Null),
        Some(Value::String(text)) if text.is_empty() => Ok(Value::Null),
        Some(Value::String(text)) => {
            serde_json::from_str(text).context(|| format!("{ctx}: request body is not JSON"))
        }
        Some(Value::Object(map)) if map.len() == 1 && map.contains_key("string") => {
            request_body(map.get("string"), ctx)
        }
        Some(other) => Ok(other.clone()),
    }
}

// ---------------------------------------------------------------------------
// Readers: raw text -> exchanges.

/// pydantic-ai VCR cassette.
pub(crate) fn read_vcr_yaml(text: &str, ctx: &str) -> XResult<Vec<Exchange>> {
    let doc: Value =
        serde_yaml::from_str(text).context(|| format!("{ctx}: not a valid YAML cassette"))?;
    let interactions = field(&doc, "interactions", ctx)?
        .as_array()
        .ok_or_else(|| Failure::new(format!("{ctx}: `interactions` is not a list")))?;
    let mut out = Vec::with_capacity(interactions.len());
    for (i, interaction) in interactions.iter().enumerate() {
        let ctx = format!("{ctx} interaction {i}");
        let req = field(interaction, "request", &ctx)?;
        let resp = field(interaction, "response", &ctx)?;

        let (endpoint, query) = split_url(str_field(req, "uri", &ctx)?, &ctx)?;
        let body = request_body(req.get("parsed_body").or_else(|| req.get("body")), &ctx)?;
        let request = Request {
            method: str_field(req, "method", &ctx)?.to_ascii_uppercase(),
            endpoint,
            query,
            headers: filter_headers(header_pairs(req.get("headers")), is_kept_request_header),
            body,
        };

        let status = status_from(field(field(resp, "status", &ctx)?, "code", &ctx)?, &ctx)?;
        let headers = filter_headers(header_pairs(resp.get("headers")), is_kept_response_header);
        let response = if let Some(parsed) = resp.get("parsed_body") {
            Response::json(Some(status), headers, parsed.clone())
        } else {
            let body = field(resp, "body", &ctx)?;
            let body = match body {
                Value::Object(map) => map.get("string").ok_or_else(|| {
                    Failure::new(format!("{ctx}: response `body` has no `string`"))
                })?,
                other => other,
            };
            response_from_body(Some(status), headers, body, &ctx)?
        };
        out.push(Exchange {
            request: Some(request),
            response,
        });
    }
    Ok(out)
}

/// Ruby VCR 6 cassette: `http_interactions`, each with `request` (`method`, `uri`, `body:
/// {encoding, string}`, `headers: {Name: [value]}`) and `response` (`status: {code}`,
/// `headers`, `body: {encoding, string}`). A body VCR could not store as UTF-8 text is
/// tagged `!binary` and holds base64.
pub(crate) fn read_ruby_vcr_yaml(text: &str, ctx: &str) -> XResult<Vec<Exchange>> {
    let doc: serde_yaml::Value =
        serde_yaml::from_str(text).context(|| format!("{ctx}: not a valid YAML cassette"))?;
    let doc = ruby_yaml_to_json(doc, ctx)?;
    let interactions = field(&doc, "http_interactions", ctx)?
        .as_array()
        .ok_or_else(|| Failure::new(format!("{ctx}: `http_interactions` is not a list")))?;
    let mut out = Vec::with_capacity(interactions.len());
    for (i, interaction) in interactions.iter().enumerate() {
        let ctx = format!("{ctx} interaction {i}");
        let req = field(interaction, "request", &ctx)?;
        let resp = field(interaction, "response", &ctx)?;
        let (endpoint, query) = split_url(str_field(req, "uri", &ctx)?, &ctx)?;
        let request = Request {
            method: str_field(req, "method", &ctx)?.to_ascii_uppercase(),
            endpoint,
            query,
            headers: filter_headers(header_pairs(req.get("headers")), is_kept_request_header),
            body: request_body(req.get("body").and_then(|b| b.get("string")), &ctx)?,
        };
        let status = status_from(field(field(resp, "status", &ctx)?, "code", &ctx)?, &ctx)?;
        let headers = filter_headers(header_pairs(resp.get("headers")), is_kept_response_header);
        let body = field(field(resp, "body", &ctx)?, "string", &ctx)?;
        out.push(Exchange {
            request: Some(request),
            response: response_from_body(Some(status), headers, body, &ctx)?,
        });
    }
    Ok(out)
}

/// A Ruby YAML document as JSON: `!binary` scalars decoded from base64 (they must hold UTF-8,
/// as every HTTP body of the API does); any other tag is refused rather than guessed at.
fn ruby_yaml_to_json(value: serde_yaml::Value, ctx: &str) -> XResult<Value> {
    use base64::Engine as _;
    use serde_yaml::Value as Yaml;
    Ok(match value {
        Yaml::Null => Value::Null,
        Yaml::Bool(b) => Value::Bool(b),
        Yaml::Number(n) => {
            serde_json::to_value(&n).map_err(|e| Failure::new(format!("{ctx}: number {n}: {e}")))?
        }
        Yaml::String(s) => Value::String(s),
        Yaml::Sequence(items) => Value::Array(
            items
                .into_iter()
                .map(|item| ruby_yaml_to_json(item, ctx))
                .collect::<XResult<_>>()?,
        ),
        Yaml::Mapping(map) => {
            let mut out = serde_json::Map::new();
            for (key, value) in map {
                let Yaml::String(key) = key else {
                    return Err(Failure::new(format!("{ctx}: a mapping key is not text")));
                };
                out.insert(key, ruby_yaml_to_json(value, ctx)?);
            }
            Value::Object(out)
        }
        Yaml::Tagged(tagged) => {
            let tag = tagged.tag.to_string();
            match (tag.as_str(), tagged.value) {
                ("!binary", Yaml::String(encoded)) => {
                    let compact: String = encoded.chars().filter(|c| !c.is_whitespace()).collect();
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(compact)
                        .context(|| format!("{ctx}: a `!binary` value is not base64"))?;
                    Value::String(String::from_utf8(bytes).map_err(|_| {
                        Failure::new(format!("{ctx}: a `!binary` value is not UTF-8"))
                    })?)
                }
                (tag, _) => {
                    return Err(Failure::new(format!("{ctx}: unsupported YAML tag {tag}")));
                }
            }
        }
    })
}

/// anthropic-sdk-python inline-snapshot JSON.
pub(crate) fn read_inline_snapshot(text: &str, ctx: &str) -> XResult<Vec<Exchange>> {
    let doc: Value = serde_json::from_str(text).context(|| format!("{ctx}: not JSON"))?;
    let items = doc
        .as_array()
        .ok_or_else(|| Failure::new(format!("{ctx}: expected a JSON list of exchanges")))?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let ctx = format!("{ctx} exchange {i}");
        let req = field(item, "request", &ctx)?;
        let resp = field(item, "response", &ctx)?;
        let (endpoint, query) = split_url(str_field(req, "url", &ctx)?, &ctx)?;
        let request = Request {
            method: str_field(req, "method", &ctx)?.to_ascii_uppercase(),
            endpoint,
            query,
            headers: filter_headers(header_pairs(req.get("headers")), is_kept_request_header),
            body: request_body(req.get("body"), &ctx)?,
        };
        let status = status_from(field(resp, "status_code", &ctx)?, &ctx)?;
        let headers = filter_headers(header_pairs(resp.get("headers")), is_kept_response_header);
        let response = response_from_body(Some(status), headers, field(resp, "body", &ctx)?, &ctx)?;
        out.push(Exchange {
            request: Some(request),
            response,
        });
    }
    Ok(out)
}

/// anthropic-sdk-typescript nock recording.
pub(crate) fn read_nock(text: &str, ctx: &str) -> XResult<Vec<Exchange>> {
    let doc: Value = serde_json::from_str(text).context(|| format!("{ctx}: not JSON"))?;
    let items = doc
        .as_array()
        .ok_or_else(|| Failure::new(format!("{ctx}: expected a JSON list of nock scopes")))?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let ctx = format!("{ctx} scope {i}");
        let (endpoint, query) = split_url(str_field(item, "path", &ctx)?, &ctx)?;
        let request = Request {
            method: str_field(item, "method", &ctx)?.to_ascii_uppercase(),
            endpoint,
            query,
            headers: filter_headers(header_pairs(item.get("reqheaders")), is_kept_request_header),
            body: request_body(item.get("body"), &ctx)?,
        };
        let status = status_from(field(item, "status", &ctx)?, &ctx)?;
        let headers = filter_headers(
            header_pairs(item.get("rawHeaders")),
            is_kept_response_header,
        );
        let response =
            response_from_body(Some(status), headers, field(item, "response", &ctx)?, &ctx)?;
        out.push(Exchange {
            request: Some(request),
            response,
        });
    }
    Ok(out)
}

/// Raw SSE text, response only.
pub(crate) fn read_sse_text(text: &str, ctx: &str) -> XResult<Vec<Exchange>> {
    if !looks_like_sse(text) {
        return Err(Failure::new(format!(
            "{ctx}: expected raw SSE text starting with `event:` or `data:`"
        )));
    }
    Ok(vec![Exchange {
        request: None,
        response: Response::sse(None, BTreeMap::new(), text.to_owned()),
    }])
}

/// vercel/ai `*.chunks.txt`: one data payload per line, streams split at `message_start`.
pub(crate) fn read_data_chunks(text: &str, ctx: &str) -> XResult<Vec<Exchange>> {
    let mut streams: Vec<String> = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        let payload: Value = serde_json::from_str(line)
            .context(|| format!("{ctx} line {}: not a JSON data payload", i + 1))?;
        let event = payload.get("type").and_then(Value::as_str).ok_or_else(|| {
            Failure::new(format!(
                "{ctx} line {}: payload has no string \"type\"",
                i + 1
            ))
        })?;
        if event == "message_start" || streams.is_empty() {
            streams.push(String::new());
        }
        if let Some(current) = streams.last_mut() {
            current.push_str("event: ");
            current.push_str(event);
            current.push_str("\ndata: ");
            current.push_str(line);
            current.push_str("\n\n");
        }
    }
    if streams.is_empty() {
        return Err(Failure::new(format!("{ctx}: no data payloads")));
    }
    Ok(streams
        .into_iter()
        .map(|sse| Exchange {
            request: None,
            response: Response::sse(None, BTreeMap::new(), sse),
        })
        .collect())
}

/// A bare non-streaming response body.
pub(crate) fn read_response_body(text: &str, ctx: &str) -> XResult<Vec<Exchange>> {
    let body: Value = serde_json::from_str(text).context(|| format!("{ctx}: not JSON"))?;
    Ok(vec![Exchange {
        request: None,
        response: Response::json(None, BTreeMap::new(), body),
    }])
}

fn read_exchanges(format: RecordingFormat, text: &str, ctx: &str) -> XResult<Vec<Exchange>> {
    match format {
        RecordingFormat::VcrYaml => read_vcr_yaml(text, ctx),
        RecordingFormat::RubyVcrYaml => read_ruby_vcr_yaml(text, ctx),
        RecordingFormat::InlineSnapshot => read_inline_snapshot(text, ctx),
        RecordingFormat::SseText => read_sse_text(text, ctx),
        RecordingFormat::Nock => read_nock(text, ctx),
        RecordingFormat::DataChunks => read_data_chunks(text, ctx),
        RecordingFormat::ResponseBody => read_response_body(text, ctx),
        RecordingFormat::Transcript => Err(Failure::new(format!(
            "{ctx}: transcripts are not converted"
        ))),
    }
}

// ---------------------------------------------------------------------------
// Summaries for the index.

fn add_model(models: &mut BTreeSet<String>, value: Option<&Value>) {
    if let Some(model) = value.and_then(Value::as_str) {
        models.insert(model.to_owned());
    }
}

/// Model names in the `message_start` events of an SSE text.
fn sse_models(sse: &str, models: &mut BTreeSet<String>) {
    for line in sse.lines() {
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        if !data.contains("message_start") {
            continue;
        }
        if let Ok(payload) = serde_json::from_str::<Value>(data.trim()) {
            add_model(models, payload.pointer("/message/model"));
        }
    }
}

fn exchange_models(exchanges: &[Exchange]) -> Vec<String> {
    let mut models = BTreeSet::new();
    for exchange in exchanges {
        if let Some(request) = &exchange.request {
            add_model(&mut models, request.body.get("model"));
        }
        if let Some(body) = &exchange.response.body {
            add_model(&mut models, body.get("model"));
        }
        if let Some(sse) = &exchange.response.sse {
            sse_models(sse, &mut models);
        }
    }
    models.into_iter().collect()
}

fn api_index_entry(fixture: &CanonicalFixture, path: String) -> IndexEntry {
    let exchanges = &fixture.exchanges;
    let sse = exchanges
        .iter()
        .filter(|e| e.response.kind == ResponseKind::Sse)
        .count();
    let statuses: BTreeSet<Option<u16>> = exchanges.iter().map(|e| e.response.status).collect();
    IndexEntry {
        name: fixture.name.clone(),
        kind: "api_exchanges",
        path,
        raw: fixture.source.raw.clone(),
        recording_format: fixture.source.recording_format,
        repo: fixture.source.repo.clone(),
        licence: fixture.source.licence.clone(),
        models: exchange_models(exchanges),
        exchanges: exchanges.len(),
        requests: exchanges.iter().filter(|e| e.request.is_some()).count(),
        sse_responses: sse,
        json_responses: exchanges.len() - sse,
        has_sse: sse > 0,
        statuses: statuses.into_iter().collect(),
        records: None,
    }
}

fn transcript_index_entry(
    name: String,
    raw: String,
    text: &str,
    source: &SourceFile,
) -> XResult<IndexEntry> {
    let mut models = BTreeSet::new();
    let mut records = 0;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: Value = serde_json::from_str(line)
            .context(|| format!("{raw} line {}: not a JSON record", i + 1))?;
        records += 1;
        if let Some(model) = record.pointer("/message/model").and_then(Value::as_str) {
            // Claude Code writes "<synthetic>" for locally generated messages.
            if !model.starts_with('<') {
                models.insert(model.to_owned());
            }
        }
    }
    Ok(IndexEntry {
        name,
        kind: "claude_code_transcript",
        path: raw.clone(),
        raw,
        recording_format: RecordingFormat::Transcript.id(),
        repo: source.repo.repo.clone(),
        licence: source.repo.licence.clone(),
        models: models.into_iter().collect(),
        exchanges: 0,
        requests: 0,
        sse_responses: 0,
        json_responses: 0,
        has_sse: false,
        statuses: Vec::new(),
        records: Some(records),
    })
}

// ---------------------------------------------------------------------------
// Generation.

/// Everything `cargo xtask fixtures` would write, keyed by path relative to the repo root.
#[derive(Debug, Default)]
pub(crate) struct Generated {
    pub(crate) files: BTreeMap<String, String>,
    pub(crate) index: Vec<IndexEntry>,
}

impl Generated {
    /// One-line summary of the generated set.
    pub(crate) fn summary(&self) -> String {
        let api: Vec<&IndexEntry> = self
            .index
            .iter()
            .filter(|e| e.kind == "api_exchanges")
            .collect();
        let exchanges: usize = api.iter().map(|e| e.exchanges).sum();
        let sse: usize = api.iter().map(|e| e.sse_responses).sum();
        format!(
            "{} canonical files, {exchanges} exchanges ({sse} SSE, {} JSON), {} transcripts indexed",
            api.len(),
            exchanges - sse,
            self.index.len() - api.len()
        )
    }
}

/// Serializes like every generated file: pretty JSON plus a trailing newline.
pub(crate) fn to_pretty_json<T: Serialize>(value: &T) -> XResult<String> {
    let mut text =
        serde_json::to_string_pretty(value).context(|| "cannot serialize JSON".to_owned())?;
    text.push('\n');
    Ok(text)
}

/// Converts one raw file given its text and attribution.
pub(crate) fn convert_text(
    dir: &str,
    file: &str,
    text: &str,
    source: &SourceFile,
) -> XResult<(Option<(String, String)>, IndexEntry)> {
    let raw = format!("{RECORDED_DIR}/{dir}/{file}");
    let format = detect_format(file, text)?;
    let stem = Path::new(file)
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or_else(|| Failure::new(format!("{raw}: file name has no stem")))?;
    let name = format!("{dir}/{stem}");
    if format == RecordingFormat::Transcript {
        let entry = transcript_index_entry(name, raw, text, source)?;
        return Ok((None, entry));
    }
    let exchanges = read_exchanges(format, text, &raw)?;
    let fixture = CanonicalFixture {
        format: FIXTURE_FORMAT,
        name,
        docs: format!(
            "{} Conversion: {}",
            source.description,
            format.conversion_note()
        ),
        generated: format!("by cargo xtask fixtures from {raw}; do not edit"),
        source: SourceBlock {
            repo: source.repo.repo.clone(),
            path: source.source_path.clone(),
            commit: source.repo.commit.clone(),
            licence: source.repo.licence.clone(),
            raw,
            recording_format: format.id(),
        },
        exchanges,
    };
    let path = format!("{CANONICAL_DIR}/{dir}/{stem}.json");
    let entry = api_index_entry(&fixture, path.clone());
    Ok((Some((path, to_pretty_json(&fixture)?)), entry))
}

/// Lists `(dir, file)` for every raw recording (everything but SOURCES.md).
fn raw_files(root: &Path) -> XResult<Vec<(String, String)>> {
    let recorded = root.join(RECORDED_DIR);
    let mut out = Vec::new();
    let entries =
        std::fs::read_dir(&recorded).context(|| format!("cannot list {}", recorded.display()))?;
    for entry in entries {
        let entry = entry.context(|| format!("cannot list {}", recorded.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if path.is_file() {
            if name == "SOURCES.md" {
                continue;
            }
            return Err(Failure::new(format!(
                "unexpected file {}: raw recordings live in fixtures/recorded/<owner__repo>/",
                rel_path(root, &path)
            )));
        }
        let files =
            std::fs::read_dir(&path).context(|| format!("cannot list {}", path.display()))?;
        for file in files {
            let file = file.context(|| format!("cannot list {}", path.display()))?;
            let file_name = file.file_name().to_string_lossy().into_owned();
            if file_name.starts_with('.') {
                continue;
            }
            if !file.path().is_file() {
                return Err(Failure::new(format!(
                    "unexpected directory {}: raw recordings are one level deep",
                    rel_path(root, &file.path())
                )));
            }
            out.push((name.clone(), file_name));
        }
    }
    out.sort();
    Ok(out)
}

/// Converts every raw recording, in memory.
pub(crate) fn generate(root: &Path) -> XResult<Generated> {
    let sources_path = root.join(RECORDED_DIR).join("SOURCES.md");
    let sources: Sources = sources::parse(&read_text(&sources_path)?)?;
    let mut generated = Generated::default();
    for (dir, file) in raw_files(root)? {
        let raw = format!("{RECORDED_DIR}/{dir}/{file}");
        let source = sources.get(&dir, &file).ok_or_else(|| {
            Failure::new(format!(
                "{raw} is not listed in {RECORDED_DIR}/SOURCES.md: attribution is mandatory; add a row to the `{dir}/` section (file, source path, ..., description)"
            ))
        })?;
        let text = read_text(&root.join(&raw))?;
        let (file_out, entry) = convert_text(&dir, &file, &text, source)?;
        if let Some((path, contents)) = file_out
            && generated.files.insert(path.clone(), contents).is_some()
        {
            return Err(Failure::new(format!(
                "two raw files in {RECORDED_DIR}/{dir}/ map to the same canonical file {path}"
            )));
        }
        generated.index.push(entry);
    }
    generated.index.sort_by(|a, b| a.name.cmp(&b.name));
    let index = Index {
        format: INDEX_FORMAT,
        docs: INDEX_DOCS,
        generated: INDEX_GENERATED,
        files: generated.index.clone(),
    };
    generated.files.insert(
        format!("{CANONICAL_DIR}/index.json"),
        to_pretty_json(&index)?,
    );
    Ok(generated)
}

/// Every file currently under `fixtures/canonical/`, relative to the root.
fn existing_files(root: &Path) -> XResult<BTreeSet<String>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<String>) -> XResult<()> {
        if !dir.exists() {
            return Ok(());
        }
        let entries =
            std::fs::read_dir(dir).context(|| format!("cannot list {}", dir.display()))?;
        for entry in entries {
            let entry = entry.context(|| format!("cannot list {}", dir.display()))?;
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, out)?;
            } else {
                out.insert(rel_path(root, &path));
            }
        }
        Ok(())
    }
    let mut out = BTreeSet::new();
    walk(root, &root.join(CANONICAL_DIR), &mut out)?;
    Ok(out)
}

/// Differences between what is generated and what is on disk.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Drift {
    pub(crate) stale: Vec<String>,
    pub(crate) missing: Vec<String>,
    pub(crate) extra: Vec<String>,
}

impl Drift {
    fn is_clean(&self) -> bool {
        self.stale.is_empty() && self.missing.is_empty() && self.extra.is_empty()
    }

    fn report(&self) -> String {
        let mut lines = Vec::new();
        for path in &self.stale {
            lines.push(format!("  stale:   {path}"));
        }
        for path in &self.missing {
            lines.push(format!("  missing: {path}"));
        }
        for path in &self.extra {
            lines.push(format!("  extra:   {path}"));
        }
        lines.join("\n")
    }
}

/// Compares the generated set with the files on disk.
pub(crate) fn drift(root: &Path, generated: &Generated) -> XResult<Drift> {
    let existing = existing_files(root)?;
    let mut drift = Drift::default();
    for (path, contents) in &generated.files {
        if existing.contains(path) {
            let on_disk =
                std::fs::read(root.join(path)).context(|| format!("cannot read {path}"))?;
            if on_disk != contents.as_bytes() {
                drift.stale.push(path.clone());
            }
        } else {
            drift.missing.push(path.clone());
        }
    }
    drift.extra = existing
        .into_iter()
        .filter(|p| !generated.files.contains_key(p))
        .collect();
    Ok(drift)
}

/// `cargo xtask fixtures --check`.
pub(crate) fn check(root: &Path) -> XResult<String> {
    let generated = generate(root)?;
    let drift = drift(root, &generated)?;
    if drift.is_clean() {
        Ok(generated.summary())
    } else {
        Err(Failure::new(format!(
            "fixtures/canonical/ is out of date with fixtures/recorded/ (run `cargo xtask fixtures`):\n{}",
            drift.report()
        )))
    }
}

/// Entry point of `cargo xtask fixtures --check`.
pub(crate) fn check_command(root: &Path) -> XResult<()> {
    let summary = check(root)?;
    println!("fixtures: up to date: {summary}");
    Ok(())
}

/// Writes the generated set and removes extra files; returns a summary.
pub(crate) fn write_all(root: &Path) -> XResult<String> {
    let generated = generate(root)?;
    let drift = drift(root, &generated)?;
    for path in drift.stale.iter().chain(&drift.missing) {
        let contents = generated
            .files
            .get(path)
            .ok_or_else(|| Failure::new(format!("internal: {path} not generated")))?;
        write_file(&root.join(path), contents.as_bytes())?;
    }
    for path in &drift.extra {
        std::fs::remove_file(root.join(path)).context(|| format!("cannot remove {path}"))?;
    }
    remove_empty_dirs(&root.join(CANONICAL_DIR));
    Ok(format!(
        "{}; wrote {} (stale {}, new {}), removed {}",
        generated.summary(),
        drift.stale.len() + drift.missing.len(),
        drift.stale.len(),
        drift.missing.len(),
        drift.extra.len()
    ))
}

/// Entry point of `cargo xtask fixtures`.
pub(crate) fn generate_command(root: &Path) -> XResult<()> {
    let summary = write_all(root)?;
    println!("fixtures: {summary}");
    Ok(())
}

fn remove_empty_dirs(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let subdirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    for sub in subdirs {
        remove_empty_dirs(&sub);
        // Fails (harmlessly) unless the directory is empty.
        let _ = std::fs::remove_dir(&sub);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::SourceRepo;

    fn source(file: &str) -> SourceFile {
        SourceFile {
            repo: SourceRepo {
                repo: "owner/repo".to_owned(),
                dir: "owner__repo".to_owned(),
                licence: "MIT".to_owned(),
                commit: "abc123".to_owned(),
                format_note: None,
            },
            file: file.to_owned(),
            source_path: format!("tests/{file}"),
            description: "A test file.".to_owned(),
        }
    }

    /// The committed canonical files must match a fresh conversion, so that a
    /// plain `cargo test --workspace` catches stale fixtures.
    #[test]
    fn canonical_fixtures_are_up_to_date() {
        let root = crate::util::repo_root();
        if let Err(failure) = check(&root) {
            panic!("{}", failure.message);
        }
    }

    #[test]
    fn generation_is_deterministic() {
        let root = crate::util::repo_root();
        let a = generate(&root).expect("first generation succeeds");
        let b = generate(&root).expect("second generation succeeds");
        assert_eq!(a.files, b.files);
        assert!(a.files.values().all(|text| text.ends_with("}\n")));
    }

    #[test]
    fn vcr_cassette_keeps_sse_byte_exact() {
        let yaml = r#"interactions:
- request:
    headers:
      content-type:
      - application/json
      host:
      - api.anthropic.com
    method: POST
    parsed_body:
      model: claude-x
      stream: true
    uri: https://api.anthropic.com/v1/messages?beta=true
  response:
    body:
      string: |+
        event: message_stop
        data: {"type":"message_stop"    }

    headers:
      content-type:
      - text/event-stream; charset=utf-8
      request-id:
      - req_1
      server:
      - cloudflare
    status:
      code: 200
      message: OK
version: 1
"#;
        let exchanges = read_vcr_yaml(yaml, "t").expect("cassette parses");
        assert_eq!(exchanges.len(), 1);
        let request = exchanges[0].request.as_ref().expect("request recorded");
        assert_eq!(request.endpoint, "/v1/messages");
        assert_eq!(request.query.as_deref(), Some("beta=true"));
        assert_eq!(
            request.headers.keys().collect::<Vec<_>>(),
            vec!["content-type"]
        );
        let response = &exchanges[0].response;
        assert_eq!(response.status, Some(200));
        assert_eq!(response.kind, ResponseKind::Sse);
        assert_eq!(
            response.sse.as_deref(),
            Some("event: message_stop\ndata: {\"type\":\"message_stop\"    }\n\n")
        );
        assert_eq!(
            response.headers.keys().collect::<Vec<_>>(),
            vec!["content-type", "request-id"]
        );
    }

    #[test]
    fn ruby_vcr_cassette_decodes_binary_bodies_and_drops_the_key() {
        // `{"ok":true}` in base64, split over two lines as Ruby's YAML writes it.
        let yaml = r#"---
http_interactions:
- request:
    method: post
    uri: https://api.anthropic.com/v1/messages
    body:
      encoding: UTF-8
      string: '{"model":"claude-x","max_tokens":1}'
    headers:
      X-Api-Key:
      - "<ANTHROPIC_API_KEY>"
      Anthropic-Beta:
      - compact-2026-01-12
  response:
    status:
      code: 200
      message: OK
    headers:
      Content-Type:
      - application/json
    body:
      encoding: ASCII-8BIT
      string: !binary |-
        eyJvayI6
        dHJ1ZX0=
  recorded_at: Wed, 19 Aug 2026 14:35:17 GMT
recorded_with: VCR 6.4.0
"#;
        assert_eq!(
            detect_format("x.yml", yaml).expect("detected"),
            RecordingFormat::RubyVcrYaml
        );
        let exchanges = read_ruby_vcr_yaml(yaml, "t").expect("cassette parses");
        assert_eq!(exchanges.len(), 1);
        let request = exchanges[0].request.as_ref().expect("request recorded");
        assert_eq!(request.method, "POST");
        assert_eq!(request.body["model"], "claude-x");
        assert_eq!(
            request.headers.iter().collect::<Vec<_>>(),
            vec![(
                &"anthropic-beta".to_owned(),
                &"compact-2026-01-12".to_owned()
            )]
        );
        assert_eq!(
            exchanges[0].response.body,
            Some(serde_json::json!({"ok": true}))
        );
        let bad = yaml.replace("eyJvayI6", "eyJvay*6");
        assert!(read_ruby_vcr_yaml(&bad, "t").is_err());
    }

    #[test]
    fn inline_snapshot_json_and_sse() {
        let text = r#"[
 {"request": {"method": "post", "url": "https://api.anthropic.com/v1/messages/count_tokens",
   "headers": {"x-api-key": "nope", "anthropic-version": "2023-06-01"}, "body": {"model": "m"}},
  "response": {"status_code": 429, "headers": {"x-should-retry": "true", "Anthropic-Ratelimit-Requests-Limit": "50", "cf-ray": "x"},
   "body": {"type": "error"}}},
 {"request": {"method": "POST", "url": "https://api.anthropic.com/v1/messages", "headers": {}, "body": {}},
  "response": {"status_code": 200, "headers": {"content-type": "text/event-stream"}, "body": "event: ping\ndata: {}\n\n"}}
]"#;
        let exchanges = read_inline_snapshot(text, "t").expect("snapshot parses");
        assert_eq!(exchanges.len(), 2);
        let first = &exchanges[0];
        let request = first.request.as_ref().expect("request recorded");
        assert_eq!(request.method, "POST");
        assert_eq!(request.endpoint, "/v1/messages/count_tokens");
        assert_eq!(request.query, None);
        assert!(!request.headers.contains_key("x-api-key"));
        assert_eq!(first.response.status, Some(429));
        assert_eq!(
            first.response.headers.keys().collect::<Vec<_>>(),
            vec!["anthropic-ratelimit-requests-limit", "x-should-retry"]
        );
        assert_eq!(exchanges[1].response.kind, ResponseKind::Sse);
    }

    #[test]
    fn nock_recording() {
        let text = r#"[{"scope": "https://api.anthropic.com:443", "method": "POST", "path": "/v1/messages?beta=true",
            "body": {"model": "m"}, "status": 200, "response": {"model": "m2", "type": "message"},
            "rawHeaders": {"request-id": "req_1", "date": "x"}, "responseIsBinary": false}]"#;
        let exchanges = read_nock(text, "t").expect("nock parses");
        assert_eq!(exchanges.len(), 1);
        assert_eq!(exchanges[0].response.status, Some(200));
        assert_eq!(exchanges[0].response.kind, ResponseKind::Json);
        assert_eq!(exchange_models(&exchanges), vec!["m", "m2"]);
        let flat = serde_json::json!(["Request-Id", "req_2", "date", "x"]);
        let headers = filter_headers(header_pairs(Some(&flat)), is_kept_response_header);
        assert_eq!(headers.get("request-id").map(String::as_str), Some("req_2"));
    }

    #[test]
    fn data_chunks_split_at_message_start() {
        let text = "{\"type\":\"message_start\",\"message\":{\"model\":\"a\"}}\n{\"type\":\"message_stop\"}\n{\"type\":\"message_start\",\"message\":{\"model\":\"b\"}}\n{\"type\":\"message_stop\"}";
        let exchanges = read_data_chunks(text, "t").expect("chunks parse");
        assert_eq!(exchanges.len(), 2);
        assert_eq!(
            exchanges[0].response.sse.as_deref(),
            Some(
                "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"a\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
            )
        );
        assert!(
            exchanges
                .iter()
                .all(|e| e.request.is_none() && e.response.status.is_none())
        );
        assert_eq!(exchange_models(&exchanges), vec!["a", "b"]);
        let err = read_data_chunks("{\"no_type\":1}\n", "t").expect_err("payload without type");
        assert!(err.message.contains("type"), "{}", err.message);
    }

    #[test]
    fn url_splitting() {
        assert_eq!(
            split_url("https://api.anthropic.com/v1/messages?beta=true", "t")
                .expect("known endpoint"),
            ("/v1/messages".to_owned(), Some("beta=true".to_owned()))
        );
        assert_eq!(
            split_url("/v1/messages/count_tokens", "t").expect("known endpoint"),
            ("/v1/messages/count_tokens".to_owned(), None)
        );
        assert!(split_url("https://api.anthropic.com/v1/complete", "t").is_err());
    }

    #[test]
    fn format_detection() {
        assert_eq!(
            detect_format("a.chunks.txt", "").expect("known"),
            RecordingFormat::DataChunks
        );
        assert_eq!(
            detect_format("a.txt", "").expect("known"),
            RecordingFormat::SseText
        );
        assert_eq!(
            detect_format("a.json", "{\"type\":\"message\"}").expect("known"),
            RecordingFormat::ResponseBody
        );
        assert_eq!(
            detect_format("a.json", "[{\"request\":{},\"response\":{}}]").expect("known"),
            RecordingFormat::InlineSnapshot
        );
        assert!(detect_format("a.bin", "").is_err());
    }

    #[test]
    fn converted_file_carries_attribution() {
        let (file, entry) = convert_text(
            "owner__repo",
            "x.json",
            "{\"model\":\"claude\",\"type\":\"message\"}",
            &source("x.json"),
        )
        .expect("converts");
        let (path, contents) = file.expect("API traffic yields a canonical file");
        assert_eq!(path, "fixtures/canonical/owner__repo/x.json");
        let value: Value = serde_json::from_str(&contents).expect("valid JSON");
        assert_eq!(value["format"], FIXTURE_FORMAT);
        assert_eq!(value["source"]["repo"], "owner/repo");
        assert_eq!(
            value["source"]["raw"],
            "fixtures/recorded/owner__repo/x.json"
        );
        assert_eq!(
            value["generated"],
            "by cargo xtask fixtures from fixtures/recorded/owner__repo/x.json; do not edit"
        );
        assert!(
            value["docs"]
                .as_str()
                .is_some_and(|d| d.starts_with("A test file."))
        );
        assert_eq!(entry.models, vec!["claude"]);
        assert_eq!(entry.statuses, vec![None]);
    }

    #[test]
    fn unattributed_raw_file_fails() {
        let tmp = crate::util::TempDir::new("fixtures-test").expect("temp dir");
        let root = tmp.path();
        write_file(
            &root.join("fixtures/recorded/SOURCES.md"),
            "### a/b → `a__b/`\n- Licence: MIT\n- Snapshot HEAD: `1`\n".as_bytes(),
        )
        .expect("write SOURCES.md");
        write_file(&root.join("fixtures/recorded/a__b/r.json"), b"{}").expect("write raw");
        let err = generate(root).expect_err("unlisted raw file");
        assert!(err.message.contains("not listed"), "{}", err.message);
        assert!(err.message.contains("a__b/r.json"), "{}", err.message);
    }

    #[test]
    fn drift_reports_stale_missing_extra() {
        let tmp = crate::util::TempDir::new("fixtures-drift").expect("temp dir");
        let root = tmp.path();
        let mut generated = Generated::default();
        generated
            .files
            .insert("fixtures/canonical/a.json".to_owned(), "{}\n".to_owned());
        generated
            .files
            .insert("fixtures/canonical/b.json".to_owned(), "{}\n".to_owned());
        write_file(&root.join("fixtures/canonical/a.json"), b"{ }\n").expect("write a");
        write_file(&root.join("fixtures/canonical/c.json"), b"{}\n").expect("write c");
        let drift = drift(root, &generated).expect("drift computed");
        assert_eq!(
            drift,
            Drift {
                stale: vec!["fixtures/canonical/a.json".to_owned()],
                missing: vec!["fixtures/canonical/b.json".to_owned()],
                extra: vec!["fixtures/canonical/c.json".to_owned()],
            }
        );
    }
}
