//! (in progress)
use crate::target::ProfileTarget;
pub struct RunPlan;
#[derive(Debug)]
pub struct RunOutcome;
#[derive(Debug)]
pub struct RunError;
pub fn run_target<T: ProfileTarget, F: FnOnce() -> anyhow::Result<T>>(_plan: &RunPlan, _make: F) -> Result<RunOutcome, RunError> { Err(RunError) }
