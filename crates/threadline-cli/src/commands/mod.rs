//! One module per subcommand.

pub(crate) mod accumulate;
pub(crate) mod check;
pub(crate) mod compact;
pub(crate) mod demo;
pub(crate) mod demo_server;
pub(crate) mod durable;
pub(crate) mod inspect;
pub(crate) mod mcp;
pub(crate) mod mcp_approval;
pub(crate) mod mock;
pub(crate) mod normalize;
pub(crate) mod replay;
pub(crate) mod run;
pub(crate) mod run_live;
pub(crate) mod session;
pub(crate) mod sessions;
pub(crate) mod worker;
