//! The built-in environment and main-thread sources (the `@`-mention sources are in
//! [`mention`](crate::mention), the delta sources in [`delta`](crate::delta)).

pub mod date_change;
pub mod nested_instructions;
pub mod queued_commands;
pub mod todo_reminders;
pub mod token_usage;
