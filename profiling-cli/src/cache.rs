//! `profile-cli cache`: the decoded-image cache that `--cache` fills
//! (`profiling_sources::cache`), and what a run says about it.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
#[cfg(feature = "sources")]
use profiling_sources::cache;

use profiling_core::data::human_bytes;
use profiling_core::data::CacheSummary;
use profiling_core::driver::session;

#[derive(Debug, Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    command: CacheCommand,
}

#[derive(Debug, Subcommand)]
enum CacheCommand {
    /// Remove every decoded image the cache holds, and say how much that freed.
    ///
    /// The cache is `.cache/images/` under the root of the run directories: the workspace's
    /// inference_profiling/, or DIR for runs made with --output-dir DIR (or `output_dir: DIR`).
    /// Runs fill it again as they decode.
    ///
    /// Exit codes: 0 emptied (or already empty); 1 a file could not be removed.
    Clean(CleanArgs),
}

#[derive(Debug, Args)]
struct CleanArgs {
    /// Empty the cache of runs made with --output-dir DIR instead of the workspace's.
    #[arg(long, value_name = "DIR")]
    output_dir: Option<PathBuf>,
}

impl CleanArgs {
    /// The root of the run directories whose caches are cleaned: the output
    /// directory, else the workspace's.
    fn root(&self, workspace_root: &Path) -> PathBuf {
        session::absolute(&session::run_root(
            self.output_dir.as_deref(),
            workspace_root,
        ))
    }
}

impl CacheArgs {
    /// Cleans the cache under `dir` when `--output-dir` does not say.
    pub(crate) fn default_output_dir(&mut self, dir: PathBuf) {
        match &mut self.command {
            CacheCommand::Clean(clean) => {
                clean.output_dir.get_or_insert(dir);
            }
        }
    }
}

#[cfg(feature = "sources")]
pub fn cache_command(
    args: CacheArgs,
    workspace_root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    match args.command {
        CacheCommand::Clean(clean) => {
            let root = clean.root(workspace_root);
            let dir = cache::images_dir(&root);
            let files =
                |count: u64| format!("{count} {}", if count == 1 { "file" } else { "files" });
            match cache::clean(&root) {
                Ok(cleaned) => {
                    if cleaned.files == 0 {
                        writeln!(out, "the image cache is empty: {}", dir.display())?;
                    } else {
                        writeln!(
                            out,
                            "freed {} ({}) from the image cache: {}",
                            human_bytes(cleaned.bytes),
                            files(cleaned.files),
                            dir.display()
                        )?;
                    }
                    if cleaned.left > 0 {
                        writeln!(
                            err,
                            "note: left {} in {} that the cache did not write",
                            files(cleaned.left),
                            dir.display()
                        )?;
                    }
                    Ok(crate::exit::EXIT_OK)
                }
                Err(error) => {
                    writeln!(
                        err,
                        "error: cannot empty the image cache {}: {error}",
                        dir.display()
                    )?;
                    Ok(crate::exit::EXIT_TARGET_FAILED)
                }
            }
        }
    }
}

/// Without the `sources` feature the binary links no source that keeps a
/// cache, and has nothing of its own to clean: it says so, and names a
/// cache folder that a build with the feature left.
#[cfg(not(feature = "sources"))]
pub fn cache_command(
    args: CacheArgs,
    workspace_root: &Path,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<u8> {
    match args.command {
        CacheCommand::Clean(clean) => {
            let root = clean.root(workspace_root);
            let dir = root.join(profiling_core::data::CACHE_DIR);
            if dir.exists() {
                writeln!(
                    err,
                    "error: {} holds what a build with the `sources` feature kept; this binary is built without it (profiling-sources) and keeps no cache: turn the feature on to clean it, or remove the folder",
                    dir.display()
                )?;
                Ok(crate::exit::EXIT_TARGET_FAILED)
            } else {
                writeln!(
                    out,
                    "the image cache is empty: this binary is built without the `sources` feature and keeps none ({})",
                    dir.display()
                )?;
                Ok(crate::exit::EXIT_OK)
            }
        }
    }
}

/// The line a run prints about its image cache, after its summary: its
/// hits and misses, the damaged entries among the misses, what it stored
/// and evicted.
pub fn summary_line(summary: &CacheSummary) -> String {
    let count = |count: u64, one: &str, more: &str| {
        format!("{count} {}", if count == 1 { one } else { more })
    };
    let mut line = format!(
        "image cache: {}, {}",
        count(summary.hits, "hit", "hits"),
        count(summary.misses, "miss", "misses")
    );
    if summary.damaged > 0 {
        line.push_str(&format!(
            " ({} damaged, decoded afresh)",
            count(summary.damaged, "entry", "entries")
        ));
    }
    if summary.stored > 0 {
        line.push_str(&format!(
            ", {} decoded and stored ({})",
            summary.stored,
            human_bytes(summary.stored_bytes)
        ));
    }
    if summary.evicted > 0 {
        line.push_str(&format!(
            ", {} used longest ago removed to stay within {}",
            summary.evicted,
            human_bytes(summary.max_bytes)
        ));
    }
    format!("{line}: {}", summary.dir.display())
}

/// The warning about images that could not be stored, when some could not.
pub fn failure_line(summary: &CacheSummary) -> Option<String> {
    let first = summary.first_failure.as_deref()?;
    Some(format!(
        "warning: image cache: {} {} not stored, the run went on without them: {first}",
        summary.store_failures,
        if summary.store_failures == 1 {
            "image"
        } else {
            "images"
        }
    ))
}

/// The cache's part of `run --json`'s document.
pub fn json(summary: &CacheSummary) -> serde_json::Value {
    serde_json::json!({
        "dir": summary.dir,
        "max_bytes": summary.max_bytes,
        "hits": summary.hits,
        "misses": summary.misses,
        "damaged": summary.damaged,
        "stored": summary.stored,
        "stored_bytes": summary.stored_bytes,
        "evicted": summary.evicted,
        "store_failures": summary.store_failures,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary() -> CacheSummary {
        CacheSummary {
            dir: PathBuf::from("/w/inference_profiling/.cache/images"),
            max_bytes: 2 << 30,
            ..CacheSummary::default()
        }
    }

    #[test]
    fn a_warm_run_says_every_image_came_from_the_cache() {
        let line = summary_line(&CacheSummary {
            hits: 64,
            ..summary()
        });
        assert_eq!(
            line,
            "image cache: 64 hits, 0 misses: /w/inference_profiling/.cache/images"
        );
    }

    #[test]
    fn a_cold_run_says_what_it_stored_and_what_it_evicted() {
        let line = summary_line(&CacheSummary {
            hits: 1,
            misses: 2,
            stored: 2,
            stored_bytes: 3 << 20,
            evicted: 1,
            ..summary()
        });
        assert_eq!(
            line,
            "image cache: 1 hit, 2 misses, 2 decoded and stored (3.0 MiB), 1 used longest ago removed to stay within 2.0 GiB: /w/inference_profiling/.cache/images"
        );
        assert_eq!(failure_line(&summary()), None);
        let failed = CacheSummary {
            store_failures: 2,
            first_failure: Some("/w: Read-only file system (os error 30)".to_owned()),
            ..summary()
        };
        assert_eq!(
            failure_line(&failed).unwrap(),
            "warning: image cache: 2 images not stored, the run went on without them: /w: Read-only file system (os error 30)"
        );
    }
}
