//! The Nsight Systems command that captures exactly one run's capture range.
//!
//! Printed, never run: the user starts it on the machine with the GPU and
//! Nsight. One word per line, joined by ` \` continuations, each word
//! quoted for a POSIX shell where it needs to be.

use std::path::Path;

/// The lines of the `nsys profile` command around `command`, the
/// profiling command with every setting spelled out (a program and its
/// subcommand on its first line, then one option and its value per line).
pub fn nsys_lines(
    run_dir: &Path,
    capture_range: &str,
    command: &[Vec<String>],
) -> Vec<Vec<String>> {
    let line = |words: &[&str]| words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    let trace = run_dir.join("trace").to_string_lossy().into_owned();
    let capture = format!("--nvtx-capture={capture_range}@*");
    let mut lines = vec![
        line(&["nsys", "profile"]),
        line(&["-o", &trace]),
        line(&["--trace=cuda,osrt,nvtx"]),
        line(&["--sample=cpu"]),
        line(&["--cpuctxsw=process-tree"]),
        line(&["--capture-range=nvtx"]),
        line(&["--capture-range-end=stop"]),
        line(&[&capture]),
        // Lets Nsight match a capture range named by a plain, unregistered string.
        line(&["-e", "NSYS_NVTX_PROFILER_REGISTER_ONLY=0"]),
        line(&["--trace-fork-before-exec=true"]),
    ];
    lines.extend(command.iter().cloned());
    lines
}

/// Renders lines of words as one shell command with ` \` continuations,
/// quoting each word where it needs it.
pub fn render_command(lines: &[Vec<String>]) -> String {
    lines
        .iter()
        .map(|words| {
            words
                .iter()
                .map(|w| shell_quote(w))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join(" \\\n  ")
}

/// Quotes `word` for a POSIX shell when it holds anything but plainly safe
/// characters.
pub fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,+%@".contains(&b));
    if safe {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(shell_quote("--warmup"), "--warmup");
        assert_eq!(shell_quote("/a/b-c_d.e"), "/a/b-c_d.e");
        assert_eq!(
            shell_quote("--nvtx-capture=profile-target@*"),
            "'--nvtx-capture=profile-target@*'"
        );
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b"), "'a b'");
    }

    #[test]
    fn one_option_per_line_with_continuations() {
        let command = vec![
            vec![
                "/bin/profile-cli".to_owned(),
                "run".to_owned(),
                "smoke".to_owned(),
            ],
            vec!["--run-id".to_owned(), "r1".to_owned()],
        ];
        let text = render_command(&nsys_lines(
            Path::new("/r/runs/r1"),
            "profile-target",
            &command,
        ));
        let expected = [
            "nsys profile \\",
            "  -o /r/runs/r1/trace \\",
            "  --trace=cuda,osrt,nvtx \\",
            "  --sample=cpu \\",
            "  --cpuctxsw=process-tree \\",
            "  --capture-range=nvtx \\",
            "  --capture-range-end=stop \\",
            "  '--nvtx-capture=profile-target@*' \\",
            "  -e NSYS_NVTX_PROFILER_REGISTER_ONLY=0 \\",
            "  --trace-fork-before-exec=true \\",
            "  /bin/profile-cli run smoke \\",
            "  --run-id r1",
        ];
        assert_eq!(text.lines().collect::<Vec<_>>(), expected);
    }
}
