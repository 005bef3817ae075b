//! The grid of a sweep: `--set KEY=V1,V2,...` (or the config's `sweep:`
//! mapping) read into axes, each key checked against the keys a config
//! has, each value parsed as YAML, and the points the axes make.

use serde_yaml::{Mapping, Value};

use crate::data::parameter_names;
use crate::driver::config::{describe_value, WORKLOAD_KEYS};
use crate::suggest::near_matches;

/// Past this many points a sweep needs `--yes`.
pub const MAX_POINTS_WITHOUT_YES: usize = 1000;

pub use super::document::Axis;

/// A point of the grid: one value per axis, in axis order.
pub type Point = Vec<Value>;

/// Keys of a config that take one value each (dotted), besides the
/// workload keys ([`WORKLOAD_KEYS`], top-level and under `workload.`).
/// Keys under `target.parameters.` are the target's own; keys under
/// `data_source.` other than these are the source's parameters
/// ([`parameter_names`]).
const OTHER_KEYS: &[&str] = &[
    "gpu_timing",
    "memory",
    "write_report",
    "target.name",
    "target.profile_prepare",
    "data_source.name",
    "data_source.cache",
    "data_source.cache_max_bytes",
    "cuda.synchronize_before_warmup",
    "cuda.synchronize_after_warmup",
    "cuda.synchronize_before_capture",
    "cuda.synchronize_after_capture",
    "cuda.synchronize_each_iteration",
];

/// Every key a sweep may set, besides `target.parameters.*`, for a config
/// whose data source is `source`.
fn known_keys(source: &str) -> Vec<String> {
    let workload = WORKLOAD_KEYS
        .iter()
        .flat_map(|key| [(*key).to_owned(), format!("workload.{key}")]);
    let parameters = parameter_names(source)
        .into_iter()
        .map(|key| format!("data_source.{key}"));
    workload
        .chain(OTHER_KEYS.iter().map(|key| (*key).to_owned()))
        .chain(parameters)
        .collect()
}

/// Keys a sweep may not set: each point must be a run of the same profile
/// in the sweep's directory, with its manifest.
const FIXED_KEYS: &[(&str, &str)] = &[
    ("profile_name", "every point is a run of one profile"),
    ("profile.name", "every point is a run of one profile"),
    (
        "output_dir",
        "every point is written in the sweep's directory",
    ),
    ("write_manifest", "every point needs its manifest"),
    ("target.import_path", "every point runs one target"),
];

/// Checks `key` names something a config has; the error says which known
/// key is closest. `source` is the data source of the sweep's config,
/// whose parameters are known keys too.
pub fn check_key(key: &str, source: &str) -> Result<(), String> {
    if let Some((_, why)) = FIXED_KEYS.iter().find(|(fixed, _)| *fixed == key) {
        return Err(format!("`{key}` cannot be swept: {why}"));
    }
    if let Some(parameter) = key.strip_prefix("target.parameters.") {
        if parameter.split('.').all(|s| !s.is_empty()) {
            return Ok(());
        }
    }
    // The source's parameters may also be spelled under `parameters.` or
    // `data:`.
    let key_as_known = key
        .strip_prefix("data_source.parameters.")
        .or_else(|| key.strip_prefix("data."))
        .map_or_else(
            || key.to_owned(),
            |parameter| format!("data_source.{parameter}"),
        );
    let known = known_keys(source);
    if known.contains(&key_as_known) {
        return Ok(());
    }
    let near = near_matches(key, known.iter().map(String::as_str));
    let hint = match near.first() {
        Some(closest) => format!("; did you mean `{closest}`?"),
        None => "; keys are dotted config paths such as `workload.batch_size`, `data_source.record_count` or `target.parameters.NAME`".to_owned(),
    };
    Err(format!("unknown key `{key}`{hint}"))
}

/// Reads one `--set KEY=V1,V2,...`: the values are split at the commas
/// outside brackets, braces and quotes, and each is read as YAML
/// (`4`, `cuda:0`, `[240, 320, 3]`, `"a,b"`).
pub fn parse_set(text: &str) -> Result<Axis, String> {
    let Some((key, values)) = text.split_once('=') else {
        return Err(format!(
            "--set {text}: expected KEY=V1,V2,... (for example --set workload.batch_size=1,2,4)"
        ));
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(format!("--set {text}: the key is empty"));
    }
    if values.trim().is_empty() {
        return Err(format!("--set {key}: the list of values is empty"));
    }
    let values = split_values(values)
        .map_err(|message| format!("--set {key}: {message}"))?
        .into_iter()
        .map(|item| {
            if item.trim().is_empty() {
                return Err(format!("--set {key}: an empty value in `{values}`"));
            }
            serde_yaml::from_str::<Value>(item.trim()).map_err(|error| {
                format!("--set {key}: value `{}` is not YAML: {error}", item.trim())
            })
        })
        .collect::<Result<Vec<Value>, String>>()?;
    Ok(Axis {
        key: key.to_owned(),
        values,
    })
}

/// Splits at the commas that are not inside `[]`, `{}` or quotes.
fn split_values(text: &str) -> Result<Vec<&str>, String> {
    let mut items = Vec::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut start = 0;
    for (at, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("unbalanced `{c}` in `{text}`"));
                }
            }
            (None, ',') if depth == 0 => {
                items.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    if depth != 0 || quote.is_some() {
        return Err(format!("unclosed bracket or quote in `{text}`"));
    }
    items.push(&text[start..]);
    Ok(items)
}

/// Reads a config's `sweep:` mapping: `KEY: [V1, V2, ...]` entries (a
/// single value is a list of one), and `zip: true|false`.
pub fn from_config(sweep: &Value) -> Result<(Vec<Axis>, bool), String> {
    let Value::Mapping(mapping) = sweep else {
        return Err(format!(
            "sweep: expected a mapping of keys to lists of values, got {}",
            describe_value(sweep)
        ));
    };
    let mut axes = Vec::new();
    let mut zip = false;
    for (key, value) in mapping {
        let Some(key) = key.as_str() else {
            return Err(format!(
                "sweep: keys must be strings, got {}",
                describe_value(key)
            ));
        };
        if key == "zip" {
            zip = value.as_bool().ok_or_else(|| {
                format!(
                    "sweep.zip: expected `true` or `false`, got {}",
                    describe_value(value)
                )
            })?;
            continue;
        }
        let values = match value {
            Value::Sequence(values) => values.clone(),
            other => vec![other.clone()],
        };
        if values.is_empty() {
            return Err(format!("sweep.{key}: the list of values is empty"));
        }
        axes.push(Axis {
            key: key.to_owned(),
            values,
        });
    }
    Ok((axes, zip))
}

/// Checks the axes together: at least one, no key twice, and with `zip`
/// one length for every list.
pub fn check_axes(axes: &[Axis], zip: bool) -> Result<(), String> {
    if axes.is_empty() {
        return Err(
            "nothing to sweep: give --set KEY=V1,V2,... or a `sweep:` mapping in the config"
                .to_owned(),
        );
    }
    for (i, axis) in axes.iter().enumerate() {
        if axis.values.is_empty() {
            return Err(format!("--set {}: the list of values is empty", axis.key));
        }
        if axes[..i].iter().any(|a| a.key == axis.key) {
            return Err(format!("--set {}: the key is given twice", axis.key));
        }
    }
    if zip {
        let first = &axes[0];
        if let Some(other) = axes.iter().find(|a| a.values.len() != first.values.len()) {
            return Err(format!(
                "--zip takes the lists side by side, so they need one length: `{}` has {} values, `{}` has {}",
                first.key,
                first.values.len(),
                other.key,
                other.values.len()
            ));
        }
    }
    Ok(())
}

/// How many points the axes make.
pub fn point_count(axes: &[Axis], zip: bool) -> usize {
    if axes.is_empty() {
        0
    } else if zip {
        axes[0].values.len()
    } else {
        axes.iter()
            .map(|a| a.values.len())
            .fold(1usize, usize::saturating_mul)
    }
}

/// The points in grid order: the cartesian product with the last key
/// varying fastest, or with `zip` the lists side by side.
pub fn points(axes: &[Axis], zip: bool) -> Vec<Point> {
    let count = point_count(axes, zip);
    (0..count)
        .map(|index| {
            if zip {
                return axes.iter().map(|a| a.values[index].clone()).collect();
            }
            let mut rest = index;
            let mut point: Point = vec![Value::Null; axes.len()];
            for (slot, axis) in axes.iter().enumerate().rev() {
                point[slot] = axis.values[rest % axis.values.len()].clone();
                rest /= axis.values.len();
            }
            point
        })
        .collect()
}

/// A value as the grid shows it: plain scalars bare, the rest in YAML's
/// flow style (`[240, 320, 3]`).
pub fn show(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Sequence(items) => format!(
            "[{}]",
            items.iter().map(show).collect::<Vec<_>>().join(", ")
        ),
        Value::Mapping(mapping) => format!(
            "{{{}}}",
            mapping
                .iter()
                .map(|(k, v)| format!("{}: {}", show(k), show(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Tagged(tagged) => show(&tagged.value),
    }
}

/// The directory name of point `index`: its number, then each key's last
/// segment and value (`03-batch_size-4`), in the characters of a run id.
pub fn point_name(index: usize, count: usize, axes: &[Axis], point: &Point) -> String {
    let width = count.saturating_sub(1).to_string().len().max(2);
    let mut name = format!("{index:0width$}");
    for (axis, value) in axes.iter().zip(point) {
        let short = axis.key.rsplit('.').next().unwrap_or(&axis.key);
        let value = match value {
            Value::Sequence(items) => items.iter().map(show).collect::<Vec<_>>().join("x"),
            other => show(other),
        };
        name.push('-');
        name.push_str(short);
        name.push('-');
        name.push_str(&value);
    }
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    // Long names stay readable and within a file name's limit.
    safe.chars().take(120).collect()
}

/// The values of a point by key, for the manifest and `sweep.yaml`.
pub fn values_of(axes: &[Axis], point: &Point) -> Mapping {
    axes.iter()
        .zip(point)
        .map(|(axis, value)| (Value::from(axis.key.clone()), value.clone()))
        .collect()
}

/// Whether `value` has the YAML kind of `like` (a config's value for the
/// same key): integers pass for floats.
pub fn same_kind(value: &Value, like: &Value) -> bool {
    match (value, like) {
        (Value::Number(v), Value::Number(l)) => {
            !(l.is_i64() || l.is_u64()) || v.is_i64() || v.is_u64()
        }
        (Value::Tagged(v), _) => same_kind(&v.value, like),
        (_, Value::Tagged(l)) => same_kind(value, &l.value),
        _ => std::mem::discriminant(value) == std::mem::discriminant(like),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(key: &str, values: &[&str]) -> Axis {
        Axis {
            key: key.to_owned(),
            values: values
                .iter()
                .map(|v| serde_yaml::from_str(v).unwrap())
                .collect(),
        }
    }

    #[test]
    fn values_split_outside_brackets_and_quotes() {
        let parsed = parse_set("data_source.image_shape=[240,320,3], [480,640,3]").unwrap();
        assert_eq!(parsed.key, "data_source.image_shape");
        assert_eq!(
            parsed.values,
            vec![
                serde_yaml::from_str::<Value>("[240, 320, 3]").unwrap(),
                serde_yaml::from_str::<Value>("[480, 640, 3]").unwrap()
            ]
        );
        let parsed = parse_set("target.parameters.label=\"a,b\",c").unwrap();
        assert_eq!(parsed.values, vec![Value::from("a,b"), Value::from("c")]);
        let parsed = parse_set("device=cpu,cuda:0").unwrap();
        assert_eq!(
            parsed.values,
            vec![Value::from("cpu"), Value::from("cuda:0")]
        );
        let parsed = parse_set("workload.batch_size=1,2,4").unwrap();
        assert_eq!(
            parsed.values,
            vec![Value::from(1), Value::from(2), Value::from(4)]
        );
    }

    #[test]
    fn bad_sets_are_refused_by_name() {
        assert!(parse_set("workload.batch_size")
            .unwrap_err()
            .contains("KEY=V1,V2"));
        assert!(parse_set("workload.batch_size=")
            .unwrap_err()
            .contains("empty"));
        assert!(parse_set("workload.batch_size=1,,2")
            .unwrap_err()
            .contains("empty value"));
        assert!(parse_set("data_source.image_shape=[1,2")
            .unwrap_err()
            .contains("unclosed"));
    }

    #[test]
    fn unknown_keys_name_the_closest() {
        assert_eq!(
            check_key("workload.batchsize", "dummy").unwrap_err(),
            "unknown key `workload.batchsize`; did you mean `workload.batch_size`?"
        );
        assert_eq!(
            check_key("data_source.record_cont", "dummy").unwrap_err(),
            "unknown key `data_source.record_cont`; did you mean `data_source.record_count`?"
        );
        assert!(check_key("data_source.record_count", "dummy").is_ok());
        assert!(check_key("data_source.record_count", "images").is_err());
        assert!(check_key("target.parameters.size", "dummy").is_ok());
        assert!(check_key("output_dir", "dummy")
            .unwrap_err()
            .contains("cannot be swept"));
    }

    #[test]
    fn the_grid_is_a_product_with_the_last_key_fastest() {
        let axes = [axis("a", &["1", "2"]), axis("b", &["x", "y", "z"])];
        let grid = points(&axes, false);
        assert_eq!(grid.len(), 6);
        let shown: Vec<String> = grid
            .iter()
            .map(|p| p.iter().map(show).collect::<Vec<_>>().join(""))
            .collect();
        assert_eq!(shown, ["1x", "1y", "1z", "2x", "2y", "2z"]);
        assert_eq!(point_count(&axes, false), 6);
    }

    #[test]
    fn zip_takes_lists_side_by_side_of_one_length() {
        let axes = [axis("a", &["1", "2"]), axis("b", &["x", "y"])];
        let shown: Vec<String> = points(&axes, true)
            .iter()
            .map(|p| p.iter().map(show).collect::<Vec<_>>().join(""))
            .collect();
        assert_eq!(shown, ["1x", "2y"]);
        let uneven = [axis("a", &["1", "2"]), axis("b", &["x", "y", "z"])];
        assert!(check_axes(&uneven, true)
            .unwrap_err()
            .contains("`a` has 2 values, `b` has 3"));
        assert!(check_axes(&uneven, false).is_ok());
        assert!(check_axes(&[axis("a", &["1"]), axis("a", &["2"])], false)
            .unwrap_err()
            .contains("twice"));
    }

    #[test]
    fn point_names_are_safe_and_ordered() {
        let axes = [
            axis("workload.batch_size", &["4"]),
            axis("data_source.image_shape", &["[240, 320, 3]"]),
            axis("device", &["cuda:0"]),
        ];
        let point = points(&axes, false).remove(0);
        assert_eq!(
            point_name(3, 12, &axes, &point),
            "03-batch_size-4-image_shape-240x320x3-device-cuda_0"
        );
    }

    #[test]
    fn kinds_follow_the_configs_value() {
        let int = Value::from(224);
        let float: Value = serde_yaml::from_str("0.5").unwrap();
        assert!(same_kind(&Value::from(448), &int));
        assert!(!same_kind(&float, &int));
        assert!(same_kind(&Value::from(1), &float));
        assert!(!same_kind(&Value::from("big"), &int));
        assert!(same_kind(&Value::from("x"), &Value::from("y")));
    }

    #[test]
    fn a_config_sweep_mapping_reads_as_axes() {
        let value: Value =
            serde_yaml::from_str("{workload.batch_size: [1, 2], device: cpu, zip: false}").unwrap();
        let (axes, zip) = from_config(&value).unwrap();
        assert!(!zip);
        assert_eq!(
            axes,
            vec![
                axis("workload.batch_size", &["1", "2"]),
                axis("device", &["cpu"])
            ]
        );
        let empty: Value = serde_yaml::from_str("{warmup: []}").unwrap();
        assert!(from_config(&empty).unwrap_err().contains("empty"));
    }
}
