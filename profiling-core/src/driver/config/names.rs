//! The checks of names that become directory names or reach Nsight:
//! profile names, run ids, capture ranges.

/// A profile name becomes a directory name: `[A-Za-z0-9._-]+`, starting with
/// a letter or digit, at most 100 characters.
pub fn check_profile_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("must not be empty".to_owned());
    }
    let valid =
        name.len() <= 100 && name.as_bytes()[0].is_ascii_alphanumeric() && is_plain_name(name);
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a valid profile name: use letters, digits, `-`, `_` and `.`, starting with a letter or digit (at most 100 characters)"
        ))
    }
}

/// Letters, digits, `-`, `_` and `.` only: safe as one path component.
fn is_plain_name(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// Run ids become directory names: `[A-Za-z0-9._-]+`, not starting with
/// `.` (the runs' locks and leftovers do).
pub fn check_run_id(run_id: &str) -> Result<(), String> {
    if run_id.starts_with('.') && run_id != "." && run_id != ".." && is_plain_name(run_id) {
        // `.<id>.claim`, `.<id>.partial-<pid>` and `.<id>.replaced-<pid>`
        // beside a run directory are the project's own: an id that starts
        // with `.` could take one of their names.
        return Err(format!(
            "`{run_id}` is not a valid run id: it must not start with `.` (names that start with `.` beside the runs are their locks and leftovers)"
        ));
    }
    let valid = !run_id.is_empty()
        && run_id != "."
        && run_id != ".."
        && run_id.len() <= 200
        && is_plain_name(run_id);
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`{run_id}` is not a valid run id: use letters, digits, `-`, `_` and `.` (not first, no path separators)"
        ))
    }
}

pub(super) fn check_capture_range(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("must not be empty".to_owned());
    }
    if name.contains('@') {
        return Err(format!(
            "`{name}` contains `@`, which Nsight's --nvtx-capture reads as the start of a domain name"
        ));
    }
    if name.contains('\0') {
        return Err("must not contain a NUL character".to_owned());
    }
    Ok(())
}
