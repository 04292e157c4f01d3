//! Credentials that never print: [`ApiKey`] and [`Auth`].
//!
//! The key is kept only as a sensitive [`http::HeaderValue`] (hyper's HPACK encoder never
//! indexes it) and every formatting of it prints `[redacted]`.
//!
//! A server can still echo the key back (a 401 saying `invalid x-api-key: <the key>`), so
//! every error the client builds from a response, a header or a transport failure goes
//! through the client's [`Redactor`] before it is logged or returned: the exact key (and its
//! percent-encoded form) becomes `[redacted]`, and anything shaped like an Anthropic key
//! (`sk-ant-…`) becomes `sk-ant-…[redacted]` ([`threadline_wire::secret`]).

use std::borrow::Cow;
use std::fmt;

use http::HeaderValue;
use threadline_wire::secret::{Redact, percent_encoded, redact_exact, redact_key_shapes};
use threadline_wire::service::ServiceError;

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
#[non_exhaustive]
pub struct InvalidApiKey;

impl ApiKey {
    /// A key from its text (surrounding whitespace is trimmed).
    pub fn new(key: &str) -> Result<Self, InvalidApiKey> {
        let mut value = HeaderValue::from_str(key.trim()).map_err(|_| InvalidApiKey)?;
        value.set_sensitive(true);
        Ok(ApiKey(value))
    }

    /// The key from the environment variable `name` (usually `ANTHROPIC_API_KEY`):
    /// `Ok(None)` when it is unset or blank, an error when it is set to what cannot be a key
    /// (not UTF-8, or a character an HTTP header cannot carry).
    ///
    /// ```
    /// use threadline_client::ApiKey;
    /// assert_eq!(ApiKey::from_env("THREADLINE_DOC_SURELY_UNSET"), Ok(None));
    /// ```
    pub fn from_env(name: &str) -> Result<Option<Self>, InvalidApiKey> {
        match std::env::var(name) {
            Ok(value) if value.trim().is_empty() => Ok(None),
            Ok(value) => ApiKey::new(&value).map(Some),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(InvalidApiKey),
        }
    }

    /// The key's own bytes (for the bearer token too: the token, not the header).
    fn secret_bytes(&self) -> &[u8] {
        self.0.as_bytes()
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

/// Removes the client's credential, and any key-shaped secret, from text the client emits.
/// The credential stays a sensitive header value here too; `Debug` prints only a count.
#[derive(Clone, Default)]
pub(crate) struct Redactor {
    secrets: Vec<HeaderValue>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

impl Redactor {
    /// The redactor for a client authenticating with `auth`.
    pub(crate) fn for_auth(auth: &Auth) -> Self {
        let key = match auth {
            Auth::ApiKey(key) | Auth::Bearer(key) => key,
            Auth::None => return Redactor::default(),
        };
        let mut secrets = vec![key.0.clone()];
        if let Some(encoded) = percent_encoded(key.secret_bytes())
            && let Ok(mut value) = HeaderValue::from_str(&encoded)
        {
            value.set_sensitive(true);
            secrets.push(value);
        }
        Redactor { secrets }
    }

    /// `error` with the credential and every key-shaped secret removed from all its texts.
    pub(crate) fn error(&self, error: ServiceError) -> ServiceError {
        error.redacted(self)
    }
}

impl Redact for Redactor {
    fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.secrets {
            let replaced = match redact_exact(&out, secret.as_bytes()) {
                Cow::Owned(replaced) => Some(replaced),
                Cow::Borrowed(_) => None,
            };
            if let Some(replaced) = replaced {
                out = Cow::Owned(replaced);
            }
        }
        let replaced = match redact_key_shapes(&out) {
            Cow::Owned(replaced) => Some(replaced),
            Cow::Borrowed(_) => None,
        };
        if let Some(replaced) = replaced {
            out = Cow::Owned(replaced);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_redactor_removes_the_key_its_encoding_and_key_shapes() {
        let key = ApiKey::new("proxy/token+0123456789").expect("a key");
        let redactor = Redactor::for_auth(&Auth::Bearer(key));
        assert_eq!(
            redactor.redact(
                "a proxy/token+0123456789 b proxy%2Ftoken%2B0123456789 c sk-ant-api03-abcdefgh"
            ),
            "a [redacted] b [redacted] c sk-ant-…[redacted]"
        );
        assert!(matches!(redactor.redact("clean"), Cow::Borrowed(_)));
        assert_eq!(format!("{redactor:?}"), "Redactor { secrets: 2 }");
        assert_eq!(
            Redactor::for_auth(&Auth::None).redact("sk-ant-api03-abcdefgh"),
            "sk-ant-…[redacted]"
        );
    }
}
