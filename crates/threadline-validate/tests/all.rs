//! The integration tests of `threadline-validate`, in one test binary: each module under
//! `suite/` says what it tests.

#[path = "suite/validate_props.rs"]
mod validate_props;
#[path = "suite/validate_rules.rs"]
mod validate_rules;
