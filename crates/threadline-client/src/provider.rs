//! Which platform the client speaks to: the Claude API, Amazon Bedrock, Google Vertex AI or
//! Microsoft Foundry. The message array is the same everywhere; a [`Provider`] says what
//! differs — the path, the body's platform fields, the credential and how a stream is framed
//! (docs/api-notes.md#cloud-platforms, from docs/platforms.md).
//!
//! | provider | path | body | credential | stream |
//! |---|---|---|---|---|
//! | [`Anthropic`](Provider::Anthropic) | `/v1/messages` | as is | [`Auth::ApiKey`] (`x-api-key`) or [`Auth::Bearer`] | SSE |
//! | [`Bedrock`](Provider::Bedrock) | `/model/{id}/invoke-with-response-stream` | no `model`, no `stream`; `anthropic_version: "bedrock-2023-05-31"`; the betas as `anthropic_beta` | [`Auth::Aws`] (SigV4, service `bedrock`) or [`Auth::Bearer`] (a Bedrock API key) | the AWS event stream |
//! | [`Vertex`](Provider::Vertex) | `/projects/{p}/locations/{r}/publishers/anthropic/models/{id}:streamRawPredict` under the base's `/v1` | no `model`; `anthropic_version: "vertex-2023-10-16"` | [`Auth::Bearer`] (a Google OAuth access token) | SSE |
//! | [`Foundry`](Provider::Foundry) | `/v1/messages` under `https://{resource}.services.ai.azure.com/anthropic` | as is | [`Auth::ApiKey`] (sent as `api-key`) or [`Auth::Bearer`] (Entra ID) | SSE |
//!
//! ```
//! use threadline_client::{Auth, AwsCredentials, Client, ClientConfig, Provider};
//!
//! let provider = Provider::bedrock("us-east-1");
//! assert_eq!(
//!     provider.default_base_url().as_deref(),
//!     Some("https://bedrock-runtime.us-east-1.amazonaws.com")
//! );
//! let credentials = AwsCredentials::new("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG", None)?;
//! let config = ClientConfig::new(provider.default_base_url().unwrap_or_default(), Auth::Aws(credentials))
//!     .with_provider(provider);
//! let client = Client::new(config)?;
//! assert_eq!(client.config().provider.name(), "bedrock");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(feature = "aws-credential-chain")]
mod aws_chain;
mod env;
mod errors;
pub mod event_stream;
#[cfg(feature = "google-adc")]
mod google_adc;
mod rewrite;
mod sigv4;

#[cfg(feature = "aws-credential-chain")]
pub use aws_chain::AwsCredentialChain;
pub use env::{
    PLACEHOLDER_CREDENTIAL, PlatformEnvError, PlatformSettings, platform_from_env,
    platform_from_vars, platform_name_from_env, platform_name_from_vars,
};
pub(crate) use errors::platform_error;
pub(crate) use event_stream::EVENT_STREAM_CONTENT_TYPE;
pub use event_stream::{EventStreamError, EventStreamToSse};
#[cfg(feature = "google-adc")]
pub use google_adc::GoogleCredentials;
pub(crate) use sigv4::sign;

pub use threadline_wire::platform::{
    BEDROCK_ANTHROPIC_VERSION, BEDROCK_SIGNING_SERVICE, Platform, VERTEX_ANTHROPIC_VERSION,
};

use crate::secret::Auth;

/// The platform requests go to. See the [module documentation](self).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Provider {
    /// The Claude API (`api.anthropic.com` or anything that speaks it).
    #[default]
    Anthropic,
    /// Amazon Bedrock's InvokeModel in `region` (the SigV4 scope).
    Bedrock {
        /// The AWS region (`us-east-1`, …).
        region: String,
    },
    /// Google Vertex AI for `project` in `region` (`global`, `us`, `eu`, `us-east5`, …).
    Vertex {
        /// The Google Cloud project id.
        project: String,
        /// The Vertex region.
        region: String,
    },
    /// Microsoft Foundry: the Claude API under a Foundry resource's `/anthropic`.
    Foundry,
}

impl Provider {
    /// Amazon Bedrock in `region`.
    pub fn bedrock(region: impl Into<String>) -> Provider {
        Provider::Bedrock {
            region: region.into(),
        }
    }

    /// Google Vertex AI for `project` in `region`.
    pub fn vertex(project: impl Into<String>, region: impl Into<String>) -> Provider {
        Provider::Vertex {
            project: project.into(),
            region: region.into(),
        }
    }

    /// The platform (what the model table and the validator know it by:
    /// `ModelTable::on_platform`).
    pub fn platform(&self) -> Platform {
        match self {
            Provider::Anthropic => Platform::Anthropic,
            Provider::Bedrock { .. } => Platform::Bedrock,
            Provider::Vertex { .. } => Platform::Vertex,
            Provider::Foundry => Platform::Foundry,
        }
    }

    /// The platform's name in errors and logs: `anthropic`, `bedrock`, `vertex`, `foundry`.
    pub fn name(&self) -> &'static str {
        self.platform().key()
    }

    /// The platform's name as its users write it (`Amazon Bedrock`, …), for messages.
    pub fn display_name(&self) -> &'static str {
        self.platform().display_name()
    }

    /// The platform's public base URL, when the provider alone says it (Foundry's depends on
    /// the resource: [`Provider::foundry_base_url`]). Vertex's follows the official SDKs:
    /// `global` → `https://aiplatform.googleapis.com/v1`, `us` and `eu` → their multi-region
    /// hosts, any other region `R` → `https://R-aiplatform.googleapis.com/v1`.
    pub fn default_base_url(&self) -> Option<String> {
        match self {
            Provider::Anthropic => Some(threadline_wire::defaults::DEFAULT_BASE_URL.to_owned()),
            Provider::Bedrock { region } => {
                Some(format!("https://bedrock-runtime.{region}.amazonaws.com"))
            }
            Provider::Vertex { region, .. } => Some(match region.as_str() {
                "global" => "https://aiplatform.googleapis.com/v1".to_owned(),
                "us" | "eu" => format!("https://aiplatform.{region}.rep.googleapis.com/v1"),
                other => format!("https://{other}-aiplatform.googleapis.com/v1"),
            }),
            Provider::Foundry => None,
        }
    }

    /// A Foundry resource's base URL.
    pub fn foundry_base_url(resource: &str) -> String {
        format!("https://{resource}.services.ai.azure.com/anthropic")
    }

    /// Whether `auth` is a credential this platform takes (SigV4 only on Bedrock).
    pub(crate) fn takes(&self, auth: &Auth) -> bool {
        let sigv4 = match auth {
            Auth::Aws(_) => true,
            #[cfg(feature = "aws-credential-chain")]
            Auth::AwsChain(_) => true,
            _ => false,
        };
        !sigv4 || matches!(self, Provider::Bedrock { .. })
    }

    /// Whether the betas travel in the `anthropic-beta` header (else in the body).
    pub(crate) fn betas_in_header(&self) -> bool {
        !matches!(self, Provider::Bedrock { .. })
    }

    /// Whether `anthropic-version` travels as a header (else in the body).
    pub(crate) fn version_in_header(&self) -> bool {
        matches!(self, Provider::Anthropic | Provider::Foundry)
    }

    /// The path of a streamed messages request for `model`, after the base URL.
    pub(crate) fn messages_path(&self, model: &str) -> String {
        match self {
            Provider::Anthropic | Provider::Foundry => "/v1/messages".to_owned(),
            Provider::Bedrock { .. } => {
                format!("/model/{}/invoke-with-response-stream", path_segment(model))
            }
            Provider::Vertex { project, region } => format!(
                "/projects/{}/locations/{}/publishers/anthropic/models/{}:streamRawPredict",
                path_segment(project),
                path_segment(region),
                path_segment(model)
            ),
        }
    }

    /// The path of a token count, if the platform offers one.
    pub(crate) fn count_tokens_path(&self) -> Option<String> {
        match self {
            Provider::Anthropic | Provider::Foundry => Some("/v1/messages/count_tokens".to_owned()),
            // InvokeModel has no token count (AWS's own `count-tokens` operation takes another
            // body); the official SDKs refuse it too (docs/platforms.md §1.1).
            Provider::Bedrock { .. } => None,
            Provider::Vertex { project, region } => Some(format!(
                "/projects/{}/locations/{}/publishers/anthropic/models/count-tokens:rawPredict",
                path_segment(project),
                path_segment(region)
            )),
        }
    }

    /// The base URL as the client joins paths to it: a Vertex base with no path gets the
    /// API's `/v1` (the official SDKs' bases end with it; a mock's address may not).
    pub(crate) fn base<'b>(&self, base_url: &'b str) -> std::borrow::Cow<'b, str> {
        let trimmed = base_url.trim_end_matches('/');
        let has_path = trimmed
            .split_once("://")
            .is_some_and(|(_, rest)| rest.contains('/'));
        match self {
            Provider::Vertex { .. } if !has_path => format!("{trimmed}/v1").into(),
            _ => trimmed.into(),
        }
    }

    /// The body this platform takes for the API's `body` (compact JSON, as serialized):
    /// Bedrock's without `model` and `stream` and with `anthropic_version` and the betas;
    /// Vertex's without `model` (a token count keeps it) and with `anthropic_version`.
    pub(crate) fn body(
        &self,
        body: bytes::Bytes,
        betas: Option<&str>,
        count_tokens: bool,
    ) -> Result<bytes::Bytes, serde_json::Error> {
        match self {
            Provider::Anthropic | Provider::Foundry => Ok(body),
            Provider::Bedrock { .. } => {
                let version = serde_json::to_vec(BEDROCK_ANTHROPIC_VERSION)?;
                let mut added = vec![("anthropic_version", version)];
                if let Some(betas) = betas.filter(|b| !b.is_empty()) {
                    let list: Vec<&str> = betas.split(',').map(str::trim).collect();
                    added.push(("anthropic_beta", serde_json::to_vec(&list)?));
                }
                rewrite::top_level(&body, &["model", "stream"], &added).map(Into::into)
            }
            Provider::Vertex { .. } => {
                let version = serde_json::to_vec(VERTEX_ANTHROPIC_VERSION)?;
                let dropped: &[&str] = if count_tokens { &[] } else { &["model"] };
                rewrite::top_level(&body, dropped, &[("anthropic_version", version)])
                    .map(Into::into)
            }
        }
    }
}

/// `text` as one path segment: everything but the unreserved characters and `:` (which model
/// ids and ARNs use, and every platform takes raw) percent-encoded, so an ARN's `/` is `%2F`.
fn path_segment(text: &str) -> String {
    use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
    const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~')
        .remove(b':')
        .remove(b'@');
    utf8_percent_encode(text, SEGMENT).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_platform_has_its_path() {
        let model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
        assert_eq!(
            Provider::bedrock("us-east-1").messages_path(model),
            format!("/model/{model}/invoke-with-response-stream")
        );
        let arn = "arn:aws:bedrock:us-east-2:123:application-inference-profile/opus";
        assert_eq!(
            Provider::bedrock("us-east-2").messages_path(arn),
            "/model/arn:aws:bedrock:us-east-2:123:application-inference-profile%2Fopus/invoke-with-response-stream"
        );
        assert_eq!(
            Provider::vertex("p", "us-east5").messages_path("claude-sonnet-4-5@20250929"),
            "/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
        );
        assert_eq!(
            Provider::Foundry.messages_path("claude-opus-4-8"),
            "/v1/messages"
        );
        assert_eq!(Provider::bedrock("r").count_tokens_path(), None);
    }

    #[test]
    fn vertex_hosts_follow_the_region() {
        let host = |region: &str| Provider::vertex("p", region).default_base_url();
        assert_eq!(
            host("global").as_deref(),
            Some("https://aiplatform.googleapis.com/v1")
        );
        assert_eq!(
            host("eu").as_deref(),
            Some("https://aiplatform.eu.rep.googleapis.com/v1")
        );
        assert_eq!(
            host("us-east5").as_deref(),
            Some("https://us-east5-aiplatform.googleapis.com/v1")
        );
        let vertex = Provider::vertex("p", "global");
        assert_eq!(vertex.base("http://127.0.0.1:9"), "http://127.0.0.1:9/v1");
        assert_eq!(vertex.base("http://127.0.0.1:9/"), "http://127.0.0.1:9/v1");
        assert_eq!(
            vertex.base("https://gw.example/vertex/v1/"),
            "https://gw.example/vertex/v1"
        );
        assert_eq!(Provider::Anthropic.base("http://h/"), "http://h");
    }

    #[test]
    fn bodies_get_the_platforms_fields() {
        let body = bytes::Bytes::from_static(
            br#"{"model":"m","max_tokens":5,"messages":[],"stream":true}"#,
        );
        let bedrock = Provider::bedrock("r")
            .body(body.clone(), Some("a-1,b-2"), false)
            .expect("rewrites");
        assert_eq!(
            String::from_utf8(bedrock.to_vec()).expect("UTF-8"),
            r#"{"max_tokens":5,"messages":[],"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["a-1","b-2"]}"#
        );
        let vertex = Provider::vertex("p", "r")
            .body(body.clone(), Some("a-1"), false)
            .expect("rewrites");
        assert_eq!(
            String::from_utf8(vertex.to_vec()).expect("UTF-8"),
            r#"{"max_tokens":5,"messages":[],"stream":true,"anthropic_version":"vertex-2023-10-16"}"#
        );
        let count = Provider::vertex("p", "r")
            .body(
                bytes::Bytes::from_static(br#"{"model":"m","messages":[]}"#),
                None,
                true,
            )
            .expect("rewrites");
        assert_eq!(
            String::from_utf8(count.to_vec()).expect("UTF-8"),
            r#"{"model":"m","messages":[],"anthropic_version":"vertex-2023-10-16"}"#
        );
        assert_eq!(
            Provider::Foundry
                .body(body.clone(), None, false)
                .expect("as is"),
            body
        );
    }
}
