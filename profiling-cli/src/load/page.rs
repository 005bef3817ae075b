//! `load.html`: a load run's page, one file with nothing fetched: the
//! latency-throughput curve with the bound, each range's p99 against the
//! offered rate, the share of each step's latency spent queueing, and the
//! tables of the step detailed.

use std::fmt::Write as _;

use profiling_core::driver::load::summary::LoadStep;
use profiling_core::driver::session::LoadManifest;

/// The page's file name, beside `load.yaml`.
pub(crate) const LOAD_PAGE: &str = "load.html";

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 300.0;
const MARGIN: f64 = 56.0;
const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
];

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A step's rate: offered, else served.
fn rate(step: &LoadStep) -> f64 {
    step.offered_qps.unwrap_or(step.served_qps)
}

/// A chart's lines: each a name and its points (x, y, drawn filled).
type Series = Vec<(String, Vec<(f64, f64, bool)>)>;

/// One line chart: `series` of (x, y) points, an optional horizontal
/// line, axes labelled.
struct Chart<'a> {
    id: &'a str,
    title: &'a str,
    x_label: &'a str,
    y_label: &'a str,
    series: Series,
    line: Option<(f64, String)>,
}

impl Chart<'_> {
    fn svg(&self) -> String {
        let points = self.series.iter().flat_map(|(_, p)| p.iter());
        let (mut x_max, mut y_max) = (0.0f64, 0.0f64);
        for &(x, y, _) in points {
            x_max = x_max.max(x);
            y_max = y_max.max(y);
        }
        if let Some((y, _)) = &self.line {
            y_max = y_max.max(*y);
        }
        let x_max = if x_max > 0.0 { x_max * 1.05 } else { 1.0 };
        let y_max = if y_max > 0.0 { y_max * 1.1 } else { 1.0 };
        let sx = |x: f64| MARGIN + x / x_max * (WIDTH - 2.0 * MARGIN);
        let sy = |y: f64| HEIGHT - MARGIN + 10.0 - y / y_max * (HEIGHT - 2.0 * MARGIN);
        let mut svg = String::new();
        let _ = write!(
            svg,
            r#"<figure id="{}"><figcaption>{}</figcaption><svg viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{}">"#,
            self.id,
            escape(self.title),
            escape(self.title)
        );
        // Axes and their ticks.
        let bottom = sy(0.0);
        let _ = write!(
            svg,
            r##"<line x1="{MARGIN}" y1="{bottom}" x2="{}" y2="{bottom}" stroke="#444"/><line x1="{MARGIN}" y1="{}" x2="{MARGIN}" y2="{bottom}" stroke="#444"/>"##,
            WIDTH - MARGIN,
            sy(y_max)
        );
        for tick in 0..=4 {
            let fraction = f64::from(tick) / 4.0;
            let (x, y) = (x_max * fraction, y_max * fraction);
            let _ = write!(
                svg,
                r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle">{}</text><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{}</text>"##,
                sx(x),
                bottom + 14.0,
                short(x),
                MARGIN - 4.0,
                sy(y) + 3.0,
                short(y)
            );
        }
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text><text x="12" y="{:.1}" font-size="11" transform="rotate(-90 12 {:.1})" text-anchor="middle">{}</text>"#,
            WIDTH / 2.0,
            HEIGHT - 8.0,
            escape(self.x_label),
            HEIGHT / 2.0,
            HEIGHT / 2.0,
            escape(self.y_label)
        );
        if let Some((y, label)) = &self.line {
            let _ = write!(
                svg,
                r##"<line class="bound" x1="{MARGIN}" y1="{0:.1}" x2="{1}" y2="{0:.1}" stroke="#d62728" stroke-dasharray="5 4"/><text x="{1}" y="{2:.1}" font-size="10" text-anchor="end" fill="#d62728">{3}</text>"##,
                sy(*y),
                WIDTH - MARGIN,
                sy(*y) - 4.0,
                escape(label)
            );
        }
        for (index, (name, points)) in self.series.iter().enumerate() {
            let colour = COLOURS[index % COLOURS.len()];
            let path: Vec<String> = points
                .iter()
                .map(|&(x, y, _)| format!("{:.1},{:.1}", sx(x), sy(y)))
                .collect();
            let _ = write!(
                svg,
                r#"<polyline class="series" data-name="{}" points="{}" fill="none" stroke="{colour}" stroke-width="1.5"/>"#,
                escape(name),
                path.join(" ")
            );
            for &(x, y, ok) in points {
                let _ = write!(
                    svg,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{}" stroke="{colour}"><title>{}: {} at {}</title></circle>"#,
                    sx(x),
                    sy(y),
                    if ok { colour } else { "white" },
                    escape(name),
                    short(y),
                    short(x)
                );
            }
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" font-size="11" fill="{colour}">{}</text>"#,
                MARGIN + 8.0,
                MARGIN - 30.0 + 13.0 * index as f64,
                escape(name)
            );
        }
        svg.push_str("</svg></figure>");
        svg
    }
}

/// A step's latency and queue over its length: each window's median and
/// slowest query (against the bound), and the queries meant by its end
/// that no worker had begun. Each point sits at its window's middle.
fn timeline_charts(step: &LoadStep, bound: Option<f64>) -> String {
    let at =
        |w: &profiling_core::driver::load::latency::Window| (w.start_ns + w.end_ns) as f64 / 2e9;
    let windows = &step.timeline;
    let under = match step.offered() {
        Some(qps) => format!(" at {} queries a second", short(qps)),
        None => String::new(),
    };
    let mut charts = Chart {
        id: "timeline",
        title: &format!("latency over the load{under}: each window's median and slowest query"),
        x_label: "seconds from the first intended send",
        y_label: "latency, ms",
        series: vec![
            (
                "median".to_owned(),
                windows
                    .iter()
                    .map(|w| (at(w), ms(w.latency_p50_ns), true))
                    .collect(),
            ),
            (
                "slowest".to_owned(),
                windows
                    .iter()
                    .map(|w| (at(w), ms(w.latency_max_ns), true))
                    .collect(),
            ),
        ],
        line: bound.map(|b| (b, format!("p99 bound {b} ms"))),
    }
    .svg();
    charts.push_str(
        &Chart {
            id: "waiting",
            title: "queries meant to be sent that no worker had begun, at each window's end",
            x_label: "seconds from the first intended send",
            y_label: "queries waiting",
            series: vec![(
                "waiting".to_owned(),
                windows
                    .iter()
                    .map(|w| (w.end_ns as f64 / 1e9, w.waiting_at_end as f64, true))
                    .collect(),
            )],
            line: None,
        }
        .svg(),
    );
    charts
}

/// The p99 tail's parts as bars: each part's median over all queries
/// beside its mean over the slowest, the owner first.
fn tail_bars(tail: &profiling_core::driver::load::summary::TailBreakdown) -> String {
    const ROW: f64 = 26.0;
    const LABEL: f64 = 160.0;
    let height = MARGIN + ROW * tail.parts.len() as f64 + 10.0;
    let most = tail
        .parts
        .iter()
        .map(|p| p.median_ns.max(p.tail_mean_ns))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let width = |ns: u64| ns as f64 / most * (WIDTH - LABEL - 90.0);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<figure id="tail"><figcaption>the p99 tail: each part of a query's time, its median (light) and its mean over the {} slowest queries (dark); `{}` owns the p99</figcaption><svg viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" aria-label="the p99 tail">"#,
        tail.tail_queries,
        escape(&tail.owner)
    );
    for (index, part) in tail.parts.iter().enumerate() {
        let y = 20.0 + ROW * index as f64;
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text><rect class="median" data-part="{}" x="{LABEL}" y="{y:.1}" width="{:.1}" height="9" fill="#9ecae1"><title>median {:.3} ms</title></rect><rect class="tail" data-part="{}" x="{LABEL}" y="{:.1}" width="{:.1}" height="9" fill="#08519c"><title>tail mean {:.3} ms</title></rect><text x="{:.1}" y="{:.1}" font-size="10">{:.3} ms</text>"##,
            LABEL - 6.0,
            y + 13.0,
            escape(&part.component),
            escape(&part.component),
            width(part.median_ns).max(0.5),
            ms(part.median_ns),
            escape(&part.component),
            y + 10.0,
            width(part.tail_mean_ns).max(0.5),
            ms(part.tail_mean_ns),
            LABEL + width(part.tail_mean_ns).max(width(part.median_ns)) + 6.0,
            y + 18.0,
            ms(part.tail_mean_ns),
        );
    }
    svg.push_str("</svg></figure>");
    svg
}

/// A number short enough for a tick.
fn short(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 1.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.3}")
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// The whole page.
pub(crate) fn load_page(manifest: &LoadManifest) -> String {
    let load = &manifest.load;
    let mut body = String::new();
    let _ = write!(
        body,
        "<h1>load: {}</h1><p>{} · run {} · {} · status <b>{}</b>{}</p>",
        escape(&manifest.target),
        escape(&manifest.profile_name),
        escape(&manifest.run_id),
        escape(&manifest.host.cpu_model),
        match manifest.status {
            profiling_core::driver::session::LoadStatus::Completed => "completed",
            profiling_core::driver::session::LoadStatus::Interrupted => "interrupted",
            profiling_core::driver::session::LoadStatus::Failed => "failed",
        },
        manifest
            .error
            .as_deref()
            .map_or_else(String::new, |e| format!(" — {}", escape(e)))
    );
    let request = &load.request;
    let minimums = match (request.min_queries, request.min_duration_s) {
        (0, seconds) => format!("{seconds} s"),
        (queries, 0.0) => format!("{queries} queries"),
        (queries, seconds) => format!("{queries} queries and {seconds} s"),
    };
    let _ = write!(
        body,
        "<p>scenario {}, {} worker{}, at least {minimums} ({}); latency from each query's intended send</p>",
        escape(&request.scenario),
        request.workers,
        if request.workers == 1 { "" } else { "s" },
        escape(&request.minimums_from)
    );
    let bound = request.p99_bound_ns.map(ms);
    // Steps by rate: the curve and the ranges against load.
    let mut steps: Vec<&LoadStep> = load.steps.iter().collect();
    steps.sort_by(|a, b| rate(a).total_cmp(&rate(b)));
    if steps.len() > 1 {
        let curve = Chart {
            id: "curve",
            title: "latency against throughput: p99 at each rate served (hollow: bound missed)",
            x_label: "queries a second (served)",
            y_label: "p99 latency, ms",
            series: vec![(
                "p99".to_owned(),
                steps
                    .iter()
                    .filter_map(|s| {
                        Some((
                            s.served_qps,
                            ms(s.p99_ns()?),
                            s.bound.as_ref().is_none_or(|b| b.held),
                        ))
                    })
                    .collect(),
            )],
            line: bound.map(|b| (b, format!("p99 bound {b} ms"))),
        };
        body.push_str(&curve.svg());
        let mut names: Vec<&str> = steps
            .iter()
            .flat_map(|s| s.ranges.iter().map(|r| r.name.as_str()))
            .collect();
        names.sort_unstable();
        names.dedup();
        let mut series: Series = names
            .iter()
            .map(|name| {
                (
                    (*name).to_owned(),
                    steps
                        .iter()
                        .filter_map(|s| {
                            let range = s.ranges.iter().find(|r| r.name == *name)?;
                            Some((rate(s), ms(range.p99_ns), true))
                        })
                        .collect(),
                )
            })
            .collect();
        series.push((
            "queueing".to_owned(),
            steps
                .iter()
                .filter_map(|s| {
                    let p99 = s.queueing.as_ref()?.get("p99")?.value_ns;
                    Some((rate(s), ms(p99), true))
                })
                .collect(),
        ));
        body.push_str(
            &Chart {
                id: "ranges",
                title: "each range's p99 against load",
                x_label: "queries a second (offered)",
                y_label: "p99, ms",
                series,
                line: None,
            }
            .svg(),
        );
        body.push_str(
            &Chart {
                id: "queueing",
                title: "the share of the mean latency spent queueing",
                x_label: "queries a second (offered)",
                y_label: "queueing share, %",
                series: vec![(
                    "queueing share".to_owned(),
                    steps
                        .iter()
                        .filter_map(|s| {
                            let latency = s.latency.as_ref()?.mean_ns.max(1);
                            let queueing = s.queueing.as_ref()?.mean_ns;
                            Some((rate(s), 100.0 * queueing as f64 / latency as f64, true))
                        })
                        .collect(),
                )],
                line: None,
            }
            .svg(),
        );
    }
    // The step the tables detail: what its slowest queries spent their
    // time on, beside a typical query, and how its latency and queue moved
    // while it ran.
    if let Some(step) = load.detailed_step() {
        if let Some(tail) = &step.tail {
            body.push_str(&tail_bars(tail));
        }
        if step.timeline.len() > 1 {
            body.push_str(&timeline_charts(step, bound));
        }
    }
    if let Some(peak) = &load.peak {
        let _ = write!(
            body,
            "<p id=\"peak\">peak: <b>{}</b> — {}</p>",
            peak.peak_qps.map_or_else(
                || "no rate held the bound".to_owned(),
                |q| format!("{q:.1} queries a second")
            ),
            escape(&peak.search)
        );
    }
    let mut tables = Vec::new();
    let _ = crate::load::write_tables(manifest, &mut tables);
    let _ = write!(
        body,
        "<h2>tables</h2><pre>{}</pre>",
        escape(&String::from_utf8_lossy(&tables))
    );
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>load: {}</title><style>body{{font-family:sans-serif;margin:2em;max-width:70em}}figure{{margin:1em 0}}figcaption{{font-weight:bold;margin-bottom:.3em}}pre{{font-size:12px;overflow-x:auto}}</style></head><body>{body}</body></html>\n",
        escape(&manifest.target)
    )
}
