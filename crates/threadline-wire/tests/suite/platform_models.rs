//! The model table on each platform: any id (a hostile string, or a known model written the
//! platform's way, with any cross-region prefix and version suffix) resolves without a panic,
//! to the row of the model it names or to the conservative default, and a row resolved on a
//! platform never offers what that platform withholds.

use proptest::prelude::*;
use threadline_wire::model::{Capability, ModelTable};
use threadline_wire::platform::{BEDROCK_REGION_PREFIXES, Platform};

fn platform() -> impl Strategy<Value = Platform> {
    prop::sample::select(Platform::ALL.to_vec())
}

/// A known model's API id or alias.
fn known_id() -> impl Strategy<Value = String> {
    let ids: Vec<String> = ModelTable::builtin()
        .models()
        .iter()
        .flat_map(|m| std::iter::once(m.id.clone()).chain(m.aliases.iter().cloned()))
        .collect();
    prop::sample::select(ids)
}

/// Strings built from the pieces platform ids are made of, and arbitrary text.
fn hostile_id() -> impl Strategy<Value = String> {
    let piece = prop::sample::select(vec![
        "anthropic.",
        "us.",
        "global.",
        "us-gov.",
        "claude-",
        "sonnet",
        "-4-5",
        "-v1",
        ":0",
        ":",
        "@",
        "2025",
        "-v",
        ".",
        "arn:aws:bedrock:",
        "/",
        "\u{0}",
        "é",
        "",
    ]);
    prop_oneof![
        prop::collection::vec(piece, 0..8).prop_map(|p| p.concat()),
        any::<String>(),
    ]
}

proptest! {
    #[test]
    fn a_known_model_written_the_bedrock_way_resolves_to_its_row(
        id in known_id(),
        prefix in prop::option::of(prop::sample::select(BEDROCK_REGION_PREFIXES.to_vec())),
        version in prop::option::of((1u8..4, prop::option::of(0u8..3))),
    ) {
        let bedrock = ModelTable::builtin().on_platform(Platform::Bedrock);
        let row = &ModelTable::builtin().resolve(&id).model().id;
        let suffix = match version {
            None => String::new(),
            Some((v, None)) => format!("-v{v}"),
            Some((v, Some(r))) => format!("-v{v}:{r}"),
        };
        let written = format!("{}anthropic.{id}{suffix}", prefix.unwrap_or(""));
        let resolved = bedrock.resolve(&written);
        prop_assert!(resolved.is_known(), "{written}");
        prop_assert_eq!(&resolved.model().id, row);
        // The Claude API and Foundry do not take it.
        for platform in [Platform::Anthropic, Platform::Foundry] {
            let view = ModelTable::builtin().on_platform(platform);
            prop_assert!(!view.resolve(&written).is_known());
        }
    }

    #[test]
    fn any_id_resolves_without_panic_to_a_real_row_that_keeps_the_platform_s_rules(
        platform in platform(),
        id in prop_oneof![hostile_id(), known_id()],
    ) {
        let api = ModelTable::builtin();
        let view = api.on_platform(platform);
        let resolved = view.resolve(&id);
        let row = resolved.model();
        prop_assert_eq!(row.platform(), platform);
        if resolved.is_known() {
            prop_assert!(api.get(&row.id).is_some(), "{} is no API row", row.id);
        } else {
            prop_assert!(row.is_guess());
            prop_assert!(resolved.warning().is_some_and(|w| w.contains(&id)));
        }
        // What the platform withholds, no row offers there.
        for withheld in view.platform_rules(platform).map(|r| r.withheld.as_slice()).unwrap_or(&[]) {
            prop_assert!(!row.may_have(withheld.capability));
            prop_assert!(row.withheld(withheld.capability).is_some());
        }
        // Outside the platforms, nothing changes: the API's view resolves only the API's ids.
        if platform == Platform::Anthropic {
            prop_assert_eq!(resolved.is_known(), api.get(&id).is_some());
            prop_assert!(row.withheld(Capability::OnDemandCompaction).is_none());
        }
        // The id to send there, when there is one, resolves back to the same row.
        if let Some(sent) = view.platform_id(&id) {
            prop_assert_eq!(view.get(sent).map(|m| &m.id), Some(&row.id));
        }
    }
}
