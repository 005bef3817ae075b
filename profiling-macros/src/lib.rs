//! The attributes of the snippet profiler: [`macro@profile_target`]
//! registers a target, [`macro@data_source`] a data source, and
//! [`macro@nvtx_range`] puts a function in an NVTX range.
//!
//! Use them through `profiling_core`, which re-exports both and holds the
//! code they expand to: `use profiling_core::prelude::*;`.

use proc_macro::TokenStream;

mod attr;
mod doc;
mod expand;
mod item;
mod name;
mod tokens;

/// Runs a function inside an NVTX range named after it.
///
/// The range opens when the function is entered and closes when it
/// returns, however it returns: the tail expression, `return`, `?` or a
/// panic. Nsight Systems shows it on the calling thread's timeline, nested
/// in the ranges open around the call.
///
/// ```
/// use profiling_core::prelude::*;
///
/// /// Keeps the boxes that score above `threshold`.
/// #[nvtx_range]
/// fn filter_boxes(scores: &[f32], threshold: f32) -> Vec<usize> {
///     (0..scores.len()).filter(|&i| scores[i] > threshold).collect()
/// }
///
/// assert_eq!(filter_boxes(&[0.2, 0.9, 0.7], 0.5), vec![1, 2]);
/// ```
///
/// The function is kept as written: its signature, visibility, attributes,
/// generics and body. The one addition is a statement at the top of the
/// body that opens the range and holds it until the body ends:
///
/// ```text
/// let __nvtx_range_guard = ::profiling_core::nvtx::profiling_range(c"filter_boxes");
/// ```
///
/// The name is a C string literal, so opening the range costs what a raw
/// `nvtxRangePushA`/`nvtxRangePop` pair costs: no allocation, no copy.
///
/// # Where it goes
///
/// On free functions, methods, associated functions and trait methods with
/// a default body, generic or not, `unsafe` or not.
///
/// Not on an `async fn`: a push/pop range belongs to the thread that opened
/// it, and an async body can move between threads and interleave with other
/// tasks at each `.await`. Put the range on the synchronous parts instead.
/// Not on a `const fn` either: the range is opened at run time.
///
/// # Arguments
///
/// - `"name"` or `name = "name"`: the range name, instead of the function's.
///   Not empty, no NUL character.
/// - `if_cuda = device`: open the range only when `device` is a CUDA device,
///   for functions whose host time matters only as the launch side of GPU
///   work. `device` is any expression of a type that converts into
///   `Device`; it can use the function's parameters, and is evaluated once,
///   when the function is entered.
/// - `crate = path`: where `profiling_core` is, when it is reached through a
///   re-export (default `::profiling_core`).
///
/// ```
/// use profiling_core::prelude::*;
///
/// struct Uploader {
///     device: Device,
/// }
///
/// impl Uploader {
///     #[nvtx_range("upload boxes", if_cuda = self.device)]
///     fn upload(&self, boxes: &[f32]) -> usize {
///         boxes.len()
///     }
/// }
///
/// #[nvtx_range(name = "decode", if_cuda = device)]
/// fn decode_on(device: Device, raw: &[u8]) -> Result<u32, std::num::ParseIntError> {
///     let text = std::str::from_utf8(raw).unwrap_or("");
///     text.trim().parse()
/// }
///
/// assert_eq!(Uploader { device: Device::Cpu }.upload(&[1.0, 2.0]), 2);
/// assert_eq!(decode_on(Device::Cpu, b" 42 "), Ok(42));
/// ```
#[proc_macro_attribute]
pub fn nvtx_range(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let function = item::range_fn(item.clone());
    let args = syn::parse::<attr::NvtxRangeArgs>(args);
    let expanded = match (args, function) {
        (Ok(args), Ok(function)) => expand::nvtx_range(args, function),
        (Err(args_error), Err(item_error)) => Err(combine(item_error, args_error)),
        (Err(error), _) | (_, Err(error)) => Err(error),
    };
    with_item_on_error(expanded, item)
}

/// Registers a profile target under a name, so that `profile-cli run
/// <name>` can find and profile it.
///
/// Goes on the `impl ProfileTarget for YourType` block. The block is kept
/// as written; next to it the attribute adds an entry in the link-time
/// registry (`profiling_core::driver::registry::targets()`) with the target's name,
/// where it is defined, a one-line description, whether the block defines
/// `prepare_batch` (a target that does not is refused batches before it is
/// built), and a function that builds the target and hands it to the
/// runner.
///
/// ```
/// use profiling_core::prelude::*;
///
/// /// Sums the dummy tensor of each record.
/// #[derive(Default)]
/// struct SumTensor;
///
/// #[profile_target]
/// impl ProfileTarget for SumTensor {
///     type Prepared = Vec<f32>;
///     type Output = f32;
///
///     fn prepare(&mut self, record: &DataRecord, _device: Device) -> anyhow::Result<Vec<f32>> {
///         Ok(record.tensor("tensor")?.iter().copied().collect())
///     }
///
///     fn run(&mut self, values: &Vec<f32>) -> anyhow::Result<f32> {
///         Ok(values.iter().sum())
///     }
/// }
///
/// # fn main() {
/// let entry = profiling_core::driver::registry::targets()
///     .into_iter()
///     .find(|t| t.name == "sum-tensor")
///     .unwrap();
/// assert_eq!(entry.type_name, "SumTensor");
/// assert_eq!(entry.constructor, "Default::default");
/// assert!(!entry.takes_batches, "it keeps the default `prepare_batch`");
/// # }
/// ```
///
/// # Arguments
///
/// - `"name"` or `name = "name"`: the name to run the target by. Without
///   one, the kebab-case of the type's name: `SumTensor` is `sum-tensor`,
///   `NMSTarget` is `nms-target`, `Yolo8Decode` is `yolo8-decode`. A name
///   has 1 to 100 characters: an ASCII letter or digit, then ASCII letters,
///   digits, `-`, `_` or `.`.
/// - `factory = path::to::function`: how to build the target, instead of
///   `Default::default()`. The function takes no arguments and returns the
///   target or a `Result` of it whose error converts into `anyhow::Error`.
/// - `description = "..."`: the one-line description `profile-cli list`
///   shows. Without it, the first line of the doc comment on the impl block,
///   or else of the type's doc comment when the type is defined in the same
///   file as the impl.
/// - `config = "path/from/the/crate.yaml"`: the config `profile-cli run
///   <name>` uses when given none, for a target that needs data of its own
///   (the built-in defaults run on one synthetic record); a path from the
///   directory of the crate's `Cargo.toml`.
/// - `setup = "..."`: what installs the data that config reads, said when
///   it is missing (`setup = "scripts/setup-data"`).
/// - `crate = path`: where `profiling_core` is, when it is reached through a
///   re-export (default `::profiling_core`).
///
/// ```
/// use profiling_core::prelude::*;
///
/// struct Threshold {
///     cutoff: f32,
/// }
///
/// fn load_threshold() -> anyhow::Result<Threshold> {
///     Ok(Threshold { cutoff: 0.5 })
/// }
///
/// #[profile_target("threshold", factory = load_threshold, description = "Counts scores above a cutoff.")]
/// impl ProfileTarget for Threshold {
///     type Prepared = Vec<f32>;
///     type Output = usize;
///
///     fn prepare(&mut self, record: &DataRecord, _device: Device) -> anyhow::Result<Vec<f32>> {
///         Ok(record.tensor("scores")?.iter().copied().collect())
///     }
///
///     #[nvtx_range]
///     fn run(&mut self, scores: &Vec<f32>) -> anyhow::Result<usize> {
///         Ok(scores.iter().filter(|&&s| s > self.cutoff).count())
///     }
/// }
/// # fn main() {
/// # let entry = profiling_core::driver::registry::targets().into_iter().find(|t| t.name == "threshold").unwrap();
/// # assert_eq!(entry.constructor, "load_threshold");
/// # assert_eq!(entry.doc, "Counts scores above a cutoff.");
/// # }
/// ```
///
/// # Where it goes
///
/// On a positive, safe `impl ProfileTarget for T` (the trait may be written
/// as a path, `impl profiling_core::ProfileTarget for T`), where `T` is a
/// concrete type: the runner builds a target from its name alone, so an impl
/// generic over `T` has nothing to pick `T` with. Implement the trait for
/// each concrete type to profile instead, each under its own name.
#[proc_macro_attribute]
pub fn profile_target(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let block = item::target_impl(item.clone());
    let args = syn::parse::<attr::ProfileTargetArgs>(args);
    let expanded = match (args, block) {
        (Ok(args), Ok(block)) => expand::profile_target(args, block, source_doc),
        (Err(args_error), Err(item_error)) => Err(combine(item_error, args_error)),
        (Err(error), _) | (_, Err(error)) => Err(error),
    };
    with_item_on_error(expanded, item)
}

/// The doc line of `type_name` in the file being expanded, if it is there.
/// Registers a data source under a name, so that a config's
/// `data_source.name` can pick it.
///
/// Goes on the `impl RecordSource for YourSource` block (the trait is
/// `profiling_core::data::RecordSource`). The block is kept as written;
/// next to it the attribute adds an entry in the link-time registry
/// (`profiling_core::data::sources()`) with the source's name, where it is
/// defined, a one-line description, the keys of its parameters (the fields
/// of its `Parameters` struct), what its `IMAGE_PARAMETER` and
/// `DIRECTORY_OPTION` constants say, and a function that deserializes the
/// parameters from the config and opens the source. `profile-cli list
/// --sources` shows it.
///
/// ```
/// use profiling_core::data::{DataRecord, RecordSource};
/// use profiling_core::prelude::*;
///
/// struct Counting {
///     count: usize,
/// }
///
/// #[derive(serde::Deserialize)]
/// struct CountingParameters {
///     count: usize,
/// }
///
/// /// The numbers 0 to `count` - 1, one a record.
/// #[data_source(name = "counting")]
/// impl RecordSource for Counting {
///     type Parameters = CountingParameters;
///
///     fn open(parameters: CountingParameters) -> anyhow::Result<Self> {
///         Ok(Counting { count: parameters.count })
///     }
///
///     fn len(&self) -> usize {
///         self.count
///     }
///
///     fn read(&self, index: usize) -> anyhow::Result<DataRecord> {
///         Ok(DataRecord { id: format!("n{index}"), ..DataRecord::default() })
///     }
/// }
/// # fn main() {
/// let entry = profiling_core::data::find_source("counting").unwrap();
/// assert_eq!(entry.doc, "The numbers 0 to `count` - 1, one a record.");
/// assert_eq!(entry.parameters(), ["count"]);
/// # }
/// ```
///
/// # Arguments
///
/// - `"name"` or `name = "name"` (required): the name configs pick it by,
///   under the same rule as target names: 1 to 100 characters, an ASCII
///   letter or digit, then ASCII letters, digits, `-`, `_` or `.`.
/// - `description = "..."`: the one-line description `list --sources`
///   shows. Without it, the first line of the doc comment on the impl
///   block, or else of the type's doc comment when the type is defined in
///   the same file as the impl.
/// - `crate = path`: where `profiling_core` is, when it is reached through a
///   re-export (default `::profiling_core`).
///
/// # Where it goes
///
/// On a positive `impl RecordSource for T` where `T` is a concrete type: a
/// config picks a source by its name alone, so nothing could choose the
/// parameters of a generic impl.
#[proc_macro_attribute]
pub fn data_source(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let block = item::source_impl(item.clone());
    let args = syn::parse::<attr::DataSourceArgs>(args);
    let expanded = match (args, block) {
        (Ok(args), Ok(block)) => expand::data_source(args, block, source_doc),
        (Err(args_error), Err(item_error)) => Err(combine(item_error, args_error)),
        (Err(error), _) | (_, Err(error)) => Err(error),
    };
    with_item_on_error(expanded, item)
}

fn source_doc(type_name: &str) -> Option<String> {
    let path = proc_macro::Span::call_site().local_file()?;
    doc::type_doc_in_file(&path, type_name)
}

fn combine(mut first: syn::Error, second: syn::Error) -> syn::Error {
    first.combine(second);
    first
}

/// The expansion, or the errors followed by the item as written: code that
/// uses the item then still compiles, and only the real error shows.
fn with_item_on_error(
    expanded: syn::Result<proc_macro2::TokenStream>,
    item: proc_macro2::TokenStream,
) -> TokenStream {
    match expanded {
        Ok(tokens) => tokens.into(),
        Err(error) => {
            let mut tokens = error.to_compile_error();
            tokens.extend(item);
            tokens.into()
        }
    }
}
