//! Reading values out of YAML documents, for the config, the data sources
//! and the targets' parameters: a mapping into a type (with the keys it
//! left unread), sizes, literal paths, and values as error messages name
//! them.

use serde_yaml::{Mapping, Value};

/// A size in bytes: a whole number, or a number with a unit (`B`, `KB`,
/// `MB`, `GB`, `TB` in powers of 1000, `KiB`, `MiB`, `GiB`, `TiB` in powers
/// of 1024, any case), more than zero.
///
/// ```
/// use profiling_core::yaml::parse_size;
///
/// assert_eq!(parse_size(&serde_yaml::from_str("2 GiB").unwrap()), Ok(2 << 30));
/// assert_eq!(parse_size(&serde_yaml::from_str("1.5MB").unwrap()), Ok(1_500_000));
/// assert_eq!(parse_size(&serde_yaml::from_str("4096").unwrap()), Ok(4096));
/// assert!(parse_size(&serde_yaml::from_str("-1").unwrap()).is_err());
/// ```
pub fn parse_size(value: &Value) -> Result<u64, String> {
    let expected = || {
        format!(
            "expected a size: a whole number of bytes, or a number with a unit (`2 GiB`, `500 MB`), got {}",
            describe_value(value)
        )
    };
    let bytes = match value {
        Value::Number(number) => number.as_u64().ok_or_else(expected)?,
        Value::String(text) => crate::units::parse_size(text).map_err(|message| {
            if message.starts_with("expected") {
                expected()
            } else {
                message
            }
        })?,
        _ => return Err(expected()),
    };
    if bytes == 0 {
        return Err(
            "must be more than 0 bytes: to keep no images, leave `cache` out or set it to `false`"
                .to_owned(),
        );
    }
    Ok(bytes)
}

/// Paths are taken literally; a leading `~` would name a directory called
/// `~`, which is never what was meant.
pub fn check_literal_path(path: &str) -> Result<(), String> {
    if path.starts_with('~') {
        Err(format!(
            "`{path}` starts with `~`, which is not expanded: write the absolute path instead"
        ))
    } else {
        Ok(())
    }
}

/// Deserializes a mapping into `T`. On failure, the key path serde names
/// (when it names one) and the message, without positions: they would
/// point into the re-serialized text, not the user's file.
pub(crate) fn deserialize_mapping<T: serde::de::DeserializeOwned>(
    mapping: &Mapping,
) -> Result<T, (Option<String>, String)> {
    deserialize_mapping_noting_unused(mapping).map(|(value, _)| value)
}

/// [`deserialize_mapping`], with the keys `T` did not read (dotted paths,
/// `a.b` for a key `b` under `a`), in the order they came.
pub(crate) fn deserialize_mapping_noting_unused<T: serde::de::DeserializeOwned>(
    mapping: &Mapping,
) -> Result<(T, Vec<String>), (Option<String>, String)> {
    // Through text, so that serde_yaml's errors carry the key path.
    let text = serde_yaml::to_string(mapping).map_err(|error| (None, error.to_string()))?;
    let mut unused = Vec::new();
    serde_ignored::deserialize(serde_yaml::Deserializer::from_str(&text), |path| {
        unused.push(path.to_string())
    })
    .map(|value| (value, unused))
    .map_err(|error: serde_yaml::Error| {
        let mut message = error.to_string();
        if let Some(at) = message.rfind(" at line ") {
            message.truncate(at);
        }
        match message.split_once(": ") {
            Some((key, rest)) if !key.contains(' ') => (Some(key.to_owned()), rest.to_owned()),
            _ => (None, message),
        }
    })
}

/// A short description of a YAML value for error messages.
pub fn describe_value(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("the boolean `{b}`"),
        Value::Number(n) => format!("the number `{n}`"),
        Value::String(s) => format!("the string `{s}`"),
        Value::Sequence(_) => "a list".to_owned(),
        Value::Mapping(_) => "a mapping".to_owned(),
        Value::Tagged(tagged) => format!("a value tagged `{}`", tagged.tag),
    }
}
