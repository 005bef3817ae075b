//! The `coco` source on a small dataset written here: three images, their
//! annotations in a COCO file, the records checked box by box.

use std::path::Path;

use profiling_core::data::{self, DataError, DataSource, Dtype};

const ANNOTATIONS: &str = r#"{
  "info": {"description": "three images"},
  "images": [
    {"id": 285, "file_name": "bear.png", "width": 40, "height": 30},
    {"id": 139, "file_name": "room.png", "width": 20, "height": 10},
    {"id": 632, "file_name": "empty.png", "width": 8, "height": 8}
  ],
  "annotations": [
    {"id": 11, "image_id": 139, "category_id": 1, "bbox": [2, 3, 4, 5], "area": 17.5, "iscrowd": 0, "segmentation": [[2, 3, 6, 3, 6, 8]]},
    {"id": 12, "image_id": 285, "category_id": 23, "bbox": [0.5, 1, 30, 20], "area": 512, "iscrowd": 0},
    {"id": 13, "image_id": 139, "category_id": 62, "bbox": [10, 0, 5, 5], "area": 25, "iscrowd": 1, "segmentation": {"counts": [1, 2], "size": [10, 20]}}
  ],
  "categories": [
    {"id": 1, "name": "person", "supercategory": "person"},
    {"id": 23, "name": "bear", "supercategory": "animal"},
    {"id": 62, "name": "chair", "supercategory": "furniture"}
  ]
}"#;

/// Writes the dataset into `dir`: `instances.json` and `images/`.
fn dataset(dir: &Path) {
    std::fs::create_dir(dir.join("images")).unwrap();
    for (name, width, height) in [
        ("bear.png", 40, 30),
        ("room.png", 20, 10),
        ("empty.png", 8, 8),
    ] {
        image::RgbImage::from_pixel(width, height, image::Rgb([9, 99, 199]))
            .save(dir.join("images").join(name))
            .unwrap();
    }
    std::fs::write(dir.join("instances.json"), ANNOTATIONS).unwrap();
}

fn source(dir: &Path, more: &str) -> Result<Box<dyn DataSource>, DataError> {
    data::build(
        "coco",
        &serde_yaml::from_str(&format!(
            "{{annotations: {}, images: {}{more}}}",
            dir.join("instances.json").display(),
            dir.join("images").display()
        ))
        .unwrap(),
    )
}

fn floats(record: &data::DataRecord, name: &str) -> Vec<f32> {
    record.tensor(name).unwrap().iter().copied().collect()
}

#[test]
fn each_image_is_a_record_with_its_boxes_categories_areas_and_iscrowd() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path());
    let source = source(dir.path(), "").unwrap();
    let records = source.read_all().unwrap();
    let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        ["285", "139", "632"],
        "the file's order, image ids as ids"
    );

    let room = &records[1];
    assert_eq!(room.image().unwrap().dimensions(), (20, 10));
    assert_eq!(room.image().unwrap().get_pixel(3, 3).0, [9, 99, 199]);
    assert_eq!(room.tensor("boxes_xywh").unwrap().shape(), [2, 4]);
    assert_eq!(
        floats(room, "boxes_xywh"),
        [2.0, 3.0, 4.0, 5.0, 10.0, 0.0, 5.0, 5.0]
    );
    assert_eq!(
        floats(room, "boxes"),
        [2.0, 3.0, 6.0, 8.0, 10.0, 0.0, 15.0, 5.0]
    );
    assert_eq!(floats(room, "areas"), [17.5, 25.0]);
    assert_eq!(
        room.typed_tensor("category_ids").unwrap().dtype(),
        Dtype::I64
    );
    assert_eq!(floats(room, "category_ids"), [1.0, 62.0]);
    assert_eq!(room.typed_tensor("iscrowd").unwrap().dtype(), Dtype::U8);
    assert_eq!(floats(room, "iscrowd"), [0.0, 1.0]);
    let names: Vec<&str> = room.metadata["category_names"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(names, ["person", "chair"]);
    assert_eq!(
        room.metadata["file_name"],
        serde_yaml::Value::from("room.png")
    );

    let empty = &records[2];
    assert_eq!(empty.tensor("boxes").unwrap().shape(), [0, 4]);
    assert_eq!(source.record_id(0).as_deref(), Some("285"));
    assert_eq!(
        source.estimated_bytes().unwrap(),
        (40 * 30 + 20 * 10 + 8 * 8) * 3 + 3 * (32 + 4 + 8 + 1)
    );
}

#[test]
fn a_category_filter_keeps_the_images_with_one_and_only_its_annotations() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path());
    let records = source(dir.path(), ", categories: [chair, 23]")
        .unwrap()
        .read_all()
        .unwrap();
    let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["285", "139"]);
    assert_eq!(floats(&records[1], "category_ids"), [62.0]);
    assert_eq!(floats(&records[1], "boxes"), [10.0, 0.0, 15.0, 5.0]);

    let error = source(dir.path(), ", categories: [unicorn]")
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        error,
        "data_source.categories: `unicorn` is not a category of the annotation file (it has person, bear, chair)"
    );
}

#[test]
fn limit_keeps_the_first_images_and_decode_false_reads_no_pixels() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path());
    let source = source(dir.path(), ", limit: 2, decode: false").unwrap();
    let records = source.read_all().unwrap();
    assert_eq!(records.len(), 2);
    assert!(records.iter().all(|r| r.image.is_none()));
    assert_eq!(floats(&records[0], "boxes"), [0.5, 1.0, 30.5, 21.0]);
}

#[test]
fn a_missing_image_is_refused_naming_it_and_its_id() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path());
    std::fs::remove_file(dir.path().join("images/room.png")).unwrap();
    let error = source(dir.path(), "").err().unwrap().to_string();
    assert_eq!(
        error,
        format!(
            "data_source (coco): image 139 of {}: its file {} is missing",
            dir.path().join("instances.json").display(),
            dir.path().join("images/room.png").display()
        )
    );
}

#[test]
fn a_malformed_box_or_file_is_refused_naming_the_file_and_annotation() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path());
    let annotations = dir.path().join("instances.json");
    std::fs::write(
        &annotations,
        ANNOTATIONS.replace("[0.5, 1, 30, 20]", "[0.5, 1, 30]"),
    )
    .unwrap();
    let error = source(dir.path(), "").err().unwrap().to_string();
    assert_eq!(
        error,
        format!(
            "data_source (coco): {}: annotation 12 (image 285): bbox [0.5, 1, 30] has 3 numbers, not 4 (x, y, width, height)",
            annotations.display()
        )
    );
    std::fs::write(&annotations, &ANNOTATIONS[..200]).unwrap();
    let error = source(dir.path(), "").err().unwrap().to_string();
    assert!(
        error.starts_with(&format!(
            "data_source (coco): {}: not a COCO annotation file: EOF while parsing",
            annotations.display()
        )),
        "{error}"
    );
}

#[test]
fn a_missing_annotation_file_or_image_directory_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let error = source(dir.path(), "").err().unwrap().to_string();
    assert_eq!(
        error,
        format!(
            "data_source.images: {} is not a directory",
            dir.path().join("images").display()
        )
    );
    std::fs::create_dir(dir.path().join("images")).unwrap();
    let error = source(dir.path(), "").err().unwrap().to_string();
    assert_eq!(
        error,
        format!(
            "data_source.annotations: {} does not exist",
            dir.path().join("instances.json").display()
        )
    );
}
