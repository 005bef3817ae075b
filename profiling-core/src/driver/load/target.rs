//! A registered target under load: each worker builds its own instance
//! with the factory, on its own thread, and prepares its own inputs from
//! the records (read once, shared read-only); a query runs the target on
//! one input, the records taken in turn.

use std::sync::atomic::AtomicBool;

use anyhow::Context;

use super::drive::{drive, LoadError, LoadPlan, LoadRun};
use crate::driver::panics::guard;
use crate::driver::runner::{Records, RunPlan};
use crate::target::ProfileTarget;

/// Runs `load` on the target `make` builds, over `plan`'s records and
/// config (its parameters and device).
pub fn load_target<T, F>(
    plan: &RunPlan,
    load: &LoadPlan,
    stop: &AtomicBool,
    make: F,
) -> Result<LoadRun, LoadError>
where
    T: ProfileTarget,
    F: Fn() -> anyhow::Result<T> + Sync,
{
    let config = &plan.config;
    if config.batch_size > 1 {
        return Err(LoadError::Setup(format!(
            "a load sends one record a query: workload.batch_size must be 1, not {}",
            config.batch_size
        )));
    }
    let Records::Eager(records) = &plan.records else {
        return Err(LoadError::Setup(
            "a load reads its records before it starts: record_loading: eager".to_owned(),
        ));
    };
    if records.is_empty() {
        return Err(LoadError::Setup(
            "the data source gave no record".to_owned(),
        ));
    }
    let parameters = &config.target.parameters;
    let device = config.device;
    drive(
        load,
        |_worker| {
            crate::target::set_parameters(parameters);
            let mut target = guard(&make).context("building the target")?;
            let inputs = records
                .iter()
                .map(|record| {
                    guard(|| target.prepare(record, device))
                        .with_context(|| format!("preparing record `{}`", record.id))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            Ok((target, inputs))
        },
        |(target, inputs), query| {
            let input = &inputs[query % inputs.len()];
            guard(|| target.run(input)).map(drop)
        },
        stop,
    )
}
