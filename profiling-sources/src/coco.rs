//! The `coco` source: a COCO dataset, each record an image with its
//! annotations.
//!
//! `annotations` is a COCO annotation file (`instances_val2017.json`),
//! `images` the directory its `file_name`s are in. Records follow the
//! file's `images` list (the order pycocotools gives), the record id the
//! image id. With `categories` (names or ids) only the images with an
//! annotation of one of them are kept, and only those annotations; `limit`
//! then keeps the first N. Each record carries the decoded image
//! (`decode: false` leaves it out) and its annotations as tensors: `boxes`
//! (xyxy) and `boxes_xywh` (as the file has them), `[N, 4]` float32,
//! `areas` `[N]` float32, `category_ids` `[N]` int64 and `iscrowd` `[N]`
//! uint8; the category names, annotation ids and the image's size and file
//! name are its metadata.
//!
//! The annotation file is read whole and checked when the source is built:
//! an image whose file is missing, an annotation of an image or category
//! the file does not list, or a box that is not four finite numbers with a
//! width and height of at least 0 is refused before any run, naming the
//! file, the annotation and the image.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Deserialize;
use serde_yaml::Value;

use crate::images;
use profiling_core::data::{DataError, DataRecord, RecordSource, TensorData, TypedTensor};
use profiling_core::yaml::check_literal_path;

/// Parameters of the coco source as the config writes them; see the module
/// docs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CocoParameters {
    /// The COCO annotation file (JSON).
    pub annotations: PathBuf,
    /// The directory the images' `file_name`s are in.
    pub images: PathBuf,
    /// Keep the images with an annotation of these categories (names or ids).
    pub categories: Option<Vec<CategoryKey>>,
    /// Keep the first N images.
    pub limit: Option<usize>,
    /// Decode the images (default true).
    #[serde(default = "yes")]
    pub decode: bool,
}

fn yes() -> bool {
    true
}

/// A category in `categories`: its name or its id.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum CategoryKey {
    Id(i64),
    Name(String),
}

/// The parts of a COCO annotation file the source reads.
#[derive(Debug, Deserialize)]
struct CocoFile {
    images: Vec<CocoImage>,
    #[serde(default)]
    annotations: Vec<CocoAnnotation>,
    #[serde(default)]
    categories: Vec<CocoCategory>,
}

#[derive(Debug, Deserialize)]
struct CocoImage {
    id: i64,
    file_name: String,
    #[serde(default)]
    width: u32,
    #[serde(default)]
    height: u32,
}

#[derive(Debug, Deserialize)]
struct CocoAnnotation {
    #[serde(default)]
    id: Option<i64>,
    image_id: i64,
    category_id: i64,
    bbox: Vec<f64>,
    #[serde(default)]
    area: Option<f64>,
    #[serde(default)]
    iscrowd: u8,
}

#[derive(Debug, Deserialize)]
struct CocoCategory {
    id: i64,
    name: String,
}

/// One annotation as a record carries it.
#[derive(Debug, Clone, PartialEq)]
pub struct Annotation {
    pub id: Option<i64>,
    pub category_id: i64,
    /// As the file has it: x, y, width, height.
    pub bbox_xywh: [f32; 4],
    pub area: f32,
    pub iscrowd: u8,
}

/// One image of the dataset and the annotations kept for it.
#[derive(Debug, Clone, PartialEq)]
pub struct CocoEntry {
    pub id: i64,
    pub file_name: String,
    pub width: u32,
    pub height: u32,
    pub annotations: Vec<Annotation>,
}

/// A COCO annotation file, parsed and checked: its images in order, each
/// with its annotations, and the category names by id.
#[derive(Debug, Clone, PartialEq)]
pub struct CocoIndex {
    pub entries: Vec<CocoEntry>,
    pub categories: BTreeMap<i64, String>,
}

/// Parses a COCO annotation file's `bytes` and checks it; the error says
/// what is wrong, naming the annotation and image. What the fuzz target
/// drives.
pub fn parse_annotations(bytes: &[u8]) -> Result<CocoIndex, String> {
    let file: CocoFile = serde_json::from_slice(bytes).map_err(|error| {
        format!(
            "not a COCO annotation file: {error} (line {}, column {})",
            error.line(),
            error.column()
        )
    })?;
    let mut categories = BTreeMap::new();
    for category in file.categories {
        if categories.insert(category.id, category.name).is_some() {
            return Err(format!("category {} is listed twice", category.id));
        }
    }
    let mut entries = Vec::with_capacity(file.images.len());
    let mut by_id: HashMap<i64, usize> = HashMap::with_capacity(file.images.len());
    for image in file.images {
        if by_id.insert(image.id, entries.len()).is_some() {
            return Err(format!("image {} is listed twice", image.id));
        }
        check_file_name(&image.file_name)
            .map_err(|m| format!("image {}: file_name {m}", image.id))?;
        entries.push(CocoEntry {
            id: image.id,
            file_name: image.file_name,
            width: image.width,
            height: image.height,
            annotations: Vec::new(),
        });
    }
    for (position, annotation) in file.annotations.into_iter().enumerate() {
        let which = match annotation.id {
            Some(id) => format!("annotation {id} (image {})", annotation.image_id),
            None => format!("annotation #{position} (image {})", annotation.image_id),
        };
        let Some(&entry) = by_id.get(&annotation.image_id) else {
            return Err(format!("{which}: its image_id is not in `images`"));
        };
        if !categories.is_empty() && !categories.contains_key(&annotation.category_id) {
            return Err(format!(
                "{which}: category_id {} is not in `categories`",
                annotation.category_id
            ));
        }
        let bbox = check_box(&annotation.bbox).map_err(|m| format!("{which}: bbox {m}"))?;
        let area = match annotation.area {
            Some(area) if area.is_finite() && area >= 0.0 => area as f32,
            Some(area) => return Err(format!("{which}: area {area} is not a finite number >= 0")),
            None => bbox[2] * bbox[3],
        };
        if annotation.iscrowd > 1 {
            return Err(format!(
                "{which}: iscrowd is {}, not 0 or 1",
                annotation.iscrowd
            ));
        }
        entries[entry].annotations.push(Annotation {
            id: annotation.id,
            category_id: annotation.category_id,
            bbox_xywh: bbox,
            area,
            iscrowd: annotation.iscrowd,
        });
    }
    Ok(CocoIndex {
        entries,
        categories,
    })
}

/// A box is four finite numbers, its width and height at least 0.
fn check_box(bbox: &[f64]) -> Result<[f32; 4], String> {
    let shown = || {
        let numbers: Vec<String> = bbox.iter().map(f64::to_string).collect();
        format!("[{}]", numbers.join(", "))
    };
    let &[x, y, width, height] = bbox else {
        return Err(format!(
            "{} has {} numbers, not 4 (x, y, width, height)",
            shown(),
            bbox.len()
        ));
    };
    if bbox
        .iter()
        .any(|v| !v.is_finite() || v.abs() > f64::from(f32::MAX))
    {
        return Err(format!("{} is not four finite numbers", shown()));
    }
    if width < 0.0 || height < 0.0 {
        return Err(format!("{} has a negative width or height", shown()));
    }
    Ok([x as f32, y as f32, width as f32, height as f32])
}

/// A file name stays inside the image directory: relative, no `..`.
fn check_file_name(name: &str) -> Result<(), String> {
    let path = Path::new(name);
    if name.is_empty() {
        return Err("is empty".to_owned());
    }
    if path.is_absolute()
        || path.components().any(|c| {
            !matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        })
    {
        return Err(format!(
            "`{name}` leaves the image directory: expected a path inside it"
        ));
    }
    Ok(())
}

/// A COCO dataset; see the module docs.
#[derive(Debug, Clone)]
pub struct CocoSource {
    annotations: PathBuf,
    images: PathBuf,
    index: CocoIndex,
    decode: bool,
    categories: Option<Vec<i64>>,
    total_images: usize,
}

fn parameter_error(key: &str, message: impl Into<String>) -> DataError {
    DataError::Parameter {
        key: key.to_owned(),
        message: message.into(),
    }
}

impl CocoSource {
    /// Reads and checks the annotation file and finds every kept image.
    pub fn from_parsed(params: CocoParameters) -> Result<CocoSource, DataError> {
        for (key, path) in [
            ("annotations", &params.annotations),
            ("images", &params.images),
        ] {
            check_literal_path(&path.to_string_lossy()).map_err(|m| parameter_error(key, m))?;
        }
        if params.limit == Some(0) {
            return Err(parameter_error("limit", "must be >= 1"));
        }
        if !params.images.is_dir() {
            return Err(parameter_error(
                "images",
                format!("{} is not a directory", params.images.display()),
            ));
        }
        // Opened, a FIFO would wait for a writer for ever.
        if let Some(what) = crate::files::not_a_regular_file(&params.annotations) {
            return Err(parameter_error(
                "annotations",
                format!(
                    "{} is {what}, not a JSON file",
                    params.annotations.display()
                ),
            ));
        }
        let bytes = std::fs::read(&params.annotations).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => parameter_error(
                "annotations",
                format!("{} does not exist", params.annotations.display()),
            ),
            _ => DataError::Io {
                path: params.annotations.clone(),
                source,
            },
        })?;
        let in_file = |message: String| DataError::Source {
            source_name: "coco".to_owned(),
            record: None,
            message: format!("{}: {message}", params.annotations.display()),
        };
        let mut index = parse_annotations(&bytes).map_err(in_file)?;
        let total_images = index.entries.len();
        let categories = match &params.categories {
            None => None,
            Some(keys) => Some(category_ids(keys, &index.categories)?),
        };
        if let Some(wanted) = &categories {
            index.entries.retain_mut(|entry| {
                entry
                    .annotations
                    .retain(|a| wanted.contains(&a.category_id));
                !entry.annotations.is_empty()
            });
        }
        if let Some(limit) = params.limit {
            index.entries.truncate(limit);
        }
        if index.entries.is_empty() {
            return Err(in_file(match &params.categories {
                Some(_) => "no image has an annotation of the categories asked for".to_owned(),
                None => "lists no images".to_owned(),
            }));
        }
        for entry in &index.entries {
            let path = params.images.join(&entry.file_name);
            if !path.is_file() {
                return Err(DataError::Source {
                    source_name: "coco".to_owned(),
                    record: None,
                    message: format!(
                        "image {} of {}: its file {} is missing",
                        entry.id,
                        params.annotations.display(),
                        path.display()
                    ),
                });
            }
        }
        Ok(CocoSource {
            annotations: params.annotations,
            images: params.images,
            index,
            decode: params.decode,
            categories,
            total_images,
        })
    }

    fn record(&self, position: usize) -> Result<DataRecord, DataError> {
        let entry = &self.index.entries[position];
        let path = self.images.join(&entry.file_name);
        let image = if self.decode {
            Some(images::decode_rgb(&path)?)
        } else {
            None
        };
        let count = entry.annotations.len();
        let xywh: Vec<f32> = entry.annotations.iter().flat_map(|a| a.bbox_xywh).collect();
        let xyxy: Vec<f32> = entry
            .annotations
            .iter()
            .flat_map(|a| {
                let [x, y, w, h] = a.bbox_xywh;
                [x, y, x + w, y + h]
            })
            .collect();
        let areas: Vec<f32> = entry.annotations.iter().map(|a| a.area).collect();
        let category_ids: Vec<i64> = entry.annotations.iter().map(|a| a.category_id).collect();
        let iscrowd: Vec<u8> = entry.annotations.iter().map(|a| a.iscrowd).collect();
        let shaped = |values: Vec<f32>, shape: Vec<usize>| {
            ndarray::ArrayD::from_shape_vec(shape, values).expect("values fill the shape")
        };
        let names: Vec<Value> = entry
            .annotations
            .iter()
            .map(|a| {
                Value::from(
                    self.index
                        .categories
                        .get(&a.category_id)
                        .cloned()
                        .unwrap_or_default(),
                )
            })
            .collect();
        let annotation_ids: Vec<Value> = entry
            .annotations
            .iter()
            .map(|a| a.id.map_or(Value::Null, Value::from))
            .collect();
        Ok(DataRecord {
            id: entry.id.to_string(),
            image,
            path: Some(path.clone()),
            tensors: BTreeMap::from([
                ("boxes".to_owned(), shaped(xyxy, vec![count, 4])),
                ("boxes_xywh".to_owned(), shaped(xywh, vec![count, 4])),
                ("areas".to_owned(), shaped(areas, vec![count])),
            ]),
            typed_tensors: BTreeMap::from([
                (
                    "category_ids".to_owned(),
                    TypedTensor::new(TensorData::I64(
                        ndarray::ArrayD::from_shape_vec(vec![count], category_ids)
                            .expect("one per annotation"),
                    )),
                ),
                (
                    "iscrowd".to_owned(),
                    TypedTensor::new(TensorData::U8(
                        ndarray::ArrayD::from_shape_vec(vec![count], iscrowd)
                            .expect("one per annotation"),
                    )),
                ),
            ]),
            metadata: BTreeMap::from([
                ("image_id".to_owned(), Value::from(entry.id)),
                ("file_name".to_owned(), Value::from(entry.file_name.clone())),
                ("width".to_owned(), Value::from(entry.width)),
                ("height".to_owned(), Value::from(entry.height)),
                ("category_names".to_owned(), Value::Sequence(names)),
                ("annotation_ids".to_owned(), Value::Sequence(annotation_ids)),
            ]),
            source: BTreeMap::from([
                ("name".to_owned(), Value::from("coco")),
                ("index".to_owned(), Value::from(position as u64)),
                ("file".to_owned(), Value::from(path.display().to_string())),
            ]),
        })
    }
}

/// The ids of the categories `keys` names; an unknown one is refused with
/// the names the file has.
fn category_ids(
    keys: &[CategoryKey],
    known: &BTreeMap<i64, String>,
) -> Result<Vec<i64>, DataError> {
    if keys.is_empty() {
        return Err(parameter_error(
            "categories",
            "is empty: name at least one category, or leave the key out",
        ));
    }
    keys.iter()
        .map(|key| {
            let found = match key {
                CategoryKey::Id(id) => known.contains_key(id).then_some(*id),
                CategoryKey::Name(name) => {
                    known.iter().find(|(_, n)| *n == name).map(|(id, _)| *id)
                }
            };
            found.ok_or_else(|| {
                let mut names: Vec<&str> = known.values().map(String::as_str).collect();
                let more = names.len().saturating_sub(12);
                names.truncate(12);
                parameter_error(
                    "categories",
                    format!(
                        "{} is not a category of the annotation file (it has {}{})",
                        match key {
                            CategoryKey::Id(id) => format!("id {id}"),
                            CategoryKey::Name(name) => format!("`{name}`"),
                        },
                        if names.is_empty() {
                            "none".to_owned()
                        } else {
                            names.join(", ")
                        },
                        if more > 0 {
                            format!(" and {more} more")
                        } else {
                            String::new()
                        }
                    ),
                )
            })
        })
        .collect()
}

#[profiling_core::data_source(
    name = "coco",
    description = "A COCO dataset: each image with its boxes, categories, areas and iscrowd."
)]
impl RecordSource for CocoSource {
    type Parameters = CocoParameters;

    fn open(parameters: CocoParameters) -> anyhow::Result<Self> {
        Ok(CocoSource::from_parsed(parameters)?)
    }

    fn len(&self) -> usize {
        self.index.entries.len()
    }

    fn record_id(&self, index: usize) -> Option<String> {
        self.index.entries.get(index).map(|e| e.id.to_string())
    }

    fn read(&self, index: usize) -> anyhow::Result<DataRecord> {
        Ok(self.record(index)?)
    }

    fn read_rest(&self, known: Vec<DataRecord>) -> anyhow::Result<Vec<DataRecord>> {
        let mut records = known;
        records.truncate(self.index.entries.len());
        let rest = profiling_core::data::in_order(
            (records.len()..self.index.entries.len())
                .into_par_iter()
                .map(|index| self.record(index))
                .collect(),
        )?;
        records.extend(rest);
        Ok(records)
    }

    fn describe(&self) -> BTreeMap<String, Value> {
        let annotations: usize = self.index.entries.iter().map(|e| e.annotations.len()).sum();
        let mut description = BTreeMap::from([
            (
                "annotations".to_owned(),
                Value::from(self.annotations.display().to_string()),
            ),
            (
                "images".to_owned(),
                Value::from(self.images.display().to_string()),
            ),
            (
                "records".to_owned(),
                Value::from(self.index.entries.len() as u64),
            ),
            (
                "images_in_file".to_owned(),
                Value::from(self.total_images as u64),
            ),
            (
                "annotations_kept".to_owned(),
                Value::from(annotations as u64),
            ),
            ("decode".to_owned(), Value::Bool(self.decode)),
        ]);
        if let Some(ids) = &self.categories {
            let names = ids
                .iter()
                .map(|id| Value::from(self.index.categories.get(id).cloned().unwrap_or_default()))
                .collect();
            description.insert("categories".to_owned(), Value::Sequence(names));
        }
        description
    }

    fn estimated_bytes(&self) -> anyhow::Result<Option<u64>> {
        // The file's sizes, where it gives them; an image without one is
        // counted when read.
        let pixels: u64 = self
            .index
            .entries
            .iter()
            .map(|e| u64::from(e.width) * u64::from(e.height) * 3)
            .sum();
        let boxes: u64 = self
            .index
            .entries
            .iter()
            .map(|e| e.annotations.len() as u64 * (4 * 4 * 2 + 4 + 8 + 1))
            .sum();
        Ok(Some(if self.decode { pixels } else { 0 } + boxes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"{
        "images": [
            {"id": 139, "file_name": "000000000139.jpg", "width": 640, "height": 426},
            {"id": 285, "file_name": "000000000285.jpg", "width": 586, "height": 640}
        ],
        "annotations": [
            {"id": 1, "image_id": 139, "category_id": 1, "bbox": [10, 20, 30, 40], "area": 900.5, "iscrowd": 0},
            {"id": 2, "image_id": 285, "category_id": 23, "bbox": [1.5, 2.5, 3, 4], "iscrowd": 1},
            {"id": 3, "image_id": 139, "category_id": 23, "bbox": [0, 0, 5, 5], "area": 25, "iscrowd": 0}
        ],
        "categories": [{"id": 1, "name": "person"}, {"id": 23, "name": "bear"}]
    }"#;

    #[test]
    fn annotations_are_grouped_by_image_in_the_files_order() {
        let index = parse_annotations(FILE.as_bytes()).unwrap();
        let ids: Vec<i64> = index.entries.iter().map(|e| e.id).collect();
        assert_eq!(ids, [139, 285]);
        let first: Vec<Option<i64>> = index.entries[0].annotations.iter().map(|a| a.id).collect();
        assert_eq!(first, [Some(1), Some(3)]);
        let bear = &index.entries[1].annotations[0];
        assert_eq!(bear.bbox_xywh, [1.5, 2.5, 3.0, 4.0]);
        // No area in the file: the box's.
        assert_eq!(bear.area, 12.0);
        assert_eq!(bear.iscrowd, 1);
        assert_eq!(index.categories[&23], "bear");
    }

    #[test]
    fn a_malformed_box_is_refused_naming_the_annotation_and_image() {
        let bad = FILE.replace("[1.5, 2.5, 3, 4]", "[1.5, 2.5, -3, 4]");
        assert_eq!(
            parse_annotations(bad.as_bytes()).unwrap_err(),
            "annotation 2 (image 285): bbox [1.5, 2.5, -3, 4] has a negative width or height"
        );
        let short = FILE.replace("[0, 0, 5, 5]", "[0, 0, 5]");
        assert_eq!(
            parse_annotations(short.as_bytes()).unwrap_err(),
            "annotation 3 (image 139): bbox [0, 0, 5] has 3 numbers, not 4 (x, y, width, height)"
        );
    }

    #[test]
    fn an_annotation_of_an_unlisted_image_or_category_is_refused() {
        let orphan = FILE.replace("\"image_id\": 285", "\"image_id\": 999");
        assert_eq!(
            parse_annotations(orphan.as_bytes()).unwrap_err(),
            "annotation 2 (image 999): its image_id is not in `images`"
        );
        let unknown = FILE.replace("\"category_id\": 1,", "\"category_id\": 7,");
        assert_eq!(
            parse_annotations(unknown.as_bytes()).unwrap_err(),
            "annotation 1 (image 139): category_id 7 is not in `categories`"
        );
    }

    #[test]
    fn a_file_name_outside_the_image_directory_is_refused() {
        let escaping = FILE.replace("000000000285.jpg", "../secret.jpg");
        assert_eq!(
            parse_annotations(escaping.as_bytes()).unwrap_err(),
            "image 285: file_name `../secret.jpg` leaves the image directory: expected a path inside it"
        );
    }

    #[test]
    fn categories_are_found_by_name_or_id_and_an_unknown_one_lists_the_names() {
        let index = parse_annotations(FILE.as_bytes()).unwrap();
        let keys = [CategoryKey::Name("bear".to_owned()), CategoryKey::Id(1)];
        assert_eq!(category_ids(&keys, &index.categories).unwrap(), [23, 1]);
        let error = category_ids(&[CategoryKey::Name("cat".to_owned())], &index.categories)
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "data_source.categories: `cat` is not a category of the annotation file (it has person, bear)"
        );
    }
}
