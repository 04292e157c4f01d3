//! The canonical fixtures load, are well formed and agree with index.json.

use std::collections::BTreeSet;

use threadline_testkit::fixtures::{
    self, Body, KIND_API, KIND_TRANSCRIPT, all_fixtures, index, json_responses, recorded_requests,
    sse_streams, transcripts,
};

#[test]
fn every_canonical_file_loads() {
    let on_disk: BTreeSet<String> = walk(&fixtures::canonical_dir())
        .into_iter()
        .filter(|p| !p.ends_with("/index.json") && p != "index.json")
        .collect();
    let loaded: BTreeSet<String> = all_fixtures()
        .iter()
        .map(|f| format!("{}.json", f.name))
        .collect();
    assert_eq!(
        on_disk, loaded,
        "every canonical file is in index.json and loads"
    );
    assert!(all_fixtures().len() >= 39, "{}", all_fixtures().len());
    for fixture in all_fixtures() {
        assert!(!fixture.docs.is_empty(), "{}: docs", fixture.name);
        assert!(
            !fixture.exchanges.is_empty(),
            "{}: no exchanges",
            fixture.name
        );
        assert!(!fixture.source.repo.is_empty() && !fixture.source.commit.is_empty());
        assert!(
            !fixture.source.licence.is_empty(),
            "{}: licence",
            fixture.name
        );
        assert!(
            fixtures::repo_root().join(&fixture.source.raw).is_file(),
            "{}: raw file {} exists",
            fixture.name,
            fixture.source.raw
        );
    }
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("canonical dir is listable") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            let sub = path
                .file_name()
                .and_then(|n| n.to_str())
                .expect("utf-8 dir name")
                .to_owned();
            out.extend(walk(&path).into_iter().map(|p| format!("{sub}/{p}")));
        } else {
            out.push(
                path.file_name()
                    .and_then(|n| n.to_str())
                    .expect("utf-8 file name")
                    .to_owned(),
            );
        }
    }
    out
}

#[test]
fn every_sse_body_is_sse() {
    let streams = sse_streams();
    assert!(!streams.is_empty());
    for (name, sse) in &streams {
        assert!(!sse.is_empty(), "{name}: empty SSE body");
        assert!(
            sse.starts_with("event:") || sse.starts_with("data:"),
            "{name}: SSE body starts with {:?}",
            sse.chars().take(20).collect::<String>()
        );
        assert!(sse.contains("message_start"), "{name}: no message_start");
    }
}

#[test]
fn counts_match_index() {
    let api: Vec<_> = index().iter().filter(|e| e.kind == KIND_API).collect();
    assert_eq!(api.len(), all_fixtures().len());
    let mut total_sse = 0;
    let mut total_json = 0;
    let mut total_requests = 0;
    for (entry, fixture) in api.iter().zip(all_fixtures()) {
        assert_eq!(entry.name, fixture.name);
        let sse = fixture
            .exchanges
            .iter()
            .filter(|e| matches!(e.response.body, Body::Sse(_)))
            .count();
        let requests = fixture
            .exchanges
            .iter()
            .filter(|e| e.request.is_some())
            .count();
        assert_eq!(entry.exchanges, fixture.exchanges.len(), "{}", entry.name);
        assert_eq!(entry.sse_responses, sse, "{}", entry.name);
        assert_eq!(
            entry.json_responses,
            fixture.exchanges.len() - sse,
            "{}",
            entry.name
        );
        assert_eq!(entry.has_sse, sse > 0, "{}", entry.name);
        assert_eq!(entry.requests, requests, "{}", entry.name);
        let statuses: BTreeSet<Option<u16>> = fixture
            .exchanges
            .iter()
            .map(|e| e.response.status)
            .collect();
        assert_eq!(
            entry.statuses,
            statuses.into_iter().collect::<Vec<_>>(),
            "{}",
            entry.name
        );
        total_sse += sse;
        total_json += fixture.exchanges.len() - sse;
        total_requests += requests;
    }
    assert_eq!(sse_streams().len(), total_sse);
    assert_eq!(json_responses().len(), total_json);
    assert_eq!(recorded_requests().len(), total_requests);
}

#[test]
fn transcripts_are_listed_not_converted() {
    let paths = transcripts();
    assert_eq!(
        paths.len(),
        index().iter().filter(|e| e.kind == KIND_TRANSCRIPT).count()
    );
    assert!(!paths.is_empty());
    for path in &paths {
        assert!(path.is_file(), "{}", path.display());
        assert_eq!(path.extension().and_then(|e| e.to_str()), Some("jsonl"));
    }
}

#[test]
fn requests_have_known_endpoints_and_kept_headers_only() {
    for (name, request) in recorded_requests() {
        assert!(
            ["/v1/messages", "/v1/messages/count_tokens"].contains(&request.endpoint.as_str()),
            "{name}: {}",
            request.endpoint
        );
        assert_eq!(request.method, "POST", "{name}");
        for header in request.headers.keys() {
            assert!(
                ["anthropic-version", "anthropic-beta", "content-type"].contains(&header.as_str()),
                "{name}: unexpected request header {header}"
            );
        }
        assert!(
            request.body.get("model").is_some(),
            "{name}: request without model"
        );
    }
}

#[test]
fn error_responses_are_json_errors() {
    let errors: Vec<_> = json_responses()
        .into_iter()
        .filter(|(_, status, _)| status.is_some_and(|s| s >= 400))
        .collect();
    assert!(errors.len() >= 4, "{}", errors.len());
    for (name, _, body) in errors {
        assert_eq!(body["type"], "error", "{name}");
        assert!(body["error"]["type"].is_string(), "{name}");
    }
}

#[test]
fn vercel_streams_are_split_per_message() {
    let fixture = fixtures::fixture("vercel__ai/anthropic-programmatic-tool-calling.1.chunks");
    assert_eq!(fixture.exchanges.len(), 15);
    for (i, exchange) in fixture.exchanges.iter().enumerate() {
        let sse = exchange.response.body.as_sse().expect("SSE body");
        assert!(sse.starts_with("event: message_start\ndata: {"), "#{i}");
        assert_eq!(sse.matches("event: message_start\n").count(), 1, "#{i}");
        assert!(exchange.request.is_none() && exchange.response.status.is_none());
    }
}
