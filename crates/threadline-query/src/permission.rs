//! Whether a tool call may run: the tool's own verdict, then the caller's decision.

use std::future::Future;

use futures::future::BoxFuture;
use serde_json::Value;

/// A verdict on one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Permission {
    /// Run it.
    Allow,
    /// Do not run it; the model reads `message` as the error result.
    Deny {
        /// Why, for the model.
        message: String,
    },
    /// Ask the user (through the [`PermissionCallback`]).
    Ask {
        /// What to ask.
        prompt: String,
    },
}

/// What the callback is asked about.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct PermissionRequest<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The tool use id.
    pub tool_use_id: &'a str,
    /// The (schema-valid) input.
    pub input: &'a Value,
    /// What the tool itself said.
    pub verdict: &'a Permission,
}

/// Decides every tool call: answers [`Permission::Allow`] or [`Permission::Deny`]; an
/// [`Permission::Ask`] answer counts as not granted ([`Permission::NOT_GRANTED`]).
///
/// A closure `Fn(PermissionRequest<'_>) -> Permission` is a callback that answers at once.
pub trait PermissionCallback: Send + Sync {
    /// The decision for `request`.
    fn decide<'a>(&'a self, request: PermissionRequest<'a>) -> BoxFuture<'a, Permission>;
}

impl<F> PermissionCallback for F
where
    F: Fn(PermissionRequest<'_>) -> Permission + Send + Sync,
{
    fn decide<'a>(&'a self, request: PermissionRequest<'a>) -> BoxFuture<'a, Permission> {
        let decision = self(request);
        Box::pin(std::future::ready(decision))
    }
}

/// The default callback, for runs with nobody to ask: the tool's verdict stands, and a call
/// that would ask is denied with [`Permission::NOT_GRANTED`].
#[derive(Debug, Clone, Copy, Default)]
pub struct NonInteractive;

impl PermissionCallback for NonInteractive {
    fn decide<'a>(&'a self, request: PermissionRequest<'a>) -> BoxFuture<'a, Permission> {
        Box::pin(std::future::ready(match request.verdict {
            Permission::Ask { .. } => Permission::Deny {
                message: Permission::NOT_GRANTED.to_owned(),
            },
            other => other.clone(),
        }))
    }
}

/// A callback that allows every call, whatever the tool said (for trusted sandboxes and
/// tests).
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl PermissionCallback for AllowAll {
    fn decide<'a>(&'a self, _request: PermissionRequest<'a>) -> BoxFuture<'a, Permission> {
        Box::pin(std::future::ready(Permission::Allow))
    }
}

/// Resolves a callback's answer into "run" or "the error text for the model".
pub(crate) async fn resolve(
    callback: &dyn PermissionCallback,
    request: PermissionRequest<'_>,
) -> Result<(), String> {
    match callback.decide(request).await {
        Permission::Allow => Ok(()),
        Permission::Deny { message } => Err(message),
        Permission::Ask { .. } => Err(Permission::NOT_GRANTED.to_owned()),
    }
}

/// Makes an async decision function a callback (for interactive prompts).
pub fn from_async<F, Fut>(decide: F) -> impl PermissionCallback
where
    F: Fn(String, Value, Permission) -> Fut + Send + Sync,
    Fut: Future<Output = Permission> + Send + 'static,
{
    AsyncCallback(decide)
}

struct AsyncCallback<F>(F);

impl<F, Fut> PermissionCallback for AsyncCallback<F>
where
    F: Fn(String, Value, Permission) -> Fut + Send + Sync,
    Fut: Future<Output = Permission> + Send + 'static,
{
    fn decide<'a>(&'a self, request: PermissionRequest<'a>) -> BoxFuture<'a, Permission> {
        Box::pin((self.0)(
            request.tool.to_owned(),
            request.input.clone(),
            request.verdict.clone(),
        ))
    }
}

impl Permission {
    /// The text of the result of a call whose permission was asked and not granted.
    pub const NOT_GRANTED: &str = "Permission to use this tool was not granted.";
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(verdict: &'a Permission, input: &'a Value) -> PermissionRequest<'a> {
        PermissionRequest {
            tool: "Bash",
            tool_use_id: "toolu_1",
            input,
            verdict,
        }
    }

    #[tokio::test]
    async fn non_interactive_denies_what_would_ask_and_keeps_the_rest() {
        let input = Value::Null;
        let ask = Permission::Ask {
            prompt: "run ls?".into(),
        };
        assert_eq!(
            resolve(&NonInteractive, request(&ask, &input)).await,
            Err(Permission::NOT_GRANTED.to_owned())
        );
        assert_eq!(
            resolve(&NonInteractive, request(&Permission::Allow, &input)).await,
            Ok(())
        );
        let deny = Permission::Deny {
            message: "no".into(),
        };
        assert_eq!(
            resolve(&NonInteractive, request(&deny, &input)).await,
            Err("no".to_owned())
        );
        assert_eq!(resolve(&AllowAll, request(&ask, &input)).await, Ok(()));
    }

    #[tokio::test]
    async fn closures_and_async_functions_are_callbacks() {
        let input = serde_json::json!({"command": "rm -rf /"});
        let closure = |r: PermissionRequest<'_>| {
            if r.input["command"]
                .as_str()
                .is_some_and(|c| c.starts_with("rm"))
            {
                Permission::Deny {
                    message: "not rm".into(),
                }
            } else {
                Permission::Allow
            }
        };
        assert_eq!(
            resolve(&closure, request(&Permission::Allow, &input)).await,
            Err("not rm".to_owned())
        );
        let asking =
            from_async(|_tool, _input, _verdict| async { Permission::Ask { prompt: "?".into() } });
        assert_eq!(
            resolve(&asking, request(&Permission::Allow, &input)).await,
            Err(Permission::NOT_GRANTED.to_owned())
        );
    }
}
