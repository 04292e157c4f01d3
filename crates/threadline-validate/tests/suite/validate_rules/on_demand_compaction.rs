//! On-demand compaction (`compact-2026-09-04`): the `compaction` parameter and the signed
//! block sent back. One failing and one passing case per rule, with the exact texts (the API's
//! where the reference quotes them, ours otherwise; see each rule's documentation), and the
//! findings that are warnings.

use serde_json::{Value, json};
use threadline_validate::{Rule, ValidateOptions, validate_report};
use threadline_wire::MessagesRequest;

use super::{
    Case, assistant, body, fails, findings, model, passes, text, tool_use, user, weather_tool,
    with_options,
};

const SONNET: &str = "claude-sonnet-4-6";
const BETA: &str = "compact-2026-09-04";

fn beta(case: Case) -> Case {
    with_options(case, ValidateOptions::default().with_beta_header(BETA))
}

fn no_header(case: Case) -> Case {
    with_options(case, ValidateOptions::default().with_beta_header(""))
}

/// A body on `model_id` with `messages` and `extra` fields.
fn on(model_id: &str, messages: Value, extra: Value) -> String {
    let mut request: Value = serde_json::from_str(&body(messages, extra)).expect("JSON");
    request["model"] = json!(model_id);
    request.to_string()
}

/// `extra` with `compaction: {type: summarize}` added.
fn compacting(extra: Value) -> Value {
    let mut extra = extra;
    extra["compaction"] = json!({"type": "summarize"});
    extra
}

fn block() -> Value {
    json!({"type": "compaction", "content": "Summary of the conversation: S.", "signature": "sig"})
}

fn history() -> Value {
    json!([
        user(json!("Plan the trip.")),
        assistant(json!([text("Paris first.")])),
        user(json!("And then?"))
    ])
}

#[allow(clippy::too_many_lines)]
pub(super) fn cases() -> Vec<Case> {
    let invalid = Rule::OnDemandCompactionInvalid;
    vec![
        // --- the parameter and what may not come with it -----------------------------------
        beta(fails(
            invalid,
            SONNET,
            on(
                SONNET,
                history(),
                compacting(json!({"stop_sequences": ["END"]})),
            ),
            &[(
                "stop_sequences",
                "stop_sequences: `stop_sequences` cannot be used with `compaction`",
            )],
        )),
        beta(fails(
            invalid,
            SONNET,
            on(
                SONNET,
                history(),
                compacting(json!({"context_management": {"edits": []}})),
            ),
            &[(
                "context_management",
                "context_management: `context_management` cannot be used with `compaction`",
            )],
        )),
        beta(fails(
            invalid,
            SONNET,
            on(
                SONNET,
                history(),
                compacting(
                    json!({"output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}}}),
                ),
            ),
            &[(
                "output_config.format",
                "output_config.format: `output_config.format` cannot be used with `compaction`",
            )],
        )),
        beta(fails(
            invalid,
            SONNET,
            on(
                SONNET,
                history(),
                compacting(json!({"tools": [weather_tool()], "tool_choice": {"type": "any"}})),
            ),
            &[(
                "tool_choice",
                "tool_choice: `tool_choice` of type `any` cannot be used with `compaction`",
            )],
        )),
        beta(fails(
            invalid,
            SONNET,
            on(
                SONNET,
                history(),
                json!({"compaction": {"type": "summarize", "instructions": " \n"}}),
            ),
            &[(
                "compaction.instructions",
                "compaction.instructions: `instructions` must not be blank",
            )],
        )),
        beta(fails(
            invalid,
            SONNET,
            on(
                SONNET,
                history(),
                json!({"compaction": {"type": "summarize", "instructions": "é".repeat(16_385)}}),
            ),
            &[(
                "compaction.instructions",
                "compaction.instructions: String should have at most 16384 characters",
            )],
        )),
        beta(fails(
            invalid,
            SONNET,
            on(
                SONNET,
                json!([
                    user(json!("Weather?")),
                    assistant(json!([text("Looking."), tool_use("toolu_1")]))
                ]),
                compacting(json!({"tools": [weather_tool()]})),
            ),
            &[(
                "messages.1",
                "messages.1: the conversation ends with an assistant `tool_use` block that has no `tool_result`; a compaction request cannot end in a pending tool call",
            )],
        )),
        with_options(
            fails(
                invalid,
                "claude-opus-4-8",
                on(
                    "claude-opus-4-8",
                    json!([assistant(json!([block()])), user(json!("Next."))]),
                    json!({"output_config": {"task_budget": {"type": "tokens", "total": 50000, "remaining": 20000}}}),
                ),
                &[(
                    "output_config.task_budget.remaining",
                    "output_config.task_budget.remaining: `remaining` cannot be set on a compaction request or on a request carrying a `compaction` block",
                )],
            ),
            ValidateOptions::default()
                .with_beta_header("compact-2026-09-04,task-budgets-2026-03-13"),
        ),
        // --- the block sent back ------------------------------------------------------------
        beta(fails(
            invalid,
            SONNET,
            on(
                SONNET,
                json!([
                    assistant(
                        json!([{"type": "compaction", "content": "S.", "signature": "sig", "citations": null}])
                    ),
                    user(json!("Next."))
                ]),
                json!({}),
            ),
            &[(
                "messages.0.content.0.citations",
                "messages.0.content.0.compaction.citations: Extra inputs are not permitted",
            )],
        )),
        beta(fails(
            invalid,
            SONNET,
            on(
                SONNET,
                json!([
                    assistant(json!([block()])),
                    user(json!("Next.")),
                    assistant(json!([block()])),
                    user(json!("Again."))
                ]),
                json!({}),
            ),
            &[(
                "messages.2.content.0",
                "messages.2.content.0: only one `compaction` block may be sent, the newest; found more than one",
            )],
        )),
        // A compaction request ending with an assistant answer (no prefill: it is summarized),
        // the block first, `cache_control` on it and explicit nulls of its own fields.
        beta(passes(
            invalid,
            SONNET,
            on(
                SONNET,
                json!([
                    assistant(
                        json!([{"type": "compaction", "content": "S.", "signature": "sig",
                        "encrypted_content": null, "cache_control": {"type": "ephemeral"}}])
                    ),
                    user(json!("Next.")),
                    assistant(json!([text("Done.")]))
                ]),
                json!({"compaction": {"type": "summarize", "instructions": "Keep file names."},
                    "tools": [weather_tool()], "tool_choice": {"type": "auto"}}),
            ),
        )),
        // --- the model ------------------------------------------------------------------------
        beta(fails(
            Rule::OnDemandCompactionUnsupported,
            "claude-haiku-4-5",
            on("claude-haiku-4-5", history(), compacting(json!({}))),
            &[(
                "compaction",
                "compaction: on-demand compaction is not supported on this model",
            )],
        )),
        beta(passes(
            Rule::OnDemandCompactionUnsupported,
            "claude-opus-5-5",
            on("claude-opus-5-5", history(), compacting(json!({}))),
        )),
        // --- placement --------------------------------------------------------------------------
        beta(fails(
            Rule::CompactionBlockMisplaced,
            SONNET,
            on(
                SONNET,
                json!([
                    user(json!("Plan the trip.")),
                    assistant(json!([block()])),
                    user(json!("Next."))
                ]),
                json!({}),
            ),
            &[(
                "messages.1.content.0",
                "messages.1.content.0: a `compaction` block must be the first block of the first message; the messages it summarized must not be sent before it",
            )],
        )),
        beta(passes(
            Rule::CompactionBlockMisplaced,
            SONNET,
            on(
                SONNET,
                json!([user(json!([block(), text("Next.")]))]),
                json!({}),
            ),
        )),
        beta(fails(
            Rule::CompactionNothingToSummarize,
            SONNET,
            on(
                SONNET,
                json!([assistant(json!([block()]))]),
                compacting(json!({})),
            ),
            &[(
                "messages",
                "messages: there is nothing to summarize: no user or assistant content besides a `compaction` block",
            )],
        )),
        beta(passes(
            Rule::CompactionNothingToSummarize,
            SONNET,
            on(
                SONNET,
                json!([assistant(json!([block()])), user(json!("Next."))]),
                compacting(json!({})),
            ),
        )),
        // --- the header -------------------------------------------------------------------------
        no_header(fails(
            Rule::BetaHeaderMissing,
            SONNET,
            on(SONNET, history(), compacting(json!({}))),
            &[(
                "compaction",
                "compaction: the `compaction` parameter requires anthropic-beta: compact-2026-09-04",
            )],
        )),
        no_header(fails(
            Rule::BetaHeaderMissing,
            SONNET,
            on(
                SONNET,
                json!([assistant(json!([block()])), user(json!("Next."))]),
                json!({}),
            ),
            &[(
                "messages.0.content.0",
                "`compaction` is not an expected content block type",
            )],
        )),
    ]
}

#[test]
fn on_a_model_the_docs_are_silent_on_compaction_is_a_warning() {
    let request: MessagesRequest =
        serde_json::from_str(&on("claude-haiku-5-5", history(), compacting(json!({}))))
            .expect("parses");
    let options = ValidateOptions::default().with_beta_header(BETA);
    let report = validate_report(&request, model("claude-haiku-5-5"), &options);
    assert_eq!(findings(&report.violations), []);
    assert_eq!(
        findings(&report.warnings),
        [(
            Rule::OnDemandCompactionUnsupported,
            "compaction",
            "compaction: the documentation does not say whether claude-haiku-5-5 accepts on-demand compaction (`compaction`), so the API may accept this; if claude-haiku-5-5 does not, the answer is `compaction: on-demand compaction is not supported on this model`"
        )]
    );
    // With the header unknown (`threadline check` without `--beta`), no header rule applies.
    let report = validate_report(&request, model(SONNET), &ValidateOptions::default());
    assert!(report.is_accepted(), "{report:#?}");
}

#[test]
fn on_bedrock_compaction_is_refused_in_bedrock_s_words_on_every_model() {
    use threadline_wire::model::ModelTable;
    use threadline_wire::platform::Platform;

    let options = ValidateOptions::default().with_beta_header(BETA);
    let bedrock = ModelTable::builtin().on_platform(Platform::Bedrock);
    let expected = "compaction: Malformed input request: #: extraneous key [compaction] is not permitted, please reformat your input and try again. (Amazon Bedrock does not offer on-demand compaction (`compaction`))";
    // A model that has it on the API, a model whose docs are silent on it, and an id the
    // table does not know: Bedrock refuses the field whatever the model.
    for id in [SONNET, "claude-haiku-5-5", "us.anthropic.claude-next-v1:0"] {
        let request: MessagesRequest =
            serde_json::from_str(&on(id, history(), compacting(json!({})))).expect("parses");
        let report = validate_report(&request, bedrock.resolve(id).model(), &options);
        assert_eq!(
            findings(&report.violations),
            [(Rule::OnDemandCompactionUnsupported, "compaction", expected)],
            "{id}"
        );
        // The same request is the API's on Vertex AI (for a model that has it).
        let vertex = ModelTable::builtin().on_platform(Platform::Vertex);
        if id == SONNET {
            let report = validate_report(&request, vertex.resolve(id).model(), &options);
            assert!(report.is_accepted(), "{report:#?}");
        }
    }
    // Without `compaction`, the same history passes on Bedrock.
    let request: MessagesRequest =
        serde_json::from_str(&on(SONNET, history(), json!({}))).expect("parses");
    let report = validate_report(&request, bedrock.resolve(SONNET).model(), &options);
    assert!(report.is_accepted(), "{report:#?}");
}

#[test]
fn no_cloud_platform_takes_server_side_fallbacks() {
    use threadline_wire::model::ModelTable;
    use threadline_wire::platform::Platform;

    let options = ValidateOptions::default().with_beta_header("server-side-fallback-2026-07-01");
    let request: MessagesRequest =
        serde_json::from_str(&on(SONNET, history(), json!({"fallbacks": "default"})))
            .expect("parses");
    let api = validate_report(&request, model(SONNET), &options);
    assert!(api.is_accepted(), "{api:#?}");
    for (platform, words) in [
        (
            Platform::Bedrock,
            "fallbacks: Malformed input request: #: extraneous key [fallbacks] is not permitted, please reformat your input and try again. (Amazon Bedrock does not offer server-side fallbacks (`fallbacks`))",
        ),
        (
            Platform::Vertex,
            "fallbacks: Extra inputs are not permitted (Vertex AI does not offer server-side fallbacks (`fallbacks`))",
        ),
        (
            Platform::Foundry,
            "fallbacks: Extra inputs are not permitted (Microsoft Foundry does not offer server-side fallbacks (`fallbacks`))",
        ),
    ] {
        let view = ModelTable::builtin().on_platform(platform);
        let report = validate_report(&request, view.resolve(SONNET).model(), &options);
        assert_eq!(
            findings(&report.violations),
            [(Rule::FallbacksInvalid, "fallbacks", words)],
            "{platform}"
        );
    }
}
