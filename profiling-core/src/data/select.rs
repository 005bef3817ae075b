//! `workload.records` and `workload.shuffle`: which records of a source a
//! run reads, and in what order, for every source, eager or lazy.
//!
//! `records: [id, ...]` keeps the records with those ids, in the order
//! listed; `shuffle: true` then orders them by the run's seed (0 when the
//! run has none): the same seed, the same order. The source is wrapped,
//! not read: a record left out is never read, and a source that knows its
//! ids without reading (`DataSource::record_id`: file names) reads none of
//! them to find the ones listed.

use std::collections::{BTreeMap, HashMap};

use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_yaml::Value;

use super::{DataError, DataRecord, DataSource};

/// The most records `records` and `shuffle` choose among: their order is
/// held as one index per record (2 GiB of them at this bound).
pub(crate) const MAX_SELECTED: usize = 1 << 28;

/// Which records a run reads, and in what order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    /// Order the records by the run's seed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shuffle: bool,
    /// Only the records with these ids, in this order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records: Option<Vec<String>>,
}

impl Selection {
    /// Every record, in the source's order.
    pub fn is_everything(&self) -> bool {
        !self.shuffle && self.records.is_none()
    }
}

/// `source` as `selection` asks, with `seed` ordering a shuffle. An id
/// listed that the source does not have, listed twice, or an empty list is
/// a [`DataError::Workload`] of `records`.
pub fn select(
    source: Box<dyn DataSource>,
    selection: &Selection,
    seed: u64,
) -> Result<Box<dyn DataSource>, DataError> {
    if selection.is_everything() {
        return Ok(source);
    }
    if source.len() > MAX_SELECTED {
        return Err(DataError::Workload {
            key: if selection.records.is_some() { "records" } else { "shuffle" }.to_owned(),
            message: format!(
                "the `{}` source has {} records, more than the {MAX_SELECTED} a run can pick from or order: use fewer records",
                source.name(),
                source.len()
            ),
        });
    }
    let mut order: Vec<usize> = match &selection.records {
        None => (0..source.len()).collect(),
        Some(ids) => indices_of(&*source, ids)?,
    };
    if selection.shuffle {
        shuffle(&mut order, seed);
    }
    Ok(Box::new(Selected {
        inner: source,
        order,
    }))
}

fn records_error(message: String) -> DataError {
    DataError::Workload {
        key: "records".to_owned(),
        message,
    }
}

/// The index of each of `ids` in `source`, in their order.
fn indices_of(source: &dyn DataSource, ids: &[String]) -> Result<Vec<usize>, DataError> {
    if ids.is_empty() {
        return Err(records_error(
            "is empty: list the ids of the records to read, or leave `records` out to read them all"
                .to_owned(),
        ));
    }
    let mut seen = HashMap::with_capacity(ids.len());
    for (position, id) in ids.iter().enumerate() {
        if let Some(first) = seen.insert(id.as_str(), position) {
            return Err(records_error(format!(
                "`{id}` is listed twice (entries {} and {}): a run reads each record once a pass",
                first + 1,
                position + 1
            )));
        }
    }
    let mut wanted: HashMap<&str, Option<usize>> =
        ids.iter().map(|id| (id.as_str(), None)).collect();
    let mut remaining = ids.len();
    let mut known = Vec::new();
    for index in 0..source.len() {
        let id = match source.record_id(index) {
            Some(id) => id,
            None => source.read(index)?.id,
        };
        if let Some(slot @ None) = wanted.get_mut(id.as_str()) {
            *slot = Some(index);
            remaining -= 1;
            if remaining == 0 {
                break;
            }
        }
        if known.len() < 5 {
            known.push(id);
        }
    }
    ids.iter()
        .map(|id| {
            wanted[id.as_str()].ok_or_else(|| {
                records_error(format!(
                    "no record `{id}` in the `{}` source, whose {} record(s) begin {}",
                    source.name(),
                    source.len(),
                    known
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
        })
        .collect()
}

/// Fisher-Yates over `order`, from a generator seeded with `seed`.
fn shuffle(order: &mut [usize], seed: u64) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x0073_6875_6666_6c65);
    for i in (1..order.len()).rev() {
        let j = rng.gen_range(0..=i);
        order.swap(i, j);
    }
}

/// A source's records at the indices of `order`.
struct Selected {
    inner: Box<dyn DataSource>,
    order: Vec<usize>,
}

impl super::sealed::Adapter for Selected {}

impl DataSource for Selected {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn describe(&self) -> BTreeMap<String, Value> {
        self.inner.describe()
    }

    fn cache(&self) -> Option<std::sync::Arc<dyn super::CacheStats>> {
        self.inner.cache()
    }

    fn len(&self) -> usize {
        self.order.len()
    }

    fn estimated_bytes(&self) -> Result<u64, DataError> {
        // Records of one source are taken to be alike in size.
        let all = self.inner.estimated_bytes()?;
        let count = self.inner.len().max(1) as u128;
        Ok((u128::from(all) * self.order.len() as u128 / count) as u64)
    }

    fn read(&self, index: usize) -> Result<DataRecord, DataError> {
        match self.order.get(index) {
            Some(&inner) => self.inner.read(inner),
            None => Err(DataError::OutOfRange {
                index,
                len: self.order.len(),
            }),
        }
    }

    fn record_id(&self, index: usize) -> Option<String> {
        self.inner.record_id(*self.order.get(index)?)
    }

    fn needs_lazy_loading(&self) -> Option<String> {
        self.inner.needs_lazy_loading()
    }

    fn reads_in_order(&self) -> bool {
        self.inner.reads_in_order()
    }

    /// The records left to read, across the cores, in order; for a source
    /// that reads in order, one after the other in the source's order,
    /// then put in the order asked.
    fn read_rest(&self, known: Vec<DataRecord>) -> Result<Vec<DataRecord>, DataError> {
        let mut records = known;
        records.truncate(self.order.len());
        if self.inner.reads_in_order() {
            let rest = &self.order[records.len()..];
            let mut by_index: Vec<(usize, usize)> = rest
                .iter()
                .enumerate()
                .map(|(at, &inner)| (inner, at))
                .collect();
            by_index.sort_unstable();
            let mut read: Vec<Option<DataRecord>> = (0..rest.len()).map(|_| None).collect();
            for (inner, at) in by_index {
                read[at] = Some(self.inner.read(inner)?);
            }
            records.extend(read.into_iter().map(|r| r.expect("every position read")));
            return Ok(records);
        }
        let rest = super::in_order(
            self.order[records.len()..]
                .par_iter()
                .map(|&inner| self.inner.read(inner))
                .collect(),
        )?;
        records.extend(rest);
        Ok(records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{named, RecordSource};

    fn dummy(count: usize) -> Box<dyn DataSource> {
        super::super::build(
            "dummy",
            &serde_yaml::from_str(&format!("{{record_count: {count}}}")).unwrap(),
        )
        .unwrap()
    }

    fn ids(source: &dyn DataSource) -> Vec<String> {
        source
            .read_all()
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect()
    }

    fn selection(yaml: &str) -> Selection {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn records_are_read_by_id_in_the_order_listed() {
        let picked = select(dummy(6), &selection("records: [dummy-4, dummy-1]"), 0).unwrap();
        assert_eq!(picked.len(), 2);
        assert_eq!(ids(&*picked), ["dummy-4", "dummy-1"]);
        // Lazy reads go through the same order.
        assert_eq!(picked.read(1).unwrap().id, "dummy-1");
        // Record 4's tensor is arange(16) + 4.
        assert_eq!(
            picked.read(0).unwrap().tensor("tensor").unwrap()[[0, 0]],
            4.0
        );
    }

    /// Records `r<i>`, noting the order they are read in.
    struct Streamed {
        len: usize,
        reads: std::sync::Arc<std::sync::Mutex<Vec<usize>>>,
    }

    impl RecordSource for Streamed {
        type Parameters = ();
        fn open(_: ()) -> anyhow::Result<Self> {
            anyhow::bail!("opened by the test")
        }
        fn len(&self) -> usize {
            self.len
        }
        fn read(&self, index: usize) -> anyhow::Result<DataRecord> {
            self.reads.lock().unwrap().push(index);
            Ok(DataRecord {
                id: format!("r{index}"),
                ..DataRecord::default()
            })
        }
        fn record_id(&self, index: usize) -> Option<String> {
            Some(format!("r{index}"))
        }
        fn reads_in_order(&self) -> bool {
            true
        }
    }

    #[test]
    fn a_source_that_reads_in_order_is_read_in_its_order_and_given_in_the_order_asked() {
        let reads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let source = named(
            "streamed",
            Streamed {
                len: 40,
                reads: reads.clone(),
            },
        );
        let shuffled = select(source, &selection("shuffle: true"), 3).unwrap();
        let first = shuffled.read(0).unwrap();
        let records = shuffled.read_rest(vec![first]).unwrap();
        let reads = reads.lock().unwrap().clone();
        assert_eq!(reads.len(), 40, "each record read once");
        assert!(
            reads[1..].windows(2).all(|pair| pair[0] < pair[1]),
            "after the first, read in the source's order: {reads:?}"
        );
        let asked: Vec<String> = (0..40).map(|i| shuffled.record_id(i).unwrap()).collect();
        let given: Vec<String> = records.into_iter().map(|r| r.id).collect();
        assert_eq!(given, asked, "the shuffled order");
        assert_ne!(given[..5], ["r0", "r1", "r2", "r3", "r4"]);
    }

    #[test]
    fn the_same_seed_shuffles_the_same_way_and_another_seed_another() {
        let order = |seed| ids(&*select(dummy(20), &selection("shuffle: true"), seed).unwrap());
        let first = order(7);
        assert_eq!(first, order(7));
        assert_ne!(first, order(8));
        let mut sorted = first.clone();
        sorted.sort();
        let mut all = ids(&*dummy(20));
        all.sort();
        assert_eq!(sorted, all, "every record once");
        assert_ne!(first, ids(&*dummy(20)), "not the source's order");
    }

    #[test]
    fn shuffled_records_are_the_listed_ones() {
        let picked = select(
            dummy(10),
            &selection("{records: [dummy-1, dummy-2, dummy-3, dummy-9], shuffle: true}"),
            3,
        )
        .unwrap();
        let mut got = ids(&*picked);
        got.sort();
        assert_eq!(got, ["dummy-1", "dummy-2", "dummy-3", "dummy-9"]);
    }

    #[test]
    fn an_unknown_repeated_or_empty_list_is_refused_naming_the_key() {
        let error = |yaml: &str| {
            select(dummy(3), &selection(yaml), 0)
                .err()
                .unwrap()
                .to_string()
        };
        assert_eq!(
            error("records: [dummy-0, dummy-7]"),
            "records: no record `dummy-7` in the `dummy` source, whose 3 record(s) begin `dummy-0`, `dummy-1`, `dummy-2`"
        );
        assert_eq!(
            error("records: [dummy-0, dummy-1, dummy-0]"),
            "records: `dummy-0` is listed twice (entries 1 and 3): a run reads each record once a pass"
        );
        assert!(error("records: []").starts_with("records: is empty"));
    }

    #[test]
    fn a_source_too_large_to_order_is_refused_before_anything_is_held() {
        let huge = super::super::build(
            "dummy",
            &serde_yaml::from_str("{record_count: 1000000000000, include_image: false}").unwrap(),
        )
        .unwrap();
        let error = select(huge, &selection("shuffle: true"), 0)
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.starts_with(
                "shuffle: the `dummy` source has 1000000000000 records, more than the 268435456"
            ),
            "{error}"
        );
    }

    #[test]
    fn nothing_asked_is_the_source_itself() {
        let source = select(dummy(3), &Selection::default(), 5).unwrap();
        assert_eq!(ids(&*source), ["dummy-0", "dummy-1", "dummy-2"]);
    }
}
