//! Bedrock credentials from the standard AWS credential chain (`aws-config`): the
//! environment, the shared profile files (`~/.aws/credentials`, `~/.aws/config`, `AWS_PROFILE`;
//! static keys, `credential_process`, SSO, assumed roles), web identity, the ECS container and
//! the EC2 instance role — what the AWS SDKs, the AWS CLI and Claude Code read. The chain is
//! built on first use and asked again before each request (it caches and refreshes expiring
//! credentials itself), so a session outlives its temporary credentials. Each secret it gives
//! joins the client's redactor before it is used.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use threadline_client::provider::AwsCredentialChain;
//! use threadline_client::{Auth, Client, ClientConfig, Provider};
//!
//! let provider = Provider::bedrock("us-east-1");
//! let base_url = provider.default_base_url().unwrap_or_default();
//! let config = ClientConfig::new(base_url, Auth::AwsChain(AwsCredentialChain::standard()))
//!     .with_provider(provider);
//! let client = Client::new(config)?;
//! # drop(client);
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use threadline_wire::service::{ServiceError, ServiceErrorKind};
use tokio::sync::OnceCell;

use crate::secret::AwsCredentials;

/// Where a Bedrock client's credentials come from when they are not given: the standard AWS
/// chain, or any `aws-credential-types` provider. Clones share one chain (and its cache).
#[derive(Clone)]
pub struct AwsCredentialChain {
    source: Arc<Source>,
}

struct Source {
    /// A provider given, or the standard chain once built.
    provider: OnceCell<SharedCredentialsProvider>,
}

impl AwsCredentialChain {
    /// The standard chain, as the AWS SDKs build it from the environment and the profile
    /// files (built on first use, with an HTTPS client on rustls for the providers that
    /// call a service: SSO, STS, the container and instance metadata endpoints).
    pub fn standard() -> AwsCredentialChain {
        AwsCredentialChain {
            source: Arc::new(Source {
                provider: OnceCell::new(),
            }),
        }
    }

    /// A chain that asks `provider` (a profile file's provider, a fixed set, a caller's own).
    pub fn from_provider(provider: impl ProvideCredentials + 'static) -> AwsCredentialChain {
        AwsCredentialChain {
            source: Arc::new(Source {
                provider: OnceCell::new_with(Some(SharedCredentialsProvider::new(provider))),
            }),
        }
    }

    /// The configuration the standard chain's providers are built with (its HTTPS client),
    /// for a caller building one of `aws-config`'s providers itself (a profile file of its
    /// own: `ProfileFileCredentialsProvider::builder().configure(&…)`).
    pub fn provider_config() -> aws_config::provider_config::ProviderConfig {
        aws_config::provider_config::ProviderConfig::without_region()
            .with_http_client(http_client())
    }

    /// The credentials to sign the next request with. The error names the chain's reason
    /// (no profile, an expired SSO session, …), never a secret.
    pub(crate) async fn credentials(&self) -> Result<AwsCredentials, ServiceError> {
        let provider = self
            .source
            .provider
            .get_or_init(|| async {
                let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
                    .http_client(http_client())
                    .load()
                    .await;
                match config.credentials_provider() {
                    Some(provider) => provider,
                    None => SharedCredentialsProvider::new(NoCredentials),
                }
            })
            .await;
        // A failure of the chain is retryable, as the official TypeScript SDK makes it (a
        // metadata endpoint or SSO may answer the next time: docs/platforms.md §1.3).
        let credentials = provider.provide_credentials().await.map_err(|e| {
            ServiceError::new(
                ServiceErrorKind::Connection,
                format!(
                    "Amazon Bedrock: no AWS credentials from the standard chain ({})",
                    aws_smithy_types::error::display::DisplayErrorContext(&e)
                ),
            )
        })?;
        AwsCredentials::new(
            credentials.access_key_id(),
            credentials.secret_access_key(),
            credentials.session_token(),
        )
        .map_err(|_| {
            ServiceError::new(
                ServiceErrorKind::Api,
                "Amazon Bedrock: the AWS credential chain gave credentials that cannot be sent",
            )
        })
    }
}

impl PartialEq for AwsCredentialChain {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.source, &other.source)
    }
}

impl Eq for AwsCredentialChain {}

impl std::fmt::Debug for AwsCredentialChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AwsCredentialChain { .. }")
    }
}

/// The HTTPS client of the providers that call a service (SSO, STS, the metadata endpoints):
/// rustls with ring, as the client's own.
fn http_client() -> aws_smithy_runtime_api::client::http::SharedHttpClient {
    aws_smithy_http_client::Builder::new()
        .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
            aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https()
}

/// The provider of a chain that found no source at all.
#[derive(Debug)]
struct NoCredentials;

impl ProvideCredentials for NoCredentials {
    fn provide_credentials<'a>(
        &'a self,
    ) -> aws_credential_types::provider::future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        aws_credential_types::provider::future::ProvideCredentials::ready(Err(
            aws_credential_types::provider::error::CredentialsError::not_loaded(
                "no credential source is configured",
            ),
        ))
    }
}
