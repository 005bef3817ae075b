//! The `tensors` source never panics: arbitrary bytes, and valid `.npy`,
//! `.npz` and `.safetensors` files cut short or with bytes changed, written
//! as tensor files, go through `data::build`, the memory estimate, `read`
//! and `read_all`. Each comes back as records or as an error that names
//! the file.

use proptest::prelude::*;

use profiling_core::data::{self, tensors::read_tensor_bytes};

use crate::common::{assert_reads_well, each_damaged};

/// A small valid file of each format, as NumPy and safetensors write them.
fn valid_files() -> Vec<(&'static str, Vec<u8>)> {
    let npy = {
        let mut dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }".to_owned();
        while !(10 + dict.len() + 1).is_multiple_of(64) {
            dict.push(' ');
        }
        dict.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        bytes.extend_from_slice(dict.as_bytes());
        bytes.extend((0..6).flat_map(|v| (v as f32).to_le_bytes()));
        bytes
    };
    let npz = {
        let mut buffer = std::io::Cursor::new(Vec::new());
        let mut writer = zip::ZipWriter::new(&mut buffer);
        writer
            .start_file("boxes.npy", zip::write::FileOptions::default())
            .unwrap();
        std::io::Write::write_all(&mut writer, &npy).unwrap();
        writer.finish().unwrap();
        drop(writer);
        buffer.into_inner()
    };
    let safetensors = {
        let header = r#"{"ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}}    "#;
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend((0..2i64).flat_map(|v| v.to_le_bytes()));
        bytes
    };
    vec![
        ("recorded.npy", npy),
        ("recorded.npz", npz),
        ("recorded.safetensors", safetensors),
    ]
}

/// Builds the source on `file` holding `bytes` and reads it as an eager and
/// a lazy run would; every error reads well and names the file.
fn exercise(name: &str, bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let shown = path.display().to_string();
    let names_it = |error: &dyn std::fmt::Display| {
        assert_reads_well(error);
        assert!(error.to_string().contains(&shown), "{error}");
    };
    let parameters = serde_yaml::from_str(&format!("{{paths: ['{shown}']}}")).unwrap();
    let source = match data::build("tensors", &parameters) {
        Ok(source) => source,
        Err(error) => return names_it(&error),
    };
    let _ = source.describe();
    let _ = source.estimated_bytes();
    let all = source.read_all();
    let one = source.read(0);
    match (&all, &one) {
        (Ok(all), Ok(one)) => assert_eq!(&all[0], one, "eager and lazy read the same record"),
        (Err(error), _) | (_, Err(error)) => names_it(error),
    }
    // What the source reads is what the readers read.
    let direct = read_tensor_bytes(name, bytes);
    assert_eq!(direct.is_ok(), all.is_ok(), "{name}: {direct:?}");
}

#[test]
fn valid_files_read_and_every_change_to_them_reads_or_is_refused_naming_the_file() {
    for (name, bytes) in valid_files() {
        exercise(name, &bytes);
        assert!(read_tensor_bytes(name, &bytes).is_ok(), "{name}");
        each_damaged(&bytes, 256, |changed| exercise(name, changed));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_as_a_tensor_file_read_or_are_refused_naming_it(
        bytes in proptest::collection::vec(any::<u8>(), 0..256),
        which in 0usize..3,
    ) {
        let name = ["recorded.npy", "recorded.npz", "recorded.safetensors"][which];
        exercise(name, &bytes);
    }
}
