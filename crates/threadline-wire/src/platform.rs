//! The platforms Claude is sold on: the Claude API, Amazon Bedrock, Google Vertex AI and
//! Microsoft Foundry. The message array is the same on each; what differs and matters to the
//! wire is how a model is named there and which features the platform offers
//! (docs/platforms.md §1.6, §2.6, §6). The model table reads both from its data
//! ([`ModelTable::on_platform`](crate::model::ModelTable::on_platform)).
//!
//! ```
//! use threadline_wire::platform::Platform;
//!
//! let bedrock: Platform = "bedrock".parse()?;
//! assert_eq!(bedrock.display_name(), "Amazon Bedrock");
//! // A Bedrock id without its cross-region prefix, namespace and version suffix.
//! assert_eq!(
//!     bedrock.base_model_id("us.anthropic.claude-sonnet-4-5-20250929-v1:0").as_deref(),
//!     Some("claude-sonnet-4-5-20250929"),
//! );
//! assert_eq!(
//!     Platform::Vertex.base_model_id("claude-haiku-4-5@20251001").as_deref(),
//!     Some("claude-haiku-4-5-20251001"),
//! );
//! assert!("azure".parse::<Platform>().is_err());
//! # Ok::<(), threadline_wire::platform::UnknownPlatform>(())
//! ```

use serde::{Deserialize, Serialize};

/// A platform Claude is reached through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Platform {
    /// The Claude API (`api.anthropic.com`, or anything that speaks it).
    #[default]
    Anthropic,
    /// Amazon Bedrock's InvokeModel.
    Bedrock,
    /// Google Vertex AI's rawPredict.
    Vertex,
    /// Microsoft Foundry (the Claude API under a Foundry resource).
    Foundry,
}

/// The `anthropic_version` a Bedrock InvokeModel body carries (the platform's documented
/// value, docs/platforms.md §1.2).
pub const BEDROCK_ANTHROPIC_VERSION: &str = "bedrock-2023-05-31";

/// The `anthropic_version` a Vertex AI rawPredict body carries (docs/platforms.md §2.2).
pub const VERTEX_ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// The OAuth scope a Google access token for Vertex AI carries (docs/platforms.md §2.3).
pub const VERTEX_OAUTH_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// The SigV4 service name Bedrock's InvokeModel is signed for (the host says
/// `bedrock-runtime`, the signature `bedrock`: docs/platforms.md §1.3).
pub const BEDROCK_SIGNING_SERVICE: &str = "bedrock";

/// The content type of Bedrock's streamed answers, the AWS event stream
/// (docs/platforms.md §1.4).
pub const EVENT_STREAM_CONTENT_TYPE: &str = "application/vnd.amazon.eventstream";

/// Bedrock's cross-region inference profile prefixes (docs/platforms.md §1.6), longest
/// first where one is a prefix of another (`us-gov.` before `us.`).
pub const BEDROCK_REGION_PREFIXES: [&str; 7] =
    ["global.", "us-gov.", "us.", "eu.", "apac.", "jp.", "au."];

/// The cross-region inference profile (its prefix, without the dot) a Bedrock client in
/// `region` names a model by, by the region's geography: `us-gov-…` → `us-gov`, `us-…` →
/// `us`, `eu-…` → `eu`, `ap-…` → `apac`, any other → `global`. Bedrock serves the newer
/// models on demand only through a profile: a base id is refused with "on-demand throughput
/// isn't supported" (docs/platforms.md §1.5, §1.6).
///
/// ```
/// use threadline_wire::platform::bedrock_profile_prefix;
/// assert_eq!(bedrock_profile_prefix("eu-central-1"), "eu");
/// assert_eq!(bedrock_profile_prefix("us-gov-west-1"), "us-gov");
/// assert_eq!(bedrock_profile_prefix("sa-east-1"), "global");
/// ```
pub fn bedrock_profile_prefix(region: &str) -> &'static str {
    [
        ("us-gov-", "us-gov"),
        ("us-", "us"),
        ("eu-", "eu"),
        ("ap-", "apac"),
    ]
    .into_iter()
    .find_map(|(start, prefix)| region.starts_with(start).then_some(prefix))
    .unwrap_or("global")
}

/// Whether `prefix` (without the dot) is one of [`BEDROCK_REGION_PREFIXES`].
pub fn is_bedrock_profile_prefix(prefix: &str) -> bool {
    BEDROCK_REGION_PREFIXES
        .iter()
        .any(|p| p.strip_suffix('.') == Some(prefix))
}

/// A name that is not one of the platforms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown platform `{0}` (expected anthropic, bedrock, vertex or foundry)")]
pub struct UnknownPlatform(pub String);

impl Platform {
    /// Every platform.
    pub const ALL: [Platform; 4] = [
        Platform::Anthropic,
        Platform::Bedrock,
        Platform::Vertex,
        Platform::Foundry,
    ];

    /// The platform's name in configuration, errors and logs: `anthropic`, `bedrock`,
    /// `vertex`, `foundry`.
    pub fn key(self) -> &'static str {
        match self {
            Platform::Anthropic => "anthropic",
            Platform::Bedrock => "bedrock",
            Platform::Vertex => "vertex",
            Platform::Foundry => "foundry",
        }
    }

    /// The platform's name as its users write it (`Amazon Bedrock`, …), for messages.
    pub fn display_name(self) -> &'static str {
        match self {
            Platform::Anthropic => "the Claude API",
            Platform::Bedrock => "Amazon Bedrock",
            Platform::Vertex => "Vertex AI",
            Platform::Foundry => "Microsoft Foundry",
        }
    }

    /// The API's model id a platform's model id writes, when it is written the platform's
    /// way: a Bedrock id loses its cross-region prefix (`us.`, `eu.`, `global.`, …), the
    /// `anthropic.` namespace and its version suffix (`-v1:0`, `-v1`); a Vertex id writes
    /// its date after an `@` (`claude-sonnet-4-5@20250929`). `None` for an id not written
    /// that way (an inference profile ARN, a bare API id), and on the Claude API and
    /// Foundry, whose ids are the API's.
    pub fn base_model_id(self, id: &str) -> Option<String> {
        match self {
            Platform::Anthropic | Platform::Foundry => None,
            Platform::Bedrock => bedrock_base_id(id),
            Platform::Vertex => {
                let (name, date) = id.split_once('@')?;
                (!name.is_empty() && !date.is_empty()).then(|| format!("{name}-{date}"))
            }
        }
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

impl std::str::FromStr for Platform {
    type Err = UnknownPlatform;

    fn from_str(name: &str) -> Result<Platform, UnknownPlatform> {
        Platform::ALL
            .into_iter()
            .find(|p| p.key() == name)
            .ok_or_else(|| UnknownPlatform(name.to_owned()))
    }
}

/// A Bedrock id without its cross-region prefix.
pub(crate) fn without_region_prefix(id: &str) -> &str {
    BEDROCK_REGION_PREFIXES
        .iter()
        .find_map(|p| id.strip_prefix(p))
        .unwrap_or(id)
}

fn bedrock_base_id(id: &str) -> Option<String> {
    let bare = without_region_prefix(id).strip_prefix("anthropic.")?;
    // `:0`, the revision after the version.
    let without_revision = match bare.rsplit_once(':') {
        Some((head, revision)) if revision.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => bare,
    };
    // `-v1`, `-v2`: the version.
    let base = match without_revision.rsplit_once("-v") {
        Some((head, version))
            if !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit()) =>
        {
            head
        }
        _ => without_revision,
    };
    (!base.is_empty()).then(|| base.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for platform in Platform::ALL {
            assert_eq!(platform.key().parse::<Platform>(), Ok(platform));
            assert_eq!(platform.to_string(), platform.key());
            let json = serde_json::to_string(&platform).expect("serializes");
            assert_eq!(json, format!("\"{}\"", platform.key()));
        }
        assert_eq!(
            "Bedrock".parse::<Platform>(),
            Err(UnknownPlatform("Bedrock".to_owned()))
        );
    }

    #[test]
    fn bedrock_ids_lose_their_decorations() {
        let base = |id: &str| Platform::Bedrock.base_model_id(id);
        for (id, expected) in [
            (
                "anthropic.claude-sonnet-4-5-20250929-v1:0",
                "claude-sonnet-4-5-20250929",
            ),
            (
                "us.anthropic.claude-haiku-4-5-20251001-v1:0",
                "claude-haiku-4-5-20251001",
            ),
            ("global.anthropic.claude-opus-4-6-v1", "claude-opus-4-6"),
            ("us-gov.anthropic.claude-sonnet-4-6", "claude-sonnet-4-6"),
            ("us.anthropic.claude-opus-4-8", "claude-opus-4-8"),
            ("anthropic.claude-v2", "claude"),
        ] {
            assert_eq!(base(id).as_deref(), Some(expected), "{id}");
        }
        for not_bedrock in [
            "claude-sonnet-4-6",
            "arn:aws:bedrock:us-east-2:123456789012:application-inference-profile/x",
            "anthropic.",
            "us.",
            "",
        ] {
            assert_eq!(base(not_bedrock), None, "{not_bedrock}");
        }
        // Never on the platforms whose ids are the API's.
        assert_eq!(
            Platform::Foundry.base_model_id("anthropic.claude-sonnet-4-6"),
            None
        );
        assert_eq!(Platform::Anthropic.base_model_id("a@b"), None);
        assert_eq!(Platform::Vertex.base_model_id("claude@"), None);
    }

    #[test]
    fn profile_prefixes_follow_the_region_and_are_the_known_ones() {
        for (region, prefix) in [
            ("us-east-1", "us"),
            ("us-gov-east-1", "us-gov"),
            ("eu-west-3", "eu"),
            ("ap-northeast-1", "apac"),
            ("ca-central-1", "global"),
            ("", "global"),
        ] {
            assert_eq!(bedrock_profile_prefix(region), prefix, "{region}");
            assert!(is_bedrock_profile_prefix(prefix));
        }
        for not_one in ["us.", "mars", "", "US"] {
            assert!(!is_bedrock_profile_prefix(not_one), "{not_one}");
        }
    }
}
