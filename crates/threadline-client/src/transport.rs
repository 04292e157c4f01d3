//! One attempt at one request: [`HttpTransport`], the innermost service of the stack.
//!
//! It sends `POST {base}/v1/messages` with `stream: true`, turns an error status into a
//! [`ServiceError`] that carries the API's envelope, `retry-after`, `x-should-retry` and the
//! request id, and otherwise waits for the first event before it answers: so every failure
//! before any event (a reset, an empty body, an `error` event first) is a failure of the call,
//! which the retry layer may resend, and every failure after it is one of the stream, which
//! nothing resends. Every error it returns or logs, and every server-sent value it records in
//! its span (request id, message id, stop reason), has passed through the client's
//! [`Redactor`]: a server that echoes the key never gets it into a log or an error.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use http::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, USER_AGENT};
use http::{Method, Request, Response};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use threadline_wire::service::{EventStream, EventStreamFuture, ServiceError, ServiceErrorKind};
use threadline_wire::telemetry as names;
use threadline_wire::{
    ApiErrorResponse, ApiErrorType, CountTokensRequest, MessagesRequest, ResponseMessage,
};
use tracing::Instrument;
use tracing::field::Empty;

use crate::config::{ClientConfig, Limits};
use crate::events::SseEventStream;
use crate::provider::Provider;
use crate::secret::{ApiKey, AwsCredentials, Redactor};
use crate::timeout::{TimeoutError, TimeoutPhase};

type Connector = HttpsConnector<HttpConnector>;

/// The service that performs one HTTP exchange per call. Cheap to clone (shared pool).
#[derive(Clone)]
pub struct HttpTransport {
    inner: Arc<Inner>,
}

struct Inner {
    http: HyperClient<Connector, Full<Bytes>>,
    /// The platform: paths, body fields, credential, framing.
    provider: Provider,
    /// The base URL paths are joined to (the provider's form of the configured one).
    base: String,
    /// Where streamed messages go, when the path does not depend on the model.
    messages_url: Option<http::Uri>,
    /// Where the SigV4 credentials come from, when requests are signed (Bedrock).
    aws: Option<AwsSource>,
    /// Where the Google access tokens come from, when asked per request (Vertex AI, ADC).
    #[cfg(feature = "google-adc")]
    google: Option<(crate::provider::GoogleCredentials, Seen<ApiKey>)>,
    headers: HeaderMap,
    /// The configured betas; each request adds the ones its body needs.
    betas: Vec<String>,
    limits: Limits,
    connect_timeout: Duration,
    /// The redactor of the credential; with a per-request source (an AWS chain, Google ADC),
    /// renewed as it gives new secrets (the last two kept, for an error quoting the previous).
    redactor: std::sync::RwLock<Redactor>,
    /// The serialized messages of the last requests, from which the next body is assembled.
    bodies: std::sync::Mutex<crate::body::BodyFragments>,
}

/// The last secrets a per-request source gave (the redactor holds them).
#[cfg(any(feature = "aws-credential-chain", feature = "google-adc"))]
type Seen<T> = std::sync::Mutex<Vec<T>>;

/// The credentials fetched for one request.
struct Fresh {
    /// SigV4 credentials to sign with.
    aws: Option<AwsCredentials>,
    /// A bearer token to send (Application Default Credentials).
    bearer: Option<ApiKey>,
}

/// Where a Bedrock client's SigV4 credentials come from.
enum AwsSource {
    /// Given once.
    Fixed(AwsCredentials),
    /// Asked of the chain before each request; the last sets it gave.
    #[cfg(feature = "aws-credential-chain")]
    Chain {
        chain: crate::provider::AwsCredentialChain,
        seen: Seen<AwsCredentials>,
    },
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("provider", &self.inner.provider)
            .field("base", &self.inner.base)
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

/// The configuration cannot make a client (an unparsable base URL, a header value that cannot
/// be sent).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The base URL is not an absolute `http` or `https` URL.
    #[error("invalid base URL `{url}`: {reason}")]
    BaseUrl {
        /// The URL as configured.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A header value (`anthropic-version`, `anthropic-beta`) contains a forbidden character.
    #[error("invalid `{header}` header value")]
    Header {
        /// The header's name.
        header: &'static str,
    },
    /// The credential is not one the platform takes (AWS SigV4 credentials anywhere but
    /// Bedrock).
    #[error("{platform} does not take {credential}")]
    Credential {
        /// The platform ([`Provider::display_name`]).
        platform: &'static str,
        /// The kind of credential.
        credential: &'static str,
    },
}

fn endpoint(base: &str, path: &str) -> Result<http::Uri, BuildError> {
    let url = format!("{}{path}", base.trim_end_matches('/'));
    let uri: http::Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| BuildError::BaseUrl {
            url: base.to_owned(),
            reason: e.to_string(),
        })?;
    match uri.scheme_str() {
        Some("http" | "https") if uri.authority().is_some() => Ok(uri),
        _ => Err(BuildError::BaseUrl {
            url: base.to_owned(),
            reason: "expected http://host[:port] or https://host[:port]".to_owned(),
        }),
    }
}

impl HttpTransport {
    /// A transport for `config`. Needs a Tokio runtime when it is called, not when built.
    pub fn new(config: &ClientConfig) -> Result<Self, BuildError> {
        let provider = config.provider.clone();
        if !provider.takes(&config.auth) {
            return Err(BuildError::Credential {
                platform: provider.display_name(),
                credential: "AWS SigV4 credentials",
            });
        }
        let base = provider.base(&config.base_url).into_owned();
        // The base checked once, whatever path each request adds.
        endpoint(&base, "/").map_err(|e| match e {
            BuildError::BaseUrl { reason, .. } => BuildError::BaseUrl {
                url: config.base_url.clone(),
                reason,
            },
            other => other,
        })?;
        let messages_url = match provider {
            Provider::Anthropic | Provider::Foundry => {
                Some(endpoint(&base, &provider.messages_path(""))?)
            }
            _ => None,
        };

        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            USER_AGENT,
            HeaderValue::from_static(concat!("threadline/", env!("CARGO_PKG_VERSION"))),
        );
        let version =
            HeaderValue::from_str(&config.api_version).map_err(|_| BuildError::Header {
                header: "anthropic-version",
            })?;
        if provider.version_in_header() {
            headers.insert(HeaderName::from_static("anthropic-version"), version);
        }
        // Checked here so a bad configured beta is a build error, not a failed call; the
        // header itself is set per request (`betas::header_value`).
        if !config.betas.is_empty() {
            HeaderValue::from_str(&config.betas.join(",")).map_err(|_| BuildError::Header {
                header: "anthropic-beta",
            })?;
        }
        if let Some((name, value)) = config.auth.header() {
            // Foundry's key header is `api-key` (docs/api-notes.md#cloud-platforms).
            let name = match (&provider, &config.auth) {
                (Provider::Foundry, crate::secret::Auth::ApiKey(_)) => {
                    HeaderName::from_static("api-key")
                }
                _ => name,
            };
            headers.insert(name, value);
        }
        let aws = match &config.auth {
            crate::secret::Auth::Aws(credentials) => Some(AwsSource::Fixed(credentials.clone())),
            #[cfg(feature = "aws-credential-chain")]
            crate::secret::Auth::AwsChain(chain) => Some(AwsSource::Chain {
                chain: chain.clone(),
                seen: Default::default(),
            }),
            _ => None,
        };
        #[cfg(feature = "google-adc")]
        let google = match &config.auth {
            crate::secret::Auth::GoogleAdc(credentials) => {
                Some((credentials.clone(), Default::default()))
            }
            _ => None,
        };

        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(config.timeouts.connect));
        http.set_nodelay(true);
        let tls = tls_config();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(http);
        let client = HyperClient::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .http2_only(config.http2_prior_knowledge)
            .build(connector);
        Ok(HttpTransport {
            inner: Arc::new(Inner {
                http: client,
                provider,
                base,
                messages_url,
                aws,
                #[cfg(feature = "google-adc")]
                google,
                headers,
                betas: config.betas.clone(),
                limits: config.limits,
                connect_timeout: config.timeouts.connect,
                redactor: std::sync::RwLock::new(Redactor::for_auth(&config.auth)),
                bodies: Default::default(),
            }),
        })
    }

    /// The HTTP request for the API's `body` at `path`: the platform's body (its fields and
    /// betas: [`Provider`]), `anthropic-beta` = the configured betas and the ones `betas` (the
    /// body's own) needs where the platform takes them as a header, signed when the platform
    /// signs. A body past [`Limits::max_request_bytes`] is not sent.
    fn request(
        &self,
        path: &str,
        body: Bytes,
        betas: Option<String>,
        count_tokens: bool,
        fresh: &Fresh,
    ) -> Result<Request<Full<Bytes>>, ServiceError> {
        let inner = &self.inner;
        let uri = match (&inner.messages_url, count_tokens) {
            (Some(url), false) => url.clone(),
            _ => endpoint(&inner.base, path).map_err(|e| {
                ServiceError::new(
                    ServiceErrorKind::Decode,
                    format!("cannot build the URL: {e}"),
                )
            })?,
        };
        let body = inner
            .provider
            .body(body, betas.as_deref(), count_tokens)
            .map_err(cannot_serialize)?;
        if body.len() > inner.limits.max_request_bytes {
            return Err(too_large(body.len(), inner.limits.max_request_bytes));
        }
        let mut request = Request::new(Full::new(Bytes::new()));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = uri;
        *request.headers_mut() = inner.headers.clone();
        // Configured betas were checked at build time and required ones are constants.
        if inner.provider.betas_in_header()
            && let Some(value) = betas.and_then(|b| HeaderValue::from_str(&b).ok())
        {
            request
                .headers_mut()
                .insert(HeaderName::from_static("anthropic-beta"), value);
        }
        if let Some(token) = &fresh.bearer {
            request
                .headers_mut()
                .insert(http::header::AUTHORIZATION, token.bearer_value());
        }
        if let (Some(aws), Provider::Bedrock { region }) = (&fresh.aws, &inner.provider) {
            crate::provider::sign(
                &mut request,
                &body,
                aws,
                region,
                crate::provider::BEDROCK_SIGNING_SERVICE,
            )
            .map_err(|e| self.redactor().error(e))?;
        }
        *request.body_mut() = Full::new(body);
        Ok(request)
    }

    /// The redactor of this client's credential (with a per-request source, the secrets it
    /// gave last).
    pub(crate) fn redactor(&self) -> Redactor {
        self.inner
            .redactor
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The credentials asked for the next request.
    async fn fresh_credentials(&self) -> Result<Fresh, ServiceError> {
        Ok(Fresh {
            aws: self.aws_credentials().await?,
            bearer: self.google_token().await?,
        })
    }

    /// Records `value` among the last two a per-request source gave: when it is new, the
    /// redactor becomes that of the `secrets` of those two.
    #[cfg(any(feature = "aws-credential-chain", feature = "google-adc"))]
    fn remember<T: Clone + PartialEq>(
        &self,
        seen: &Seen<T>,
        value: &T,
        secrets: impl Fn(&T) -> Vec<&ApiKey>,
    ) {
        let mut seen = seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.contains(value) {
            return;
        }
        seen.insert(0, value.clone());
        seen.truncate(2);
        let redactor = Redactor::for_secrets(seen.iter().flat_map(&secrets).collect());
        *self
            .inner
            .redactor
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = redactor;
    }

    /// The Google access token for the next request, when Application Default Credentials
    /// give it (each new token joins the redactor before it is sent).
    async fn google_token(&self) -> Result<Option<ApiKey>, ServiceError> {
        #[cfg(feature = "google-adc")]
        if let Some((credentials, seen)) = &self.inner.google {
            let token = credentials.token().await?;
            self.remember(seen, &token, |token| vec![token]);
            return Ok(Some(token));
        }
        Ok(None)
    }

    /// The SigV4 credentials for the next request: the fixed ones, or what the chain gives
    /// now (its secrets join the redactor before anything is sent with them).
    async fn aws_credentials(&self) -> Result<Option<AwsCredentials>, ServiceError> {
        match &self.inner.aws {
            None => Ok(None),
            Some(AwsSource::Fixed(credentials)) => Ok(Some(credentials.clone())),
            #[cfg(feature = "aws-credential-chain")]
            Some(AwsSource::Chain { chain, seen }) => {
                let credentials = chain.credentials().await?;
                self.remember(seen, &credentials, |c| c.secrets().collect());
                Ok(Some(credentials))
            }
        }
    }

    /// `POST /v1/messages/count_tokens`: the input tokens the request would count.
    pub async fn count_tokens(&self, request: &CountTokensRequest) -> Result<u64, ServiceError> {
        self.count_tokens_once(request)
            .await
            .map_err(|e| self.redactor().error(e))
    }

    async fn count_tokens_once(&self, request: &CountTokensRequest) -> Result<u64, ServiceError> {
        let provider = &self.inner.provider;
        let Some(path) = provider.count_tokens_path() else {
            let message = format!(
                "{} does not count tokens through the Messages API",
                provider.display_name()
            );
            // Refused here, not by a server: no status (and not retryable).
            return Err(ServiceError::new(ServiceErrorKind::Api, message));
        };
        let body = Bytes::from(serde_json::to_vec(request).map_err(cannot_serialize)?);
        let betas = threadline_wire::betas::count_header_value(&self.inner.betas, request);
        let fresh = self.fresh_credentials().await?;
        let http_request = self.request(&path, body, betas, true, &fresh)?;
        let response = self.send(http_request).await?;
        let status = response.status();
        let headers = response.headers().clone();
        if !status.is_success() {
            return Err(self.error_response(response).await);
        }
        let bytes = read_limited(response.into_body(), self.inner.limits.max_error_body_bytes)
            .await
            .map_err(|e| with_request_id(e, &headers))?;
        let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
            ServiceError::new(
                ServiceErrorKind::Decode,
                format!("invalid count_tokens answer: {e}"),
            )
        })?;
        value
            .get("input_tokens")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| {
                ServiceError::new(
                    ServiceErrorKind::Decode,
                    "count_tokens answer without input_tokens",
                )
            })
    }

    async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, ServiceError> {
        self.inner
            .http
            .request(request)
            .await
            .map_err(|e| self.connection_error(e))
    }

    fn connection_error(&self, error: hyper_util::client::legacy::Error) -> ServiceError {
        if error.is_connect() && caused_by_timeout(&error) {
            let timeout = TimeoutError::new(TimeoutPhase::Connect, self.inner.connect_timeout);
            return ServiceError::new(ServiceErrorKind::Timeout, timeout.to_string())
                .with_source(timeout);
        }
        // The transport's error chain may quote what the peer sent.
        let what = if error.is_connect() {
            "cannot connect"
        } else {
            "the connection failed before the response"
        };
        let detail = error_chain(&error);
        self.redactor().error(
            ServiceError::new(ServiceErrorKind::Connection, format!("{what}: {detail}"))
                .with_source(error),
        )
    }

    async fn error_response(&self, response: Response<Incoming>) -> ServiceError {
        let status = response.status();
        let headers = response.headers().clone();
        let retry_after = retry_after(&headers);
        let body = read_limited(response.into_body(), self.inner.limits.max_error_body_bytes).await;
        let provider = &self.inner.provider;
        let envelope = body
            .ok()
            .and_then(|bytes| {
                crate::provider::platform_error(provider, status.as_u16(), &headers, &bytes)
                    .or_else(|| serde_json::from_slice::<ApiErrorResponse>(&bytes).ok())
                    .or_else(|| {
                        let text = String::from_utf8_lossy(&bytes);
                        let text: String = text.chars().take(200).collect();
                        Some(ApiErrorResponse::new(
                            ApiErrorType::for_status(status.as_u16()),
                            format!("HTTP {status}: {text}"),
                        ))
                    })
            })
            .unwrap_or_else(|| {
                ApiErrorResponse::new(
                    ApiErrorType::for_status(status.as_u16()),
                    format!("HTTP {status}"),
                )
            });
        let mut error = ServiceError::from_api_response(status.as_u16(), envelope, retry_after);
        if let Some(should) = headers.get("x-should-retry").and_then(|v| v.to_str().ok()) {
            match should.trim() {
                "true" => error = error.with_should_retry(true),
                "false" => error = error.with_should_retry(false),
                _ => {}
            }
        }
        self.redactor().error(with_request_id(error, &headers))
    }

    async fn call_messages(
        self,
        mut request: MessagesRequest,
    ) -> Result<EventStream, ServiceError> {
        request.stream = Some(true);
        let betas = threadline_wire::betas::header_value(&self.inner.betas, &request);
        let body = self
            .inner
            .bodies
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .body(&mut request)
            .map_err(cannot_serialize)?;
        let span = tracing::Span::current();
        let path = self.inner.provider.messages_path(&request.model);
        let fresh = self.fresh_credentials().await?;
        let http_request = self.request(&path, body, betas, false, &fresh)?;
        let response = self.send(http_request).await?;
        let status = response.status();
        span.record(names::HTTP_RESPONSE_STATUS_CODE, i64::from(status.as_u16()));
        let redactor = &self.redactor();
        let request_id = header_str(response.headers(), "request-id")
            .or_else(|| header_str(response.headers(), "x-amzn-requestid"))
            .map(|id| threadline_wire::secret::Redact::redact(redactor, id).into_owned());
        if let Some(id) = &request_id {
            span.record(names::ANTHROPIC_REQUEST_ID, id.as_str());
        }
        if !status.is_success() {
            let error = self.error_response(response).await;
            span.record(names::ERROR_TYPE, names::error_type(&error));
            tracing::debug!(error = %error, "request failed");
            return Err(error);
        }
        let content_type = header_str(response.headers(), "content-type").unwrap_or("");
        let is_json = content_type.starts_with("application/json");
        let is_event_stream = content_type.starts_with(crate::provider::EVENT_STREAM_CONTENT_TYPE);
        let limits = self.inner.limits;
        let mut stream = if is_json {
            let bytes = read_limited(response.into_body(), clamp(limits.max_response_bytes))
                .await
                .map_err(|e| attach(redactor.error(e), request_id.as_deref()))?;
            let message: ResponseMessage = serde_json::from_slice(&bytes).map_err(|e| {
                attach(
                    ServiceError::new(
                        ServiceErrorKind::Decode,
                        format!("invalid message JSON: {e}"),
                    ),
                    request_id.as_deref(),
                )
            })?;
            SseEventStream::from_message(
                http_body_util::Empty::<Bytes>::new()
                    .map_err(never)
                    .boxed_unsync(),
                message,
                limits,
                span.clone(),
                redactor.clone(),
            )
        } else if is_event_stream {
            // The response limit counts the frames as they come: frames that carry no event
            // (skipped) never reach the SSE reader's count.
            let limit = limits.max_response_bytes;
            let raw = Limited::new(response.into_body(), clamp(limit))
                .map_err(move |e| BodyError::from_limited(e, limit));
            let frames = crate::provider::EventStreamToSse::new(raw, limits.max_event_bytes);
            SseEventStream::new(
                frames.map_err(BodyError::from_event_stream).boxed_unsync(),
                limits,
                span.clone(),
                redactor.clone(),
            )
        } else {
            SseEventStream::new(
                response.into_body().map_err(BodyError::Http).boxed_unsync(),
                limits,
                span.clone(),
                redactor.clone(),
            )
        };
        // Wait for the first event: a failure before it is the call's, and may be retried.
        let first = std::future::poll_fn(|cx| Pin::new(&mut stream).poll_next(cx)).await;
        match first {
            Some(Ok(event)) => Ok(Box::pin(FirstThen {
                first: Some(event),
                rest: stream,
                request_id,
            })),
            Some(Err(error)) => Err(attach(error, request_id.as_deref())),
            None => Err(attach(
                ServiceError::new(
                    ServiceErrorKind::Connection,
                    "the response ended before the first event",
                ),
                request_id.as_deref(),
            )),
        }
    }
}

/// A body read error, named so that the public surface never shows hyper's type.
#[derive(Debug, thiserror::Error)]
enum BodyError {
    /// The connection's.
    #[error(transparent)]
    Http(hyper::Error),
    /// A platform's framing (Bedrock's event stream) that does not read.
    #[error("{0}")]
    Framing(String),
}

impl BodyError {
    fn from_limited(error: Box<dyn std::error::Error + Send + Sync>, limit: u64) -> BodyError {
        match error.downcast::<hyper::Error>() {
            Ok(http) => BodyError::Http(*http),
            Err(_) => BodyError::Framing(format!(
                "the response body passed the limit of {limit} bytes"
            )),
        }
    }

    fn from_event_stream(error: crate::provider::EventStreamError<BodyError>) -> BodyError {
        match error {
            crate::provider::EventStreamError::Body(inner) => inner,
            other => BodyError::Framing(other.to_string()),
        }
    }
}

fn never(e: std::convert::Infallible) -> BodyError {
    match e {}
}

type BoxedBody = http_body_util::combinators::UnsyncBoxBody<Bytes, BodyError>;

/// The first event, then the rest of the stream; errors carry the request id.
struct FirstThen {
    first: Option<threadline_wire::StreamEvent>,
    rest: SseEventStream<BoxedBody>,
    request_id: Option<String>,
}

impl Stream for FirstThen {
    type Item = Result<threadline_wire::StreamEvent, ServiceError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(event) = this.first.take() {
            return Poll::Ready(Some(Ok(event)));
        }
        match Pin::new(&mut this.rest).poll_next(cx) {
            Poll::Ready(Some(Err(e))) => {
                Poll::Ready(Some(Err(attach(e, this.request_id.as_deref()))))
            }
            other => other,
        }
    }
}

fn attach(error: ServiceError, request_id: Option<&str>) -> ServiceError {
    match request_id {
        Some(id) if error.request_id().is_none() => error.with_request_id(id),
        _ => error,
    }
}

fn with_request_id(error: ServiceError, headers: &HeaderMap) -> ServiceError {
    attach(error, header_str(headers, "request-id"))
}

fn clamp(bytes: u64) -> usize {
    usize::try_from(bytes).unwrap_or(usize::MAX)
}

async fn read_limited<B>(body: B, limit: usize) -> Result<Bytes, ServiceError>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) => {
            let kind = if e.is::<http_body_util::LengthLimitError>() {
                ServiceErrorKind::Decode
            } else {
                ServiceErrorKind::Connection
            };
            Err(ServiceError::new(
                kind,
                format!("cannot read the response body: {e}"),
            ))
        }
    }
}

fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// `retry-after-ms` (milliseconds) or `retry-after` (seconds, possibly fractional). A value
/// that is negative, not a number, or a billion seconds or more is ignored, whichever header
/// carries it: the server controls it, and it must neither panic nor park the caller for ages.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        header_str(headers, name)
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|n| n.is_finite())
    };
    let secs = number("retry-after-ms")
        .map(|ms| ms / 1000.0)
        .filter(|secs| (0.0..1e9).contains(secs))
        .or_else(|| number("retry-after"))?;
    (0.0..1e9)
        .contains(&secs)
        .then(|| Duration::from_secs_f64(secs))
}

fn caused_by_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(error);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::TimedOut
        {
            return true;
        }
        source = e.source();
    }
    false
}

fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

fn tls_config() -> rustls::ClientConfig {
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("the ring provider supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

impl tower_service::Service<MessagesRequest> for HttpTransport {
    type Response = EventStream;
    type Error = ServiceError;
    type Future = EventStreamFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ServiceError>> {
        // The connection pool queues: the transport is always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: MessagesRequest) -> Self::Future {
        // The HTTP exchange. Its attributes carry the GenAI names, so a user of the client
        // alone sees the model and usage; the GenAI inference span (`chat`, with
        // `gen_ai.operation.name`) is the loop's, whose child this span is.
        let span = tracing::info_span!(
            names::SPAN_HTTP_MESSAGES,
            { names::OTEL_KIND } = "client",
            { names::GEN_AI_PROVIDER_NAME } = names::PROVIDER_ANTHROPIC,
            { names::GEN_AI_REQUEST_MODEL } = request.model.as_str(),
            { names::HTTP_RESPONSE_STATUS_CODE } = Empty,
            { names::ANTHROPIC_REQUEST_ID } = Empty,
            { names::GEN_AI_RESPONSE_ID } = Empty,
            { names::GEN_AI_RESPONSE_FINISH_REASONS } = Empty,
            { names::GEN_AI_USAGE_INPUT_TOKENS } = Empty,
            { names::GEN_AI_USAGE_OUTPUT_TOKENS } = Empty,
            { names::GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS } = Empty,
            { names::GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS } = Empty,
            { names::ERROR_TYPE } = Empty,
        );
        let this = self.clone();
        Box::pin(
            async move {
                let redactor = this.redactor();
                // Every path already redacts; this is the guard for any path added later.
                this.call_messages(request)
                    .await
                    .map_err(|e| redactor.error(e))
            }
            .instrument(span),
        )
    }
}

/// The body of `POST /v1/messages` for `request`, byte for byte as the client sends it:
/// the request streamed (`stream: true`), serialized as compact JSON. What a dry run prints
/// to show the request the client would send.
///
/// ```
/// use threadline_wire::MessagesRequest;
///
/// let request = MessagesRequest::new("claude-sonnet-4-5", 1024, Vec::new());
/// let body = threadline_client::messages_body(&request).expect("serializes");
/// let text = String::from_utf8(body).expect("utf-8");
/// assert!(text.starts_with("{\"model\":\"claude-sonnet-4-5\""));
/// assert!(text.contains("\"stream\":true"));
/// ```
pub fn messages_body(request: &MessagesRequest) -> Result<Vec<u8>, ServiceError> {
    let serialize =
        |request: &MessagesRequest| serde_json::to_vec(request).map_err(cannot_serialize);
    if request.stream == Some(true) {
        serialize(request)
    } else {
        let mut streamed = request.clone();
        streamed.stream = Some(true);
        serialize(&streamed)
    }
}

/// The error for a body over `limit` bytes, not sent: the API's own answer to it (413
/// `request_too_large`), saying that it was not sent.
fn too_large(bytes: usize, limit: usize) -> ServiceError {
    ServiceError::from_api_response(
        413,
        threadline_wire::ApiErrorResponse::new(
            threadline_wire::ApiErrorType::RequestTooLarge,
            format!(
                "the request body is {bytes} bytes, over the limit of {limit} bytes (not sent)"
            ),
        ),
        None,
    )
}

/// The error for a request that does not serialize.
fn cannot_serialize(e: serde_json::Error) -> ServiceError {
    ServiceError::new(
        ServiceErrorKind::Decode,
        format!("cannot serialize the request: {e}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Auth;

    #[test]
    fn base_urls_are_checked() {
        for good in [
            "https://api.anthropic.com",
            "http://127.0.0.1:8080/",
            "https://proxy.example/anthropic",
        ] {
            let config = ClientConfig::new(good, Auth::None);
            assert!(HttpTransport::new(&config).is_ok(), "{good}");
        }
        let config = ClientConfig::new("https://proxy.example/anthropic/", Auth::None);
        let transport = HttpTransport::new(&config).expect("valid");
        assert_eq!(
            transport
                .inner
                .messages_url
                .as_ref()
                .map(ToString::to_string)
                .as_deref(),
            Some("https://proxy.example/anthropic/v1/messages")
        );
        assert_eq!(transport.inner.base, "https://proxy.example/anthropic");
        for bad in ["api.anthropic.com", "ftp://host", "not a url", ""] {
            let config = ClientConfig::new(bad, Auth::None);
            assert!(
                matches!(HttpTransport::new(&config), Err(BuildError::BaseUrl { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn retry_after_headers() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("2.5"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(2500)));
        headers.insert("retry-after-ms", HeaderValue::from_static("120"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(120)));
        headers.clear();
        headers.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("-1"));
        assert_eq!(retry_after(&headers), None);
        // Too large for a `Duration`, or merely absurd: ignored, never a panic.
        for huge in ["1e30", "1e300", "1e12"] {
            headers.clear();
            headers.insert("retry-after-ms", HeaderValue::from_static(huge));
            assert_eq!(retry_after(&headers), None, "retry-after-ms: {huge}");
            headers.insert("retry-after", HeaderValue::from_static(huge));
            assert_eq!(retry_after(&headers), None, "retry-after: {huge}");
        }
        // An unusable `retry-after-ms` leaves `retry-after` to speak.
        headers.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
    }
}
