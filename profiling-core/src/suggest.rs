//! "Did you mean": the names near a misspelt one, for the errors that
//! refuse an unknown target, data source, parameter or key.

/// Names that differ from `wanted` by a few edits or contain it, closest
/// first, without repeats.
pub fn near_matches<'n>(wanted: &str, names: impl IntoIterator<Item = &'n str>) -> Vec<&'n str> {
    let wanted_lower = wanted.to_lowercase();
    let budget = (wanted.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = names
        .into_iter()
        .filter_map(|name| {
            let distance = edit_distance(&wanted_lower, &name.to_lowercase());
            let contains = !wanted_lower.is_empty()
                && (name.to_lowercase().contains(&wanted_lower)
                    || wanted_lower.contains(&name.to_lowercase()));
            (distance <= budget || contains).then_some((distance, name))
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().map(|(_, name)| name).collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("smoke", "smoke"), 0);
        assert_eq!(edit_distance("smoke", "smoek"), 2);
        assert_eq!(edit_distance("smoke", "smokes"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn near_matches_rank_closest_first() {
        let names = [
            "letterbox-preprocess",
            "detection-pipeline",
            "detection-postprocess",
            "smoke",
        ];
        assert_eq!(
            near_matches("detection-pipelin", names),
            vec!["detection-pipeline"]
        );
        assert_eq!(
            near_matches("letterbox", names),
            vec!["letterbox-preprocess"]
        );
        assert!(near_matches("zzzzzzzz", names).is_empty());
    }
}
