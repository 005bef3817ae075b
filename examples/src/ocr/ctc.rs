//! CTC decoding of the recognizer's output: per time step the most likely
//! class, repeats merged, blanks dropped, classes mapped to characters.

/// The recognizer's classes: the blank at 0, the model's characters, then
/// a space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Characters(Vec<String>);

impl Characters {
    /// The classes of a model whose character list is `list`, one
    /// character per line as Python's `str.splitlines` splits it (the way
    /// the production code reads the model's `character` metadata).
    pub fn from_list(list: &str) -> Characters {
        let mut classes = vec!["blank".to_owned()];
        classes.extend(split_lines(list).map(str::to_owned));
        classes.push(" ".to_owned());
        Characters(classes)
    }

    /// How many classes, the blank and the space included.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there is no class (never, once built).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The lines of `text` as Python's `str.splitlines` gives them: broken at
/// `\n`, `\r`, `\r\n`, `\x0b`, `\x0c`, `\x1c`, `\x1d`, `\x1e`, `\x85`,
/// `\u2028` and `\u2029`, with no empty last line for a final break.
pub fn split_lines(text: &str) -> impl Iterator<Item = &str> {
    let is_break = |c: char| {
        matches!(
            c,
            '\n' | '\r'
                | '\x0b'
                | '\x0c'
                | '\x1c'
                | '\x1d'
                | '\x1e'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        )
    };
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (line, after) = match rest.char_indices().find(|&(_, c)| is_break(c)) {
            Some((at, '\r')) if rest[at + 1..].starts_with('\n') => (&rest[..at], &rest[at + 2..]),
            Some((at, c)) => (&rest[..at], &rest[at + c.len_utf8()..]),
            None => (rest, ""),
        };
        rest = after;
        Some(line)
    })
}

/// The text of one sequence of `steps` time steps of `classes` scores
/// each, and its confidence: the mean of the kept steps' best scores (0
/// when none is kept).
pub fn decode(scores: &[f32], steps: usize, characters: &Characters) -> (String, f32) {
    let classes = characters.len();
    let mut text = String::new();
    let (mut sum, mut kept) = (0f32, 0usize);
    let mut previous = usize::MAX;
    for step in scores.chunks_exact(classes).take(steps) {
        let (best, score) = argmax(step);
        if best != 0 && best != previous {
            text.push_str(&characters.0[best]);
            sum += score;
            kept += 1;
        }
        previous = best;
    }
    let confidence = if kept == 0 { 0.0 } else { sum / kept as f32 };
    (text, confidence)
}

/// The index of the first largest score and the score (NumPy's `argmax`
/// and `max`): the maximum found eight lanes at a time, then its first
/// position (two passes, each of which the compiler vectorizes, run faster
/// than one that tracks indices).
fn argmax(scores: &[f32]) -> (usize, f32) {
    let mut lanes = [f32::MIN; 8];
    let chunks = scores.chunks_exact(8);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            *lane = if v > *lane { v } else { *lane };
        }
    }
    let max = rest
        .iter()
        .chain(&lanes)
        .fold(f32::MIN, |m, &v| if v > m { v } else { m });
    let index = scores.iter().position(|&v| v == max).unwrap_or(0);
    (index, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_as_python_splits_them() {
        let lines: Vec<&str> = split_lines("a\nb\r\nc\rd\u{2028}e\x0c\n").collect();
        assert_eq!(lines, ["a", "b", "c", "d", "e", ""]);
        assert_eq!(split_lines("x").collect::<Vec<_>>(), ["x"]);
        assert_eq!(split_lines("").count(), 0);
    }

    #[test]
    fn argmax_takes_the_first_of_equal_maxima() {
        let mut scores = vec![0.0f32; 21];
        scores[13] = 0.7;
        scores[19] = 0.7;
        scores[2] = 0.5;
        assert_eq!(argmax(&scores), (13, 0.7));
        assert_eq!(argmax(&[0.1, 0.3, 0.2]), (1, 0.3));
    }

    #[test]
    fn classes_are_blank_characters_space() {
        let characters = Characters::from_list("a\nb\n");
        assert_eq!(characters.0, ["blank", "a", "b", " "]);
    }

    #[test]
    fn repeats_merge_and_blanks_separate() {
        let characters = Characters::from_list("a\nb");
        // Steps: a, a, blank, a, b, space.
        let one_hot = |class: usize, score: f32| {
            let mut step = [0.01f32; 4];
            step[class] = score;
            step
        };
        let scores: Vec<f32> = [
            one_hot(1, 0.9),
            one_hot(1, 0.8),
            one_hot(0, 0.9),
            one_hot(1, 0.7),
            one_hot(2, 0.6),
            one_hot(3, 0.5),
        ]
        .concat();
        let (text, confidence) = decode(&scores, 6, &characters);
        assert_eq!(text, "aab ");
        assert!((confidence - (0.9 + 0.7 + 0.6 + 0.5) / 4.0).abs() < 1e-6);
        assert_eq!(
            decode(&one_hot(0, 0.9), 1, &characters),
            (String::new(), 0.0)
        );
    }
}
