//! Tool search, as the API runs it: over the deferred tools of the request being answered.
//!
//! A message step with a [`ToolSearchScript`] (`Step::tool_search("weather")`) gets, after its
//! own blocks, a `server_tool_use` of the search tool the request declares (regex or BM25; its
//! input streamed as `input_json_delta`s), the `tool_search_tool_result` (whole, in its
//! `content_block_start`) with the `tool_references` found, and — when the script says so —
//! a client `tool_use` of the best match. The search reads the request's tools with
//! `defer_loading: true`, over each tool's name and description:
//!
//! - regex (`tool_search_tool_regex_*`): the pattern, case-insensitive, at most 200
//!   characters; tools whose name matches come first, then those whose description does, each
//!   in declaration order. A pattern the regex engine rejects (or too long) is a
//!   `tool_search_tool_result_error` with `invalid_tool_input`. (Python's `re` accepts a few
//!   constructs this engine does not, such as look-arounds: those are errors here.)
//! - BM25 (`tool_search_tool_bm25_*`): the query (at most 500 characters) scored with Okapi
//!   BM25 (k1 = 1.2, b = 0.75) over the words of name and description (split at
//!   non-alphanumerics and camelCase humps, lower-cased); positive scores only, best first,
//!   ties in declaration order.
//!
//! Both return at most `limit` references (default 5, 1–10,000).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use threadline_wire::tool_search::{
    DEFAULT_SEARCH_LIMIT, MAX_BM25_QUERY_CHARS, MAX_REGEX_PATTERN_CHARS, MAX_SEARCH_LIMIT,
    ToolSearchContent, ToolSearchErrorCode, ToolSearchKind,
};
use threadline_wire::{MessagesRequest, ToolDefinition};

use crate::scenario::{Block, MessageStep};

/// What a step searches for, and what it does with the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSearchScript {
    /// The regex pattern or the BM25 query (whichever the request's search tool takes).
    pub query: String,
    /// `limit` in the search's input (absent: the API's default, 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// Call the best match as a client tool with this input, after the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<Value>,
}

impl ToolSearchScript {
    /// A search for `query`, nothing called.
    pub fn new(query: impl Into<String>) -> Self {
        ToolSearchScript {
            query: query.into(),
            limit: None,
            call: None,
        }
    }
}

/// One deferred tool, as the search sees it.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// The tool's name.
    pub name: &'a str,
    /// Its description (empty when it has none).
    pub description: &'a str,
}

/// The deferred tools of `tools`, in declaration order.
pub fn candidates(tools: &[ToolDefinition]) -> Vec<Candidate<'_>> {
    tools
        .iter()
        .filter(|t| t.is_deferred())
        .map(|t| Candidate {
            name: t.name(),
            description: match t {
                ToolDefinition::Custom(c) => c.description.as_deref().unwrap_or(""),
                _ => "",
            },
        })
        .collect()
}

/// Why a search failed (the result's `error_message`).
fn invalid(message: String) -> ToolSearchContent {
    ToolSearchContent::error(ToolSearchErrorCode::InvalidToolInput, Some(message))
}

/// The regex search: names matching first, then descriptions, each in order.
pub fn regex_search(pattern: &str, limit: usize, tools: &[Candidate<'_>]) -> ToolSearchContent {
    if pattern.chars().count() > MAX_REGEX_PATTERN_CHARS {
        return invalid(format!(
            "pattern is longer than {MAX_REGEX_PATTERN_CHARS} characters"
        ));
    }
    let regex = match regex::RegexBuilder::new(pattern)
        .case_insensitive(true)
        .size_limit(1 << 20)
        .build()
    {
        Ok(regex) => regex,
        Err(error) => return invalid(format!("invalid regular expression: {error}")),
    };
    let by_name = tools.iter().filter(|t| regex.is_match(t.name));
    let by_description = tools
        .iter()
        .filter(|t| !regex.is_match(t.name) && regex.is_match(t.description));
    ToolSearchContent::found(by_name.chain(by_description).take(limit).map(|t| t.name))
}

/// The words of `text`: alphanumeric runs, split again at camelCase humps, lower-cased.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_numeric();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Okapi BM25's `k1`.
const K1: f64 = 1.2;
/// Okapi BM25's `b`.
const B: f64 = 0.75;

/// The BM25 scores of `tools` for `query` (one per tool, in order).
pub fn bm25_scores(query: &str, tools: &[Candidate<'_>]) -> Vec<f64> {
    let documents: Vec<Vec<String>> = tools
        .iter()
        .map(|t| {
            let mut w = words(t.name);
            w.extend(words(t.description));
            w
        })
        .collect();
    let n = documents.len() as f64;
    let average = if documents.is_empty() {
        0.0
    } else {
        documents.iter().map(Vec::len).sum::<usize>() as f64 / n
    };
    let mut terms = words(query);
    terms.sort();
    terms.dedup();
    let frequencies: Vec<HashMap<&str, usize>> = documents
        .iter()
        .map(|d| {
            let mut f = HashMap::new();
            for w in d {
                *f.entry(w.as_str()).or_insert(0) += 1;
            }
            f
        })
        .collect();
    let mut scores = vec![0.0; documents.len()];
    for term in &terms {
        let containing = frequencies
            .iter()
            .filter(|f| f.contains_key(term.as_str()))
            .count() as f64;
        if containing == 0.0 {
            continue;
        }
        let idf = (1.0 + (n - containing + 0.5) / (containing + 0.5)).ln();
        for (score, (f, d)) in scores.iter_mut().zip(frequencies.iter().zip(&documents)) {
            let tf = f.get(term.as_str()).copied().unwrap_or(0) as f64;
            if tf == 0.0 {
                continue;
            }
            let norm = if average > 0.0 {
                1.0 - B + B * d.len() as f64 / average
            } else {
                1.0
            };
            *score += idf * tf * (K1 + 1.0) / (tf + K1 * norm);
        }
    }
    scores
}

/// The BM25 search: positive scores, best first, ties in declaration order.
pub fn bm25_search(query: &str, limit: usize, tools: &[Candidate<'_>]) -> ToolSearchContent {
    if query.chars().count() > MAX_BM25_QUERY_CHARS {
        return invalid(format!(
            "query is longer than {MAX_BM25_QUERY_CHARS} characters"
        ));
    }
    let scores = bm25_scores(query, tools);
    let mut ranked: Vec<(usize, f64)> = scores
        .into_iter()
        .enumerate()
        .filter(|(_, s)| *s > 0.0)
        .collect();
    // Stable: equal scores keep declaration order.
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    ToolSearchContent::found(ranked.into_iter().take(limit).map(|(i, _)| tools[i].name))
}

/// Runs one search of `kind` over `tools`.
pub fn search(
    kind: ToolSearchKind,
    query: &str,
    limit: Option<u64>,
    tools: &[Candidate<'_>],
) -> ToolSearchContent {
    let limit = limit.unwrap_or(DEFAULT_SEARCH_LIMIT);
    if !(1..=MAX_SEARCH_LIMIT).contains(&limit) {
        return invalid(format!("limit must be between 1 and {MAX_SEARCH_LIMIT}"));
    }
    if query.trim().is_empty() {
        return invalid(format!("{} must not be empty", kind.input_field()));
    }
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    match kind {
        ToolSearchKind::Regex => regex_search(query, limit, tools),
        _ => bm25_search(query, limit, tools),
    }
}

/// `step` with its tool search run against `request`: the search blocks appended after the
/// step's own (a step without a script is returned as it is). `next_id` gives the
/// `server_tool_use` id (`srvtoolu_…`).
pub fn expand(
    step: &MessageStep,
    request: &MessagesRequest,
    next_id: impl FnOnce() -> String,
) -> MessageStep {
    let Some(script) = &step.tool_search else {
        return step.clone();
    };
    let mut step = step.clone();
    step.tool_search = None;
    let tools = request.tools.as_deref().unwrap_or(&[]);
    let Some(kind) = tools.iter().find_map(ToolSearchKind::of_tool) else {
        // The API would never call a search the request does not declare.
        step.content.push(Block::Text {
            text: "(mock: the scenario searches, but the request declares no tool search tool)"
                .to_owned(),
        });
        return step;
    };
    let name = tools
        .iter()
        .find(|t| ToolSearchKind::of_tool(t) == Some(kind))
        .map_or(kind.tool_name(), ToolDefinition::name)
        .to_owned();
    let id = next_id();
    let mut input = serde_json::Map::new();
    input.insert(
        kind.input_field().to_owned(),
        Value::from(script.query.clone()),
    );
    if let Some(limit) = script.limit {
        input.insert("limit".to_owned(), Value::from(limit));
    }
    let found = search(kind, &script.query, script.limit, &candidates(tools));
    let best = found.tool_names().first().map(|s| (*s).to_owned());
    step.content.push(Block::ServerToolUse {
        id: Some(id.clone()),
        name,
        input: Value::Object(input),
    });
    step.content.push(Block::Verbatim {
        block: json!({"type": "tool_search_tool_result", "tool_use_id": id, "content": found.to_value()}),
    });
    if let (Some(input), Some(best)) = (&script.call, best) {
        step.content.push(Block::ToolUse {
            id: None,
            name: best,
            input: input.clone(),
        });
    }
    step
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> Vec<Candidate<'static>> {
        [
            (
                "get_weather",
                "Current weather for a city: temperature, wind, rain.",
            ),
            ("getExchangeRate", "Exchange rate between two currencies."),
            ("stock_lookup", "Look up a stock price by ticker symbol."),
            ("weather_alerts", "Severe weather alerts for a region."),
            (
                "send_email",
                "Send an email. Mentions the weather only in passing.",
            ),
        ]
        .into_iter()
        .map(|(name, description)| Candidate { name, description })
        .collect()
    }

    #[test]
    fn regex_ranks_name_matches_first_case_insensitively() {
        let found = search(ToolSearchKind::Regex, "WEATHER", None, &set());
        assert_eq!(
            found.tool_names(),
            ["get_weather", "weather_alerts", "send_email"]
        );
        let found = search(ToolSearchKind::Regex, "rate|ticker", Some(1), &set());
        assert_eq!(found.tool_names(), ["getExchangeRate"]);
        let found = search(ToolSearchKind::Regex, "nothing_like_this", None, &set());
        assert_eq!(found, ToolSearchContent::found([]));
    }

    #[test]
    fn bad_patterns_queries_and_limits_are_invalid_tool_input() {
        for content in [
            search(ToolSearchKind::Regex, "(unclosed", None, &set()),
            search(ToolSearchKind::Regex, &"a".repeat(201), None, &set()),
            search(ToolSearchKind::Bm25, &"word ".repeat(101), None, &set()),
            search(ToolSearchKind::Bm25, "weather", Some(0), &set()),
            search(ToolSearchKind::Bm25, "  ", None, &set()),
        ] {
            assert!(
                matches!(&content, ToolSearchContent::Error(e) if e.error_code == ToolSearchErrorCode::InvalidToolInput),
                "{content:?}"
            );
        }
        assert_eq!(
            search(ToolSearchKind::Regex, &"a".repeat(200), None, &set()),
            ToolSearchContent::found([])
        );
    }

    #[test]
    fn bm25_ranks_by_score_in_an_exact_order() {
        // "weather" is in three tools; "alerts" in one: weather_alerts has both words, and
        // get_weather's short document beats send_email's longer one.
        let found = search(ToolSearchKind::Bm25, "weather alerts", None, &set());
        assert_eq!(
            found.tool_names(),
            ["weather_alerts", "get_weather", "send_email"]
        );
        // camelCase names are split into words.
        let found = search(ToolSearchKind::Bm25, "exchange rate", Some(10), &set());
        assert_eq!(found.tool_names(), ["getExchangeRate"]);
        let scores = bm25_scores("weather alerts", &set());
        assert!(scores[3] > scores[0] && scores[0] > scores[4] && scores[4] > 0.0);
        assert_eq!((scores[1], scores[2]), (0.0, 0.0));
        assert_eq!(
            words("getExchangeRate v2_API"),
            ["get", "exchange", "rate", "v2", "api"]
        );
    }

    #[test]
    fn only_deferred_tools_are_candidates() {
        let tools: Vec<ToolDefinition> = serde_json::from_value(json!([
            {"name": "a", "description": "loaded", "input_schema": {"type": "object"}},
            {"name": "b", "description": "deferred", "input_schema": {"type": "object"}, "defer_loading": true},
            {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
        ]))
        .expect("tools");
        let names: Vec<&str> = candidates(&tools).iter().map(|c| c.name).collect();
        assert_eq!(names, ["b"]);
    }
}
