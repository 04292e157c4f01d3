//! `threadline inspect --plan STRATEGY`: re-planning a recorded session's requests.

use serde_json::Value;

use crate::common::{code, stderr, stdout, temp_file, threadline};

fn planned(path: &str, strategy: &str) -> Value {
    let out = threadline(&["inspect", path, "--json", "--plan", strategy]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn re_planning_with_the_predictions_own_strategy_gives_the_prediction_back() {
    // The report's prediction is the default plan, kept incrementally by the session
    // simulator; `--plan` re-plans every request whole with a planner and a simulator. With
    // the same strategy the two must agree on every request of every recorded transcript.
    let paths = super::transcripts();
    assert!(paths.len() >= 5, "{paths:?}");
    for path in &paths {
        let report = planned(path, "lookback_aware");
        assert_eq!(report["plan"]["strategy"], "lookback_aware");
        for row in report["requests"].as_array().expect("requests") {
            assert_eq!(row["planned"], row["predicted"], "{path}: {row:#}");
            assert_eq!(row["planned_share"], row["predicted_share"], "{path}");
        }
        let plan = &report["plan"];
        let (recorded, planned) = (
            plan["recorded_input_cost"].as_f64().expect("recorded cost"),
            plan["planned_input_cost"].as_f64().expect("planned cost"),
        );
        let difference = plan["difference_dollars"].as_f64().expect("difference");
        assert!((difference - (recorded - planned)).abs() < 1e-12, "{path}");
        assert!(
            plan["assumptions"]
                .as_str()
                .is_some_and(|a| a.contains("recorded time"))
        );
        // `default` names the same strategy.
        assert_eq!(
            planned_share(&planned_default(path)),
            planned_share(&report),
            "{path}"
        );
    }
}

fn planned_default(path: &str) -> Value {
    planned(path, "default")
}

fn planned_share(report: &Value) -> Value {
    report["plan"]["planned_share"].clone()
}

/// A threadline transcript: `turns` prompts, each answered by a tool call per `tools_per_turn`
/// (all in one response, their results in one message) and a final text, `gap_minutes`
/// apart, with usage recorded on every response.
fn session(turns: usize, tools_per_turn: usize, gap_minutes: u64) -> String {
    let mut out = String::new();
    let mut minute = 0u64;
    let stamp = |minute: u64, second: u64| {
        format!(
            "2026-11-01T{:02}:{:02}:{:02}Z",
            minute / 60,
            minute % 60,
            second
        )
    };
    let line = |out: &mut String, json: String| {
        out.push_str(&json);
        out.push('\n');
    };
    let usage = r#"{"input_tokens":3,"cache_creation_input_tokens":500,"cache_read_input_tokens":20000,"output_tokens":20}"#;
    for t in 0..turns {
        line(
            &mut out,
            format!(
                r#"{{"type":"user","id":"u{t}","timestamp":"{}","content":[{{"type":"text","text":"{}"}}]}}"#,
                stamp(minute, 0),
                format!("turn {t}: read the files. ").repeat(200)
            ),
        );
        let calls: Vec<String> = (0..tools_per_turn)
            .map(|c| {
                format!(
                    r#"{{"type":"tool_use","id":"toolu_{t}_{c}","name":"Read","input":{{"file_path":"f{c}.txt"}}}}"#
                )
            })
            .collect();
        line(
            &mut out,
            format!(
                r#"{{"type":"assistant","id":"a{t}","timestamp":"{}","api_message_id":"msg_{t}a","request_id":"req_{t}a","model":"claude-sonnet-4-6","content":[{}],"stop_reason":"tool_use","usage":{usage}}}"#,
                stamp(minute, 5),
                calls.join(",")
            ),
        );
        let results: Vec<String> = (0..tools_per_turn)
            .map(|c| {
                format!(
                    r#"{{"type":"tool_result","tool_use_id":"toolu_{t}_{c}","content":"{}"}}"#,
                    format!("line {c} of the file. ").repeat(40)
                )
            })
            .collect();
        line(
            &mut out,
            format!(
                r#"{{"type":"user","id":"r{t}","timestamp":"{}","content":[{}]}}"#,
                stamp(minute, 6),
                results.join(",")
            ),
        );
        line(
            &mut out,
            format!(
                r#"{{"type":"assistant","id":"b{t}","timestamp":"{}","api_message_id":"msg_{t}b","request_id":"req_{t}b","model":"claude-sonnet-4-6","content":[{{"type":"text","text":"done {t}"}}],"stop_reason":"end_turn","usage":{usage}}}"#,
                stamp(minute, 9)
            ),
        );
        minute += gap_minutes;
    }
    out
}

fn share_of(path: &std::path::Path, strategy: &str) -> f64 {
    planned(path.to_str().expect("utf-8"), strategy)["plan"]["planned_share"]
        .as_f64()
        .expect("a share")
}

#[test]
fn the_strategies_differ_where_the_design_says_they_do() {
    // Turns that add 30 blocks: the seed's single moving marker cannot find the previous
    // write (20-block lookback); lookback_aware's bridge marker can.
    let wide = temp_file("plan-wide.jsonl", session(6, 30, 1));
    let (seed, default) = (share_of(&wide, "seed"), share_of(&wide, "default"));
    assert!(default > seed + 0.05, "seed {seed}, default {default}");
    // Half-hour gaps: five-minute entries expire between turns, one-hour ones do not.
    let idle = temp_file("plan-idle.jsonl", session(6, 1, 30));
    let (default, hour) = (share_of(&idle, "default"), share_of(&idle, "stable_1h"));
    assert!(hour > default + 0.05, "default {default}, stable_1h {hour}");
}

#[test]
fn the_table_prints_the_comparison_and_its_assumptions_and_a_bad_name_is_exit_2() {
    let path = "fixtures/recorded/lanegrid__agtrace/claude_session.jsonl";
    let out = threadline(&["inspect", path, "--plan", "default"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("re-planned with lookback_aware over 6 requests"),
        "{text}"
    );
    assert!(text.contains("assumptions: "), "{text}");
    assert_eq!(text.matches("      re-planned ").count(), 6, "{text}");

    let bad = threadline(&["inspect", path, "--plan", "cheapest"]);
    assert_eq!(code(&bad), 2);
    assert!(
        stderr(&bad).contains("seed, lookback_aware, stable_1h, automatic"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn the_automatic_strategy_is_accepted_and_reads_what_the_moving_marker_reads() {
    // The top-level marker lands where the default's moving marker goes (the last cacheable
    // block), and the bridge is the same: the same share, with one explicit marker fewer.
    let wide = temp_file("plan-automatic-wide.jsonl", session(6, 30, 1));
    let report = planned(wide.to_str().expect("utf-8"), "automatic");
    assert_eq!(report["plan"]["strategy"], "automatic");
    assert_eq!(share_of(&wide, "automatic"), share_of(&wide, "default"));
    let narrow = temp_file("plan-automatic-narrow.jsonl", session(6, 1, 1));
    let (automatic, default) = (share_of(&narrow, "automatic"), share_of(&narrow, "default"));
    assert_eq!(automatic, default);
    assert!(automatic > 0.5, "{automatic}");
}
