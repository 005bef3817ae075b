//! Loading ONNX Runtime: where its library is looked for, the one
//! environment of the process, and whether it has a CUDA provider. Nothing
//! here names the crate's other modules, so that [`crate::device`] can ask
//! it about CUDA.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::anyhow;

/// The file name the runtime's library has, without its version suffix.
const LIBRARY: &str = "libonnxruntime.so";

/// The directory `scripts/setup-onnxruntime` links to the wheel's library,
/// below a workspace root.
const VENV_DIRECTORY: &str = ".venv/onnxruntime";

/// The library to load, or why none was found (every place looked in).
pub fn library_path() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("ORT_DYLIB_PATH").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "ORT_DYLIB_PATH is {} and there is no file there",
                path.display()
            ))
        };
    }
    let mut looked = Vec::new();
    for directory in candidate_directories() {
        if let Some(found) = library_in(&directory) {
            return Ok(found);
        }
        looked.push(directory.display().to_string());
    }
    // The loader's own search: found only if it can open it.
    Err(format!(
        "no ONNX Runtime library ({LIBRARY}) in {}: run scripts/setup-onnxruntime, which installs it into .venv/onnxruntime, or set ORT_DYLIB_PATH to a {LIBRARY}",
        looked.join(", ")
    ))
}

/// Where a `.venv/onnxruntime` may be: the workspace this crate was built
/// in, beside the executable (`target/<profile>/` and its `deps/`), and
/// the current directory with its ancestors.
fn candidate_directories() -> Vec<PathBuf> {
    let mut directories = Vec::new();
    if let Some(built) = option_env!("PROFILING_ONNXRUNTIME_DIR") {
        directories.push(PathBuf::from(built));
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            directories.push(dir.to_path_buf());
            directories.extend(
                dir.ancestors()
                    .skip(1)
                    .take(3)
                    .map(|a| a.join(VENV_DIRECTORY)),
            );
        }
    }
    if let Ok(cwd) = std::env::current_dir() {
        directories.extend(cwd.ancestors().map(|a| a.join(VENV_DIRECTORY)));
    }
    let mut seen = std::collections::HashSet::new();
    directories.retain(|d| seen.insert(d.clone()));
    directories
}

/// `libonnxruntime.so` in `directory`, or the newest `libonnxruntime.so.X.Y.Z`.
fn library_in(directory: &Path) -> Option<PathBuf> {
    let plain = directory.join(LIBRARY);
    if plain.is_file() {
        return Some(plain);
    }
    let mut versioned: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir(directory)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let version = name.strip_prefix(LIBRARY)?.strip_prefix('.')?;
            let parts = version
                .split('.')
                .map(str::parse)
                .collect::<Result<Vec<u32>, _>>()
                .ok()?;
            Some((parts, entry.path()))
        })
        .collect();
    versioned.sort();
    versioned.pop().map(|(_, path)| path)
}

/// The runtime, loaded once: its environment, the library it came from
/// and its version.
pub struct Runtime {
    pub environment: ort::environment::Environment,
    pub library: PathBuf,
    pub version: String,
}

static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

/// The runtime if something loaded it already (nothing is loaded here).
pub fn loaded() -> Option<&'static Runtime> {
    RUNTIME.get().and_then(|r| r.as_ref().ok())
}

/// Loads the runtime on first use; every later call returns the same (or
/// the same error).
pub fn runtime() -> anyhow::Result<&'static Runtime> {
    RUNTIME
        .get_or_init(|| {
            let library = library_path()?;
            let builder = ort::init_from(&library)
                .map_err(|e| format!("cannot load ONNX Runtime from {}: {e}", library.display()))?;
            let environment = builder
                .with_name("profile-cli")
                .with_telemetry(false)
                .build()
                .map_err(|e| format!("ONNX Runtime from {}: {e}", library.display()))?;
            let version = version_of(&library);
            Ok(Runtime {
                environment,
                library,
                version,
            })
        })
        .as_ref()
        .map_err(|message| anyhow!("{message}"))
}

/// The version the library's file name or directory says (`1.32.0`), or
/// `unknown`.
fn version_of(library: &Path) -> String {
    let resolved = std::fs::canonicalize(library).unwrap_or_else(|_| library.to_path_buf());
    resolved
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix(LIBRARY))
        .and_then(|v| v.strip_prefix('.'))
        .filter(|v| !v.is_empty())
        .map_or_else(|| "unknown".to_owned(), str::to_owned)
}

/// Whether GPU `index` can run models: the runtime has its CUDA execution
/// provider. (Whether there is such a GPU, the provider says when a
/// session registers it.)
pub(crate) fn check_cuda(index: usize) -> Result<(), String> {
    use ort::ep::ExecutionProvider;
    let runtime = runtime().map_err(|e| e.to_string())?;
    let compiled = <ort::ep::CUDA as ExecutionProvider>::is_available()
        .map_err(|e| format!("ONNX Runtime cannot list its execution providers: {e}"))?;
    if !compiled {
        return Err(format!(
            "the ONNX Runtime at {} has no CUDA execution provider for cuda:{index}: on a GPU machine, install the onnxruntime-gpu wheel and set ORT_DYLIB_PATH to its onnxruntime/capi/libonnxruntime.so.*, or run on `cpu`",
            runtime.library.display()
        ));
    }
    Ok(())
}
