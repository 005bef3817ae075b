//! An NVTX injection library that appends every range push, pop and mark to a file.
//!
//! The NVTX loader `dlopen`s it from `NVTX_INJECTION64_PATH` on a process's first
//! NVTX call and calls `InitializeInjectionNvtx2`, exactly as it does for Nsight
//! Systems. `build.rs` compiles this file alone into a cdylib, so it uses nothing
//! but `std`, and the few NVTX ABI types it needs are written out below from the
//! NVTX v3 headers (`nvtx3/nvToolsExt.h`, `nvtx3/nvtxDetail/nvtxTypes.h`).
//!
//! Output (the file named by `NVTX_RECORDER_OUTPUT`), one line per event:
//! `push\t<thread>\t<ns>\t<message>`, `pop\t<thread>\t<ns>`, `mark\t<thread>\t<ns>\t<message>`,
//! where `<thread>` is a small per-process thread number starting at 1, `<ns>` is
//! `CLOCK_MONOTONIC` in nanoseconds and `\t`, `\n`, `\r` and `\\` in messages are
//! escaped as two characters each.

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
compile_error!("the NVTX recorder injection supports 64-bit Linux only");

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::fmt::Write as _;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

// ---- NVTX ABI, from the headers ------------------------------------------------

/// `NvtxGetExportTableFunc_t` (nvtxTypes.h).
type GetExportTable = unsafe extern "C" fn(export_table_id: u32) -> *const c_void;

/// `NvtxFunctionPointer` (nvtxTypes.h): cast to the slot's real type when called.
type FunctionPointer = unsafe extern "C" fn();

/// `NvtxFunctionTable` (nvtxTypes.h): element `i` points at the loader's slot for
/// callback id `i`; an injection attaches by writing its function into the slot.
type FunctionTable = *mut *mut Option<FunctionPointer>;

/// The `GetModuleFunctionTable` member of `NvtxExportTableCallbacks`.
type GetModuleFunctionTable = unsafe extern "C" fn(
    module: c_int,
    out_table: *mut FunctionTable,
    out_size: *mut c_uint,
) -> c_int;

/// `NvtxExportTableCallbacks` (nvtxTypes.h).
#[repr(C)]
struct ExportTableCallbacks {
    struct_size: usize,
    get_module_function_table: Option<GetModuleFunctionTable>,
}

/// `NvtxExportTableID::NVTX_ETID_CALLBACKS` (nvtxTypes.h).
const NVTX_ETID_CALLBACKS: u32 = 1;

/// `NvtxCallbackModule` (nvtxTypes.h).
const NVTX_CB_MODULE_CORE: c_int = 1;
const NVTX_CB_MODULE_CORE2: c_int = 5;

/// `NvtxCallbackIdCore` (nvtxTypes.h).
const NVTX_CBID_CORE_MARK_EX: usize = 1;
const NVTX_CBID_CORE_MARK_A: usize = 2;
const NVTX_CBID_CORE_MARK_W: usize = 3;
const NVTX_CBID_CORE_RANGE_PUSH_EX: usize = 8;
const NVTX_CBID_CORE_RANGE_PUSH_A: usize = 9;
const NVTX_CBID_CORE_RANGE_PUSH_W: usize = 10;
const NVTX_CBID_CORE_RANGE_POP: usize = 11;

/// `NvtxCallbackIdCore2` (nvtxTypes.h).
const NVTX_CBID_CORE2_DOMAIN_MARK_EX: usize = 1;
const NVTX_CBID_CORE2_DOMAIN_RANGE_PUSH_EX: usize = 4;
const NVTX_CBID_CORE2_DOMAIN_RANGE_POP: usize = 5;
const NVTX_CBID_CORE2_DOMAIN_REGISTER_STRING_A: usize = 10;
const NVTX_CBID_CORE2_DOMAIN_REGISTER_STRING_W: usize = 11;

/// `nvtxMessageType_t` (nvToolsExt.h).
const NVTX_MESSAGE_TYPE_ASCII: i32 = 1;
const NVTX_MESSAGE_TYPE_UNICODE: i32 = 2;
const NVTX_MESSAGE_TYPE_REGISTERED: i32 = 3;

/// `wchar_t` on Linux: 32 bits, UTF-32.
type WChar = u32;

/// `nvtxDomainHandle_t` and `nvtxStringHandle_t` (nvToolsExt.h): opaque pointers.
type Handle = *const c_void;

/// `nvtxEventAttributes_v2` (nvToolsExt.h). Only `size`, `messageType` and
/// `message` are read; the rest is here for the layout.
#[allow(dead_code)]
#[repr(C)]
struct EventAttributes {
    version: u16,
    size: u16,
    category: u32,
    color_type: i32,
    color: u32,
    payload_type: i32,
    reserved0: i32,
    /// `union payload_t`: 8 bytes, 8-aligned.
    payload: u64,
    message_type: i32,
    /// `union nvtxMessageValue_t`: `const char*`, `const wchar_t*` or `nvtxStringHandle_t`.
    message: *const c_void,
}

// The `*_impl_fntype` typedefs (nvtxTypes.h) of the functions this library replaces.
type MarkExFn = unsafe extern "C" fn(*const EventAttributes);
type MarkAFn = unsafe extern "C" fn(*const c_char);
type MarkWFn = unsafe extern "C" fn(*const WChar);
type RangePushExFn = unsafe extern "C" fn(*const EventAttributes) -> c_int;
type RangePushAFn = unsafe extern "C" fn(*const c_char) -> c_int;
type RangePushWFn = unsafe extern "C" fn(*const WChar) -> c_int;
type RangePopFn = unsafe extern "C" fn() -> c_int;
type DomainMarkExFn = unsafe extern "C" fn(Handle, *const EventAttributes);
type DomainRangePushExFn = unsafe extern "C" fn(Handle, *const EventAttributes) -> c_int;
type DomainRangePopFn = unsafe extern "C" fn(Handle) -> c_int;
type DomainRegisterStringAFn = unsafe extern "C" fn(Handle, *const c_char) -> Handle;
type DomainRegisterStringWFn = unsafe extern "C" fn(Handle, *const WChar) -> Handle;

// ---- Attaching -----------------------------------------------------------------

static OUTPUT: OnceLock<File> = OnceLock::new();

/// Entry point the NVTX loader looks up (nvtxInit.h). Nonzero means attached; zero
/// makes the loader unload the library and turn every NVTX call into a no-op,
/// which is what happens when `NVTX_RECORDER_OUTPUT` is not set.
///
/// # Safety
///
/// Called by the NVTX loader, once, with its own `nvtxGetExportTable`.
#[no_mangle]
pub unsafe extern "C" fn InitializeInjectionNvtx2(
    get_export_table: Option<GetExportTable>,
) -> c_int {
    let Some(path) = std::env::var_os("NVTX_RECORDER_OUTPUT") else {
        return 0;
    };
    let file = match OpenOptions::new().create(true).append(true).open(&path) {
        Ok(file) => file,
        Err(error) => {
            let _ = writeln!(
                std::io::stderr(),
                "nvtx-recorder: cannot open NVTX_RECORDER_OUTPUT={}: {error}; recording nothing",
                path.to_string_lossy()
            );
            return 0;
        }
    };
    let _ = OUTPUT.set(file);

    let Some(get_export_table) = get_export_table else {
        return 0;
    };
    let callbacks = get_export_table(NVTX_ETID_CALLBACKS).cast::<ExportTableCallbacks>();
    if callbacks.is_null() || (*callbacks).struct_size < std::mem::size_of::<ExportTableCallbacks>()
    {
        return 0;
    }
    let Some(get_table) = (*callbacks).get_module_function_table else {
        return 0;
    };

    let core: [(usize, FunctionPointer); 7] = [
        (
            NVTX_CBID_CORE_MARK_EX,
            std::mem::transmute::<MarkExFn, FunctionPointer>(mark_ex),
        ),
        (
            NVTX_CBID_CORE_MARK_A,
            std::mem::transmute::<MarkAFn, FunctionPointer>(mark_a),
        ),
        (
            NVTX_CBID_CORE_MARK_W,
            std::mem::transmute::<MarkWFn, FunctionPointer>(mark_w),
        ),
        (
            NVTX_CBID_CORE_RANGE_PUSH_EX,
            std::mem::transmute::<RangePushExFn, FunctionPointer>(range_push_ex),
        ),
        (
            NVTX_CBID_CORE_RANGE_PUSH_A,
            std::mem::transmute::<RangePushAFn, FunctionPointer>(range_push_a),
        ),
        (
            NVTX_CBID_CORE_RANGE_PUSH_W,
            std::mem::transmute::<RangePushWFn, FunctionPointer>(range_push_w),
        ),
        (
            NVTX_CBID_CORE_RANGE_POP,
            std::mem::transmute::<RangePopFn, FunctionPointer>(range_pop),
        ),
    ];
    let core2: [(usize, FunctionPointer); 5] = [
        (
            NVTX_CBID_CORE2_DOMAIN_MARK_EX,
            std::mem::transmute::<DomainMarkExFn, FunctionPointer>(domain_mark_ex),
        ),
        (
            NVTX_CBID_CORE2_DOMAIN_RANGE_PUSH_EX,
            std::mem::transmute::<DomainRangePushExFn, FunctionPointer>(domain_range_push_ex),
        ),
        (
            NVTX_CBID_CORE2_DOMAIN_RANGE_POP,
            std::mem::transmute::<DomainRangePopFn, FunctionPointer>(domain_range_pop),
        ),
        (
            NVTX_CBID_CORE2_DOMAIN_REGISTER_STRING_A,
            std::mem::transmute::<DomainRegisterStringAFn, FunctionPointer>(
                domain_register_string_a,
            ),
        ),
        (
            NVTX_CBID_CORE2_DOMAIN_REGISTER_STRING_W,
            std::mem::transmute::<DomainRegisterStringWFn, FunctionPointer>(
                domain_register_string_w,
            ),
        ),
    ];
    // A partial attach is reported as a failure: the loader then resets every slot.
    c_int::from(
        install(get_table, NVTX_CB_MODULE_CORE, &core)
            && install(get_table, NVTX_CB_MODULE_CORE2, &core2),
    )
}

/// Writes `hooks` into the slots of `module`'s function table.
unsafe fn install(
    get_table: GetModuleFunctionTable,
    module: c_int,
    hooks: &[(usize, FunctionPointer)],
) -> bool {
    let mut table: FunctionTable = ptr::null_mut();
    let mut size: c_uint = 0;
    if get_table(module, &mut table, &mut size) == 0 || table.is_null() {
        return false;
    }
    for &(id, hook) in hooks {
        // `size` is the module's `NVTX_CBID_*_SIZE`: ids run below it.
        if id >= size as usize {
            return false;
        }
        let slot = *table.add(id);
        if slot.is_null() {
            return false;
        }
        *slot = Some(hook);
    }
    true
}

// ---- The replaced NVTX functions -----------------------------------------------

/// The default domain, which the non-domain functions use (a null handle in NVTX).
const DEFAULT_DOMAIN: Handle = ptr::null();

unsafe extern "C" fn mark_ex(attributes: *const EventAttributes) {
    record("mark", Some(&attributes_message(attributes)));
}

unsafe extern "C" fn mark_a(message: *const c_char) {
    record("mark", Some(&ascii(message)));
}

unsafe extern "C" fn mark_w(message: *const WChar) {
    record("mark", Some(&unicode(message)));
}

unsafe extern "C" fn range_push_ex(attributes: *const EventAttributes) -> c_int {
    push(DEFAULT_DOMAIN, &attributes_message(attributes))
}

unsafe extern "C" fn range_push_a(message: *const c_char) -> c_int {
    push(DEFAULT_DOMAIN, &ascii(message))
}

unsafe extern "C" fn range_push_w(message: *const WChar) -> c_int {
    push(DEFAULT_DOMAIN, &unicode(message))
}

unsafe extern "C" fn range_pop() -> c_int {
    pop(DEFAULT_DOMAIN)
}

unsafe extern "C" fn domain_mark_ex(_domain: Handle, attributes: *const EventAttributes) {
    record("mark", Some(&attributes_message(attributes)));
}

unsafe extern "C" fn domain_range_push_ex(
    domain: Handle,
    attributes: *const EventAttributes,
) -> c_int {
    push(domain, &attributes_message(attributes))
}

unsafe extern "C" fn domain_range_pop(domain: Handle) -> c_int {
    pop(domain)
}

/// A registered string's handle is its leaked `CString`: NVTX keeps handles valid
/// for the life of the process, and every non-null handle the process holds
/// comes from here, so a message of type REGISTERED can be read back directly.
unsafe extern "C" fn domain_register_string_a(_domain: Handle, string: *const c_char) -> Handle {
    register(ascii(string))
}

unsafe extern "C" fn domain_register_string_w(_domain: Handle, string: *const WChar) -> Handle {
    register(unicode(string))
}

fn register(string: String) -> Handle {
    match CString::new(string) {
        Ok(string) => string.into_raw().cast_const().cast(),
        Err(_) => ptr::null(),
    }
}

// ---- Recording -----------------------------------------------------------------

thread_local! {
    /// This thread's number, assigned on its first event.
    static THREAD: Cell<u64> = const { Cell::new(0) };
    /// Open ranges per domain on this thread, for the levels NVTX returns.
    static DEPTHS: RefCell<Vec<(Handle, c_int)>> = const { RefCell::new(Vec::new()) };
}

/// Records a push; returns the zero-based level of the range started, per domain
/// and thread, as `nvtxRangePushA` does (nvToolsExt.h).
fn push(domain: Handle, message: &str) -> c_int {
    record("push", Some(message));
    with_depth(domain, |depth| {
        *depth += 1;
        *depth - 1
    })
}

/// Records a pop; returns the level of the range ended, or -1 (an error in NVTX)
/// when none was open. The pop is recorded either way so that readers see it.
fn pop(domain: Handle) -> c_int {
    record("pop", None);
    with_depth(domain, |depth| {
        if *depth == 0 {
            return -1;
        }
        *depth -= 1;
        *depth
    })
}

/// Runs `f` on this thread's depth in `domain`; -1 while the thread is exiting.
fn with_depth(domain: Handle, f: impl FnOnce(&mut c_int) -> c_int) -> c_int {
    DEPTHS
        .try_with(|depths| {
            let Ok(mut depths) = depths.try_borrow_mut() else {
                return -1;
            };
            match depths.iter_mut().find(|(d, _)| *d == domain) {
                Some((_, depth)) => f(depth),
                None => {
                    let mut depth = 0;
                    let level = f(&mut depth);
                    depths.push((domain, depth));
                    level
                }
            }
        })
        .unwrap_or(-1)
}

/// Appends one event line to the output with a single `write(2)`: on an
/// `O_APPEND` file, lines from different threads never interleave and a crash
/// leaves only whole lines.
fn record(kind: &str, message: Option<&str>) {
    let ns = monotonic_ns();
    let Some(mut file) = OUTPUT.get() else {
        return;
    };
    let mut line = String::with_capacity(48 + message.map_or(0, str::len));
    let _ = write!(line, "{kind}\t{}\t{ns}", thread_number());
    if let Some(message) = message {
        line.push('\t');
        for c in message.chars() {
            match c {
                '\t' => line.push_str("\\t"),
                '\n' => line.push_str("\\n"),
                '\r' => line.push_str("\\r"),
                '\\' => line.push_str("\\\\"),
                c => line.push(c),
            }
        }
    }
    line.push('\n');
    let _ = file.write(line.as_bytes());
}

fn thread_number() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    THREAD
        .try_with(|number| {
            if number.get() == 0 {
                number.set(NEXT.fetch_add(1, Ordering::Relaxed));
            }
            number.get()
        })
        .unwrap_or(0)
}

/// `struct timespec` on 64-bit Linux.
#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: c_int, time: *mut Timespec) -> c_int;
}

const CLOCK_MONOTONIC: c_int = 1;

/// `CLOCK_MONOTONIC` (not `Instant`, whose origin is hidden) so that times from
/// different processes compare.
fn monotonic_ns() -> u64 {
    let mut time = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `time` is a valid `struct timespec` to write to.
    unsafe { clock_gettime(CLOCK_MONOTONIC, &mut time) };
    (time.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(time.tv_nsec as u64)
}

// ---- Messages ------------------------------------------------------------------

unsafe fn ascii(message: *const c_char) -> String {
    if message.is_null() {
        return "<null message>".to_owned();
    }
    CStr::from_ptr(message).to_string_lossy().into_owned()
}

unsafe fn unicode(message: *const WChar) -> String {
    if message.is_null() {
        return "<null message>".to_owned();
    }
    let mut string = String::new();
    let mut at = message;
    while *at != 0 {
        string.push(char::from_u32(*at).unwrap_or(char::REPLACEMENT_CHARACTER));
        at = at.add(1);
    }
    string
}

unsafe fn attributes_message(attributes: *const EventAttributes) -> String {
    if attributes.is_null() {
        return "<null event attributes>".to_owned();
    }
    let attributes = &*attributes;
    if usize::from(attributes.size) < std::mem::size_of::<EventAttributes>() {
        return format!("<event attributes of {} bytes>", attributes.size);
    }
    match attributes.message_type {
        NVTX_MESSAGE_TYPE_ASCII => ascii(attributes.message.cast()),
        NVTX_MESSAGE_TYPE_UNICODE => unicode(attributes.message.cast()),
        NVTX_MESSAGE_TYPE_REGISTERED if !attributes.message.is_null() => {
            ascii(attributes.message.cast())
        }
        other => format!("<unsupported message type {other}>"),
    }
}
