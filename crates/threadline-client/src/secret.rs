//! Credentials that never print: [`ApiKey`] and [`Auth`].
//!
//! The key is kept only as a sensitive [`http::HeaderValue`] (hyper's HPACK encoder never
//! indexes it) and every formatting of it prints `[redacted]`.

use std::fmt;

use http::HeaderValue;

/// An API key (or bearer token). `Debug` and `Display` print `[redacted]`; the value is
/// reachable only as a header value, never as a `&str`.
///
/// ```
/// use threadline_client::ApiKey;
/// let key = ApiKey::new("sk-ant-secret").expect("a valid header value");
/// assert_eq!(format!("{key:?} {key}"), "[redacted] [redacted]");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(HeaderValue);

/// The key contains a byte that cannot travel in an HTTP header (a line break, a control
/// character). The key itself is not part of the error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the API key contains a character that is not allowed in an HTTP header")]
pub struct InvalidApiKey;

impl ApiKey {
    /// A key from its text (surrounding whitespace is trimmed).
    pub fn new(key: &str) -> Result<Self, InvalidApiKey> {
        let mut value = HeaderValue::from_str(key.trim()).map_err(|_| InvalidApiKey)?;
        value.set_sensitive(true);
        Ok(ApiKey(value))
    }

    /// The key from the environment variable `name` (usually `ANTHROPIC_API_KEY`), if set.
    pub fn from_env(name: &str) -> Option<Result<Self, InvalidApiKey>> {
        let value = std::env::var(name).ok()?;
        Some(ApiKey::new(&value))
    }

    pub(crate) fn header_value(&self) -> &HeaderValue {
        &self.0
    }

    fn bearer_value(&self) -> HeaderValue {
        let mut bytes = b"Bearer ".to_vec();
        bytes.extend_from_slice(self.0.as_bytes());
        let mut value = HeaderValue::from_bytes(&bytes)
            .expect("a valid header value prefixed by ASCII is a valid header value");
        value.set_sensitive(true);
        value
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// How requests authenticate.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Auth {
    /// `x-api-key: <key>`.
    ApiKey(ApiKey),
    /// `Authorization: Bearer <token>`.
    Bearer(ApiKey),
    /// No credential (a local mock that does not check, or a proxy that adds one).
    #[default]
    None,
}

impl Auth {
    /// The header to send, if any.
    pub(crate) fn header(&self) -> Option<(http::HeaderName, HeaderValue)> {
        match self {
            Auth::ApiKey(key) => Some((
                http::HeaderName::from_static("x-api-key"),
                key.header_value().clone(),
            )),
            Auth::Bearer(token) => Some((http::header::AUTHORIZATION, token.bearer_value())),
            Auth::None => None,
        }
    }
}
