//! The model table as one platform sees it: the platform's model ids resolve to their rows,
//! and a feature the platform does not offer is gone from every row, with the platform's own
//! refusal kept for the validator to quote (docs/platforms.md §1.6, §2.6, §6).

use serde::{Deserialize, Serialize};

use super::{Capability, Model};
use crate::platform::Platform;

/// A row's ids on the platforms that name models their own way; absent in the data means
/// the documentation gives none (the platform's id form may still resolve to the row:
/// [`Platform::base_model_id`]).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[non_exhaustive]
pub struct PlatformIds {
    /// Bedrock's base model id (`anthropic.claude-sonnet-4-5-20250929-v1:0`), without a
    /// cross-region prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bedrock: Option<String>,
    /// Vertex AI's model id (`claude-sonnet-4-5@20250929`, or bare for newer models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vertex: Option<String>,
}

impl PlatformIds {
    /// The id on `platform`, if the data gives one (never on the Claude API or Foundry, whose
    /// ids are the API's).
    pub fn on(&self, platform: Platform) -> Option<&str> {
        match platform {
            Platform::Bedrock => self.bedrock.as_deref(),
            Platform::Vertex => self.vertex.as_deref(),
            Platform::Anthropic | Platform::Foundry => None,
        }
    }
}

/// A capability a platform does not offer, with what the platform answers when a request
/// uses it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[non_exhaustive]
pub struct Withheld {
    /// The capability.
    pub capability: Capability,
    /// The platform's refusal, in its words.
    pub refusal: String,
}

/// What one platform withholds, and where that comes from.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[non_exhaustive]
pub struct PlatformRules {
    /// The capabilities the platform does not offer on any model.
    #[serde(default)]
    pub withheld: Vec<Withheld>,
    /// Where the facts come from, in words.
    #[serde(default)]
    pub source: Option<String>,
}

/// The data's `platforms` object: each cloud platform's rules (the Claude API withholds
/// nothing).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PlatformTable {
    #[serde(default)]
    bedrock: PlatformRules,
    #[serde(default)]
    vertex: PlatformRules,
    #[serde(default)]
    foundry: PlatformRules,
}

impl PlatformTable {
    /// `platform`'s rules (none for the Claude API).
    pub(crate) fn rules(&self, platform: Platform) -> Option<&PlatformRules> {
        match platform {
            Platform::Anthropic => None,
            Platform::Bedrock => Some(&self.bedrock),
            Platform::Vertex => Some(&self.vertex),
            Platform::Foundry => Some(&self.foundry),
        }
    }
}

/// `row` as `platform` offers it: what the platform withholds is neither claimed nor left
/// undocumented, and the row remembers the platform and its refusals.
pub(crate) fn apply(row: &mut Model, platform: Platform, rules: Option<&PlatformRules>) {
    row.platform = platform;
    row.withheld = rules.map(|r| r.withheld.clone()).unwrap_or_default();
    for withheld in &row.withheld {
        let capability = withheld.capability;
        if capability == Capability::SystemMessages {
            row.system_messages = false;
        }
        row.features.retain(|f| Capability::from(*f) != capability);
        row.undocumented.retain(|c| *c != capability);
    }
}

/// Whether `row` is the one `id` names on `platform` by the data's id: Bedrock's with or
/// without a cross-region prefix.
pub(crate) fn names(row: &Model, platform: Platform, id: &str) -> bool {
    let Some(known) = row.platform_ids.on(platform) else {
        return false;
    };
    match platform {
        Platform::Bedrock => crate::platform::without_region_prefix(id) == known,
        _ => id == known,
    }
}
