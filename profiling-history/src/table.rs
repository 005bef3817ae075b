//! Series from a CSV file, as Apache Otava reads them: a header, one row
//! per point in order, a time column (`time` unless named), numeric
//! columns as metrics and the others as attributes (a commit, a branch).
//! So that the detector can be run on data from elsewhere, and compared
//! with Otava on the same file.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::changes::Detector;

/// A CSV file's series.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The time column's values, one per row.
    pub time: Vec<String>,
    /// Each attribute column by name, one value per row.
    pub attributes: Vec<(String, Vec<String>)>,
    /// Each metric column by name, one value per row (none where the
    /// field is empty).
    pub metrics: Vec<(String, Vec<Option<f64>>)>,
}

/// Why a CSV file cannot be read as series.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: csv::Error },
    #[error("{}: no header row", path.display())]
    Empty { path: PathBuf },
    #[error("{}: no column `{column}` (the columns are {})", path.display(), columns.join(", "))]
    NoColumn {
        path: PathBuf,
        column: String,
        columns: Vec<String>,
    },
    #[error("{}: row {row}, column `{column}`: `{value}` is not a number", path.display())]
    NotANumber {
        path: PathBuf,
        row: usize,
        column: String,
        value: String,
    },
    #[error("{}: no metric: no column besides `{time}` holds only numbers", path.display())]
    NoMetric { path: PathBuf, time: String },
}

impl Table {
    /// Reads `path`. `metrics` names the metric columns (each value must
    /// be a number or empty); when empty, every column besides the time
    /// column whose values are all numbers (or empty) is one.
    pub fn read(path: &Path, time: &str, metrics: &[String]) -> Result<Table, TableError> {
        let read = |source| TableError::Read {
            path: path.to_path_buf(),
            source,
        };
        let mut reader = csv::ReaderBuilder::new()
            .flexible(false)
            .trim(csv::Trim::All)
            .from_path(path)
            .map_err(read)?;
        let header: Vec<String> = reader
            .headers()
            .map_err(read)?
            .iter()
            .map(str::to_owned)
            .collect();
        if header.is_empty() || header.iter().all(String::is_empty) {
            return Err(TableError::Empty {
                path: path.to_path_buf(),
            });
        }
        let column = |name: &str| {
            header
                .iter()
                .position(|c| c == name)
                .ok_or_else(|| TableError::NoColumn {
                    path: path.to_path_buf(),
                    column: name.to_owned(),
                    columns: header.clone(),
                })
        };
        let time_at = column(time)?;
        let named: Vec<usize> = metrics
            .iter()
            .map(|m| column(m))
            .collect::<Result<_, _>>()?;
        let mut rows: Vec<Vec<String>> = Vec::new();
        for record in reader.records() {
            rows.push(record.map_err(read)?.iter().map(str::to_owned).collect());
        }
        let number = |text: &str| -> Option<Option<f64>> {
            if text.is_empty() {
                Some(None)
            } else {
                text.parse::<f64>().ok().filter(|v| v.is_finite()).map(Some)
            }
        };
        let metric_columns: Vec<usize> = if named.is_empty() {
            (0..header.len())
                .filter(|&c| c != time_at)
                .filter(|&c| {
                    rows.iter().all(|r| number(&r[c]).is_some())
                        && rows.iter().any(|r| !r[c].is_empty())
                })
                .collect()
        } else {
            named
        };
        if metric_columns.is_empty() {
            return Err(TableError::NoMetric {
                path: path.to_path_buf(),
                time: time.to_owned(),
            });
        }
        let mut metrics = Vec::new();
        for &c in &metric_columns {
            let mut values = Vec::with_capacity(rows.len());
            for (k, row) in rows.iter().enumerate() {
                values.push(number(&row[c]).ok_or_else(|| TableError::NotANumber {
                    path: path.to_path_buf(),
                    // The header is row 1.
                    row: k + 2,
                    column: header[c].clone(),
                    value: row[c].clone(),
                })?);
            }
            metrics.push((header[c].clone(), values));
        }
        let attributes = (0..header.len())
            .filter(|&c| c != time_at && !metric_columns.contains(&c))
            .map(|c| {
                (
                    header[c].clone(),
                    rows.iter().map(|r| r[c].clone()).collect(),
                )
            })
            .collect();
        Ok(Table {
            time: rows.iter().map(|r| r[time_at].clone()).collect(),
            attributes,
            metrics,
        })
    }

    /// The changes of every metric, by metric in the file's order, then by
    /// row.
    pub fn changes(&self, detector: &Detector) -> Vec<RowChange> {
        let mut found = Vec::new();
        for (metric, values) in &self.metrics {
            // Rows without a value are left out of the series.
            let rows: Vec<usize> = (0..values.len()).filter(|&r| values[r].is_some()).collect();
            let series: Vec<f64> = rows.iter().filter_map(|&r| values[r]).collect();
            for shift in shifts(&series, detector) {
                let row = rows[shift.index];
                found.push(RowChange {
                    metric: metric.clone(),
                    row,
                    time: self.time[row].clone(),
                    attributes: self
                        .attributes
                        .iter()
                        .map(|(name, values)| (name.clone(), values[row].clone()))
                        .collect(),
                    before: shift.before,
                    after: shift.after,
                    ratio: shift.ratio,
                    p_value: shift.p_value,
                });
            }
        }
        found
    }
}

/// A change of one metric of a [`Table`], at the first row after it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RowChange {
    pub metric: String,
    /// The row's index among the data rows (the first is 0).
    pub row: usize,
    pub time: String,
    pub attributes: Vec<(String, String)>,
    /// The medians of the segments before and after.
    pub before: f64,
    pub after: f64,
    /// `after / before`.
    pub ratio: f64,
    pub p_value: f64,
}

/// A shift of a plain series: where it begins, the medians either side
/// (up to the neighbouring shifts) and their ratio.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Shift {
    pub index: usize,
    pub before: f64,
    pub after: f64,
    pub ratio: f64,
    pub p_value: f64,
}

/// The shifts of `values`, in order.
pub fn shifts(values: &[f64], detector: &Detector) -> Vec<Shift> {
    let splits = detector.splits(values);
    let mut bounds = vec![0];
    bounds.extend(splits.iter().map(|s| s.at));
    bounds.push(values.len());
    let median = |segment: &[f64]| {
        let mut sorted = segment.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted[(sorted.len() - 1) / 2]
    };
    splits
        .iter()
        .enumerate()
        .map(|(k, split)| {
            let before = median(&values[bounds[k]..bounds[k + 1]]);
            let after = median(&values[bounds[k + 1]..bounds[k + 2]]);
            Shift {
                index: split.at,
                before,
                after,
                ratio: if before == 0.0 {
                    f64::NAN
                } else {
                    after / before
                },
                p_value: split.p_value,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), text).unwrap();
        file
    }

    #[test]
    fn numeric_columns_are_metrics_and_the_rest_attributes() {
        let mut text = String::from("time,commit,latency,\"a, quoted\"\n");
        for k in 0..40 {
            let latency = if k < 25 { 100.0 } else { 110.0 } + (k % 3) as f64 * 0.5;
            text.push_str(&format!(
                "2026-01-{:02},c{k},{latency},{}\n",
                k % 28 + 1,
                k % 2
            ));
        }
        let source = file(&text);
        let table = Table::read(source.path(), "time", &[]).unwrap();
        let names: Vec<&str> = table.metrics.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["latency", "a, quoted"]);
        assert_eq!(table.attributes[0].0, "commit");
        let changes = table.changes(&Detector::default());
        assert_eq!(changes.len(), 1, "{changes:?}");
        let change = &changes[0];
        assert_eq!((change.metric.as_str(), change.row), ("latency", 25));
        assert_eq!(change.attributes, [("commit".to_owned(), "c25".to_owned())]);
        assert!((change.ratio - 1.1).abs() < 0.01, "{}", change.ratio);
    }

    #[test]
    fn bad_files_are_refused_naming_the_file_row_and_column() {
        let source = file("when,x\n1,2\n");
        let error = Table::read(source.path(), "time", &[])
            .unwrap_err()
            .to_string();
        assert!(
            error.ends_with(": no column `time` (the columns are when, x)"),
            "{error}"
        );
        let source = file("time,x\n1,2\n2,fast\n");
        let error = Table::read(source.path(), "time", &["x".to_owned()])
            .unwrap_err()
            .to_string();
        assert!(
            error.ends_with(": row 3, column `x`: `fast` is not a number"),
            "{error}"
        );
        let error = Table::read(source.path(), "time", &[])
            .unwrap_err()
            .to_string();
        assert!(
            error.ends_with(": no metric: no column besides `time` holds only numbers"),
            "{error}"
        );
        let source = file("time,x\n1,2,3\n");
        let error = Table::read(source.path(), "time", &[])
            .unwrap_err()
            .to_string();
        assert!(error.contains("found record with 3 fields"), "{error}");
    }
}
