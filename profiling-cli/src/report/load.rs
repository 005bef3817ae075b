//! The page of a load, `load.html` beside `load.yaml`: what was loaded and
//! how, the latency-throughput curve with the bound, each range's p99 and
//! the queueing's share against the rate, the p99 tail's parts and the
//! detailed step over its length, the peak, and the tables as the terminal
//! printed them.

use maud::html;
use profiling_core::driver::load::summary::LoadStep;
use profiling_core::driver::session::{LoadManifest, LoadStatus};

use super::charts::load_curve::load_curve;
use super::charts::load_queueing::load_queueing;
use super::charts::load_ranges::load_ranges;
use super::charts::load_tail::load_tail;
use super::charts::load_timeline::load_timeline;
use super::charts::load_waiting::load_waiting;
use super::charts::{load_rate, ms};
use super::layout;

/// The page's file name, beside `load.yaml`.
pub const LOAD_PAGE_FILE: &str = "load.html";

/// The page of the load `manifest` records, with `tables`, the load's
/// tables as `profile-cli load` prints them.
pub fn load_page(manifest: &LoadManifest, tables: &str) -> String {
    let load = &manifest.load;
    let request = &load.request;
    let status = match manifest.status {
        LoadStatus::Completed => "completed",
        LoadStatus::Interrupted => "interrupted",
        LoadStatus::Failed => "failed",
    };
    let minimums = match (request.min_queries, request.min_duration_s) {
        (0, seconds) => format!("{seconds} s"),
        (queries, 0.0) => format!("{queries} queries"),
        (queries, seconds) => format!("{queries} queries and {seconds} s"),
    };
    let bound = request.p99_bound_ns.map(ms);
    // The steps by rate: the curve and the ranges against load.
    let mut steps: Vec<&LoadStep> = load.steps.iter().collect();
    steps.sort_by(|a, b| load_rate(a).total_cmp(&load_rate(b)));
    // The step the tables detail: what its slowest queries spent their
    // time on, and how its latency and queue moved while it ran.
    let detailed = load.detailed_step();
    let body = html! {
        h1 { "load: " (manifest.target) }
        p.lead {
            (manifest.profile_name) " · run " (manifest.run_id) " · " (manifest.host.cpu_model)
            " · status " b { (status) }
            @if let Some(error) = &manifest.error { " — " (error) }
        }
        p.lead {
            "scenario " (request.scenario) ", " (request.workers) " worker"
            (if request.workers == 1 { "" } else { "s" })
            ", at least " (minimums) " (" (request.minimums_from)
            "); latency from each query's intended send"
        }
        @if steps.len() > 1 {
            (load_curve(&steps, bound))
            (load_ranges(&steps))
            (load_queueing(&steps))
        }
        @if let Some(step) = detailed {
            @if let Some(tail) = &step.tail {
                (load_tail(tail))
            }
            @if step.timeline.len() > 1 {
                (load_timeline(step, bound))
                (load_waiting(step))
            }
        }
        @if let Some(peak) = &load.peak {
            p #peak {
                "peak: "
                b {
                    @match peak.peak_qps {
                        Some(qps) => { (format!("{qps:.1}")) " queries a second" }
                        None => "no rate held the bound",
                    }
                }
                " — " (peak.search)
            }
        }
        h2 { "tables" }
        pre.tables { (tables) }
    };
    layout(&format!("load: {}", manifest.target), body)
}
