//! Where a key's value starts in a config file, for errors found after
//! the file was parsed.

use std::fmt;
use std::path::Path;

use serde_yaml::Value;

use super::read::read_text;

/// Where (line and column, from 1) the value of the dotted `key` (`a.b`
/// for `b` under `a`; a number for an entry of a list) starts in the
/// config file `path`, for errors found after the config was parsed;
/// `None` when the file cannot be read again or has no such key.
pub fn locate_key(path: &Path, key: &str) -> Option<(usize, usize)> {
    let text = read_text(path).ok()?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let segments: Vec<&str> = key.split('.').collect();
    let error = serde::de::DeserializeSeed::deserialize(
        KeyFinder(&segments),
        serde_yaml::Deserializer::from_str(text),
    )
    .err()?;
    if !error.to_string().contains(KeyFinder::FOUND) {
        return None;
    }
    error.location().map(|at| (at.line(), at.column()))
}

/// Walks a YAML document down the segments of a key and fails on the
/// value at its end: serde_yaml's error then carries that value's position.
struct KeyFinder<'a>(&'a [&'a str]);

impl KeyFinder<'_> {
    const FOUND: &'static str = "found the key";
}

impl<'de> serde::de::DeserializeSeed<'de> for KeyFinder<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        match self.0 {
            [] => deserializer.deserialize_any(Found),
            _ => deserializer.deserialize_any(self),
        }
    }
}

/// Refuses any value, so that serde_yaml's error names where it is.
struct Found;

impl serde::de::Visitor<'_> for Found {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str(KeyFinder::FOUND)
    }
}

impl<'de> serde::de::Visitor<'de> for KeyFinder<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a mapping or a list")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Value>()? {
            let matches = match &key {
                Value::String(key) => key == self.0[0],
                Value::Number(number) => number.to_string() == self.0[0],
                Value::Bool(flag) => flag.to_string() == self.0[0],
                _ => false,
            };
            if matches {
                return map.next_value_seed(KeyFinder(&self.0[1..]));
            }
            map.next_value::<serde::de::IgnoredAny>()?;
        }
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let wanted: Option<usize> = self.0[0].parse().ok();
        let mut index = 0;
        loop {
            if Some(index) == wanted {
                return seq.next_element_seed(KeyFinder(&self.0[1..])).map(|_| ());
            }
            if seq.next_element::<serde::de::IgnoredAny>()?.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}
