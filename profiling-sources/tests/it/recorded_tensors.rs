//! The `tensors` source on files NumPy and safetensors wrote: `numpy.save`,
//! `numpy.savez`, `numpy.savez_compressed` and
//! `safetensors.torch.save_file`, run by the Python of `.venv/` (which
//! `scripts/setup-libtorch` installs with numpy, torch and safetensors).
//! Without that Python the test says so and passes: the same formats are
//! read from bytes written here in the unit tests of the readers.

use std::path::Path;
use std::process::Command;

use profiling_core::data::{self, DataRecord, Dtype, TensorData};

/// Writes the files into `dir`: `outputs.npy`, `pair.npz`,
/// `squeezed.npz` and, where safetensors imports, `model.safetensors`.
const WRITER: &str = r#"
import sys
import numpy as np
d = sys.argv[1]
out = (np.arange(4 * 6 * 5, dtype=np.float32).reshape(4, 6, 5) / 7).astype(np.float32)
np.save(f"{d}/outputs.npy", out)
np.savez(f"{d}/pair.npz", boxes=out[0], ids=np.array([3, 1, 4, 1], dtype=np.int64),
         mask=np.array([[True, False], [False, True]]))
np.savez_compressed(f"{d}/squeezed.npz", half=np.linspace(0, 1, 5).astype(np.float16),
                    big=np.arange(3, dtype=">f8"),
                    fortran=np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)),
                    small=np.array([200, 7], dtype=np.uint8))
import torch
import safetensors.torch
safetensors.torch.save_file({"logits": torch.arange(6, dtype=torch.bfloat16).reshape(2, 3),
                             "labels": torch.tensor([1, -2], dtype=torch.int16)},
                            f"{d}/model.safetensors")
"#;

fn python() -> Option<std::path::PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    let works = Command::new(&python)
        .args(["-c", "import numpy, safetensors, torch"])
        .output()
        .is_ok_and(|output| output.status.success());
    works.then_some(python)
}

fn floats(record: &DataRecord, name: &str) -> Vec<f32> {
    record.tensor(name).unwrap().iter().copied().collect()
}

#[test]
fn files_numpy_and_safetensors_wrote_read_with_their_dtypes_and_values() {
    let Some(python) = python() else {
        eprintln!("skipped: .venv/bin/python with numpy, safetensors and torch is not installed (scripts/setup-libtorch installs it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(python)
        .args(["-c", WRITER, &dir.path().display().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let source = data::build(
        "tensors",
        &serde_yaml::from_str(&format!("{{directory: {}}}", dir.path().display())).unwrap(),
    )
    .unwrap();
    let records = source.read_all().unwrap();
    let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["model", "outputs", "pair", "squeezed"]);

    let model = &records[0];
    assert_eq!(model.typed_tensor("logits").unwrap().dtype(), Dtype::BF16);
    assert_eq!(floats(model, "logits"), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(model.tensor("logits").unwrap().shape(), [2, 3]);
    assert_eq!(floats(model, "labels"), [1.0, -2.0]);

    let outputs = &records[1];
    let out = outputs.tensor("outputs").unwrap();
    assert_eq!(out.shape(), [4, 6, 5]);
    assert_eq!(out[[3, 5, 4]], 119.0 / 7.0);

    let pair = &records[2];
    assert_eq!(
        pair.tensor("boxes").unwrap(),
        &out.index_axis(ndarray::Axis(0), 0).to_owned()
    );
    match pair.typed_tensor("ids").unwrap().as_ref() {
        TensorData::I64(ids) => assert_eq!(ids.as_slice().unwrap(), [3, 1, 4, 1]),
        other => panic!("{other:?}"),
    }
    assert_eq!(floats(pair, "mask"), [1.0, 0.0, 0.0, 1.0]);

    let squeezed = &records[3];
    assert_eq!(squeezed.typed_tensor("half").unwrap().dtype(), Dtype::F16);
    assert_eq!(floats(squeezed, "half"), [0.0, 0.25, 0.5, 0.75, 1.0]);
    assert_eq!(floats(squeezed, "big"), [0.0, 1.0, 2.0]);
    // Column-major on disk, the same array in memory.
    let fortran = squeezed.tensor("fortran").unwrap();
    assert_eq!(fortran[[0, 2]], 2.0);
    assert_eq!(fortran[[1, 0]], 3.0);
    assert_eq!(floats(squeezed, "small"), [200.0, 7.0]);

    // The model's outputs for four inputs, one record each.
    let split = data::build(
        "tensors",
        &serde_yaml::from_str(&format!(
            "{{directory: {}, pattern: 'outputs.npy', split_axis: 0}}",
            dir.path().display()
        ))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(split.len(), 4);
    let third = split.read(3).unwrap();
    assert_eq!(third.id, "outputs-3");
    assert_eq!(
        third.tensor("outputs").unwrap(),
        &out.index_axis(ndarray::Axis(0), 3).to_owned()
    );
}
