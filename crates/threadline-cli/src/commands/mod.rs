//! One module per subcommand.

pub(crate) mod accumulate;
pub(crate) mod check;
pub(crate) mod normalize;
