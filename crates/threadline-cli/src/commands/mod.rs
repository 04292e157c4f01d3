//! One module per subcommand.

pub(crate) mod accumulate;
pub(crate) mod check;
pub(crate) mod compact;
pub(crate) mod inspect;
pub(crate) mod mock;
pub(crate) mod normalize;
pub(crate) mod run;
