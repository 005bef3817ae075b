//! Differentiable Binarization post-processing: from the detector's
//! probability map to text boxes in the image, the steps the production
//! code takes with OpenCV, pyclipper and shapely: binarize and dilate,
//! find each region's contour, its minimum-area rectangle, the mean
//! probability inside it, the rectangle grown by the unclip distance,
//! scaled back to the image, ordered and sorted in reading order.

use profiling_core::prelude::*;

/// The post-processing settings (the production defaults).
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DbParams {
    /// A pixel is text when its probability is above this.
    pub thresh: f32,
    /// A region is kept when its mean probability reaches this.
    pub box_thresh: f32,
    /// At most this many regions are looked at.
    pub max_candidates: usize,
    /// How far a box grows: its area times this over its perimeter.
    pub unclip_ratio: f64,
    /// Dilate the text pixels by a 2x2 square first.
    pub use_dilation: bool,
}

impl Default for DbParams {
    fn default() -> Self {
        DbParams {
            thresh: 0.3,
            box_thresh: 0.5,
            max_candidates: 1000,
            unclip_ratio: 1.6,
            use_dilation: true,
        }
    }
}

/// A box: its corners clockwise from the top-left, in image pixels.
pub type Quad = [[f32; 2]; 4];

/// The smallest side a region's rectangle must have.
const MIN_SIZE: f32 = 3.0;

/// Text boxes of a probability map `map` (`height` rows of `width`) for
/// an image of `image_width` x `image_height`, in reading order.
pub fn boxes_from_map(
    map: &[f32],
    width: usize,
    height: usize,
    image_width: u32,
    image_height: u32,
    params: &DbParams,
) -> Vec<Quad> {
    let bitmap = {
        let _range = profiling_range("binarize");
        let bitmap = binarize(map, params.thresh);
        if params.use_dilation {
            dilate(&bitmap, width, height)
        } else {
            bitmap
        }
    };
    let regions = {
        let _range = profiling_range("contours");
        region_outlines(&bitmap, width, height)
    };
    let boxes = {
        let _range = profiling_range("boxes");
        let mut boxes = Vec::new();
        for outline in regions.iter().take(params.max_candidates) {
            let Some(rect) = min_area_rect(&convex_hull(outline)) else {
                continue;
            };
            if rect.short_side() < MIN_SIZE {
                continue;
            }
            let corners = rect.ordered_corners();
            if score_fast(map, width, height, &corners) < params.box_thresh {
                continue;
            }
            let grown = unclip(&corners, params.unclip_ratio);
            if grown.short_side() < MIN_SIZE + 2.0 {
                continue;
            }
            let scaled = grown.ordered_corners().map(|[x, y]| {
                [
                    round_half_even(x / width as f32 * image_width as f32)
                        .clamp(0.0, image_width as f32),
                    round_half_even(y / height as f32 * image_height as f32)
                        .clamp(0.0, image_height as f32),
                ]
            });
            boxes.push(scaled);
        }
        boxes
    };
    let _range = profiling_range("order");
    let kept: Vec<Quad> = boxes
        .into_iter()
        .map(|quad| clip(order_clockwise(quad), image_width, image_height))
        .filter(|quad| {
            let side = |a: [f32; 2], b: [f32; 2]| ((a[0] - b[0]).hypot(a[1] - b[1])) as i32;
            side(quad[0], quad[1]) > 3 && side(quad[0], quad[3]) > 3
        })
        .collect();
    reading_order(kept)
}

/// 1 where the probability is above `thresh`.
pub fn binarize(map: &[f32], thresh: f32) -> Vec<u8> {
    map.iter().map(|&p| u8::from(p > thresh)).collect()
}

/// OpenCV's `dilate` with a 2x2 square (anchor at its centre, (1, 1)): a
/// pixel is set when it or its left, upper or upper-left neighbour is.
pub fn dilate(bitmap: &[u8], width: usize, height: usize) -> Vec<u8> {
    let mut out = vec![0u8; bitmap.len()];
    for y in 0..height {
        let row = &bitmap[y * width..(y + 1) * width];
        let above = (y > 0).then(|| &bitmap[(y - 1) * width..y * width]);
        for x in 0..width {
            let mut v = row[x];
            if x > 0 {
                v |= row[x - 1];
            }
            if let Some(above) = above {
                v |= above[x];
                if x > 0 {
                    v |= above[x - 1];
                }
            }
            out[y * width + x] = v;
        }
    }
    out
}

/// Each 8-connected region of set pixels, as the first and last pixel of
/// each of its rows (what its convex hull, and so its rectangle, depends
/// on), regions in the order their first pixel comes in a raster scan.
pub fn region_outlines(bitmap: &[u8], width: usize, height: usize) -> Vec<Vec<[i32; 2]>> {
    // Runs of set pixels per row, joined into regions with union-find.
    struct Run {
        y: usize,
        x0: usize,
        x1: usize,
    }
    let mut runs: Vec<Run> = Vec::new();
    let mut row_starts = Vec::with_capacity(height + 1);
    for y in 0..height {
        row_starts.push(runs.len());
        let row = &bitmap[y * width..(y + 1) * width];
        let mut x = 0;
        while x < width {
            if row[x] != 0 {
                let x0 = x;
                while x < width && row[x] != 0 {
                    x += 1;
                }
                runs.push(Run { y, x0, x1: x - 1 });
            } else {
                x += 1;
            }
        }
    }
    row_starts.push(runs.len());
    let mut parent: Vec<usize> = (0..runs.len()).collect();
    fn find(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for y in 1..height {
        let (above, here) = (
            row_starts[y - 1]..row_starts[y],
            row_starts[y]..row_starts[y + 1],
        );
        let mut j = above.start;
        for i in here {
            // Runs of the row above that touch this one, diagonals included.
            while j < above.end && runs[j].x1 + 1 < runs[i].x0 {
                j += 1;
            }
            let mut k = j;
            while k < above.end && runs[k].x0 <= runs[i].x1 + 1 {
                let (a, b) = (find(&mut parent, i), find(&mut parent, k));
                if a != b {
                    parent[a.max(b)] = a.min(b);
                }
                k += 1;
            }
        }
    }
    let mut region_of_root = vec![usize::MAX; runs.len()];
    let mut regions: Vec<Vec<[i32; 2]>> = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let root = find(&mut parent, i);
        if region_of_root[root] == usize::MAX {
            region_of_root[root] = regions.len();
            regions.push(Vec::new());
        }
        let (y, x0, x1) = (run.y as i32, run.x0 as i32, run.x1 as i32);
        let outline = &mut regions[region_of_root[root]];
        // Several runs of one region on a row: only the row's ends count.
        let count = outline.len();
        if count >= 2 && outline[count - 1][1] == y {
            outline[count - 2][0] = outline[count - 2][0].min(x0);
            outline[count - 1][0] = outline[count - 1][0].max(x1);
        } else {
            outline.push([x0, y]);
            outline.push([x1, y]);
        }
    }
    regions
}

/// The convex hull of `points`, counter-clockwise (Andrew's monotone chain).
pub fn convex_hull(points: &[[i32; 2]]) -> Vec<[f64; 2]> {
    let mut sorted: Vec<[i64; 2]> = points
        .iter()
        .map(|p| [i64::from(p[0]), i64::from(p[1])])
        .collect();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() < 3 {
        return sorted.iter().map(|p| [p[0] as f64, p[1] as f64]).collect();
    }
    let cross = |o: [i64; 2], a: [i64; 2], b: [i64; 2]| {
        (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
    };
    let mut hull: Vec<[i64; 2]> = Vec::with_capacity(sorted.len() * 2);
    for pass in 0..2 {
        let start = hull.len();
        let points: Box<dyn Iterator<Item = &[i64; 2]>> = if pass == 0 {
            Box::new(sorted.iter())
        } else {
            Box::new(sorted.iter().rev())
        };
        for &p in points {
            while hull.len() >= start + 2
                && cross(hull[hull.len() - 2], hull[hull.len() - 1], p) <= 0
            {
                hull.pop();
            }
            hull.push(p);
        }
        hull.pop();
    }
    hull.iter().map(|p| [p[0] as f64, p[1] as f64]).collect()
}

/// A rotated rectangle: centre, the unit direction of its first side, and
/// its two side lengths.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    /// Its centre.
    pub center: [f64; 2],
    /// The unit direction of its first side.
    pub axis: [f64; 2],
    /// The length of its first side, then of the other.
    pub size: [f64; 2],
}

impl Rect {
    /// The shorter side.
    pub fn short_side(&self) -> f32 {
        self.size[0].min(self.size[1]) as f32
    }

    /// Its corners as the production code orders a rectangle's points:
    /// sorted by x, the left pair top then bottom, the right pair top then
    /// bottom, as top-left, top-right, bottom-right, bottom-left.
    pub fn ordered_corners(&self) -> Quad {
        let [ux, uy] = self.axis;
        let (vx, vy) = (-uy, ux);
        let (hw, hh) = (self.size[0] / 2.0, self.size[1] / 2.0);
        let [cx, cy] = self.center;
        let mut points = [
            [cx - ux * hw - vx * hh, cy - uy * hw - vy * hh],
            [cx + ux * hw - vx * hh, cy + uy * hw - vy * hh],
            [cx + ux * hw + vx * hh, cy + uy * hw + vy * hh],
            [cx - ux * hw + vx * hh, cy - uy * hw + vy * hh],
        ]
        .map(|[x, y]| [x as f32, y as f32]);
        points.sort_by(|a, b| a[0].total_cmp(&b[0]));
        let (top_left, bottom_left) = if points[1][1] > points[0][1] {
            (0, 1)
        } else {
            (1, 0)
        };
        let (top_right, bottom_right) = if points[3][1] > points[2][1] {
            (2, 3)
        } else {
            (3, 2)
        };
        [
            points[top_left],
            points[top_right],
            points[bottom_right],
            points[bottom_left],
        ]
    }
}

/// The rectangle of least area around a convex polygon (rotating
/// calipers: one of its sides lies on a side of the hull); `None` for no
/// point.
pub fn min_area_rect(hull: &[[f64; 2]]) -> Option<Rect> {
    match hull.len() {
        0 => return None,
        1 => {
            return Some(Rect {
                center: hull[0],
                axis: [1.0, 0.0],
                size: [0.0, 0.0],
            })
        }
        _ => {}
    }
    let mut best: Option<(f64, Rect)> = None;
    for i in 0..hull.len() {
        let (a, b) = (hull[i], hull[(i + 1) % hull.len()]);
        let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
        let length = dx.hypot(dy);
        if length == 0.0 {
            continue;
        }
        let u = [dx / length, dy / length];
        let (mut min_u, mut max_u, mut min_v, mut max_v) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for p in hull {
            let (px, py) = (p[0] - a[0], p[1] - a[1]);
            let along = px * u[0] + py * u[1];
            let across = -px * u[1] + py * u[0];
            min_u = min_u.min(along);
            max_u = max_u.max(along);
            min_v = min_v.min(across);
            max_v = max_v.max(across);
        }
        let area = (max_u - min_u) * (max_v - min_v);
        if best
            .as_ref()
            .is_none_or(|(smallest, _)| area < *smallest - 1e-9)
        {
            let (mid_u, mid_v) = ((min_u + max_u) / 2.0, (min_v + max_v) / 2.0);
            let center = [
                a[0] + u[0] * mid_u - u[1] * mid_v,
                a[1] + u[1] * mid_u + u[0] * mid_v,
            ];
            best = Some((
                area,
                Rect {
                    center,
                    axis: u,
                    size: [max_u - min_u, max_v - min_v],
                },
            ));
        }
    }
    best.map(|(_, rect)| rect)
}

/// The mean probability inside the box, over the pixels OpenCV's
/// `fillPoly` sets for its corners truncated to whole pixels, within the
/// box's bounding rectangle (the production code's "fast" score).
pub fn score_fast(map: &[f32], width: usize, height: usize, quad: &Quad) -> f32 {
    let xs = quad.map(|p| p[0]);
    let ys = quad.map(|p| p[1]);
    let clamp = |v: f32, limit: usize| (v as i64).clamp(0, limit as i64 - 1) as usize;
    let x_min = clamp(xs.iter().copied().fold(f32::MAX, f32::min).floor(), width);
    let x_max = clamp(xs.iter().copied().fold(f32::MIN, f32::max).ceil(), width);
    let y_min = clamp(ys.iter().copied().fold(f32::MAX, f32::min).floor(), height);
    let y_max = clamp(ys.iter().copied().fold(f32::MIN, f32::max).ceil(), height);
    let corners = quad.map(|p| {
        [
            f64::from((p[0] - x_min as f32) as i32),
            f64::from((p[1] - y_min as f32) as i32),
        ]
    });
    let (mut sum, mut count) = (0f64, 0u64);
    for y in y_min..=y_max {
        let row = (y - y_min) as f64;
        // Where the row crosses the polygon's edges (a convex polygon: one span).
        let (mut left, mut right) = (f64::MAX, f64::MIN);
        for i in 0..4 {
            let (a, b) = (corners[i], corners[(i + 1) % 4]);
            let (low, high) = if a[1] <= b[1] { (a, b) } else { (b, a) };
            if row < low[1] || row > high[1] {
                continue;
            }
            if high[1] == low[1] {
                left = left.min(a[0].min(b[0]));
                right = right.max(a[0].max(b[0]));
            } else {
                let x = low[0] + (row - low[1]) * (high[0] - low[0]) / (high[1] - low[1]);
                left = left.min(x);
                right = right.max(x);
            }
        }
        if left > right {
            continue;
        }
        let first = (left.round() as i64).max(0) as usize + x_min;
        let last = ((right.round() as i64) as usize + x_min).min(x_max);
        for x in first..=last {
            sum += f64::from(map[y * width + x]);
            count += 1;
        }
    }
    if count == 0 {
        0.0
    } else {
        (sum / count as f64) as f32
    }
}

/// The box grown by `area * ratio / perimeter` (shapely's area and length
/// of the box) with rounded corners, the way pyclipper offsets it: its
/// corners taken as whole pixels, Clipper's round joins (arc tolerance
/// 0.25) in whole pixels; then the rectangle of least area around that.
pub fn unclip(quad: &Quad, ratio: f64) -> Rect {
    let points = quad.map(|[x, y]| [f64::from(x), f64::from(y)]);
    let (mut area, mut perimeter) = (0f64, 0f64);
    for i in 0..4 {
        let (a, b) = (points[i], points[(i + 1) % 4]);
        area += a[0] * b[1] - b[0] * a[1];
        perimeter += (b[0] - a[0]).hypot(b[1] - a[1]);
    }
    let area = area.abs() / 2.0;
    let distance = if perimeter > 0.0 {
        area * ratio / perimeter
    } else {
        0.0
    };
    let whole: Vec<[i64; 2]> = points.iter().map(|p| [p[0] as i64, p[1] as i64]).collect();
    let grown: Vec<[i32; 2]> = offset_round(&whole, distance)
        .into_iter()
        .map(|[x, y]| [x as i32, y as i32])
        .collect();
    min_area_rect(&convex_hull(&grown)).unwrap_or(Rect {
        center: [0.0, 0.0],
        axis: [1.0, 0.0],
        size: [0.0, 0.0],
    })
}

/// Clipper's rounding: halves away from zero.
fn clipper_round(v: f64) -> i64 {
    if v < 0.0 {
        (v - 0.5) as i64
    } else {
        (v + 0.5) as i64
    }
}

/// The points of a closed polygon offset outwards by `delta` with round
/// joins, as Clipper's `ClipperOffset` makes them (before its union, which
/// leaves a convex polygon's points as they are).
pub fn offset_round(polygon: &[[i64; 2]], delta: f64) -> Vec<[i64; 2]> {
    const ARC_TOLERANCE: f64 = 0.25;
    let mut path: Vec<[i64; 2]> = Vec::with_capacity(polygon.len());
    for &p in polygon {
        if path.last() != Some(&p) {
            path.push(p);
        }
    }
    while path.len() > 1 && path.first() == path.last() {
        path.pop();
    }
    if path.len() < 3 || delta <= 0.0 {
        return path;
    }
    // Positive orientation (counter-clockwise with y up), as Clipper fixes it.
    let doubled_area: i64 = (0..path.len())
        .map(|i| {
            let (a, b) = (path[i], path[(i + 1) % path.len()]);
            a[0] * b[1] - b[0] * a[1]
        })
        .sum();
    if doubled_area < 0 {
        path.reverse();
    }
    let tolerance = if ARC_TOLERANCE > delta * ARC_TOLERANCE {
        delta * ARC_TOLERANCE
    } else {
        ARC_TOLERANCE
    };
    let mut steps = std::f64::consts::PI / (1.0 - tolerance / delta).acos();
    if steps > delta * std::f64::consts::PI {
        steps = delta * std::f64::consts::PI;
    }
    let two_pi = 2.0 * std::f64::consts::PI;
    let (sin, cos) = (two_pi / steps).sin_cos();
    let steps_per_radian = steps / two_pi;
    let count = path.len();
    let normals: Vec<[f64; 2]> = (0..count)
        .map(|j| {
            let (a, b) = (path[j], path[(j + 1) % count]);
            let (dx, dy) = ((b[0] - a[0]) as f64, (b[1] - a[1]) as f64);
            let f = 1.0 / dx.hypot(dy);
            [dy * f, -dx * f]
        })
        .collect();
    let at = |p: [i64; 2], n: [f64; 2]| {
        [
            clipper_round(p[0] as f64 + n[0] * delta),
            clipper_round(p[1] as f64 + n[1] * delta),
        ]
    };
    let mut out = Vec::new();
    let mut k = count - 1;
    for j in 0..count {
        let (nk, nj, p) = (normals[k], normals[j], path[j]);
        let mut sin_a = nk[0] * nj[1] - nj[0] * nk[1];
        let cos_a = nk[0] * nj[0] + nk[1] * nj[1];
        if (sin_a * delta).abs() < 1.0 && cos_a > 0.0 {
            out.push(at(p, nk));
            k = j;
            continue;
        }
        sin_a = sin_a.clamp(-1.0, 1.0);
        if sin_a * delta < 0.0 {
            out.push(at(p, nk));
            out.push(p);
            out.push(at(p, nj));
        } else {
            let angle = sin_a.atan2(cos_a);
            let turns = clipper_round(steps_per_radian * angle.abs()).max(1);
            let (mut x, mut y) = (nk[0], nk[1]);
            for _ in 0..turns {
                out.push(at(p, [x, y]));
                let previous = x;
                x = x * cos - sin * y;
                y = previous * sin + y * cos;
            }
            out.push(at(p, nj));
        }
        k = j;
    }
    out
}

/// NumPy's `round`: halves to the even neighbour.
fn round_half_even(v: f32) -> f32 {
    let rounded = v.round();
    if (v - v.trunc()).abs() == 0.5 && rounded % 2.0 != 0.0 {
        rounded - v.signum()
    } else {
        rounded
    }
}

/// The corners as top-left, top-right, bottom-right, bottom-left: the two
/// leftmost by y, then the two rightmost by y.
pub fn order_clockwise(quad: Quad) -> Quad {
    let mut points = quad;
    points.sort_by(|a, b| a[0].total_cmp(&b[0]));
    let (mut left, mut right) = ([points[0], points[1]], [points[2], points[3]]);
    left.sort_by(|a, b| a[1].total_cmp(&b[1]));
    right.sort_by(|a, b| a[1].total_cmp(&b[1]));
    [left[0], right[0], right[1], left[1]]
}

/// Each corner inside the image, in whole pixels.
fn clip(quad: Quad, width: u32, height: u32) -> Quad {
    quad.map(|[x, y]| {
        [
            x.clamp(0.0, width as f32 - 1.0).trunc(),
            y.clamp(0.0, height as f32 - 1.0).trunc(),
        ]
    })
}

/// Top to bottom by the first corner, then boxes less than 10 pixels apart
/// vertically left to right (the production code's bubble pass).
pub fn reading_order(mut boxes: Vec<Quad>) -> Vec<Quad> {
    boxes.sort_by(|a, b| {
        a[0][1]
            .total_cmp(&b[0][1])
            .then(a[0][0].total_cmp(&b[0][0]))
    });
    for i in 0..boxes.len().saturating_sub(1) {
        for j in (0..=i).rev() {
            if (boxes[j + 1][0][1] - boxes[j][0][1]).abs() < 10.0
                && boxes[j + 1][0][0] < boxes[j][0][0]
            {
                boxes.swap(j, j + 1);
            } else {
                break;
            }
        }
    }
    boxes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dilation_spreads_right_and_down() {
        let mut bitmap = vec![0u8; 9];
        bitmap[4] = 1;
        assert_eq!(dilate(&bitmap, 3, 3), [0, 0, 0, 0, 1, 1, 0, 1, 1]);
    }

    #[test]
    fn regions_are_eight_connected_and_keep_their_row_ends() {
        #[rustfmt::skip]
        let bitmap = [
            1, 1, 0, 0, 0, 0,
            0, 0, 1, 0, 0, 1,
            0, 0, 0, 0, 0, 1,
            1, 0, 1, 1, 0, 0,
        ];
        let regions = region_outlines(&bitmap, 6, 4);
        assert_eq!(
            regions,
            [
                vec![[0, 0], [1, 0], [2, 1], [2, 1]],
                vec![[5, 1], [5, 1], [5, 2], [5, 2]],
                vec![[0, 3], [0, 3]],
                vec![[2, 3], [3, 3]],
            ]
        );
        // A U shape: two runs joined below, one region, one span per row.
        #[rustfmt::skip]
        let u = [
            1, 0, 0, 1,
            1, 1, 1, 1,
        ];
        assert_eq!(
            region_outlines(&u, 4, 2),
            [vec![[0, 0], [3, 0], [0, 1], [3, 1]]]
        );
    }

    #[test]
    fn an_upright_region_gets_its_own_rectangle() {
        let outline = [[10, 5], [50, 5], [10, 20], [50, 20]];
        let rect = min_area_rect(&convex_hull(&outline)).unwrap();
        assert_eq!(rect.short_side(), 15.0);
        assert_eq!(
            rect.ordered_corners(),
            [[10.0, 5.0], [50.0, 5.0], [50.0, 20.0], [10.0, 20.0]]
        );
    }

    #[test]
    fn a_tilted_rectangle_is_found_at_its_angle() {
        // A 40 x 10 rectangle turned by atan(3/4).
        let (u, v) = ([0.8, 0.6], [-0.6, 0.8]);
        let corners: Vec<[i32; 2]> = [(0.0, 0.0), (40.0, 0.0), (40.0, 10.0), (0.0, 10.0)]
            .iter()
            .map(|&(a, b)| {
                [
                    (100.0 + a * u[0] + b * v[0]) as i32,
                    (50.0 + a * u[1] + b * v[1]) as i32,
                ]
            })
            .collect();
        let rect = min_area_rect(&convex_hull(&corners)).unwrap();
        let (long, short) = (
            rect.size[0].max(rect.size[1]),
            rect.size[0].min(rect.size[1]),
        );
        assert!(
            (long - 40.0).abs() < 1.0 && (short - 10.0).abs() < 1.0,
            "{rect:?}"
        );
    }

    #[test]
    fn the_score_is_the_mean_inside_the_box() {
        let (width, height) = (10, 6);
        let mut map = vec![0.0f32; width * height];
        for y in 1..=3 {
            for x in 2..=6 {
                map[y * width + x] = 1.0;
            }
        }
        let inside: Quad = [[2.0, 1.0], [6.0, 1.0], [6.0, 3.0], [2.0, 3.0]];
        assert_eq!(score_fast(&map, width, height, &inside), 1.0);
        // Twice as wide: half of it outside the text.
        let wider: Quad = [[2.0, 1.0], [11.0, 1.0], [11.0, 3.0], [2.0, 3.0]];
        assert!((score_fast(&map, width, height, &wider) - 15.0 / 24.0).abs() < 1e-6);
    }

    #[test]
    fn unclipping_grows_every_side_by_area_times_ratio_over_perimeter() {
        let quad: Quad = [[10.0, 10.0], [110.0, 10.0], [110.0, 30.0], [10.0, 30.0]];
        // 2000 * 1.6 / 240 = 13.33...
        let grown = unclip(&quad, 1.6);
        let d = 2000.0 * 1.6 / 240.0;
        let mut size = grown.size;
        size.sort_by(f64::total_cmp);
        assert!(
            (size[0] - (20.0 + 2.0 * d)).abs() <= 1.0 && (size[1] - (100.0 + 2.0 * d)).abs() <= 1.0,
            "{grown:?}"
        );
        assert!(
            (grown.center[0] - 60.0).abs() < 0.5 && (grown.center[1] - 20.0).abs() < 0.5,
            "{grown:?}"
        );
    }

    #[test]
    fn the_offset_rounds_each_corner_in_whole_pixels() {
        // A 10-pixel square, clockwise as the image's y-down corners come:
        // grown by 3, every point 3 from the square (to rounding), the
        // square's sides moved out by 3 and its corners arcs.
        let square = [[0, 0], [10, 0], [10, 10], [0, 10]];
        let grown = offset_round(&square, 3.0);
        for p in &grown {
            let (dx, dy) = (
                (p[0] - p[0].clamp(0, 10)) as f64,
                (p[1] - p[1].clamp(0, 10)) as f64,
            );
            assert!((dx.hypot(dy) - 3.0).abs() <= 0.75, "{p:?} in {grown:?}");
        }
        let xs: Vec<i64> = grown.iter().map(|p| p[0]).collect();
        let ys: Vec<i64> = grown.iter().map(|p| p[1]).collect();
        assert_eq!((xs.iter().min(), xs.iter().max()), (Some(&-3), Some(&13)));
        assert_eq!((ys.iter().min(), ys.iter().max()), (Some(&-3), Some(&13)));
        // Each corner's arc has points between its two sides.
        assert!(grown.len() > 8, "{grown:?}");
    }

    #[test]
    fn rounding_takes_halves_to_even() {
        assert_eq!(
            [0.5, 1.5, 2.5, 2.4, 2.6, -0.5].map(round_half_even),
            [0.0, 2.0, 2.0, 2.0, 3.0, -0.0]
        );
    }

    #[test]
    fn boxes_on_one_line_read_left_to_right() {
        let at =
            |x: f32, y: f32| -> Quad { [[x, y], [x + 5.0, y], [x + 5.0, y + 5.0], [x, y + 5.0]] };
        let sorted = reading_order(vec![at(50.0, 12.0), at(10.0, 40.0), at(5.0, 15.0)]);
        assert_eq!(sorted, [at(5.0, 15.0), at(50.0, 12.0), at(10.0, 40.0)]);
    }

    #[test]
    fn a_map_with_two_words_gives_two_boxes_in_reading_order() {
        let (width, height) = (64, 32);
        let mut map = vec![0.0f32; width * height];
        for &(x0, x1) in &[(36, 56), (6, 26)] {
            for y in 10..20 {
                for x in x0..x1 {
                    map[y * width + x] = 0.9;
                }
            }
        }
        // The image is twice the map's size.
        let boxes = boxes_from_map(&map, width, height, 128, 64, &DbParams::default());
        assert_eq!(boxes.len(), 2, "{boxes:?}");
        assert!(boxes[0][0][0] < boxes[1][0][0]);
        for quad in &boxes {
            assert!(
                quad[0][0] < quad[1][0] && quad[0][1] < quad[3][1],
                "{quad:?}"
            );
        }
    }
}
