//! Target names: the rule every name follows, and the name a target gets
//! from its type when none is given.
//!
//! The rule keeps names usable unquoted on a command line and in file names.

/// The longest target name, in characters.
pub(crate) const MAX_TARGET_NAME_LEN: usize = 100;

/// The rule, as error messages state it.
pub(crate) const TARGET_NAME_RULE: &str =
    "a target name has 1 to 100 characters: an ASCII letter or digit, \
     then ASCII letters, digits, `-`, `_` or `.`";

/// What breaks the rule in `name`, or `None` for a valid name.
pub(crate) fn target_name_problem(name: &str) -> Option<String> {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return Some("it is empty".to_owned());
    };
    let len = name.chars().count();
    if len > MAX_TARGET_NAME_LEN {
        return Some(format!("it has {len} characters"));
    }
    if !first.is_ascii_alphanumeric() {
        return Some(format!("it starts with `{}`", first.escape_debug()));
    }
    chars
        .find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .map(|c| format!("`{}` is not allowed", c.escape_debug()))
}

/// The kebab-case of a type name: `MyProfileTarget` is `my-profile-target`.
///
/// A word starts at an uppercase letter that follows a lowercase letter or a
/// digit (`Yolo8Decode`: `yolo8-decode`), and at the last capital of an
/// acronym followed by lowercase letters (`NMSTarget`: `nms-target`). Digits
/// stay with the word before them; `_` separates words.
pub(crate) fn kebab_case(ident: &str) -> String {
    let chars: Vec<char> = ident.chars().collect();
    let mut out = String::with_capacity(ident.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c == '_' {
            push_separator(&mut out);
            continue;
        }
        if i > 0 && starts_word(&chars, i) {
            push_separator(&mut out);
        }
        out.extend(c.to_lowercase());
    }
    if out.ends_with('-') {
        out.pop();
    }
    out
}

fn push_separator(out: &mut String) {
    if !out.is_empty() && !out.ends_with('-') {
        out.push('-');
    }
}

fn starts_word(chars: &[char], i: usize) -> bool {
    let (previous, current) = (chars[i - 1], chars[i]);
    if !current.is_uppercase() {
        return false;
    }
    let next_is_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
    previous.is_lowercase()
        || previous.is_ascii_digit()
        || (previous.is_uppercase() && next_is_lower)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kebab_case_splits_camel_case_words() {
        assert_eq!(kebab_case("MyProfileTarget"), "my-profile-target");
        assert_eq!(kebab_case("Smoke"), "smoke");
        assert_eq!(kebab_case("myTarget"), "my-target");
    }

    #[test]
    fn kebab_case_keeps_acronyms_whole() {
        assert_eq!(kebab_case("NMSTarget"), "nms-target");
        assert_eq!(kebab_case("XMLHttpRequest"), "xml-http-request");
        assert_eq!(kebab_case("DecodeNMS"), "decode-nms");
        assert_eq!(kebab_case("NMS"), "nms");
    }

    #[test]
    fn kebab_case_keeps_digits_with_the_word_before() {
        assert_eq!(kebab_case("Yolo8Decode"), "yolo8-decode");
        assert_eq!(kebab_case("HTTP2Client"), "http2-client");
        assert_eq!(kebab_case("Resnet50V2"), "resnet50-v2");
        assert_eq!(kebab_case("Yolo11"), "yolo11");
        assert_eq!(kebab_case("V2"), "v2");
    }

    #[test]
    fn kebab_case_turns_underscores_into_single_dashes() {
        assert_eq!(kebab_case("smoke_tensor"), "smoke-tensor");
        assert_eq!(kebab_case("Smoke_Tensor"), "smoke-tensor");
        assert_eq!(kebab_case("_Private__Target_"), "private-target");
        assert_eq!(kebab_case("SCREAMING_CASE"), "screaming-case");
    }

    #[test]
    fn valid_target_names_pass() {
        for name in [
            "a",
            "smoke",
            "my-profile",
            "yolo8_decode.v2",
            "9lives",
            &"x".repeat(100),
        ] {
            assert_eq!(target_name_problem(name), None, "{name}");
        }
    }

    #[test]
    fn empty_and_long_names_are_refused() {
        assert_eq!(target_name_problem("").as_deref(), Some("it is empty"));
        assert_eq!(
            target_name_problem(&"x".repeat(101)).as_deref(),
            Some("it has 101 characters")
        );
    }

    #[test]
    fn names_must_start_with_a_letter_or_digit() {
        assert_eq!(
            target_name_problem("-smoke").as_deref(),
            Some("it starts with `-`")
        );
        assert_eq!(
            target_name_problem(".hidden").as_deref(),
            Some("it starts with `.`")
        );
        assert_eq!(
            target_name_problem("ésprit").as_deref(),
            Some("it starts with `é`")
        );
    }

    #[test]
    fn names_refuse_characters_outside_the_rule() {
        assert_eq!(
            target_name_problem("my profile").as_deref(),
            Some("` ` is not allowed")
        );
        assert_eq!(
            target_name_problem("a/b").as_deref(),
            Some("`/` is not allowed")
        );
        assert_eq!(
            target_name_problem("données").as_deref(),
            Some("`é` is not allowed")
        );
        assert_eq!(
            target_name_problem("tab\there").as_deref(),
            Some("`\\t` is not allowed")
        );
    }
}
