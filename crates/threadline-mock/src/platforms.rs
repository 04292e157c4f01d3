//! The cloud platforms' fronts: the same Messages API reached through Amazon Bedrock, Google
//! Vertex AI or Microsoft Foundry, each with its own paths, authentication, body fields and
//! framing (docs/platforms.md).
//!
//! A front admits a request the way its platform does — the platform's credential checked
//! (a SigV4 signature computed again from the test credentials, a bearer token, an api key),
//! the platform's body fields required and the canonical ones it does not take refused, in the
//! platform's words — and turns it into the canonical request the rest of the mock checks and
//! answers. The answer goes back in the platform's shape: Bedrock's errors as AWS errors and
//! its streams as the AWS event stream, Vertex's authentication and model errors in Google's
//! envelope.
//!
//! | front | paths | credential | body |
//! |---|---|---|---|
//! | Claude API | `/v1/messages`, `/v1/messages/count_tokens` | `x-api-key` or a bearer | as is |
//! | Bedrock | `/model/{id}/invoke`, `/model/{id}/invoke-with-response-stream` | SigV4 (service `bedrock`) or a bearer | `anthropic_version: "bedrock-2023-05-31"`, no `model` or `stream`, betas in `anthropic_beta` |
//! | Vertex AI | `/v1/projects/{p}/locations/{r}/publishers/anthropic/models/{m}:rawPredict` / `:streamRawPredict` | a bearer | `anthropic_version: "vertex-2023-10-16"`, the model from the path |
//! | Foundry | `/anthropic/v1/messages`, `/anthropic/v1/messages/count_tokens` | `api-key`, `x-api-key` or a bearer | as is |

pub(crate) mod bedrock;
pub(crate) mod event_stream;
pub(crate) mod google_oauth;
pub(crate) mod sigv4;
pub(crate) mod vertex;

use http::request::Parts;
use threadline_wire::ApiErrorType;
use threadline_wire::model::ModelTable;
use threadline_wire::platform::Platform;

use crate::server::MockBody;

/// The AWS access key id the mock accepts by default (with [`MOCK_AWS_SECRET_ACCESS_KEY`]).
/// Test credentials only: they sign requests to the mock, nothing else.
pub const MOCK_AWS_ACCESS_KEY_ID: &str = "AKIDTHREADLINEMOCK01";

/// The AWS secret access key the mock checks signatures with by default.
pub const MOCK_AWS_SECRET_ACCESS_KEY: &str = "threadline-mock/aws/test-secret-key/0001";

/// The credentials a mock accepts on each platform.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlatformCredentials {
    /// The AWS access key id SigV4 signatures must name.
    pub aws_access_key_id: String,
    /// The secret they must be made with.
    pub aws_secret_access_key: String,
    /// The bearer token Vertex requests must carry (`None`: any non-empty token).
    pub vertex_token: Option<String>,
    /// The key Foundry requests must carry (`None`: any non-empty key).
    pub foundry_key: Option<String>,
    /// A Google service account the token endpoint (`POST /token`) issues access tokens to;
    /// with one, Vertex requests must carry a token the mock issued (or `vertex_token`).
    pub google_service_account: Option<google_oauth::GoogleServiceAccount>,
}

impl Default for PlatformCredentials {
    fn default() -> Self {
        PlatformCredentials {
            aws_access_key_id: MOCK_AWS_ACCESS_KEY_ID.to_owned(),
            aws_secret_access_key: MOCK_AWS_SECRET_ACCESS_KEY.to_owned(),
            vertex_token: None,
            foundry_key: None,
            google_service_account: None,
        }
    }
}

impl std::fmt::Debug for PlatformCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlatformCredentials")
            .field("aws_access_key_id", &self.aws_access_key_id)
            .finish_non_exhaustive()
    }
}

impl PlatformCredentials {
    /// These credentials with another AWS key pair.
    pub fn with_aws(mut self, access_key_id: &str, secret_access_key: &str) -> Self {
        access_key_id.clone_into(&mut self.aws_access_key_id);
        secret_access_key.clone_into(&mut self.aws_secret_access_key);
        self
    }

    /// These credentials requiring this Vertex bearer token.
    pub fn with_vertex_token(mut self, token: &str) -> Self {
        self.vertex_token = Some(token.to_owned());
        self
    }

    /// These credentials with Google's token endpoint for `account` (Application Default
    /// Credentials from its key file), Vertex then taking only the tokens it issued.
    pub fn with_google_service_account(
        mut self,
        account: google_oauth::GoogleServiceAccount,
    ) -> Self {
        self.google_service_account = Some(account);
        self
    }

    /// These credentials requiring this Foundry key.
    pub fn with_foundry_key(mut self, key: &str) -> Self {
        self.foundry_key = Some(key.to_owned());
        self
    }
}

/// Which platform a request came in through, from its method and path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Front {
    /// The Claude API.
    Anthropic { count_tokens: bool },
    /// Microsoft Foundry: the Claude API under `/anthropic`, its own key header.
    Foundry { count_tokens: bool },
    /// Bedrock's InvokeModel: the model id (percent-decoded) and whether the stream endpoint.
    Bedrock { model: String, stream: bool },
    /// Vertex AI's rawPredict: the project, region and model, and the method.
    Vertex(vertex::Target),
    /// Google's OAuth token endpoint (`POST /token`), for a service account's JWT grant.
    GoogleToken,
}

impl Front {
    /// The front serving `method` on `path` (as sent, percent-encoded), if any.
    pub(crate) fn of(method: &str, path: &str) -> Option<Front> {
        if method != "POST" {
            return None;
        }
        match path {
            "/v1/messages" => Some(Front::Anthropic {
                count_tokens: false,
            }),
            "/v1/messages/count_tokens" => Some(Front::Anthropic { count_tokens: true }),
            "/anthropic/v1/messages" => Some(Front::Foundry {
                count_tokens: false,
            }),
            "/anthropic/v1/messages/count_tokens" => Some(Front::Foundry { count_tokens: true }),
            "/token" => Some(Front::GoogleToken),
            _ => bedrock::route(path)
                .map(|(model, stream)| Front::Bedrock { model, stream })
                .or_else(|| vertex::route(path).map(Front::Vertex)),
        }
    }

    /// The platform the front serves.
    pub(crate) fn platform(&self) -> Platform {
        match self {
            Front::Anthropic { .. } => Platform::Anthropic,
            Front::Foundry { .. } => Platform::Foundry,
            Front::Bedrock { .. } => Platform::Bedrock,
            Front::Vertex(_) | Front::GoogleToken => Platform::Vertex,
        }
    }
}

/// A request a front admitted, as the canonical Messages API request.
#[derive(Debug)]
pub(crate) struct Admitted {
    /// The canonical body (the platform's fields turned into the API's).
    pub(crate) body: Vec<u8>,
    /// The betas asked for (the `anthropic-beta` header's value, or Bedrock's body list).
    pub(crate) beta: String,
    /// Whether this is a token count.
    pub(crate) count_tokens: bool,
}

/// A front's refusal: the response in the platform's shape, and its message for the log.
pub(crate) struct Refusal {
    pub(crate) response: Box<http::Response<MockBody>>,
    pub(crate) message: String,
}

impl Front {
    /// Admits the request or refuses it as the platform would; `models` is the table as the
    /// platform offers it (`ModelTable::on_platform`), which names the platform's model ids.
    pub(crate) fn admit(
        &self,
        (credentials, issued): (&PlatformCredentials, &dyn Fn(&str) -> bool),
        models: &ModelTable,
        parts: &Parts,
        body: &[u8],
        request_id: &str,
    ) -> Result<Admitted, Refusal> {
        let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
        let anthropic = |count_tokens: bool, has_key: bool, missing: &str| {
            if !has_key {
                return Err(anthropic_refusal(
                    ApiErrorType::Authentication,
                    missing,
                    request_id,
                ));
            }
            if header("anthropic-version").is_none() {
                return Err(anthropic_refusal(
                    ApiErrorType::InvalidRequest,
                    "anthropic-version: header is required",
                    request_id,
                ));
            }
            Ok(Admitted {
                body: body.to_vec(),
                beta: header("anthropic-beta").unwrap_or("").to_owned(),
                count_tokens,
            })
        };
        let bearer = header("authorization").and_then(|a| a.strip_prefix("Bearer "));
        match self {
            Front::Anthropic { count_tokens } => {
                let has_key = header("x-api-key").is_some_and(|k| !k.is_empty())
                    || bearer.is_some_and(|t| !t.is_empty());
                anthropic(*count_tokens, has_key, "x-api-key header is required")
            }
            Front::Foundry { count_tokens } => {
                let offered = [header("api-key"), header("x-api-key"), bearer];
                let has_key = match &credentials.foundry_key {
                    Some(key) => offered.iter().flatten().any(|k| k == key),
                    None => offered.iter().flatten().any(|k| !k.is_empty()),
                };
                // Foundry's words for a missing or wrong key (docs/platforms.md §3.3).
                anthropic(*count_tokens, has_key, "Invalid API key")
            }
            Front::Bedrock { model, stream } => {
                bedrock::admit(credentials, models, parts, body, model, *stream, request_id)
            }
            Front::Vertex(target) => {
                let beta = header("anthropic-beta").unwrap_or("");
                let authenticated = match (&credentials.vertex_token, bearer) {
                    (_, None) => false,
                    (Some(expected), Some(token)) => token == expected || issued(token),
                    (None, Some(token)) if credentials.google_service_account.is_some() => {
                        issued(token)
                    }
                    (None, Some(token)) => !token.is_empty(),
                };
                vertex::admit(models, target, (authenticated, beta), body, request_id)
            }
            // Answered before admission (`server::token_answer`).
            Front::GoogleToken => Err(anthropic_refusal(
                ApiErrorType::NotFound,
                "Not Found",
                request_id,
            )),
        }
    }

    /// The answer to an admitted request, in the platform's shape.
    pub(crate) async fn respond(
        &self,
        response: http::Response<MockBody>,
        request_id: &str,
    ) -> http::Response<MockBody> {
        match self {
            Front::Anthropic { .. }
            | Front::Foundry { .. }
            | Front::Vertex(_)
            | Front::GoogleToken => response,
            Front::Bedrock { .. } => bedrock::respond(response, request_id).await,
        }
    }
}

/// The Claude API's error envelope as a refusal.
fn anthropic_refusal(kind: ApiErrorType, message: &str, request_id: &str) -> Refusal {
    Refusal {
        response: Box::new(crate::server::api_error(kind, message, request_id)),
        message: message.to_owned(),
    }
}

/// Whether a body's `anthropic_version` is one the platform takes: its own dated name
/// (`bedrock-2023-05-31`, `vertex-2023-10-16`, which the platforms' docs give), or an API
/// version as the newest official SDKs send it there (the Python SDK 2.16.0 sends its
/// `anthropic-version`, `2026-10-21`, in the body on Bedrock and Vertex: docs/platforms.md
/// §1.2, §2.2): a date from `2023-06-01` on.
pub(crate) fn accepted_version(value: &str, platform_version: &str) -> bool {
    let dated = value.len() == 10
        && value.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        });
    value == platform_version || (dated && value >= "2023-06-01")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_platform_takes_its_own_version_or_an_api_version() {
        assert!(accepted_version("bedrock-2023-05-31", "bedrock-2023-05-31"));
        assert!(accepted_version("2026-10-21", "bedrock-2023-05-31"));
        assert!(accepted_version("2023-06-01", "vertex-2023-10-16"));
        for refused in ["vertex-2023-10-16", "2023-01-01", "2026-1-21", "latest", ""] {
            assert!(
                !accepted_version(refused, "bedrock-2023-05-31"),
                "{refused}"
            );
        }
    }
}
