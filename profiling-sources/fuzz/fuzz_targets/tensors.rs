//! Any bytes, as the content of a `.npy`, `.npz` or `.safetensors` file,
//! read to tensors or give an error that says what is wrong; a tensor read
//! has as many elements as its shape counts. The same bytes as the member
//! of a compressed `.npz`, whose declared size is the true one or a lie
//! (the fuzzer's last four bytes), go through the inflater and its size
//! checks. Never a panic, and no more memory than the file's own data asks
//! for.

#![no_main]

use libfuzzer_sys::fuzz_target;
use profiling_sources::tensors::read_tensor_bytes;

/// `member` as `boxes.npy`, deflated, in a `.npz`; its declared size set to
/// `declared` when given, in the local and the central header.
fn deflated_npz(member: &[u8], declared: Option<u32>) -> Vec<u8> {
    let mut buffer = std::io::Cursor::new(Vec::new());
    let mut writer = zip::ZipWriter::new(&mut buffer);
    let options =
        zip::write::FileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    writer.start_file("boxes.npy", options).unwrap();
    std::io::Write::write_all(&mut writer, member).unwrap();
    writer.finish().unwrap();
    drop(writer);
    let mut bytes = buffer.into_inner();
    if let Some(declared) = declared {
        for (signature, offset) in [(b"PK\x03\x04", 22), (b"PK\x01\x02", 24)] {
            if let Some(at) = bytes.windows(4).position(|w| w == signature) {
                bytes[at + offset..at + offset + 4].copy_from_slice(&declared.to_le_bytes());
            }
        }
    }
    bytes
}

fn check(name: &str, bytes: &[u8]) {
    match read_tensor_bytes(name, bytes) {
        Ok(tensors) => {
            for (tensor, data) in tensors {
                assert!(!tensor.is_empty() || name.ends_with(".npy"));
                let count: usize = data.shape().iter().product();
                assert_eq!(data.nbytes(), count * data.dtype().size());
            }
        }
        Err(message) => assert!(!message.trim().is_empty()),
    }
}

fuzz_target!(|bytes: &[u8]| {
    for name in ["recorded.npy", "recorded.npz", "recorded.safetensors"] {
        check(name, bytes);
    }
    check("recorded.npz", &deflated_npz(bytes, None));
    if let Some((member, lie)) = bytes.split_last_chunk::<4>() {
        check("recorded.npz", &deflated_npz(member, Some(u32::from_le_bytes(*lie))));
    }
});
