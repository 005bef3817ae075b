//! Any bytes, as the content of a `.npy`, `.npz` or `.safetensors` file,
//! read to tensors or give an error that says what is wrong; a tensor read
//! has as many elements as its shape counts. Never a panic, and no more
//! memory than the file's own data asks for.

#![no_main]

use libfuzzer_sys::fuzz_target;
use profiling_core::data::tensors::read_tensor_bytes;

fuzz_target!(|bytes: &[u8]| {
    for name in ["recorded.npy", "recorded.npz", "recorded.safetensors"] {
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
});
