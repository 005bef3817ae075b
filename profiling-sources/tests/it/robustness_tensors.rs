//! The `tensors` source never panics: arbitrary bytes, and valid `.npy`,
//! `.npz` and `.safetensors` files cut short or with bytes changed, written
//! as tensor files, go through `data::build`, the memory estimate, `read`
//! and `read_all`. Each comes back as records or as an error that names
//! the file.

use proptest::prelude::*;

use profiling_core::data;
use profiling_sources::tensors::read_tensor_bytes;

use crate::common::{assert_reads_well, each_damaged};

/// A small valid file of each format, as NumPy and safetensors write them.
fn valid_files() -> Vec<(&'static str, Vec<u8>)> {
    let npy = {
        let mut bytes = f32_npy_header("(2, 3)");
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

    /// The compressed members the fuzz target `tensors` makes, bounded:
    /// arbitrary bytes, or a valid `.npy` with arbitrary bytes after it,
    /// deflated into an `.npz` whose declared size is the true one or a
    /// lie, read or are refused naming the file.
    #[test]
    fn compressed_members_with_true_or_lying_sizes_read_or_are_refused(
        tail in proptest::collection::vec(any::<u8>(), 0..512),
        after_valid in any::<bool>(),
        declared in proptest::option::of(any::<u32>()),
    ) {
        let mut member = if after_valid { npy_with_extra(3, 0) } else { Vec::new() };
        member.extend_from_slice(&tail);
        exercise("recorded.npz", &deflated_npz(&member, declared));
    }
}

/// `member` as `boxes.npy`, deflated, in a `.npz`; its declared size set to
/// `declared` when given, in the local and the central header.
fn deflated_npz(member: &[u8], declared: Option<u32>) -> Vec<u8> {
    let mut bytes = npz_of(member);
    if let Some(declared) = declared {
        for (signature, offset) in [(b"PK\x03\x04", 22), (b"PK\x01\x02", 24)] {
            if let Some(at) = bytes.windows(4).position(|w| w == signature) {
                bytes[at + offset..at + offset + 4].copy_from_slice(&declared.to_le_bytes());
            }
        }
    }
    bytes
}

/// A `.npy` of `shape` f32 zeros whose data is followed by `extra` more
/// zero bytes: a header that claims less than the member holds.
fn npy_with_extra(elements: usize, extra: usize) -> Vec<u8> {
    let mut bytes = f32_npy_header(&format!("({elements},)"));
    bytes.resize(bytes.len() + elements * 4 + extra, 0);
    bytes
}

/// The header of a version 1.0 `.npy` of little-endian float32 of `shape`
/// (a Python tuple), padded as NumPy pads it.
fn f32_npy_header(shape: &str) -> Vec<u8> {
    let mut dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
    while !(10 + dict.len() + 1).is_multiple_of(64) {
        dict.push(' ');
    }
    dict.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    bytes.extend_from_slice(dict.as_bytes());
    bytes
}

fn npz_of(member: &[u8]) -> Vec<u8> {
    let mut buffer = std::io::Cursor::new(Vec::new());
    let mut writer = zip::ZipWriter::new(&mut buffer);
    let options = zip::write::FileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(member.len() >= u32::MAX as usize);
    writer.start_file("boxes.npy", options).unwrap();
    std::io::Write::write_all(&mut writer, member).unwrap();
    writer.finish().unwrap();
    drop(writer);
    buffer.into_inner()
}

/// A zip bomb: a member whose header describes 40 bytes of data and that
/// inflates to 64 MB (from a file of about 64 KB) is refused at its header,
/// before any of its data is inflated; the same member without the extra
/// bytes reads.
#[test]
fn an_npz_member_that_inflates_past_its_header_is_refused_before_inflating() {
    let bomb = npz_of(&npy_with_extra(10, 64 << 20));
    assert!(bomb.len() < 1 << 20, "{} bytes", bomb.len());
    let error = read_tensor_bytes("bomb.npz", &bomb).unwrap_err();
    assert!(
        error.starts_with("member `boxes.npy`: the archive says it inflates to 67109032 bytes, and its header (128 bytes) describes [10] of float32, 40 bytes of data: refused before inflating it"),
        "{error}"
    );
    let honest = read_tensor_bytes("honest.npz", &npz_of(&npy_with_extra(10, 0))).unwrap();
    assert_eq!(honest.len(), 1);
    assert_eq!(honest[0].0, "boxes");
}

/// A FIFO (or anything but a file) listed in `paths`, or given as COCO's
/// `annotations`, is refused at once, never opened (opening it would wait
/// for a writer for ever); one in a directory, and a symbolic link that
/// loops, are skipped and named in the source's description.
#[test]
fn a_fifo_is_refused_in_paths_and_named_when_skipped_in_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.npy");
    let c_path = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path that lives across the call.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    std::os::unix::fs::symlink("loop.npy", dir.path().join("loop.npy")).unwrap();
    let (_, npy) = valid_files().remove(0);
    std::fs::write(dir.path().join("recorded.npy"), npy).unwrap();

    let build = |name: &str, yaml: String| data::build(name, &serde_yaml::from_str(&yaml).unwrap());
    let error = build("tensors", format!("{{paths: ['{}']}}", fifo.display()))
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        error,
        format!(
            "data_source.paths: {} is a FIFO, not a tensor file",
            fifo.display()
        )
    );
    let error = build(
        "coco",
        format!(
            "{{annotations: '{}', images: '{}'}}",
            fifo.display(),
            dir.path().display()
        ),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(error.ends_with("is a FIFO, not a JSON file"), "{error}");

    let source = build(
        "tensors",
        format!("{{directory: '{}'}}", dir.path().display()),
    )
    .unwrap();
    assert_eq!(source.len(), 1, "recorded.npy alone");
    let description = source.describe();
    assert_eq!(
        description["skipped"],
        serde_yaml::from_str::<serde_yaml::Value>(
            "['fifo.npy (a FIFO)', 'loop.npy (a symbolic link that loops)']"
        )
        .unwrap()
    );
}
