//! Vertex AI access tokens from Google's Application Default Credentials (`gcp_auth`): a
//! service account's key file (`GOOGLE_APPLICATION_CREDENTIALS`), the file `gcloud auth
//! application-default login` writes, the metadata server of a Google Cloud machine, or
//! `gcloud auth print-access-token` — the sources the Google SDKs and Claude Code read
//! (docs/platforms.md §2.3). The provider is found on first use and asked before each request
//! for a token with the `cloud-platform` scope (it caches tokens and renews them before they
//! expire); each token joins the client's redactor before it is sent.
//!
//! ```no_run
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use threadline_client::provider::GoogleCredentials;
//! use threadline_client::{Auth, Client, ClientConfig, Provider};
//!
//! let provider = Provider::vertex("my-project", "us-east5");
//! let base_url = provider.default_base_url().unwrap_or_default();
//! let config = ClientConfig::new(base_url, Auth::GoogleAdc(GoogleCredentials::standard()))
//!     .with_provider(provider);
//! let client = Client::new(config)?;
//! # drop(client);
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;

use threadline_wire::platform::VERTEX_OAUTH_SCOPE;
use threadline_wire::service::{ServiceError, ServiceErrorKind};
use tokio::sync::OnceCell;

use crate::secret::ApiKey;

/// Where a Vertex client's access tokens come from when none is given: Application Default
/// Credentials, or any `gcp_auth` token provider. Clones share one provider (and its cache).
#[derive(Clone)]
pub struct GoogleCredentials {
    provider: Arc<OnceCell<Arc<dyn gcp_auth::TokenProvider>>>,
}

impl GoogleCredentials {
    /// Application Default Credentials, found on first use.
    pub fn standard() -> GoogleCredentials {
        GoogleCredentials {
            provider: Arc::new(OnceCell::new()),
        }
    }

    /// Tokens from `provider` (a service account read from a key of the caller's own:
    /// `gcp_auth::CustomServiceAccount::from_json`, …).
    pub fn from_provider(provider: Arc<dyn gcp_auth::TokenProvider>) -> GoogleCredentials {
        GoogleCredentials {
            provider: Arc::new(OnceCell::new_with(Some(provider))),
        }
    }

    /// The access token for the next request. A failure is a retryable connection error
    /// naming the reason (as the official TypeScript SDK makes it), never a secret.
    pub(crate) async fn token(&self) -> Result<ApiKey, ServiceError> {
        let failed = |what: String| {
            ServiceError::new(
                ServiceErrorKind::Connection,
                format!("Vertex AI: no Google access token ({what})"),
            )
        };
        let provider = self
            .provider
            .get_or_try_init(gcp_auth::provider)
            .await
            .map_err(|e| failed(chain(&e)))?;
        let token = provider
            .token(&[VERTEX_OAUTH_SCOPE])
            .await
            .map_err(|e| failed(chain(&e)))?;
        ApiKey::new(token.as_str()).map_err(|_| {
            ServiceError::new(
                ServiceErrorKind::Api,
                "Vertex AI: Application Default Credentials gave a token that cannot be sent",
            )
        })
    }
}

/// An error and its sources, each once, joined by `: `.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let next = cause.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = cause.source();
    }
    text
}

impl PartialEq for GoogleCredentials {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.provider, &other.provider)
    }
}

impl Eq for GoogleCredentials {}

impl std::fmt::Debug for GoogleCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GoogleCredentials { .. }")
    }
}
