//! What a run may hold in memory, and what its parts take.
//!
//! [`budget`] is what the process may still allocate: the smaller of the
//! system's `MemAvailable` and the headroom under its cgroup's memory limit
//! (v1 `memory.limit_in_bytes` or v2 `memory.max`, as Docker and Kubernetes
//! set them), since the kernel kills a process at whichever it reaches
//! first. [`CountingAllocator`], installed as a binary's global allocator,
//! counts allocations while [`count_allocations`] watches, so the runner can
//! measure what a target's `prepare` keeps; without it, the growth of the
//! resident set stands in ([`resident_bytes`]). With `memory: on` it also
//! charges every allocation of the measured passes to its range, call and
//! pass ([`attribution`]), which the timings (`timing::memory`) turn into the manifest's
//! statistics.

pub mod attribution;

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};

/// How much more memory the process may use, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryBudget {
    /// The smaller of the two limits below that are known.
    pub bytes: u64,
    /// `MemAvailable` of `/proc/meminfo`.
    pub mem_available: Option<u64>,
    /// The tightest memory limit of the process's cgroup and its ancestors.
    pub cgroup: Option<CgroupLimit>,
}

/// A cgroup memory limit and what is in use under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupLimit {
    /// The file the limit was read from.
    pub file: PathBuf,
    pub limit: u64,
    /// Usage less the inactive page cache, which the kernel reclaims before
    /// it kills anything (what Kubernetes calls the working set).
    pub in_use: u64,
}

impl CgroupLimit {
    /// What may still be allocated under the limit.
    pub fn headroom(&self) -> u64 {
        self.limit.saturating_sub(self.in_use)
    }
}

impl MemoryBudget {
    /// Says where [`MemoryBudget::bytes`] comes from, for error messages.
    pub fn describe(&self) -> String {
        let bytes = human_bytes(self.bytes);
        match (&self.cgroup, self.mem_available) {
            (Some(cgroup), available) if available.is_none_or(|a| cgroup.headroom() <= a) => {
                format!(
                    "{bytes} this process may use (its cgroup's limit {} in {}, less {} in use)",
                    human_bytes(cgroup.limit),
                    cgroup.file.display(),
                    human_bytes(cgroup.in_use)
                )
            }
            _ => format!("{bytes} of memory available (MemAvailable)"),
        }
    }
}

/// The memory the process may still use now; `None` where neither
/// `/proc/meminfo` nor a cgroup limit can be read.
pub fn budget() -> Option<MemoryBudget> {
    budget_under(Path::new("/"))
}

/// [`budget`] with `/proc` and the cgroup file systems read under `root`
/// instead of `/`.
pub fn budget_under(root: &Path) -> Option<MemoryBudget> {
    let read = |path: &str| std::fs::read_to_string(under(root, Path::new(path))).ok();
    let mem_available = read("/proc/meminfo").and_then(|text| parse_mem_available(&text));
    let cgroup = match (read("/proc/self/mountinfo"), read("/proc/self/cgroup")) {
        (Some(mountinfo), Some(membership)) => cgroup_limit(&mountinfo, &membership, root),
        _ => None,
    };
    let bytes = match (mem_available, &cgroup) {
        (Some(available), Some(cgroup)) => available.min(cgroup.headroom()),
        (Some(available), None) => available,
        (None, Some(cgroup)) => cgroup.headroom(),
        (None, None) => return None,
    };
    Some(MemoryBudget {
        bytes,
        mem_available,
        cgroup,
    })
}

/// `MemAvailable:   24318564 kB` in bytes.
fn parse_mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemAvailable:"))?;
    let mut words = line.split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => value.checked_mul(1024),
        None => Some(value),
        Some(_) => None,
    }
}

/// A limit at or above this means "no limit" (v1 writes 2^63 rounded to pages).
const UNLIMITED: u64 = 1 << 60;

/// The tightest memory limit over the process's cgroup and its ancestors,
/// from `/proc/self/mountinfo` (where the hierarchies are mounted) and
/// `/proc/self/cgroup` (where the process sits in each).
fn cgroup_limit(mountinfo: &str, membership: &str, root: &Path) -> Option<CgroupLimit> {
    let mut tightest: Option<CgroupLimit> = None;
    for mount in mountinfo.lines().filter_map(CgroupMount::parse) {
        let Some(path) = membership_path(membership, mount.version) else {
            continue;
        };
        // Inside a container the process's path may be the host's, which
        // its cgroup namespace mounts as the root: fall back to the mount.
        let relative = Path::new(path)
            .strip_prefix(&mount.root)
            .unwrap_or(Path::new(""));
        let mut directory = mount.point.join(relative);
        if !under(root, &directory).is_dir() {
            directory = mount.point.clone();
        }
        loop {
            if let Some(limit) = read_limit(root, &directory, mount.version) {
                if tightest
                    .as_ref()
                    .is_none_or(|t| limit.headroom() < t.headroom())
                {
                    tightest = Some(limit);
                }
            }
            if directory == mount.point || !directory.pop() {
                break;
            }
        }
    }
    tightest
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CgroupVersion {
    V1,
    V2,
}

/// A cgroup hierarchy that can hold memory limits, as mountinfo lists it.
struct CgroupMount {
    version: CgroupVersion,
    /// The directory of the hierarchy this mount shows.
    root: PathBuf,
    /// Where it is mounted.
    point: PathBuf,
}

impl CgroupMount {
    /// `36 35 0:30 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory`
    fn parse(line: &str) -> Option<CgroupMount> {
        let (mount, filesystem) = line.split_once(" - ")?;
        let mount: Vec<&str> = mount.split(' ').collect();
        let filesystem: Vec<&str> = filesystem.split(' ').collect();
        let version = match *filesystem.first()? {
            "cgroup2" => CgroupVersion::V2,
            "cgroup" if filesystem.get(2)?.split(',').any(|o| o == "memory") => CgroupVersion::V1,
            _ => return None,
        };
        Some(CgroupMount {
            version,
            root: PathBuf::from(unescape_mount_path(mount.get(3)?)),
            point: PathBuf::from(unescape_mount_path(mount.get(4)?)),
        })
    }
}

/// mountinfo writes space, tab, newline and backslash as octal escapes.
fn unescape_mount_path(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest
            .get(at + 1..at + 4)
            .and_then(|d| u8::from_str_radix(d, 8).ok());
        match code {
            Some(byte) => {
                out.push(char::from(byte));
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The process's path in the hierarchy: `0::/path` for v2, the line whose
/// controllers include `memory` for v1.
fn membership_path(membership: &str, version: CgroupVersion) -> Option<&str> {
    membership.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (id, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let matches = match version {
            CgroupVersion::V2 => id == "0" && controllers.is_empty(),
            CgroupVersion::V1 => controllers.split(',').any(|c| c == "memory"),
        };
        matches.then_some(path)
    })
}

fn read_limit(root: &Path, directory: &Path, version: CgroupVersion) -> Option<CgroupLimit> {
    let read = |name: &str| std::fs::read_to_string(under(root, &directory.join(name))).ok();
    let (limit_file, usage_file, inactive_key) = match version {
        CgroupVersion::V2 => ("memory.max", "memory.current", "inactive_file"),
        CgroupVersion::V1 => (
            "memory.limit_in_bytes",
            "memory.usage_in_bytes",
            "total_inactive_file",
        ),
    };
    let limit: u64 = read(limit_file)?.trim().parse().ok()?; // "max": no limit
    if limit >= UNLIMITED {
        return None;
    }
    let usage: u64 = read(usage_file)
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(0);
    let inactive: u64 = read("memory.stat")
        .and_then(|stat| {
            stat.lines().find_map(|line| {
                let (key, value) = line.split_once(' ')?;
                (key == inactive_key).then(|| value.trim().parse().ok())?
            })
        })
        .unwrap_or(0);
    Some(CgroupLimit {
        file: directory.join(limit_file),
        limit,
        in_use: usage.saturating_sub(inactive),
    })
}

/// `path` (absolute) read under `root` instead of `/`.
fn under(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// The process's resident set size in bytes, from `/proc/self/statm`.
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(page).ok().map(|page| pages * page)
}

/// Maps in the pages of `buffer`'s spare capacity in one call rather than one page fault at a time as they are first
/// written: a large image's buffer is fresh memory, and taking its faults
/// one by one costs about a third of copying it in from the page cache.
/// Linux 5.14 and later (`MADV_POPULATE_WRITE`); elsewhere, or when the
/// kernel refuses, the pages fault in as usual.
pub fn prefault_spare<T>(buffer: &mut Vec<T>) {
    let spare = buffer.spare_capacity_mut();
    // SAFETY: the range is the buffer's own spare capacity.
    unsafe { prefault(spare.as_mut_ptr().cast(), std::mem::size_of_val(spare)) }
}

/// [`prefault_spare`] of an initialized buffer: populating its pages
/// changes none of its bytes.
pub fn prefault_slice(buffer: &mut [u8]) {
    // SAFETY: the range is the slice's.
    unsafe { prefault(buffer.as_mut_ptr(), buffer.len()) }
}

/// A transparent huge page on x86-64 and most other 64-bit Linux targets.
#[cfg(any(target_os = "linux", target_os = "android"))]
const HUGE_PAGE: usize = 2 << 20;

/// # Safety
///
/// `start..start + len` must lie in one allocation the caller owns.
unsafe fn prefault(start: *mut u8, len: usize) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let first = (start as usize).next_multiple_of(page);
        let end = (start as usize + len) / page * page;
        if end > first {
            // SAFETY: whole pages inside the caller's allocation;
            // MADV_POPULATE_WRITE maps them without changing their content.
            unsafe {
                if end - first >= HUGE_PAGE {
                    libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
                }
                libc::madvise(
                    first as *mut libc::c_void,
                    end - first,
                    libc::MADV_POPULATE_WRITE,
                );
            }
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = (start, len);
}

/// `bytes` in binary units with one decimal: `512 B`, `1.5 KiB`, `12.0 GiB`
/// ([`crate::units::format_bytes`]).
pub fn human_bytes(bytes: u64) -> String {
    crate::units::format_bytes(bytes as f64)
}

// Counting allocations.

/// What the allocator does beyond allocating, in one load: the number of
/// open [`count_allocations`] windows, plus [`ATTRIBUTING`] while memory
/// is attributed to ranges ([`attribution`]). Zero: nothing.
static HOOKS: AtomicUsize = AtomicUsize::new(0);
const ATTRIBUTING: usize = 1 << (usize::BITS - 1);
const WINDOWS: usize = ATTRIBUTING - 1;
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static NET_BYTES: AtomicI64 = AtomicI64::new(0);
/// Set by the first allocation through [`CountingAllocator`].
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// The allocator the counting one forwards to, by type name (its address
/// and length), set with [`INSTALLED`].
static INNER_NAME: AtomicUsize = AtomicUsize::new(0);
static INNER_NAME_LEN: AtomicUsize = AtomicUsize::new(0);

/// Turns the allocator's calls into [`attribution`] on or off.
fn set_attribution(on: bool) {
    if on {
        HOOKS.fetch_or(ATTRIBUTING, Ordering::SeqCst);
    } else {
        HOOKS.fetch_and(!ATTRIBUTING, Ordering::SeqCst);
    }
}

/// An allocator (the system's unless given another), counting
/// allocations and the bytes they keep while [`count_allocations`]
/// watches, and attributing them to ranges while a capture records with
/// `memory: on` ([`attribution`]). Otherwise it costs one relaxed load per
/// call on top of the inner allocator's.
///
/// The system allocator, as a binary's global allocator:
///
/// ```ignore
/// #[global_allocator]
/// static ALLOCATOR: profiling_core::memory::CountingAllocator =
///     profiling_core::memory::CountingAllocator;
/// ```
///
/// The allocator a production program uses, wrapped (timings on it, and
/// memory per range still counted), as `profile-cli new` writes it when
/// the production binary declares one:
///
/// ```ignore
/// #[global_allocator]
/// static ALLOCATOR: profiling_core::memory::CountingAllocator<mimalloc::MiMalloc> =
///     profiling_core::memory::CountingAllocator::new(mimalloc::MiMalloc);
/// ```
pub struct CountingAllocator<A = System> {
    inner: A,
}

/// The counting allocator over the system's: a value of the type of the
/// same name, so that `static A: CountingAllocator = CountingAllocator;`
/// reads as it would for a unit struct.
#[allow(non_upper_case_globals)]
pub const CountingAllocator: CountingAllocator = CountingAllocator { inner: System };

impl<A> CountingAllocator<A> {
    /// Counting over `inner`.
    pub const fn new(inner: A) -> CountingAllocator<A> {
        CountingAllocator { inner }
    }

    #[inline]
    fn hooks() -> usize {
        if !INSTALLED.load(Ordering::Relaxed) {
            Self::installed();
        }
        HOOKS.load(Ordering::Relaxed)
    }

    /// The first call: the allocator is in place, and forwards to `A`.
    #[cold]
    fn installed() {
        let name = std::any::type_name::<A>();
        INNER_NAME.store(name.as_ptr() as usize, Ordering::Relaxed);
        INNER_NAME_LEN.store(name.len(), Ordering::Relaxed);
        INSTALLED.store(true, Ordering::Release);
    }

    #[cold]
    fn count(hooks: usize, bytes: i64, allocations: u64) {
        if hooks & WINDOWS > 0 {
            ALLOCATIONS.fetch_add(allocations, Ordering::Relaxed);
            NET_BYTES.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// After `alloc` or `alloc_zeroed` returned `ptr` for `layout`.
    #[inline]
    fn allocated(ptr: *mut u8, layout: Layout) {
        let hooks = Self::hooks();
        if hooks != 0 && !ptr.is_null() {
            Self::count(hooks, layout.size() as i64, 1);
            if hooks & ATTRIBUTING != 0 {
                attribution::on_alloc(ptr, layout.size() as u64);
            }
        }
    }
}

// SAFETY: every call is forwarded to the inner allocator unchanged; the
// counters are atomics and the attribution's table and stacks are
// allocated ahead (from the system allocator), so the hooks never
// allocate.
unsafe impl<A: GlobalAlloc> GlobalAlloc for CountingAllocator<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on.
        let ptr = unsafe { self.inner.alloc(layout) };
        Self::allocated(ptr, layout);
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        let ptr = unsafe { self.inner.alloc_zeroed(layout) };
        Self::allocated(ptr, layout);
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let hooks = Self::hooks();
        if hooks != 0 {
            Self::count(hooks, -(layout.size() as i64), 0);
            // Before the block is freed: its address is not reused yet.
            if hooks & ATTRIBUTING != 0 {
                attribution::on_free(ptr, layout.size() as u64);
            }
        }
        // SAFETY: as above.
        unsafe { self.inner.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let hooks = Self::hooks();
        let taken = if hooks & ATTRIBUTING != 0 {
            attribution::before_realloc(ptr)
        } else {
            None
        };
        // SAFETY: as above.
        let new = unsafe { self.inner.realloc(ptr, layout, new_size) };
        if hooks != 0 && !new.is_null() {
            Self::count(hooks, new_size as i64 - layout.size() as i64, 1);
        }
        if let Some(taken) = taken {
            attribution::after_realloc(taken, ptr, layout.size() as u64, new, new_size as u64);
        }
        new
    }
}

/// What happened to the heap while [`count_allocations`] watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Allocations {
    /// Calls to `alloc`, `alloc_zeroed` and `realloc`, on every thread.
    pub count: u64,
    /// Bytes allocated less bytes freed: what the closure kept.
    pub net_bytes: i64,
}

/// True when [`CountingAllocator`] is the global allocator of this process
/// (known once anything has been allocated).
pub fn counting_installed() -> bool {
    INSTALLED.load(Ordering::Relaxed)
}

/// The allocator this process allocates with, as the manifest records it:
/// [`inner_allocator`]'s name, or that another global allocator than
/// [`CountingAllocator`] is in place.
pub fn allocator_description() -> String {
    match inner_allocator() {
        Some(name) => name.to_owned(),
        None => {
            "not the counting allocator: another #[global_allocator] (memory per range unavailable)"
                .to_owned()
        }
    }
}

/// The allocator [`CountingAllocator`] forwards to, by type name
/// (`std::alloc::System`, `mimalloc::MiMalloc`), once it is installed.
pub fn inner_allocator() -> Option<&'static str> {
    if !INSTALLED.load(Ordering::Acquire) {
        return None;
    }
    let (address, len) = (
        INNER_NAME.load(Ordering::Relaxed),
        INNER_NAME_LEN.load(Ordering::Relaxed),
    );
    // SAFETY: the address and length of a `&'static str` (a type name),
    // stored before `INSTALLED` was released.
    let bytes = unsafe { std::slice::from_raw_parts(address as *const u8, len) };
    std::str::from_utf8(bytes).ok()
}

/// Counts allocations on every thread from [`watch_allocations`] until
/// [`AllocationWatch::finish`] (or its drop).
pub struct AllocationWatch {
    before: (u64, i64),
    open: bool,
}

/// Starts counting allocations, for code whose start and end are in
/// different places (a measured loop seen from inside a target).
pub fn watch_allocations() -> AllocationWatch {
    let before = (
        ALLOCATIONS.load(Ordering::SeqCst),
        NET_BYTES.load(Ordering::SeqCst),
    );
    HOOKS.fetch_add(1, Ordering::SeqCst);
    AllocationWatch { before, open: true }
}

impl AllocationWatch {
    /// Stops counting; `None` when [`CountingAllocator`] is not installed.
    pub fn finish(mut self) -> Option<Allocations> {
        self.open = false;
        HOOKS.fetch_sub(1, Ordering::SeqCst);
        let counts = Allocations {
            count: ALLOCATIONS.load(Ordering::SeqCst) - self.before.0,
            net_bytes: NET_BYTES.load(Ordering::SeqCst) - self.before.1,
        };
        counting_installed().then_some(counts)
    }
}

impl Drop for AllocationWatch {
    fn drop(&mut self) {
        if self.open {
            HOOKS.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Runs `f` and says what it allocated, on every thread, while it ran;
/// `None` for the counts when [`CountingAllocator`] is not installed.
/// Windows on several threads at once see each other's allocations.
pub fn count_allocations<R>(f: impl FnOnce() -> R) -> (R, Option<Allocations>) {
    let watch = watch_allocations();
    let result = f();
    (result, watch.finish())
}

/// Runs `f` and says how many bytes of what it allocated are still held
/// when it returns: counted by [`CountingAllocator`] where it is installed,
/// else the growth of the resident set (which misses memory the allocator
/// had already mapped, and counts pages others touched meanwhile).
pub fn measure_held<R>(f: impl FnOnce() -> R) -> (R, u64) {
    let resident_before = resident_bytes();
    let (result, counts) = count_allocations(f);
    let held = match counts {
        Some(counts) => u64::try_from(counts.net_bytes).unwrap_or(0),
        None => match (resident_before, resident_bytes()) {
            (Some(before), Some(after)) => after.saturating_sub(before),
            _ => 0,
        },
    };
    (result, held)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = under(root.path(), Path::new(path));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        root
    }

    const MEMINFO: &str = "MemTotal: 32795840 kB\nMemAvailable: 8388608 kB\n";
    const GIB: u64 = 1 << 30;

    #[test]
    fn prefaulting_a_buffer_changes_none_of_its_bytes() {
        let pattern: Vec<u8> = (0..3 << 20).map(|i: u32| (i % 251) as u8).collect();
        let mut buffer = pattern.clone();
        prefault_slice(&mut buffer);
        assert!(buffer == pattern);
        let mut spare: Vec<u8> = Vec::with_capacity(3 << 20);
        spare.extend_from_slice(&pattern[..5000]);
        prefault_spare(&mut spare);
        assert_eq!(spare.len(), 5000);
        assert!(spare[..] == pattern[..5000]);
        spare.extend_from_slice(&pattern[5000..]);
        assert!(spare == pattern);
    }

    #[test]
    fn without_a_cgroup_limit_the_budget_is_mem_available() {
        let root = tree(&[
            ("/proc/meminfo", MEMINFO),
            (
                "/proc/self/mountinfo",
                "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
            ),
            ("/proc/self/cgroup", "0::/\n"),
            ("/sys/fs/cgroup/memory.max", "max\n"),
            ("/sys/fs/cgroup/memory.current", "1000\n"),
        ]);
        let budget = budget_under(root.path()).unwrap();
        assert_eq!(budget.bytes, 8 * GIB);
        assert_eq!(budget.cgroup, None);
        assert_eq!(
            budget.describe(),
            "8.0 GiB of memory available (MemAvailable)"
        );
    }

    #[test]
    fn a_v2_limit_below_mem_available_is_the_budget() {
        let root = tree(&[
            ("/proc/meminfo", MEMINFO),
            (
                "/proc/self/mountinfo",
                "30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n",
            ),
            ("/proc/self/cgroup", "0::/kubepods/pod1\n"),
            ("/sys/fs/cgroup/kubepods/pod1/memory.max", "4294967296\n"),
            (
                "/sys/fs/cgroup/kubepods/pod1/memory.current",
                "1610612736\n",
            ),
            (
                "/sys/fs/cgroup/kubepods/pod1/memory.stat",
                "anon 1000\ninactive_file 536870912\nactive_file 5\n",
            ),
            ("/sys/fs/cgroup/kubepods/memory.max", "max\n"),
        ]);
        let budget = budget_under(root.path()).unwrap();
        // 4 GiB limit, 1.5 GiB used of which 0.5 GiB is reclaimable cache.
        assert_eq!(budget.bytes, 3 * GIB);
        let cgroup = budget.cgroup.clone().unwrap();
        assert_eq!(cgroup.limit, 4 * GIB);
        assert_eq!(cgroup.in_use, GIB);
        assert_eq!(
            budget.describe(),
            "3.0 GiB this process may use (its cgroup's limit 4.0 GiB in /sys/fs/cgroup/kubepods/pod1/memory.max, less 1.0 GiB in use)"
        );
    }

    #[test]
    fn an_ancestor_limit_counts_too() {
        let root = tree(&[
            ("/proc/meminfo", MEMINFO),
            (
                "/proc/self/mountinfo",
                "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
            ),
            ("/proc/self/cgroup", "0::/a/b\n"),
            ("/sys/fs/cgroup/a/b/memory.max", "max\n"),
            ("/sys/fs/cgroup/a/memory.max", "2147483648\n"),
            ("/sys/fs/cgroup/a/memory.current", "0\n"),
        ]);
        let budget = budget_under(root.path()).unwrap();
        assert_eq!(budget.bytes, 2 * GIB);
        assert_eq!(
            budget.cgroup.unwrap().file,
            Path::new("/sys/fs/cgroup/a/memory.max")
        );
    }

    #[test]
    fn a_v1_memory_hierarchy_is_read_where_it_is_mounted() {
        // Docker on cgroup v1: the host's path, with the container's cgroup
        // mounted as the root of the hierarchy.
        let root = tree(&[
            ("/proc/meminfo", MEMINFO),
            (
                "/proc/self/mountinfo",
                "40 30 0:35 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n\
                 41 30 0:36 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n",
            ),
            (
                "/proc/self/cgroup",
                "5:cpu:/docker/abc\n4:memory:/docker/abc\n0::/\n",
            ),
            (
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "1073741824\n",
            ),
            ("/sys/fs/cgroup/memory/memory.usage_in_bytes", "536870912\n"),
            (
                "/sys/fs/cgroup/memory/memory.stat",
                "cache 10\ntotal_inactive_file 268435456\n",
            ),
        ]);
        let budget = budget_under(root.path()).unwrap();
        assert_eq!(budget.bytes, GIB - GIB / 4);
        assert_eq!(
            budget.cgroup.unwrap().file,
            Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes")
        );
    }

    #[test]
    fn an_unlimited_v1_hierarchy_leaves_mem_available() {
        let root = tree(&[
            ("/proc/meminfo", MEMINFO),
            (
                "/proc/self/mountinfo",
                "40 30 0:35 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
            ),
            ("/proc/self/cgroup", "4:memory:/\n"),
            (
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
        ]);
        let budget = budget_under(root.path()).unwrap();
        assert_eq!(budget.bytes, 8 * GIB);
        assert_eq!(budget.cgroup, None);
    }

    #[test]
    fn a_cgroup_limit_above_mem_available_leaves_mem_available() {
        let root = tree(&[
            ("/proc/meminfo", MEMINFO),
            (
                "/proc/self/mountinfo",
                "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
            ),
            ("/proc/self/cgroup", "0::/roomy\n"),
            ("/sys/fs/cgroup/roomy/memory.max", "17179869184\n"),
            ("/sys/fs/cgroup/roomy/memory.current", "0\n"),
        ]);
        let budget = budget_under(root.path()).unwrap();
        assert_eq!(budget.bytes, 8 * GIB);
        assert_eq!(budget.cgroup.as_ref().map(|c| c.limit), Some(16 * GIB));
        assert_eq!(
            budget.describe(),
            "8.0 GiB of memory available (MemAvailable)"
        );
    }

    #[test]
    fn the_tightest_of_a_cgroup_and_its_ancestors_counts() {
        let files = |child: &str, parent: &str| {
            tree(&[
                ("/proc/meminfo", MEMINFO),
                (
                    "/proc/self/mountinfo",
                    "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
                ),
                ("/proc/self/cgroup", "0::/parent/child\n"),
                ("/sys/fs/cgroup/parent/child/memory.max", child),
                ("/sys/fs/cgroup/parent/child/memory.current", "0\n"),
                ("/sys/fs/cgroup/parent/memory.max", parent),
                ("/sys/fs/cgroup/parent/memory.current", "0\n"),
            ])
        };
        let tighter_child = files("1073741824\n", "2147483648\n");
        let budget = budget_under(tighter_child.path()).unwrap();
        assert_eq!(budget.bytes, GIB);
        assert_eq!(
            budget.cgroup.unwrap().file,
            Path::new("/sys/fs/cgroup/parent/child/memory.max")
        );
        // On a tie, the process's own cgroup is the one named.
        let equal = files("1073741824\n", "1073741824\n");
        assert_eq!(
            budget_under(equal.path()).unwrap().cgroup.unwrap().file,
            Path::new("/sys/fs/cgroup/parent/child/memory.max")
        );
        let tighter_parent = files("2147483648\n", "1073741824\n");
        let budget = budget_under(tighter_parent.path()).unwrap();
        assert_eq!(budget.bytes, GIB);
        assert_eq!(
            budget.cgroup.unwrap().file,
            Path::new("/sys/fs/cgroup/parent/memory.max")
        );
    }

    #[test]
    fn a_v1_hierarchy_without_the_memory_controller_is_not_read() {
        let root = tree(&[
            ("/proc/meminfo", MEMINFO),
            (
                "/proc/self/mountinfo",
                "41 30 0:36 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n",
            ),
            ("/proc/self/cgroup", "5:cpu:/\n4:memory:/\n"),
            // A stray file where no memory controller is mounted.
            ("/sys/fs/cgroup/cpu/memory.limit_in_bytes", "1048576\n"),
        ]);
        let budget = budget_under(root.path()).unwrap();
        assert_eq!(budget.cgroup, None);
        assert_eq!(budget.bytes, 8 * GIB);
    }

    #[test]
    fn nothing_readable_gives_no_budget() {
        let root = tree(&[]);
        assert_eq!(budget_under(root.path()), None);
    }

    #[test]
    fn this_machine_has_a_budget_at_most_mem_available() {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
        let available = parse_mem_available(&meminfo).unwrap();
        let budget = budget().unwrap();
        assert_eq!(budget.mem_available.map(|a| a > 0), Some(true));
        // MemAvailable moves between two reads; the budget never exceeds it
        // by more than that noise.
        assert!(budget.bytes <= available + available / 10);
    }

    #[test]
    fn membership_is_the_line_of_the_hierarchy() {
        let membership = "12:cpu,cpuacct:/a\n4:blkio,memory:/docker/x\n1:name=systemd:/s\n0:odd:/not-v2\n0::/unified\n";
        assert_eq!(
            membership_path(membership, CgroupVersion::V1),
            Some("/docker/x")
        );
        assert_eq!(
            membership_path(membership, CgroupVersion::V2),
            Some("/unified")
        );
        assert_eq!(
            membership_path("3:memoryless:/m\n", CgroupVersion::V1),
            None
        );
        assert_eq!(
            membership_path("1::/v2-but-not-0\n", CgroupVersion::V2),
            None
        );
    }

    #[test]
    fn without_the_counting_allocator_the_resident_set_measures() {
        // This test binary keeps the system allocator.
        let ((), counts) = count_allocations(|| drop(std::hint::black_box(vec![1u8; 64])));
        assert!(!counting_installed());
        assert_eq!(counts, None);
        let before = resident_bytes().unwrap();
        assert!(
            before > 1 << 20,
            "{before}: a running test holds more than 1 MiB"
        );
        // 64 MiB written: the pages become resident.
        let (buffer, held) = measure_held(|| vec![7u8; 64 << 20]);
        assert!(
            (60 << 20..256 << 20).contains(&held),
            "{held} bytes for 64 MiB written"
        );
        drop(buffer);
    }

    #[test]
    fn mount_paths_are_unescaped() {
        assert_eq!(unescape_mount_path(r"/a\040b\011c"), "/a b\tc");
        assert_eq!(unescape_mount_path(r"/plain"), "/plain");
        assert_eq!(unescape_mount_path(r"/odd\x"), r"/odd\x");
    }

    #[test]
    fn mem_available_is_read_in_bytes() {
        let meminfo =
            "MemTotal:       32795840 kB\nMemFree:         1000 kB\nMemAvailable:   24318564 kB\n";
        assert_eq!(parse_mem_available(meminfo), Some(24_318_564 * 1024));
    }

    #[test]
    fn a_meminfo_without_mem_available_gives_none() {
        assert_eq!(parse_mem_available("MemTotal: 1000 kB\n"), None);
        assert_eq!(parse_mem_available("MemAvailable: lots kB\n"), None);
        assert_eq!(parse_mem_available("MemAvailable: 12 MB\n"), None);
        assert_eq!(parse_mem_available(""), None);
    }

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1024), "1.0 KiB");
        assert_eq!(human_bytes(1 << 20), "1.0 MiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(12 << 30), "12.0 GiB");
        assert_eq!(human_bytes(19_200_000_000), "17.9 GiB");
        assert_eq!(human_bytes(u64::MAX), "16.0 EiB");
    }
}
