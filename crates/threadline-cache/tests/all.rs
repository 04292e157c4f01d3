//! The integration tests of `threadline-cache`, in one test binary: each module under `suite/`
//! was a test binary of its own (its documentation says what it tests), and `sessions` holds
//! the helpers they share.

#[path = "suite/planner_props.rs"]
mod planner_props;
#[path = "suite/prefix_stability.rs"]
mod prefix_stability;
#[path = "suite/recorded_usage.rs"]
mod recorded_usage;
#[path = "suite/session_simulator.rs"]
mod session_simulator;
#[path = "suite/common/sessions.rs"]
mod sessions;
#[path = "suite/simulator_rules.rs"]
mod simulator_rules;
#[path = "suite/strategy_bench.rs"]
mod strategy_bench;
