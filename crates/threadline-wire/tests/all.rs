//! The integration tests of `threadline-wire`, in one test binary: each module under `suite/`
//! was a test binary of its own (its documentation says what it tests), and they share no
//! module.

#[path = "suite/messages_props.rs"]
mod messages_props;
#[path = "suite/platform_models.rs"]
mod platform_models;
#[path = "suite/recorded_streams.rs"]
mod recorded_streams;
#[path = "suite/round_trip.rs"]
mod round_trip;
#[path = "suite/sdk_equivalence.rs"]
mod sdk_equivalence;
