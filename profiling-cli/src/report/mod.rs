//! The pages: `report.html` of a run or of a comparison of runs,
//! `sweep.html` of a sweep, `load.html` of a load and `history.html` of a
//! target's history. Each page is a typed view of what it shows
//! (built from the manifest, the comparison or `sweep.yaml`), rendered as
//! HTML by `maud`, which escapes every value by its type: text is escaped
//! unless it is wrapped as markup on purpose. Plots are inline SVG
//! (`plotters`, one file per chart under `charts/`), the flame graph is
//! drawn from the range tree by our own code, and the CSS and the script
//! that sorts tables are files included at build time; nothing is fetched
//! from anywhere, so a page opens from disk anywhere.

mod charts;
mod command;
mod comparison;
mod history;
mod load;
mod pages;
mod ranges;
mod run;
mod sweep;

use maud::{html, Markup, PreEscaped, DOCTYPE};

use crate::summary::format_ns;

pub use command::{report_command, ReportArgs};
pub use comparison::{comparison_page, judged_comparison_page};
pub use history::{history_page, HistoryGroup, HistoryView, HISTORY_PAGE_FILE};
pub use load::{load_page, LOAD_PAGE_FILE};
pub use pages::{write_load_page, write_page, write_run_page, write_sweep_pages};
pub use run::{read_run, run_page, RunPage};
pub use sweep::{sweep_page, write_sweep_page, SWEEP_PAGE_FILE};

/// The page's file name, beside `manifest.yaml`.
pub const REPORT_FILE: &str = "report.html";

/// The style of every page.
const STYLE: &str = include_str!("style.css");
/// Sorts a table by the column whose header is clicked, by each cell's
/// `data-sort` (numbers) or its text.
const SCRIPT: &str = include_str!("sort.js");

/// The whole page: `body` under `title`, with the style and the script.
fn layout(title: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                (body)
                script { (PreEscaped(SCRIPT)) }
            }
        }
    }
    .into_string()
}

/// One line of a page's `<dl class="facts">`.
struct Fact {
    key: &'static str,
    value: Markup,
}

impl Fact {
    /// A fact whose value is plain text.
    fn text(key: &'static str, value: impl AsRef<str>) -> Fact {
        Fact {
            key,
            value: html! { (value.as_ref()) },
        }
    }
}

fn facts(facts: &[Fact]) -> Markup {
    html! {
        dl.facts {
            @for fact in facts {
                dt { (fact.key) }
                dd { (fact.value) }
            }
        }
    }
}

/// A table cell of a duration, sorted by its nanoseconds; `-` (sorted
/// first) without one.
fn duration_cell(ns: Option<u64>) -> Markup {
    match ns {
        Some(ns) => html! { td data-sort=(ns) { (format_ns(ns)) } },
        None => missing_cell(),
    }
}

/// A cell with nothing to show, sorted before every figure.
fn missing_cell() -> Markup {
    html! { td data-sort="-1" { "-" } }
}
