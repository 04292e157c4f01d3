//! Durable agent sessions on [Restate](https://restate.dev): a Virtual Object `Session` keyed
//! by session id drives the query loop step by step; each model call and each tool call is a
//! journaled step, so a session survives a crash and continues on another worker without
//! repeating a model call or a tool's side effect.
#![forbid(unsafe_code)]

mod admin;
mod http;
mod ingress;

pub use admin::Admin;
pub use http::{ClientError, DEFAULT_TIMEOUT, MAX_RESPONSE_BYTES};
pub use ingress::{Ingress, InvocationId, Output};
mod store;

pub use store::{
    MAX_APPEND_REQUEST_BYTES, RestateStore, SESSION_INDEX, SESSION_LOG, SessionIndex, SessionLog,
    bind_store,
};
