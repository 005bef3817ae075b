//! `ab --junit FILE`: the gates of a pair as JUnit XML, the report format
//! every CI system shows (GitHub Actions through a reporter action, GitLab,
//! Jenkins, Buildkite): one `<testsuite>` per judged pair, one
//! `<testcase>` per gate, a `<failure>` for a gate that failed and an
//! `<error>` for one that could not be decided. Written whole (a
//! temporary file, then a rename).

use std::fmt::Write as _;
use std::path::Path;

use profiling_compare::gates::{GateOutcome, GateResult};

/// One pair's gates as a `<testsuite>` named `name` (the profile and the
/// pair's id).
pub(crate) fn testsuite(name: &str, results: &[GateResult]) -> String {
    let failures = results
        .iter()
        .filter(|r| r.outcome == GateOutcome::Fails)
        .count();
    let errors = results
        .iter()
        .filter(|r| r.outcome == GateOutcome::Unclear)
        .count();
    let mut xml = format!(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\">\n",
        escape(name),
        results.len()
    );
    for result in results {
        let what = crate::experiment::gate_line(result);
        let _ = write!(
            xml,
            "    <testcase classname=\"{}\" name=\"{}\"",
            escape(name),
            escape(&result.gate.text)
        );
        match result.outcome {
            GateOutcome::Holds => {
                let _ = writeln!(
                    xml,
                    ">\n      <system-out>{}</system-out>\n    </testcase>",
                    escape(&what)
                );
            }
            GateOutcome::Fails => {
                let _ = writeln!(
                    xml,
                    ">\n      <failure type=\"gate\" message=\"{}\">{}</failure>\n    </testcase>",
                    escape(&format!("gate {} failed", result.gate.text)),
                    escape(&what)
                );
            }
            GateOutcome::Unclear => {
                let _ = writeln!(
                    xml,
                    ">\n      <error type=\"inconclusive\" message=\"{}\">{}</error>\n    </testcase>",
                    escape(&format!("gate {} undecided", result.gate.text)),
                    escape(&what)
                );
            }
        }
    }
    xml.push_str("  </testsuite>\n");
    xml
}

/// Writes the suites into `path` as one `<testsuites>` document.
pub(crate) fn write(path: &Path, suites: &[String]) -> std::io::Result<()> {
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"profile-cli ab\">\n",
    );
    for suite in suites {
        xml.push_str(suite);
    }
    xml.push_str("</testsuites>\n");
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    profiling_core::driver::run_dir::write_atomically(path, xml.as_bytes())
}

/// `text` as XML character data or an attribute value: `&`, `<`, `>`,
/// quotes escaped, and control characters XML 1.0 cannot hold dropped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_control_characters_dropped() {
        assert_eq!(
            escape("p99[a<b]<=+2% & \"x\"\u{1}"),
            "p99[a&lt;b]&lt;=+2% &amp; &quot;x&quot;"
        );
    }
}
