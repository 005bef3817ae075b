//! The OCR targets against the production pipeline they re-implement: the
//! Python `rapidocr-onnxruntime` (installed into `.venv/` by
//! `scripts/setup-onnxruntime`) run by `scripts/lib/ocr_reference.py` on
//! the same images, with the same ONNX Runtime and one thread. Every box
//! within 2 pixels of the one Python finds, every string equal.
//!
//! Where the Python side or the images are not there, the test says so
//! and passes without comparing.
#![cfg(feature = "ort")]

use std::path::{Path, PathBuf};
use std::process::Command;

use profiling_core::onnx::OnnxModel;
use profiling_examples::ocr::db::{DbParams, Quad};
use profiling_examples::ocr::{
    default_model, ocr_directory, Detector, Recognizer, DET_MODEL, REC_MODEL,
};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The reference's JSON, or why there is none.
fn python_reference(images: &Path, out: &Path) -> Result<serde_json::Value, String> {
    let root = workspace_root();
    let python = root.join(".venv/bin/python");
    if !python.is_file() {
        return Err(format!(
            "no {}: scripts/setup-onnxruntime installs the Python pipeline",
            python.display()
        ));
    }
    let imports = Command::new(&python)
        .args(["-c", "import rapidocr_onnxruntime, onnxruntime"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !imports.status.success() {
        return Err(format!(
            "the Python pipeline is not installed in .venv/ ({}): scripts/setup-onnxruntime installs it",
            String::from_utf8_lossy(&imports.stderr).lines().last().unwrap_or_default()
        ));
    }
    let ran = Command::new(&python)
        .arg(root.join("scripts/lib/ocr_reference.py"))
        .arg("--images")
        .arg(images)
        .arg("--out")
        .arg(out)
        .args(["--threads", "1", "--warmup", "0", "--passes", "1"])
        .output()
        .map_err(|e| format!("cannot run ocr_reference.py: {e}"))?;
    // Installed, it must run: a failure here is the test's.
    assert!(
        ran.status.success(),
        "ocr_reference.py failed:\n{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let text = std::fs::read_to_string(out).unwrap();
    Ok(serde_json::from_str(&text).unwrap())
}

fn open(file: &str) -> OnnxModel {
    OnnxModel::builder(default_model(file).unwrap())
        .intra_threads(1)
        .inter_threads(1)
        .cpu_arena(false)
        .open()
        .unwrap()
}

#[test]
fn ocr_boxes_within_two_pixels_and_strings_equal_to_the_python_pipeline() {
    let Some(ocr) = ocr_directory()
        .filter(|d| d.join("images").is_dir() && d.join("models").join(DET_MODEL).is_file())
    else {
        eprintln!(
            "skipped: no .venv/ocr (images and models): scripts/setup-onnxruntime makes them"
        );
        return;
    };
    let images = ocr.join("images");
    let out = tempfile::tempdir().unwrap();
    let reference = match python_reference(&images, &out.path().join("reference.json")) {
        Ok(reference) => reference,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    let mut detector = Detector {
        model: open(DET_MODEL),
        limit_side_len: 736,
        db: DbParams::default(),
    };
    let mut recognizer = Recognizer::new(open(REC_MODEL), 6).unwrap();
    let expected = reference["images"].as_array().unwrap();
    assert!(expected.len() >= 8, "{reference}");
    let (mut boxes_compared, mut boxes_equal, mut largest_gap) = (0, 0, 0f32);
    for item in expected {
        let file = item["file"].as_str().unwrap();
        let image = image::open(images.join(file)).unwrap().to_rgb8();
        let boxes = detector.detect(&image).unwrap();
        let python_boxes: Vec<Quad> = item["boxes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|quad| {
                let corner = |i: usize| {
                    let p = &quad[i];
                    [p[0].as_f64().unwrap() as f32, p[1].as_f64().unwrap() as f32]
                };
                [corner(0), corner(1), corner(2), corner(3)]
            })
            .collect();
        assert_eq!(
            boxes.len(),
            python_boxes.len(),
            "{file}: ours {boxes:?}\npython {python_boxes:?}"
        );
        for (ours, theirs) in boxes.iter().zip(&python_boxes) {
            for (a, b) in ours.iter().zip(theirs) {
                let gap = (a[0] - b[0]).abs().max((a[1] - b[1]).abs());
                largest_gap = largest_gap.max(gap);
                assert!(
                    gap <= 2.0,
                    "{file}: box {ours:?} is {gap} px from python's {theirs:?}"
                );
            }
            boxes_compared += 1;
            boxes_equal += usize::from(ours == theirs);
        }
        let texts = recognizer.recognize(&image, &boxes).unwrap();
        let python_texts: Vec<&str> = item["texts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        let ours: Vec<&str> = texts.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(ours, python_texts, "{file}");
    }
    assert!(boxes_compared >= 16, "{boxes_compared} boxes compared");
    eprintln!(
        "{} images, {boxes_compared} boxes ({boxes_equal} to the pixel): largest corner gap {largest_gap} px, every string equal",
        expected.len()
    );
}
