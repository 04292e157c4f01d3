//! The mock server over real loopback TCP, driven by a raw HTTP/1.1 client so that every
//! byte (and every byte not sent) is the test's choice.

mod descriptors;
mod http;
mod limits;
mod load;
mod validation;
