//! `history diff BASE HEAD`: each range's figure at two commits, the
//! change between them, and the changes found in between.

use std::io::Write;
use std::path::Path;

use clap::Args;
use profiling_history::{Change, Metric, SeriesQuery};

use super::{
    choose_by, describe_machine, detect, first_parent_line, group, open_existing, parse_metric,
    value_text, StoreArgs,
};
use crate::exit::{EXIT_OK, EXIT_USAGE};

#[derive(Debug, Args)]
pub(crate) struct DiffArgs {
    /// The commit to compare from (a hash, a branch, a tag).
    base: String,
    /// The commit to compare to.
    #[arg(default_value = "HEAD")]
    head: String,
    /// Only this target (repeatable); by default every target with runs at either commit.
    #[arg(long = "target", value_name = "NAME")]
    targets: Vec<String>,
    /// The figure to compare, as `history --metric`.
    #[arg(long, default_value = "p50", value_parser = parse_metric)]
    metric: Metric,
    /// Only runs of this machine (its fingerprint, or the first digits of it).
    #[arg(long, value_name = "FINGERPRINT")]
    machine: Option<String>,
    /// Only runs of this config (its hash, or the first digits of it).
    #[arg(long, value_name = "HASH")]
    config: Option<String>,
    /// Print Markdown, to paste into a pull request.
    #[arg(long, conflicts_with = "json")]
    markdown: bool,
    /// Print one JSON document instead.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pub(super) store: StoreArgs,
}

/// One range's row: its figure at both commits.
#[derive(Debug, serde::Serialize)]
struct Row {
    path: String,
    base: Option<u64>,
    head: Option<u64>,
    /// `head / base`.
    ratio: Option<f64>,
}

/// A target's rows on one machine and config, and the changes found
/// between the commits.
#[derive(Debug, serde::Serialize)]
struct Section {
    target: String,
    machine: String,
    machine_text: String,
    config: String,
    rows: Vec<Row>,
    changes: Vec<Change>,
}

pub(crate) fn diff(
    args: DiffArgs,
    workspace_root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    let mut store = match open_existing(&args.store, workspace_root, err)? {
        Ok(store) => store,
        Err(code) => return Ok(code),
    };
    let commits = first_parent_line(workspace_root);
    let resolve = |rev: &str| -> Result<(usize, String), String> {
        let full = rev_parse(workspace_root, rev)
            .ok_or_else(|| format!("`{rev}` is not a commit of this repository"))?;
        commits
            .iter()
            .position(|c| *c == full)
            .map(|at| (at, full))
            .ok_or_else(|| format!("`{rev}` is not a commit of HEAD's first-parent line"))
    };
    let ((base_at, base), (head_at, head)) = match (resolve(&args.base), resolve(&args.head)) {
        (Ok(base), Ok(head)) => (base, head),
        (Err(message), _) | (_, Err(message)) => {
            writeln!(err, "error: {message}")?;
            return Ok(EXIT_USAGE);
        }
    };
    let targets = if args.targets.is_empty() {
        store.profiles()?
    } else {
        let known = store.profiles()?;
        if let Some(missing) = args.targets.iter().find(|t| !known.contains(t)) {
            writeln!(
                err,
                "error: {}: no runs of `{missing}` (it holds runs of {})",
                store.name(),
                known.join(", ")
            )?;
            return Ok(EXIT_USAGE);
        }
        args.targets.clone()
    };
    let mut sections = Vec::new();
    for target in &targets {
        let all = store.series(&SeriesQuery {
            profile: target.clone(),
            metric: args.metric,
            machine: None,
            config: None,
        })?;
        let chosen = match choose_by(&all, &args.machine, &args.config, &[]) {
            Ok(chosen) => chosen,
            // Another target's machines: nothing of this one there.
            Err(_) => continue,
        };
        let groups = group(&chosen, &commits, false);
        let (found, _) = detect(&groups, &profiling_history::Detector::default());
        for g in &groups {
            let rows: Vec<Row> = g
                .series
                .iter()
                .map(|(series, points)| {
                    let at = |commit: &str| {
                        points
                            .iter()
                            .find(|p| p.commit.as_deref() == Some(commit))
                            .map(|p| p.value)
                    };
                    let (b, h) = (at(&base), at(&head));
                    Row {
                        path: series.path.clone(),
                        base: b,
                        head: h,
                        ratio: b
                            .zip(h)
                            .filter(|(b, _)| *b > 0)
                            .map(|(b, h)| h as f64 / b as f64),
                    }
                })
                .collect();
            if rows.iter().all(|r| r.base.is_none() && r.head.is_none()) {
                continue;
            }
            let (low, high) = (base_at.min(head_at), base_at.max(head_at));
            let changes = found
                .iter()
                .filter(|c| c.machine == g.machine && c.config == g.config)
                .filter(|c| {
                    c.commit
                        .as_ref()
                        .and_then(|commit| commits.iter().position(|x| x == commit))
                        .is_some_and(|at| at > low && at <= high)
                })
                .cloned()
                .collect();
            sections.push(Section {
                target: target.clone(),
                machine: g.machine.to_owned(),
                machine_text: describe_machine(&mut store, g.machine),
                config: g.config.to_owned(),
                rows,
                changes,
            });
        }
    }
    if args.json {
        let document = serde_json::json!({
            "store": store.name(),
            "base": base,
            "head": head,
            "metric": args.metric,
            "sections": sections,
        });
        writeln!(out, "{document}")?;
        return Ok(EXIT_OK);
    }
    let text = if args.markdown {
        markdown(&args, &base, &head, &sections)
    } else {
        plain(&args, &base, &head, &sections)
    };
    write!(out, "{text}")?;
    Ok(EXIT_OK)
}

/// The full hash of commit `rev` in `dir`'s repository.
fn rev_parse(dir: &Path, rev: &str) -> Option<String> {
    profiling_core::driver::provenance::git_output(
        dir,
        [
            "rev-parse".to_owned(),
            "--verify".to_owned(),
            "--quiet".to_owned(),
            "--end-of-options".to_owned(),
            format!("{rev}^{{commit}}"),
        ],
    )
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(10)]
}

fn cell(metric: Metric, value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| value_text(metric, v))
}

fn change_text(ratio: Option<f64>) -> String {
    ratio.map_or_else(
        || "-".to_owned(),
        |r| format!("{:+.1} %", (r - 1.0) * 100.0),
    )
}

fn found_text(change: &Change) -> String {
    let mut text = format!(
        "{} {:+.1} % [{:+.1} %, {:+.1} %] from {}",
        change.path,
        (change.ratio - 1.0) * 100.0,
        (change.low - 1.0) * 100.0,
        (change.high - 1.0) * 100.0,
        change.commit.as_deref().map_or("-", short)
    );
    if !change.also.is_empty() {
        text.push_str(&format!(" (moved with it: {})", change.also.join(", ")));
    }
    text
}

/// Whether a change was found in `path` (or moved it) between the
/// commits.
fn found_in<'c>(section: &'c Section, path: &str) -> Option<&'c Change> {
    section
        .changes
        .iter()
        .find(|c| c.path == path || c.also.iter().any(|a| a == path))
}

fn markdown(args: &DiffArgs, base: &str, head: &str, sections: &[Section]) -> String {
    let mut text = format!(
        "### Performance: `{}` → `{}` ({})\n\n",
        short(base),
        short(head),
        args.metric.name()
    );
    if sections.is_empty() {
        text.push_str("No runs at either commit.\n");
        return text;
    }
    for section in sections {
        text.push_str(&format!(
            "**{}** · machine `{}` · config `{}`\n\n| range | `{}` | `{}` | change |\n|---|---:|---:|---:|\n",
            section.target,
            section.machine_text,
            &section.config[..section.config.len().min(16)],
            short(base),
            short(head)
        ));
        for row in &section.rows {
            let change = change_text(row.ratio);
            let change = if found_in(section, &row.path).is_some() {
                format!("**{change}**")
            } else {
                change
            };
            text.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                row.path,
                cell(args.metric, row.base),
                cell(args.metric, row.head),
                change
            ));
        }
        text.push('\n');
        if section.changes.is_empty() {
            text.push_str("No lasting change found between them.\n\n");
        } else {
            text.push_str("Changes found between them (E-Divisive means, p ≤ 0.01):\n\n");
            for change in &section.changes {
                text.push_str(&format!("- {}\n", found_text(change)));
            }
            text.push('\n');
        }
    }
    text
}

fn plain(args: &DiffArgs, base: &str, head: &str, sections: &[Section]) -> String {
    let mut text = format!(
        "{} -> {} ({})\n",
        short(base),
        short(head),
        args.metric.name()
    );
    if sections.is_empty() {
        text.push_str("no runs at either commit\n");
        return text;
    }
    for section in sections {
        text.push_str(&format!(
            "\n{}: machine {}, config {}\n",
            section.target,
            section.machine_text,
            &section.config[..section.config.len().min(16)]
        ));
        let width = section
            .rows
            .iter()
            .map(|r| r.path.len())
            .max()
            .unwrap_or(5)
            .max(5);
        text.push_str(&format!(
            "  {:width$}  {:>12}  {:>12}  {:>9}\n",
            "range",
            short(base),
            short(head),
            "change"
        ));
        for row in &section.rows {
            text.push_str(&format!(
                "  {:width$}  {:>12}  {:>12}  {:>9}{}\n",
                row.path,
                cell(args.metric, row.base),
                cell(args.metric, row.head),
                change_text(row.ratio),
                if found_in(section, &row.path).is_some() {
                    "  (change found)"
                } else {
                    ""
                }
            ));
        }
        for change in &section.changes {
            text.push_str(&format!("  change found: {}\n", found_text(change)));
        }
    }
    text
}
