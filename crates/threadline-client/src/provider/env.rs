//! A platform's settings from the environment variables Claude Code reads
//! (docs/platforms.md §4), so a team's existing setup works unchanged:
//!
//! | platform | chosen by | base URL | credential |
//! |---|---|---|---|
//! | Claude API | default | `ANTHROPIC_BASE_URL` | `ANTHROPIC_API_KEY` |
//! | Bedrock | `CLAUDE_CODE_USE_BEDROCK=1` | `ANTHROPIC_BEDROCK_BASE_URL`, else from the region (`AWS_REGION`, `AWS_DEFAULT_REGION`, else `us-east-1`) | `AWS_BEARER_TOKEN_BEDROCK` (a Bedrock API key), else `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`), else (feature `aws-credential-chain`) the standard AWS chain: `AWS_PROFILE` and the profile files, SSO, web identity, container and instance roles |
//! | Vertex AI | `CLAUDE_CODE_USE_VERTEX=1` | `ANTHROPIC_VERTEX_BASE_URL`, else from `CLOUD_ML_REGION` | `ANTHROPIC_VERTEX_ACCESS_TOKEN` (a static OAuth access token, e.g. `gcloud auth print-access-token`), else (feature `google-adc`) Application Default Credentials, unless `CLAUDE_CODE_SKIP_VERTEX_AUTH` (a gateway: a placeholder); project `ANTHROPIC_VERTEX_PROJECT_ID`, else `GOOGLE_CLOUD_PROJECT`, `GCLOUD_PROJECT` |
//! | Foundry | `CLAUDE_CODE_USE_FOUNDRY=1` | `ANTHROPIC_FOUNDRY_BASE_URL`, else from `ANTHROPIC_FOUNDRY_RESOURCE` | `ANTHROPIC_FOUNDRY_AUTH_TOKEN` (Entra ID bearer), else `ANTHROPIC_FOUNDRY_API_KEY` |
//!
//! A base URL given by the caller (a `--base-url`, a mock) wins over the variables; a bearer
//! or key platform without its credential then sends a placeholder (a mock checks only that
//! there is one), SigV4 never does: it needs the key pair the server checks. Not read (yet):
//! AWS profiles, SSO and instance roles (the rest of the AWS credential chain), and Google's
//! Application Default Credentials: such a setup exports static credentials into the
//! variables above.
//!
//! ```
//! use threadline_client::provider::{PlatformSettings, platform_from_vars};
//!
//! let vars = [
//!     ("CLAUDE_CODE_USE_VERTEX", "1"),
//!     ("CLOUD_ML_REGION", "us-east5"),
//!     ("ANTHROPIC_VERTEX_PROJECT_ID", "my-project"),
//!     ("ANTHROPIC_VERTEX_ACCESS_TOKEN", "ya29.token"),
//! ];
//! let lookup = |name: &str| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string());
//! let settings: PlatformSettings = platform_from_vars(None, None, lookup)?;
//! assert_eq!(settings.provider.name(), "vertex");
//! assert_eq!(settings.base_url, "https://us-east5-aiplatform.googleapis.com/v1");
//! # Ok::<(), threadline_client::provider::PlatformEnvError>(())
//! ```

use super::{Platform, Provider};
use crate::secret::{ApiKey, Auth, AwsCredentials};

/// What a client needs to reach a platform: the provider, the base URL and the credential.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PlatformSettings {
    /// The platform.
    pub provider: Provider,
    /// Where its requests go.
    pub base_url: String,
    /// How they authenticate.
    pub auth: Auth,
}

/// The environment does not say how to reach the platform. No variant holds a credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlatformEnvError {
    /// The provider's name is not one of `anthropic`, `bedrock`, `vertex`, `foundry`.
    #[error("unknown provider `{0}` (expected anthropic, bedrock, vertex or foundry)")]
    UnknownProvider(String),
    /// Something the platform needs is not set.
    #[error("{platform}: {what} is not set ({variables})")]
    Missing {
        /// The platform ([`Provider::display_name`]).
        platform: &'static str,
        /// What is missing.
        what: &'static str,
        /// The variables that would give it.
        variables: &'static str,
    },
    /// A credential variable holds what cannot be sent.
    #[error("{variable} is not a usable credential")]
    Invalid {
        /// The variable.
        variable: &'static str,
    },
}

/// The placeholder credential sent to a caller's base URL when none is set (a mock checks
/// only that there is one).
pub const PLACEHOLDER_CREDENTIAL: &str = "threadline-no-key";

/// The platform's name: `provider` when given, else the one a `CLAUDE_CODE_USE_BEDROCK`,
/// `_VERTEX` or `_FOUNDRY` variable picks (set, and neither `0` nor `false`), else
/// `anthropic`. [`platform_from_vars`] reads that platform's settings.
pub fn platform_name_from_vars(
    provider: Option<&str>,
    lookup: impl Fn(&str) -> Option<String>,
) -> &str {
    let flag = |name: &str| is_on(lookup(name));
    match provider {
        Some(name) => name,
        None if flag("CLAUDE_CODE_USE_BEDROCK") => Platform::Bedrock.key(),
        None if flag("CLAUDE_CODE_USE_VERTEX") => Platform::Vertex.key(),
        None if flag("CLAUDE_CODE_USE_FOUNDRY") => Platform::Foundry.key(),
        None => Platform::Anthropic.key(),
    }
}

/// Whether a flag variable's value turns it on: set, and neither blank, `0` nor `false`.
fn is_on(value: Option<String>) -> bool {
    value.is_some_and(|v| !v.trim().is_empty() && v.trim() != "0" && v.trim() != "false")
}

/// [`platform_name_from_vars`] over the process's environment.
pub fn platform_name_from_env(provider: Option<&str>) -> &str {
    platform_name_from_vars(provider, |name| std::env::var(name).ok())
}

/// [`platform_from_vars`] over the process's environment.
pub fn platform_from_env(
    provider: Option<&str>,
    base_url: Option<&str>,
) -> Result<PlatformSettings, PlatformEnvError> {
    platform_from_vars(provider, base_url, |name| std::env::var(name).ok())
}

/// The platform's settings from `lookup` (a variable's value, `None` when unset; a blank
/// value counts as unset): the provider named (else the one a `CLAUDE_CODE_USE_*` variable
/// picks, else the Claude API), `base_url` when given (else the platform's variables).
pub fn platform_from_vars(
    provider: Option<&str>,
    base_url: Option<&str>,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<PlatformSettings, PlatformEnvError> {
    let name = platform_name_from_vars(provider, &lookup);
    let var = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
    let given = base_url.map(str::to_owned);
    let key = |variable: &'static str| -> Result<Option<ApiKey>, PlatformEnvError> {
        var(variable)
            .map(|v| ApiKey::new(&v).map_err(|_| PlatformEnvError::Invalid { variable }))
            .transpose()
    };
    let placeholder = || ApiKey::new(PLACEHOLDER_CREDENTIAL).expect("a valid key");
    let missing = |provider: &Provider, what, variables| PlatformEnvError::Missing {
        platform: provider.display_name(),
        what,
        variables,
    };
    match name.parse::<Platform>() {
        Ok(Platform::Anthropic) => {
            let provider = Provider::Anthropic;
            let key = match (key("ANTHROPIC_API_KEY")?, &given) {
                (Some(key), _) => key,
                (None, Some(_)) => placeholder(),
                (None, None) => {
                    return Err(missing(&provider, "the API key", "ANTHROPIC_API_KEY"));
                }
            };
            let base_url = given
                .or_else(|| var("ANTHROPIC_BASE_URL"))
                .unwrap_or_else(|| threadline_wire::defaults::DEFAULT_BASE_URL.to_owned());
            Ok(PlatformSettings {
                provider,
                base_url,
                auth: Auth::ApiKey(key),
            })
        }
        Ok(Platform::Bedrock) => {
            let region = var("AWS_REGION")
                .or_else(|| var("AWS_DEFAULT_REGION"))
                .unwrap_or_else(|| "us-east-1".to_owned());
            let provider = Provider::bedrock(region.trim());
            let auth = if let Some(token) = key("AWS_BEARER_TOKEN_BEDROCK")? {
                Auth::Bearer(token)
            } else {
                match (var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY")) {
                    (Some(id), Some(secret)) => {
                        let token = var("AWS_SESSION_TOKEN");
                        Auth::Aws(AwsCredentials::new(&id, &secret, token.as_deref()).map_err(
                            |_| PlatformEnvError::Invalid {
                                variable: "AWS_SECRET_ACCESS_KEY",
                            },
                        )?)
                    }
                    // The standard AWS chain: profiles, SSO, roles (it reads the process's
                    // environment and profile files itself).
                    #[cfg(feature = "aws-credential-chain")]
                    _ => Auth::AwsChain(super::AwsCredentialChain::standard()),
                    #[cfg(not(feature = "aws-credential-chain"))]
                    _ => {
                        return Err(missing(
                            &provider,
                            "AWS credentials",
                            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_BEARER_TOKEN_BEDROCK",
                        ));
                    }
                }
            };
            let base_url = given
                .or_else(|| var("ANTHROPIC_BEDROCK_BASE_URL"))
                .or_else(|| provider.default_base_url())
                .unwrap_or_default();
            Ok(PlatformSettings {
                provider,
                base_url,
                auth,
            })
        }
        Ok(Platform::Vertex) => {
            let region = var("CLOUD_ML_REGION");
            let project = var("ANTHROPIC_VERTEX_PROJECT_ID")
                .or_else(|| var("GOOGLE_CLOUD_PROJECT"))
                .or_else(|| var("GCLOUD_PROJECT"));
            let unnamed = Provider::vertex("", "");
            let Some(project) = project else {
                return Err(missing(
                    &unnamed,
                    "the Google Cloud project",
                    "ANTHROPIC_VERTEX_PROJECT_ID",
                ));
            };
            let Some(region) = region else {
                return Err(missing(&unnamed, "the region", "CLOUD_ML_REGION"));
            };
            let provider = Provider::vertex(project.trim(), region.trim());
            // A gateway that authenticates for the client (Claude Code's variable).
            let skip = is_on(lookup("CLAUDE_CODE_SKIP_VERTEX_AUTH"));
            let auth = match (key("ANTHROPIC_VERTEX_ACCESS_TOKEN")?, &given) {
                (Some(token), _) => Auth::Bearer(token),
                (None, _) if skip => Auth::Bearer(placeholder()),
                // Application Default Credentials: a service account key, the gcloud user's
                // ADC file, the metadata server, the gcloud CLI.
                #[cfg(feature = "google-adc")]
                (None, _) => Auth::GoogleAdc(super::GoogleCredentials::standard()),
                #[cfg(not(feature = "google-adc"))]
                (None, Some(_)) => Auth::Bearer(placeholder()),
                #[cfg(not(feature = "google-adc"))]
                (None, None) => {
                    return Err(missing(
                        &provider,
                        "an access token",
                        "ANTHROPIC_VERTEX_ACCESS_TOKEN, e.g. from `gcloud auth print-access-token`",
                    ));
                }
            };
            let base_url = given
                .or_else(|| var("ANTHROPIC_VERTEX_BASE_URL"))
                .or_else(|| provider.default_base_url())
                .unwrap_or_default();
            Ok(PlatformSettings {
                provider,
                base_url,
                auth,
            })
        }
        Ok(Platform::Foundry) => {
            let provider = Provider::Foundry;
            let auth = match (
                key("ANTHROPIC_FOUNDRY_AUTH_TOKEN")?,
                key("ANTHROPIC_FOUNDRY_API_KEY")?,
                &given,
            ) {
                (Some(token), _, _) => Auth::Bearer(token),
                (None, Some(key), _) => Auth::ApiKey(key),
                (None, None, Some(_)) => Auth::ApiKey(placeholder()),
                (None, None, None) => {
                    return Err(missing(
                        &provider,
                        "a key",
                        "ANTHROPIC_FOUNDRY_API_KEY or ANTHROPIC_FOUNDRY_AUTH_TOKEN",
                    ));
                }
            };
            let base_url = given
                .or_else(|| var("ANTHROPIC_FOUNDRY_BASE_URL"))
                .or_else(|| {
                    var("ANTHROPIC_FOUNDRY_RESOURCE").map(|r| Provider::foundry_base_url(r.trim()))
                })
                .ok_or_else(|| {
                    missing(
                        &provider,
                        "the resource",
                        "ANTHROPIC_FOUNDRY_RESOURCE or ANTHROPIC_FOUNDRY_BASE_URL",
                    )
                })?;
            Ok(PlatformSettings {
                provider,
                base_url,
                auth,
            })
        }
        _ => Err(PlatformEnvError::UnknownProvider(name.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(
        provider: Option<&str>,
        base: Option<&str>,
        vars: &[(&str, &str)],
    ) -> Result<PlatformSettings, PlatformEnvError> {
        platform_from_vars(provider, base, |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn bedrock_reads_the_aws_variables() {
        let vars = [
            ("CLAUDE_CODE_USE_BEDROCK", "1"),
            ("AWS_REGION", "eu-west-1"),
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "secret-0123456789"),
            ("AWS_SESSION_TOKEN", "token-0123456789"),
        ];
        let s = settings(None, None, &vars).expect("settings");
        assert_eq!(s.provider, Provider::bedrock("eu-west-1"));
        assert_eq!(
            s.base_url,
            "https://bedrock-runtime.eu-west-1.amazonaws.com"
        );
        assert!(matches!(&s.auth, Auth::Aws(a) if a.access_key_id() == "AKIDEXAMPLE"));
        // A Bedrock API key wins; the base URL given wins.
        let mut with_key = vars.to_vec();
        with_key.push(("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key"));
        let s = settings(Some("bedrock"), Some("http://127.0.0.1:9"), &with_key).expect("ok");
        assert!(matches!(s.auth, Auth::Bearer(_)));
        assert_eq!(s.base_url, "http://127.0.0.1:9");
        // No credentials in the variables: the standard AWS chain, with the chain built in;
        // else an error naming the variables, even with a base URL.
        let found = settings(Some("bedrock"), Some("http://x"), &[]);
        #[cfg(feature = "aws-credential-chain")]
        assert!(matches!(found.expect("the chain").auth, Auth::AwsChain(_)));
        #[cfg(not(feature = "aws-credential-chain"))]
        assert_eq!(
            found.expect_err("missing").to_string(),
            "Amazon Bedrock: AWS credentials is not set (AWS_ACCESS_KEY_ID and \
             AWS_SECRET_ACCESS_KEY, or AWS_BEARER_TOKEN_BEDROCK)"
        );
    }

    #[test]
    fn vertex_and_foundry_need_their_variables_or_a_base_url() {
        let vertex = [
            ("ANTHROPIC_VERTEX_PROJECT_ID", "p"),
            ("CLOUD_ML_REGION", "global"),
        ];
        // Without a token: Application Default Credentials with them built in; else an error
        // naming the variable, or a placeholder for a base URL.
        let found = settings(Some("vertex"), None, &vertex);
        #[cfg(feature = "google-adc")]
        assert!(matches!(found.expect("ADC").auth, Auth::GoogleAdc(_)));
        #[cfg(not(feature = "google-adc"))]
        {
            let error = found.expect_err("no token");
            assert!(
                error.to_string().contains("ANTHROPIC_VERTEX_ACCESS_TOKEN"),
                "{error}"
            );
            let s = settings(Some("vertex"), Some("http://127.0.0.1:9"), &vertex).expect("ok");
            assert!(matches!(s.auth, Auth::Bearer(_)));
        }
        // A gateway that authenticates itself: a placeholder whatever is built in.
        let gateway = [vertex.as_slice(), &[("CLAUDE_CODE_SKIP_VERTEX_AUTH", "1")]].concat();
        let s = settings(Some("vertex"), Some("http://127.0.0.1:9"), &gateway).expect("ok");
        assert!(matches!(s.auth, Auth::Bearer(_)));
        assert_eq!(s.provider, Provider::vertex("p", "global"));
        let foundry = [
            ("CLAUDE_CODE_USE_FOUNDRY", "1"),
            ("ANTHROPIC_FOUNDRY_RESOURCE", "my-res"),
            ("ANTHROPIC_FOUNDRY_API_KEY", "k-0123456789"),
        ];
        let s = settings(None, None, &foundry).expect("ok");
        assert_eq!(s.base_url, "https://my-res.services.ai.azure.com/anthropic");
        assert!(matches!(s.auth, Auth::ApiKey(_)));
        assert_eq!(
            settings(Some("azure"), None, &[])
                .expect_err("unknown")
                .to_string(),
            "unknown provider `azure` (expected anthropic, bedrock, vertex or foundry)"
        );
        // The Claude API by default; a placeholder key only with a base URL.
        assert!(settings(None, None, &[]).is_err());
        let s = settings(None, Some("http://127.0.0.1:9"), &[]).expect("ok");
        assert_eq!(s.provider, Provider::Anthropic);
    }
}
