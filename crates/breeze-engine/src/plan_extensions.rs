//! The plan.toml extension tables the engine reads — `[task.sim]`, the scripted simulator's
//! steering — which the planner keeps apart from the tasks without interpreting them.

/// The simulator's table of a task (`[task.sim]`).
pub const SIM_TABLE: &str = "sim";

/// Every extension table the engine reads, for the planner to keep.
pub const PLAN_EXTENSIONS: &[&str] = &[SIM_TABLE];
