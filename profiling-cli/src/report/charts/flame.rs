//! The flame graph of a run's ranges, drawn from its range tree: an
//! icicle, each range under the one it ran in, as wide as the time spent
//! in it and in everything it opened. Each frame is a `<g>` with a
//! `<title>` (what a browser shows on hover), its rectangle and its label,
//! cut to the characters that fit.

use maud::{html, Markup};

use crate::report::ranges::{RangeRow, RangeRows};
use crate::summary::format_ns;

/// The flame graph's width on a run's page, and on a comparison's, where
/// two stand side by side.
pub(in crate::report) const FLAME_WIDTH: u32 = 1200;
pub(in crate::report) const FLAME_WIDTH_SIDE_BY_SIDE: u32 = 720;

/// Room left and right of the frames.
const SIDE: f64 = 10.0;
/// A frame's height, and the gap under it.
const FRAME_HEIGHT: f64 = 16.0;
const GAP: f64 = 1.0;
/// Labels are drawn at 12 px in a monospace font: about this wide per
/// character.
const CHAR_WIDTH: f64 = 12.0 * 0.59;
/// Frames narrower than this are not drawn.
const MIN_WIDTH: f64 = 0.1;

/// One frame: where it is drawn and what it says.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::report) struct Frame {
    pub name: String,
    /// The range's time and that of everything under it, in all passes.
    pub value_ns: u64,
    /// Its share of all the ranges' time.
    pub share: f64,
    pub x: f64,
    pub width: f64,
    /// 0 for the frame of all ranges, 1 for the ranges at the top.
    pub level: usize,
}

/// The frames of `rows` (depth-first, as [`RangeRows`] holds them) across
/// `width` units, the frame of all ranges first; empty when no range took
/// any time.
pub(in crate::report) fn frames(rows: &[RangeRow], width: f64) -> Vec<Frame> {
    let values = subtree_values(rows);
    let total: u64 = rows
        .iter()
        .zip(&values)
        .filter(|(row, _)| row.depth == 0)
        .map(|(_, &value)| value)
        .sum();
    if total == 0 {
        return Vec::new();
    }
    let scale = (width - 2.0 * SIDE) / total as f64;
    let mut frames = vec![Frame {
        name: "all".to_owned(),
        value_ns: total,
        share: 1.0,
        x: SIDE,
        width: total as f64 * scale,
        level: 0,
    }];
    // Where the next frame at each depth starts: under its parent, after
    // its elder siblings.
    let mut cursor = vec![SIDE];
    for (row, &value) in rows.iter().zip(&values) {
        let depth = row.depth;
        if cursor.len() <= depth + 1 {
            let last = *cursor.last().unwrap_or(&SIDE);
            cursor.resize(depth + 2, last);
        }
        let x = cursor[depth];
        let frame_width = value as f64 * scale;
        cursor[depth] = x + frame_width;
        cursor[depth + 1] = x;
        frames.push(Frame {
            name: row.name.clone(),
            value_ns: value,
            share: value as f64 / total as f64,
            x,
            width: frame_width,
            level: depth + 1,
        });
    }
    frames
}

/// Each row's self time plus that of every row under it.
fn subtree_values(rows: &[RangeRow]) -> Vec<u64> {
    let mut values = vec![0; rows.len()];
    // Walking back, `under[d]` sums the rows at depth `d` met since the
    // last row above them: the children of the next row at depth `d - 1`.
    let mut under: Vec<u64> = Vec::new();
    for (index, row) in rows.iter().enumerate().rev() {
        let depth = row.depth;
        if under.len() < depth + 2 {
            under.resize(depth + 2, 0);
        }
        let children: u64 = under.drain(depth + 1..).sum();
        values[index] = row.exclusive_total + children;
        under[depth] += values[index];
    }
    values
}

/// A warm colour of its own for each name, the same on every page.
fn colour(name: &str) -> String {
    // FNV-1a: stable across builds and platforms.
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    let red = 205 + hash % 50;
    let green = 90 + (hash >> 8) % 140;
    let blue = (hash >> 16) % 60;
    format!("rgb({red},{green},{blue})")
}

/// The characters of `name` that fit in a frame `width` wide: all of
/// them, a prefix and `..`, or none when fewer than four would fit.
pub(in crate::report) fn label(name: &str, width: f64) -> String {
    let fits = ((width - 6.0).max(0.0) / CHAR_WIDTH) as usize;
    let chars = name.chars().count();
    if fits < 4 {
        String::new()
    } else if chars <= fits {
        name.to_owned()
    } else {
        name.chars().take(fits - 2).chain("..".chars()).collect()
    }
}

/// The flame graph of `tree`, `width` units wide, its id made unique on
/// the page with `index`.
pub(in crate::report) fn flame_graph(tree: &RangeRows, index: usize, width: u32) -> Markup {
    let frames = frames(&tree.rows, f64::from(width));
    if frames.is_empty() {
        return html! {
            svg.flamegraph viewBox=(format!("0 0 {width} 40")) role="img" aria-label="no ranges" {
                text x="10" y="24" { "No ranges were recorded." }
            }
        };
    }
    let levels = frames.iter().map(|f| f.level).max().unwrap_or(0) + 1;
    let height = levels as f64 * (FRAME_HEIGHT + GAP) + 2.0 * GAP;
    html! {
        svg.flamegraph id=(format!("fg{index}")) role="img" aria-label="flame graph of the ranges"
            width=(width) height=(height) viewBox=(format!("0 0 {width} {height}"))
            xmlns="http://www.w3.org/2000/svg" {
            @for frame in frames.iter().filter(|f| f.width >= MIN_WIDTH) {
                @let y = GAP + frame.level as f64 * (FRAME_HEIGHT + GAP);
                g data-range=(frame.name) {
                    title {
                        (frame.name) " (" (format_ns(frame.value_ns)) ", "
                        (format!("{:.2}", frame.share * 100.0)) " %)"
                    }
                    rect x=(format!("{:.2}", frame.x)) y=(y) width=(format!("{:.2}", frame.width))
                        height=(FRAME_HEIGHT) rx="2" fill=(colour(&frame.name)) {}
                    text x=(format!("{:.2}", frame.x + 3.0)) y=(y + FRAME_HEIGHT - 4.0) {
                        (label(&frame.name, frame.width))
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, depth: usize, exclusive_total: u64) -> RangeRow {
        RangeRow {
            path: name.to_owned(),
            name: name.to_owned(),
            depth,
            count: 1,
            inclusive_p50: 0,
            exclusive_total,
            inclusive_total: 0,
            inclusive_per_pass: None,
            exclusive_per_pass: None,
            gpu_p50: None,
            memory: None,
        }
    }

    #[test]
    fn each_frame_is_as_wide_as_its_time_and_everything_under_it() {
        // a (self 100) holds b (self 50, holding d: 50) and c (self 100);
        // e stands beside a at the top.
        let rows = [
            row("a", 0, 100),
            row("b", 1, 50),
            row("d", 2, 50),
            row("c", 1, 100),
            row("e", 0, 100),
        ];
        assert_eq!(subtree_values(&rows), [300, 100, 50, 100, 100]);
        let frames = frames(&rows, 420.0);
        let shape: Vec<(&str, usize, f64, f64)> = frames
            .iter()
            .map(|f| (f.name.as_str(), f.level, f.x, f.width))
            .collect();
        // 400 units for 400 ns.
        assert_eq!(
            shape,
            [
                ("all", 0, 10.0, 400.0),
                ("a", 1, 10.0, 300.0),
                ("b", 2, 10.0, 100.0),
                ("d", 3, 10.0, 50.0),
                ("c", 2, 110.0, 100.0),
                ("e", 1, 310.0, 100.0),
            ]
        );
        assert_eq!(frames[1].share, 0.75);
    }

    #[test]
    fn no_time_draws_no_frame() {
        assert!(frames(&[], 1200.0).is_empty());
        assert!(frames(&[row("a", 0, 0)], 1200.0).is_empty());
    }

    #[test]
    fn labels_are_cut_to_their_frames() {
        assert_eq!(label("a_long_range_name", 590.0), "a_long_range_name");
        // 59 units: 7 characters of 7.08 fit after the padding.
        assert_eq!(label("decode_predictions", 59.0), "decod..");
        assert_eq!(label("hidden", 30.0), "");
    }

    #[test]
    fn colours_are_stable_and_differ_by_name() {
        assert_eq!(colour("decode"), colour("decode"));
        assert_ne!(colour("decode"), colour("nms"));
    }
}
