//! The mock server over real loopback TCP, driven by a raw HTTP/1.1 client so that every
//! byte (and every byte not sent) is the test's choice.

#[path = "server/descriptors.rs"]
mod descriptors;
#[path = "server/durable.rs"]
mod durable;
#[path = "server/http.rs"]
pub(crate) mod http;
#[path = "server/limits.rs"]
mod limits;
#[path = "server/load.rs"]
mod load;
#[path = "server/validation.rs"]
mod validation;
