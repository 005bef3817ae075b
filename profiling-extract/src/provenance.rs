//! Where a snippet comes from and how it is made and run again: the
//! production doc line, the source's commit, the `new` command that makes
//! it and the `nsys` command that profiles it.

use std::path::{Path, PathBuf};

use profiling_core::device::Device;

use crate::select::SourceSpec;
use crate::source::display_path;
use crate::{workspace, NewSnippet};

/// The command a user types to run snippets of the workspace at `root`:
/// `profile-cli` (which builds and runs the workspace's own `profile`
/// binary) where `init` made a profiling crate, `scripts/profile` in this
/// project's own checkout.
pub fn runner_command(root: &Path) -> &'static str {
    if workspace::profiling_crate(root).is_some() {
        "profile-cli"
    } else {
        "scripts/profile"
    }
}

/// The binary that runs snippets of the workspace at `root`, as
/// `--print-nsys-command` names it: the workspace's own `profile` where
/// `init` made a profiling crate, else this project's `profile-cli`.
fn runner_binary(root: &Path) -> PathBuf {
    if workspace::profiling_crate(root).is_some() {
        root.join("target/release/profile")
    } else {
        root.join("target/release/profile-cli")
    }
}

/// The first paragraph of a doc comment, on one line.
pub(crate) fn first_doc_paragraph(attrs: &[syn::Attribute]) -> Option<String> {
    let lines = attrs.iter().filter_map(|attr| match &attr.meta {
        syn::Meta::NameValue(meta) if meta.path.is_ident("doc") => match &meta.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(text),
                ..
            }) => Some(text.value()),
            _ => None,
        },
        _ => None,
    });
    let paragraph: Vec<String> = lines
        .flat_map(|text| {
            text.lines()
                .map(|l| l.trim().to_owned())
                .collect::<Vec<_>>()
        })
        .skip_while(String::is_empty)
        .take_while(|line| !line.is_empty())
        .collect();
    (!paragraph.is_empty()).then(|| paragraph.join(" "))
}

/// The commit checked out where `file` is, and whether `file` differs from
/// it (not the rest of the tree); or why there is no commit.
pub(crate) fn git_provenance(file: &Path) -> profiling_core::driver::provenance::GitState {
    use profiling_core::driver::provenance::GitState;
    use std::ffi::OsStr;
    let Some(dir) = file.parent() else {
        return GitState::NotACheckout;
    };
    let state = profiling_core::driver::provenance::git_state(dir);
    let GitState::Commit { commit, .. } = state else {
        return state;
    };
    let status = profiling_core::driver::provenance::git_output(
        dir,
        [
            OsStr::new("--no-optional-locks"),
            OsStr::new("status"),
            OsStr::new("--porcelain"),
            OsStr::new("--"),
            file.as_os_str(),
        ],
    );
    GitState::Commit {
        commit,
        dirty: status.is_some_and(|s| !s.is_empty()),
    }
}

/// The `profile-cli new` command that makes the same snippet.
pub(crate) fn command_line(
    request: &NewSnippet,
    source: &str,
    directory: &Path,
    root: &Path,
) -> String {
    let spec = SourceSpec {
        file: PathBuf::from(source),
        selector: request.from.selector.clone(),
    };
    let mut words = vec![
        "profile-cli".to_owned(),
        "new".to_owned(),
        request.name.clone(),
        "--from".to_owned(),
        spec.to_string(),
    ];
    if request.data_source != "dummy" {
        words.extend(["--data-source".to_owned(), request.data_source.clone()]);
    }
    if request.device != Device::Cpu {
        words.extend(["--device".to_owned(), request.device.to_string()]);
    }
    if !request.type_args.is_empty() {
        words.extend(["--type-args".to_owned(), request.type_args.to_string()]);
    }
    if request.directory.is_some() {
        words.extend(["--directory".to_owned(), display_path(directory, root)]);
    }
    words
        .iter()
        .map(|w| profiling_core::driver::nsys::shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The command `--print-nsys-command` prints for the generated config,
/// with the workspace root shown as `<repo>`.
pub(crate) fn nsys_command(request: &NewSnippet, root: &Path, config: &Path) -> String {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let run_dir = config
        .parent()
        .unwrap_or(Path::new("."))
        .join("runs")
        .join("smoke");
    let word = |text: &str| text.to_owned();
    let program = runner_binary(&root);
    let mut lines = vec![vec![
        program.to_string_lossy().into_owned(),
        word("run"),
        request.name.clone(),
    ]];
    for (option, value) in [
        ("--config", config.to_string_lossy().into_owned()),
        ("--data-source", request.data_source.clone()),
        ("--device", request.device.to_string()),
        ("--warmup", "10".to_owned()),
        ("--iterations", "100".to_owned()),
        (
            "--capture-range",
            profiling_core::driver::config::DEFAULT_CAPTURE_RANGE.to_owned(),
        ),
        ("--record-loading", "eager".to_owned()),
        ("--seed", "0".to_owned()),
        ("--run-id", "smoke".to_owned()),
    ] {
        lines.push(vec![word(option), value]);
    }
    let command = profiling_core::driver::nsys::nsys_command(
        &profiling_core::driver::nsys::NsysCapture {
            run_dir: &run_dir,
            capture_range: profiling_core::driver::config::DEFAULT_CAPTURE_RANGE,
            cuda: request.device.is_cuda(),
            sample: false,
            args: &profiling_core::driver::nsys::NsysArgs::default(),
        },
        &lines,
        &program.to_string_lossy(),
    );
    command.render().replace(&*root.to_string_lossy(), "<repo>")
}
