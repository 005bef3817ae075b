//! The decoded-image cache (`data_source.cache: true`): an image decoded
//! once is kept on disk as raw RGB and read back with one copy, for as long
//! as its file is unchanged.
//!
//! An entry is named by a hash of its file's canonical path and starts with
//! a header saying which content of that file it holds (size, modification
//! and change times, device and inode) and the checksum of its pixels; an
//! entry whose header does not match the file as it is now, or that is cut
//! short or damaged (its pixels included), is a miss, and the image decoded
//! afresh replaces it. The cache never holds more than its bound: past it,
//! the entries used longest ago go first.
//!
//! The cache touches only what it recognises as its own: entries by name
//! (`<16 hex digits>.rgb`) and, before removing one, by header; temporary
//! files by name. It never follows a symbolic link out of its folder: a
//! `.cache` or `.cache/images` that is a link is refused.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use profiling_core::data::CacheStats;
pub use profiling_core::data::CacheSummary;

/// The bound on what the cache holds when the config gives none: 2 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 2 << 30;

pub use profiling_core::data::CACHE_DIR;

/// The decoded images' folder inside [`CACHE_DIR`].
pub const IMAGES_DIR: &str = "images";

/// An entry's file extension.
const ENTRY_EXTENSION: &str = "rgb";

/// The first bytes of every entry; the last one is the format's version
/// (2: with the pixels' checksum; a version-1 entry is a miss).
const MAGIC: [u8; 8] = *b"PCIMAGE2";

/// The fixed part of an entry's header: see [`Header`].
const HEADER_BYTES: usize = 72;

/// The longest path an entry records; a longer one is not cached.
const MAX_PATH_BYTES: usize = 16 << 10;

/// Temporary files older than this are left over from a process that
/// stopped while writing, and are removed when the cache is swept.
const STALE_TEMPORARY: Duration = Duration::from_secs(3600);

/// Which content of which file an entry holds. Read from the file before
/// it is decoded, so that a file changed while it was being decoded is
/// stored under a key that no longer matches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileKey {
    /// The canonical path: the same file named two ways shares its entry.
    pub path: PathBuf,
    pub size: u64,
    /// Modification time, in nanoseconds since the epoch.
    pub modified_ns: i64,
    /// Status change time, in nanoseconds since the epoch: it moves on any
    /// write, also when a tool puts the modification time back.
    pub changed_ns: i64,
    pub device: u64,
    /// A file replaced by another (written beside it and renamed over it)
    /// has a new inode.
    pub inode: u64,
}

impl FileKey {
    /// The key of the file at `path` as it is now.
    pub fn of(path: &Path) -> std::io::Result<FileKey> {
        use std::os::unix::fs::MetadataExt;
        let path = std::fs::canonicalize(path)?;
        let metadata = std::fs::metadata(&path)?;
        let nanoseconds =
            |seconds: i64, nanos: i64| seconds.saturating_mul(1_000_000_000).saturating_add(nanos);
        Ok(FileKey {
            size: metadata.len(),
            modified_ns: nanoseconds(metadata.mtime(), metadata.mtime_nsec()),
            changed_ns: nanoseconds(metadata.ctime(), metadata.ctime_nsec()),
            device: metadata.dev(),
            inode: metadata.ino(),
            path,
        })
    }

    /// The entry's file name: a hash of the path alone, so that a changed
    /// file's entry is replaced rather than left beside the new one.
    fn entry_name(&self) -> String {
        let hash = fnv1a(FNV_OFFSET, self.path.as_os_str().as_encoded_bytes());
        format!("{hash:016x}.{ENTRY_EXTENSION}")
    }
}

/// An entry's header, little-endian: `MAGIC`, width (u32), height (u32),
/// the path's length (u32), the pixels' CRC-32 (u32), then the key's size (u64),
/// modification and change times (i64 ns), device and inode (u64), and a
/// checksum (u64, FNV-1a) of the 64 bytes before it and the path. The path
/// follows, then width × height × 3 bytes of RGB, and nothing else: an
/// entry of any other length is damaged.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Header {
    width: u32,
    height: u32,
    /// CRC-32 of the pixels.
    pixels_crc: u32,
    key: FileKey,
}

impl Header {
    fn pixel_bytes(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height) * 3
    }

    fn encode(&self) -> Vec<u8> {
        let path = self.key.path.as_os_str().as_encoded_bytes();
        let mut bytes = Vec::with_capacity(HEADER_BYTES + path.len());
        bytes.extend_from_slice(&MAGIC);
        bytes.extend_from_slice(&self.width.to_le_bytes());
        bytes.extend_from_slice(&self.height.to_le_bytes());
        bytes.extend_from_slice(&(path.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&self.pixels_crc.to_le_bytes());
        bytes.extend_from_slice(&self.key.size.to_le_bytes());
        bytes.extend_from_slice(&self.key.modified_ns.to_le_bytes());
        bytes.extend_from_slice(&self.key.changed_ns.to_le_bytes());
        bytes.extend_from_slice(&self.key.device.to_le_bytes());
        bytes.extend_from_slice(&self.key.inode.to_le_bytes());
        let checksum = fnv1a(fnv1a(FNV_OFFSET, &bytes), path);
        bytes.extend_from_slice(&checksum.to_le_bytes());
        bytes.extend_from_slice(path);
        bytes
    }

    /// Reads the header at the start of `file`, whose length is
    /// `file_len`; `None` when it is not a whole, undamaged entry.
    fn read(file: &mut File, file_len: u64) -> Option<Header> {
        let mut fixed = [0u8; HEADER_BYTES];
        file.read_exact(&mut fixed).ok()?;
        if fixed[..8] != MAGIC {
            return None;
        }
        let word = |at: usize| u32::from_le_bytes(fixed[at..at + 4].try_into().unwrap_or_default());
        let long = |at: usize| u64::from_le_bytes(fixed[at..at + 8].try_into().unwrap_or_default());
        let (width, height, path_len) = (word(8), word(12), word(16) as usize);
        if path_len > MAX_PATH_BYTES {
            return None;
        }
        let pixels = u64::from(width)
            .checked_mul(u64::from(height))?
            .checked_mul(3)?;
        if Some(file_len) != pixels.checked_add((HEADER_BYTES + path_len) as u64) {
            return None;
        }
        let mut path = vec![0; path_len];
        file.read_exact(&mut path).ok()?;
        if fnv1a(fnv1a(FNV_OFFSET, &fixed[..64]), &path) != long(64) {
            return None;
        }
        let path = PathBuf::from(std::ffi::OsString::from_vec(path));
        Some(Header {
            width,
            height,
            pixels_crc: word(20),
            key: FileKey {
                path,
                size: long(24),
                modified_ns: long(32) as i64,
                changed_ns: long(40) as i64,
                device: long(48),
                inode: long(56),
            },
        })
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a, 64 bits, continuing from `hash`: stable across builds and
/// releases, unlike the standard library's hasher.
fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// The decoded-image cache of one run: see the module docs. Shared by the
/// threads that decode; nothing is read or written before the first image.
#[derive(Debug)]
pub struct ImageCache {
    dir: PathBuf,
    max_bytes: u64,
    hits: AtomicU64,
    misses: AtomicU64,
    stored: AtomicU64,
    stored_bytes: AtomicU64,
    evicted: AtomicU64,
    damaged: AtomicU64,
    store_failures: AtomicU64,
    first_failure: Mutex<Option<String>>,
    /// The bytes the folder holds: counted at the first store, then kept
    /// up to date by this process (other processes' stores are counted at
    /// the next sweep).
    held: Mutex<Option<u64>>,
}

impl ImageCache {
    /// The cache under the run-directory root `root` (its `.cache/images/`),
    /// holding at most `max_bytes`.
    pub fn under(root: &Path, max_bytes: u64) -> ImageCache {
        ImageCache {
            dir: images_dir(root),
            max_bytes,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            stored: AtomicU64::new(0),
            stored_bytes: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
            damaged: AtomicU64::new(0),
            store_failures: AtomicU64::new(0),
            first_failure: Mutex::new(None),
            held: Mutex::new(None),
        }
    }

    /// The folder of the entries.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The image of the file `key` names, when an entry holds it as the
    /// file is now; else `None`, counted as a miss.
    pub fn get(&self, key: &FileKey) -> Option<image::RgbImage> {
        let found = self.read_entry(key);
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    fn read_entry(&self, key: &FileKey) -> Option<image::RgbImage> {
        let (mut file, header) = self.open_entry(key)?;
        let bytes = header.pixel_bytes();
        // One copy, from the page cache straight into the image's buffer.
        let mut pixels = Vec::with_capacity(usize::try_from(bytes).ok()?);
        profiling_core::memory::prefault_spare(&mut pixels);
        Read::by_ref(&mut file)
            .take(bytes)
            .read_to_end(&mut pixels)
            .ok()?;
        if pixels.len() as u64 != bytes {
            return None;
        }
        if crc32fast::hash(&pixels) != header.pixels_crc {
            // Damaged after it was written: the image decoded afresh
            // replaces it.
            self.damaged.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        // Used now: the last to be evicted.
        let _ = file.set_modified(SystemTime::now());
        image::RgbImage::from_raw(header.width, header.height, pixels)
    }

    /// The width and height of the image the entry for `key` holds, read
    /// from its header alone; not counted as a hit or a miss.
    pub fn dimensions(&self, key: &FileKey) -> Option<(u32, u32)> {
        self.open_entry(key)
            .map(|(_, header)| (header.width, header.height))
    }

    /// The entry for `key`, open after its header, when it holds the file
    /// as `key` describes it.
    fn open_entry(&self, key: &FileKey) -> Option<(File, Header)> {
        check_folder(&self.dir).ok()?;
        let mut file = open_no_follow(&self.dir.join(key.entry_name())).ok()?;
        let metadata = file.metadata().ok()?;
        if !metadata.is_file() {
            return None;
        }
        let len = metadata.len();
        let header = Header::read(&mut file, len)?;
        (header.key == *key).then_some((file, header))
    }

    /// Stores `image`, decoded from the file `key` names, replacing any
    /// entry for that path; then evicts the oldest entries while the cache
    /// holds more than its bound. An image that cannot be stored is
    /// counted and the run goes on without it.
    pub fn put(&self, key: &FileKey, image: &image::RgbImage) {
        let header = Header {
            width: image.width(),
            height: image.height(),
            pixels_crc: crc32fast::hash(image.as_raw()),
            key: key.clone(),
        }
        .encode();
        let bytes = (header.len() + image.as_raw().len()) as u64;
        if bytes > self.max_bytes || header.len() > HEADER_BYTES + MAX_PATH_BYTES {
            return;
        }
        match self.write_entry(&key.entry_name(), &header, image.as_raw()) {
            Ok(()) => {
                self.stored.fetch_add(1, Ordering::Relaxed);
                self.stored_bytes.fetch_add(bytes, Ordering::Relaxed);
                self.note_stored(bytes);
            }
            Err(error) => {
                self.store_failures.fetch_add(1, Ordering::Relaxed);
                let mut first = self.first_failure.lock().unwrap_or_else(|e| e.into_inner());
                first.get_or_insert_with(|| format!("{}: {error}", self.dir.display()));
            }
        }
    }

    /// Writes an entry to a temporary file and renames it into place, so
    /// that an entry is always whole (unflushed: an entry lost to a crash
    /// costs only its decoding, and its header is checked when read).
    fn write_entry(&self, name: &str, header: &[u8], pixels: &[u8]) -> std::io::Result<()> {
        // A first signal waits for the rename (or the removal of the
        // temporary): a stopped load leaves no partial entry behind.
        let _writing = profiling_core::driver::interrupt::Hold::new();
        check_folder(&self.dir).map_err(std::io::Error::other)?;
        create_cache_dir(&self.dir)?;
        profiling_core::driver::files::write_replaceable_with(&self.dir.join(name), |file| {
            file.write_all(header)?;
            file.write_all(pixels)
        })
    }

    fn note_stored(&self, bytes: u64) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let total = match *held {
            Some(total) => total + bytes,
            // The first store counts the folder, the new entry included.
            None => usage(&self.dir).map_or(bytes, |usage| usage.bytes),
        };
        *held = Some(if total > self.max_bytes {
            let (evicted, left) = evict(&self.dir, self.max_bytes);
            self.evicted.fetch_add(evicted, Ordering::Relaxed);
            left
        } else {
            total
        });
    }

    /// What the cache did so far.
    pub fn summary(&self) -> CacheSummary {
        CacheStats::summary(self)
    }
}

impl CacheStats for ImageCache {
    fn summary(&self) -> CacheSummary {
        CacheSummary {
            dir: self.dir.clone(),
            max_bytes: self.max_bytes,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            stored: self.stored.load(Ordering::Relaxed),
            stored_bytes: self.stored_bytes.load(Ordering::Relaxed),
            evicted: self.evicted.load(Ordering::Relaxed),
            damaged: self.damaged.load(Ordering::Relaxed),
            store_failures: self.store_failures.load(Ordering::Relaxed),
            first_failure: self
                .first_failure
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        }
    }
}

/// The image cache's folder under the run-directory root `root`.
pub fn images_dir(root: &Path) -> PathBuf {
    root.join(CACHE_DIR).join(IMAGES_DIR)
}

/// Makes `dir` and marks the `.cache` folder above it as a cache: git
/// ignores it wherever it is, and backup tools that read `CACHEDIR.TAG`
/// skip it.
fn create_cache_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(dir)?;
    if let Some(cache) = dir.parent() {
        let marks: [(&str, &str); 2] = [
            (".gitignore", "# Made by profile-cli: decoded images, safe to delete.\n*\n"),
            (
                "CACHEDIR.TAG",
                "Signature: 8a477f597d28d172789f06886806bc55\n# Made by profile-cli: decoded images, safe to delete (profile-cli cache clean).\n",
            ),
        ];
        for (name, text) in marks {
            let path = cache.join(name);
            if !path.exists() {
                std::fs::write(path, text)?;
            }
        }
    }
    Ok(())
}

/// The entries in a cache folder and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub entries: u64,
    pub bytes: u64,
}

/// What the cache folder `dir` holds; an absent folder holds nothing.
pub fn usage(dir: &Path) -> std::io::Result<Usage> {
    let mut usage = Usage::default();
    for (_, len, _) in entries(dir)? {
        usage.entries += 1;
        usage.bytes += len;
    }
    Ok(usage)
}

/// The entries of `dir`: path, length and last use (modification time).
fn entries(dir: &Path) -> std::io::Result<Vec<(PathBuf, u64, SystemTime)>> {
    let listing = match std::fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let mut found = Vec::new();
    for entry in listing.flatten() {
        let path = entry.path();
        let is_entry = is_entry_name(entry.file_name().as_encoded_bytes());
        // Not followed: a link is not an entry.
        let Ok(metadata) = entry.metadata() else {
            continue;
        };
        if is_entry && metadata.is_file() {
            let used = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            found.push((path, metadata.len(), used));
        }
    }
    Ok(found)
}

/// Removes the entries of `dir` used longest ago until it holds at most
/// `max_bytes`, and temporary files left by stopped processes; returns how
/// many entries went and the bytes left.
fn evict(dir: &Path, max_bytes: u64) -> (u64, u64) {
    remove_stale_temporaries(dir);
    let Ok(mut found) = entries(dir) else {
        return (0, 0);
    };
    // Oldest first; the name breaks ties, so the order is the same each time.
    found.sort_by(|a, b| a.2.cmp(&b.2).then_with(|| a.0.cmp(&b.0)));
    let mut total: u64 = found.iter().map(|(_, len, _)| len).sum();
    let mut evicted = 0;
    for (path, len, _) in found {
        if total <= max_bytes {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= len;
            evicted += 1;
        }
    }
    (evicted, total)
}

fn remove_stale_temporaries(dir: &Path) {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    for entry in listing.flatten() {
        let name = entry.file_name();
        if !is_temporary_name(name.as_encoded_bytes())
            || !entry.file_type().is_ok_and(|t| t.is_file())
        {
            continue;
        }
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|modified| {
                now.duration_since(modified).unwrap_or_default() > STALE_TEMPORARY
            });
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// What [`clean`] removed, and what it left.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cleaned {
    pub files: u64,
    pub bytes: u64,
    /// Files in the folder that are not the cache's: left where they are.
    pub left: u64,
}

/// Empties the image cache under the run-directory root `root`: its
/// entries (by name and header) and its temporary files (by name). Files
/// it does not recognise stay, counted; a folder that is a symbolic link
/// is refused, naming it.
pub fn clean(root: &Path) -> std::io::Result<Cleaned> {
    let dir = images_dir(root);
    check_folder(&dir).map_err(std::io::Error::other)?;
    let listing = match std::fs::read_dir(&dir) {
        Ok(listing) => listing,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Cleaned::default()),
        Err(error) => return Err(error),
    };
    let mut cleaned = Cleaned::default();
    for entry in listing {
        let entry = entry?;
        // Not followed: a link is never the cache's.
        let metadata = entry.metadata()?;
        if !metadata.is_file() {
            cleaned.left += 1;
            continue;
        }
        let name = entry.file_name();
        let name = name.as_encoded_bytes();
        let ours = is_temporary_name(name) || (is_entry_name(name) && has_magic(&entry.path()));
        if !ours {
            cleaned.left += 1;
            continue;
        }
        match std::fs::remove_file(entry.path()) {
            Ok(()) => {
                cleaned.files += 1;
                cleaned.bytes += metadata.len();
            }
            // Removed meanwhile by another process's sweep.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
    }
    Ok(cleaned)
}

/// Refuses a cache folder (`dir`, or the `.cache` above it) that is a
/// symbolic link or not a directory: the cache never reaches out of its
/// own folder. An absent folder is fine: it is made when first written.
fn check_folder(dir: &Path) -> Result<(), String> {
    for folder in [dir.parent(), Some(dir)].into_iter().flatten() {
        match std::fs::symlink_metadata(folder) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                return Err(format!(
                    "{} is a symbolic link: the image cache never follows one out of its folder; remove the link",
                    folder.display()
                ))
            }
            Ok(metadata) if !metadata.is_dir() => {
                return Err(format!(
                    "{} is not a directory: the image cache cannot use it",
                    folder.display()
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Opens `path` for reading without following a symbolic link there.
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// `<16 lowercase hex digits>.rgb`: what [`FileKey::entry_name`] makes.
fn is_entry_name(name: &[u8]) -> bool {
    let Some(hash) = name.strip_suffix(format!(".{ENTRY_EXTENSION}").as_bytes()) else {
        return false;
    };
    hash.len() == 16
        && hash
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
}

/// `.<entry name>.<pid>.<n>.tmp`: what [`ImageCache::put`] writes before it
/// renames.
fn is_temporary_name(name: &[u8]) -> bool {
    let Some(rest) = name
        .strip_prefix(b".")
        .and_then(|r| r.strip_suffix(b".tmp"))
    else {
        return false;
    };
    let mut parts = rest.rsplitn(3, |&b| b == b'.');
    let (Some(count), Some(pid), Some(entry)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let digits = |part: &[u8]| !part.is_empty() && part.iter().all(u8::is_ascii_digit);
    digits(count) && digits(pid) && is_entry_name(entry)
}

/// Whether the file at `path` starts as an entry does, whatever version.
fn has_magic(path: &Path) -> bool {
    let mut start = [0u8; 8];
    open_no_follow(path)
        .and_then(|mut file| file.read_exact(&mut start))
        .is_ok()
        && start[..7] == MAGIC[..7]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(shade: u8) -> image::RgbImage {
        image::RgbImage::from_fn(5, 3, |x, y| image::Rgb([shade, x as u8, y as u8]))
    }

    /// A source file in `dir` and its key.
    fn source_file(dir: &Path, name: &str, content: &[u8]) -> (PathBuf, FileKey) {
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        let key = FileKey::of(&path).unwrap();
        (path, key)
    }

    fn entry_path(cache: &ImageCache, key: &FileKey) -> PathBuf {
        cache.dir().join(key.entry_name())
    }

    #[test]
    fn a_stored_image_comes_back_whole_and_counts_as_a_hit() {
        let dir = tempfile::tempdir().unwrap();
        let (_, key) = source_file(dir.path(), "a.png", b"source");
        let cache = ImageCache::under(dir.path(), DEFAULT_MAX_BYTES);
        assert_eq!(cache.get(&key), None);
        cache.put(&key, &image(7));
        assert_eq!(cache.get(&key), Some(image(7)));
        assert_eq!(cache.dimensions(&key), Some((5, 3)));
        let summary = cache.summary();
        assert_eq!((summary.hits, summary.misses, summary.stored), (1, 1, 1));
        assert_eq!(
            summary.stored_bytes,
            std::fs::metadata(entry_path(&cache, &key)).unwrap().len()
        );
    }

    #[test]
    fn an_entry_is_header_path_and_pixels_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let (_, key) = source_file(dir.path(), "a.png", b"source");
        let cache = ImageCache::under(dir.path(), DEFAULT_MAX_BYTES);
        cache.put(&key, &image(7));
        let bytes = std::fs::read(entry_path(&cache, &key)).unwrap();
        let path = key.path.as_os_str().as_encoded_bytes();
        assert_eq!(&bytes[..8], b"PCIMAGE2");
        assert_eq!(
            &bytes[8..20],
            [5, 0, 0, 0, 3, 0, 0, 0, path.len() as u8, 0, 0, 0]
        );
        assert_eq!(
            &bytes[20..24],
            crc32fast::hash(image(7).as_raw()).to_le_bytes(),
            "the pixels' checksum"
        );
        assert_eq!(&bytes[24..32], 6u64.to_le_bytes(), "the source's size");
        assert_eq!(&bytes[HEADER_BYTES..HEADER_BYTES + path.len()], path);
        assert_eq!(
            &bytes[HEADER_BYTES + path.len()..],
            image(7).as_raw().as_slice()
        );
    }

    #[test]
    fn an_entry_for_other_content_of_the_same_path_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let (_, key) = source_file(dir.path(), "a.png", b"source");
        let cache = ImageCache::under(dir.path(), DEFAULT_MAX_BYTES);
        cache.put(&key, &image(7));
        for changed in [
            FileKey {
                size: key.size + 1,
                ..key.clone()
            },
            FileKey {
                modified_ns: key.modified_ns + 1,
                ..key.clone()
            },
            FileKey {
                changed_ns: key.changed_ns + 1,
                ..key.clone()
            },
            FileKey {
                inode: key.inode + 1,
                ..key.clone()
            },
            FileKey {
                device: key.device + 1,
                ..key.clone()
            },
        ] {
            assert_eq!(changed.entry_name(), key.entry_name(), "the same entry");
            assert_eq!(cache.get(&changed), None, "{changed:?}");
            assert_eq!(cache.dimensions(&changed), None, "{changed:?}");
        }
        assert_eq!(cache.get(&key), Some(image(7)));
    }

    #[test]
    fn a_damaged_entry_is_a_miss_and_the_next_store_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let (_, key) = source_file(dir.path(), "a.png", b"source");
        let cache = ImageCache::under(dir.path(), DEFAULT_MAX_BYTES);
        cache.put(&key, &image(7));
        let path = entry_path(&cache, &key);
        let whole = std::fs::read(&path).unwrap();
        let damaged: Vec<Vec<u8>> = vec![
            Vec::new(),
            whole[..40].to_vec(),
            whole[..whole.len() - 1].to_vec(),
            [whole.as_slice(), &[0]].concat(),
            // A header byte changed: the checksum no longer matches.
            {
                let mut bytes = whole.clone();
                bytes[HEADER_BYTES] ^= 1;
                bytes
            },
            // Dimensions that claim far more than the file holds.
            {
                let mut bytes = whole.clone();
                bytes[8..16].copy_from_slice(&[255; 8]);
                bytes
            },
            b"not an entry at all".to_vec(),
        ];
        for bytes in damaged {
            std::fs::write(&path, &bytes).unwrap();
            assert_eq!(cache.get(&key), None, "{} bytes", bytes.len());
            assert_eq!(cache.dimensions(&key), None);
        }
        cache.put(&key, &image(9));
        assert_eq!(cache.get(&key), Some(image(9)));
    }

    /// Pixels changed after the entry was written (the header whole): a
    /// miss, counted as damaged, and the next store replaces the entry.
    #[test]
    fn damaged_pixels_are_a_miss_counted_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let (_, key) = source_file(dir.path(), "a.png", b"source");
        let cache = ImageCache::under(dir.path(), DEFAULT_MAX_BYTES);
        cache.put(&key, &image(7));
        let path = entry_path(&cache, &key);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(cache.dimensions(&key), Some((5, 3)), "the header is whole");
        assert_eq!(cache.get(&key), None);
        let summary = cache.summary();
        assert_eq!((summary.hits, summary.misses, summary.damaged), (0, 1, 1));
        cache.put(&key, &image(7));
        assert_eq!(cache.get(&key), Some(image(7)));
        assert_eq!(cache.summary().damaged, 1);
    }

    /// A cache folder that is a symbolic link is never followed: nothing
    /// is read through it or written into what it points at.
    #[test]
    fn a_cache_folder_that_is_a_link_is_not_followed() {
        for linked in [CACHE_DIR.to_owned(), format!("{CACHE_DIR}/{IMAGES_DIR}")] {
            let dir = tempfile::tempdir().unwrap();
            let (_, key) = source_file(dir.path(), "a.png", b"source");
            // A real cache elsewhere, with this key's entry in it.
            let elsewhere = tempfile::tempdir().unwrap();
            let real = ImageCache::under(elsewhere.path(), DEFAULT_MAX_BYTES);
            real.put(&key, &image(7));
            let target = if linked == CACHE_DIR {
                elsewhere.path().join(CACHE_DIR)
            } else {
                std::fs::create_dir(dir.path().join(CACHE_DIR)).unwrap();
                real.dir().to_path_buf()
            };
            std::os::unix::fs::symlink(&target, dir.path().join(&linked)).unwrap();
            let before = std::fs::read_dir(real.dir()).unwrap().count();

            let cache = ImageCache::under(dir.path(), DEFAULT_MAX_BYTES);
            assert_eq!(cache.get(&key), None, "{linked}: not read through the link");
            cache.put(&key, &image(9));
            let summary = cache.summary();
            assert_eq!((summary.stored, summary.store_failures), (0, 1), "{linked}");
            assert!(
                summary
                    .first_failure
                    .unwrap()
                    .contains("is a symbolic link"),
                "{linked}"
            );
            let error = clean(dir.path()).unwrap_err().to_string();
            assert!(
                error.starts_with(&format!(
                    "{} is a symbolic link",
                    dir.path().join(&linked).display()
                )),
                "{error}"
            );
            assert_eq!(std::fs::read_dir(real.dir()).unwrap().count(), before);
            assert_eq!(
                real.get(&key),
                Some(image(7)),
                "{linked}: the real cache is whole"
            );
        }
    }

    /// An entry that is itself a link is not followed either.
    #[test]
    fn an_entry_that_is_a_link_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let (_, key) = source_file(dir.path(), "a.png", b"source");
        let elsewhere = tempfile::tempdir().unwrap();
        let real = ImageCache::under(elsewhere.path(), DEFAULT_MAX_BYTES);
        real.put(&key, &image(7));
        let cache = ImageCache::under(dir.path(), DEFAULT_MAX_BYTES);
        std::fs::create_dir_all(cache.dir()).unwrap();
        std::os::unix::fs::symlink(entry_path(&real, &key), entry_path(&cache, &key)).unwrap();
        assert_eq!(cache.get(&key), None);
        assert_eq!(clean(dir.path()).unwrap().left, 1, "the link stays");
        assert_eq!(real.get(&key), Some(image(7)));
    }

    #[test]
    fn past_its_bound_the_cache_evicts_the_entries_used_longest_ago() {
        let dir = tempfile::tempdir().unwrap();
        let keys: Vec<FileKey> = (0..4)
            .map(|i| source_file(dir.path(), &format!("{i}.png"), b"x").1)
            .collect();
        let entry_bytes =
            (HEADER_BYTES + image(0).as_raw().len() + keys[0].path.as_os_str().len()) as u64;
        // Room for three entries.
        let cache = ImageCache::under(dir.path(), 3 * entry_bytes + entry_bytes / 2);
        let long_ago = SystemTime::now() - Duration::from_secs(1000);
        for (age, key) in keys[..3].iter().enumerate() {
            cache.put(key, &image(age as u8));
            let entry = File::options()
                .write(true)
                .open(entry_path(&cache, key))
                .unwrap();
            entry
                .set_modified(long_ago + Duration::from_secs(age as u64))
                .unwrap();
        }
        // Reading the oldest makes it the newest.
        assert!(cache.get(&keys[0]).is_some());
        cache.put(&keys[3], &image(3));
        let kept: Vec<bool> = keys
            .iter()
            .map(|k| entry_path(&cache, k).exists())
            .collect();
        assert_eq!(kept, [true, false, true, true]);
        assert_eq!(cache.summary().evicted, 1);
        assert_eq!(
            usage(cache.dir()).unwrap(),
            Usage {
                entries: 3,
                bytes: 3 * entry_bytes
            }
        );
    }

    #[test]
    fn an_image_larger_than_the_bound_is_not_stored() {
        let dir = tempfile::tempdir().unwrap();
        let (_, key) = source_file(dir.path(), "a.png", b"source");
        let cache = ImageCache::under(dir.path(), 10);
        cache.put(&key, &image(1));
        assert_eq!(cache.get(&key), None);
        assert_eq!(cache.summary().stored, 0);
    }

    #[test]
    fn a_cache_that_cannot_be_written_is_counted_and_said_once() {
        let dir = tempfile::tempdir().unwrap();
        let (file, key) = source_file(dir.path(), "a.png", b"source");
        // The root is a file: no folder can be made under it.
        let cache = ImageCache::under(&file, DEFAULT_MAX_BYTES);
        cache.put(&key, &image(1));
        cache.put(&key, &image(1));
        let summary = cache.summary();
        assert_eq!((summary.stored, summary.store_failures), (0, 2));
        let failure = summary.first_failure.unwrap();
        assert!(
            failure.starts_with(&cache.dir().display().to_string()),
            "{failure}"
        );
    }

    #[test]
    fn the_cache_folder_is_marked_as_a_cache_that_git_ignores() {
        let dir = tempfile::tempdir().unwrap();
        let (_, key) = source_file(dir.path(), "a.png", b"source");
        let cache = ImageCache::under(dir.path(), DEFAULT_MAX_BYTES);
        cache.put(&key, &image(1));
        let marks = dir.path().join(CACHE_DIR);
        assert!(std::fs::read_to_string(marks.join(".gitignore"))
            .unwrap()
            .ends_with("\n*\n"));
        assert!(std::fs::read_to_string(marks.join("CACHEDIR.TAG"))
            .unwrap()
            .starts_with("Signature: 8a477f597d28d172789f06886806bc55\n"));
    }

    /// `clean` removes the cache's entries and temporary files, and leaves
    /// every other file, counted: one placed there by hand, and one named
    /// as an entry that does not start as one.
    #[test]
    fn clean_removes_the_entries_and_temporaries_and_leaves_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ImageCache::under(dir.path(), DEFAULT_MAX_BYTES);
        let mut bytes = 0;
        let mut names = Vec::new();
        for i in 0..3 {
            let (_, key) = source_file(dir.path(), &format!("{i}.png"), b"x");
            cache.put(&key, &image(i));
            bytes += std::fs::metadata(entry_path(&cache, &key)).unwrap().len();
            names.push(key.entry_name());
        }
        let temporary = format!(".{}.123.4.tmp", names[0]);
        std::fs::write(cache.dir().join(&temporary), b"half").unwrap();
        for (name, text) in [
            ("notes.txt", &b"mine"[..]),
            ("0123456789abcdef.rgb", b"not an entry"),
            (".notes.tmp", b"mine too"),
        ] {
            std::fs::write(cache.dir().join(name), text).unwrap();
        }
        let cleaned = clean(dir.path()).unwrap();
        assert_eq!(
            cleaned,
            Cleaned {
                files: 4,
                bytes: bytes + 4,
                left: 3
            }
        );
        let mut left: Vec<String> = std::fs::read_dir(cache.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, [".notes.tmp", "0123456789abcdef.rgb", "notes.txt"]);
        assert_eq!(
            clean(dir.path()).unwrap(),
            Cleaned {
                files: 0,
                bytes: 0,
                left: 3
            },
            "nothing of the cache's left"
        );
        let elsewhere = tempfile::tempdir().unwrap();
        assert_eq!(
            clean(elsewhere.path()).unwrap(),
            Cleaned::default(),
            "no cache at all"
        );
    }

    #[test]
    fn entry_and_temporary_names_are_recognised_exactly() {
        assert!(is_entry_name(b"8f06818bb5811acf.rgb"));
        for name in [
            &b"8F06818BB5811ACF.rgb"[..],
            b"8f06818bb5811ac.rgb",
            b"8f06818bb5811acf.rgb.tmp",
            b".8f06818bb5811acf.rgb",
            b"notes.rgb",
        ] {
            assert!(!is_entry_name(name), "{}", String::from_utf8_lossy(name));
        }
        assert!(is_temporary_name(b".8f06818bb5811acf.rgb.4242.7.tmp"));
        for name in [
            &b".8f06818bb5811acf.rgb.tmp"[..],
            b".notes.1.2.tmp",
            b"8f06818bb5811acf.rgb.1.2.tmp",
            b".8f06818bb5811acf.rgb.x.2.tmp",
        ] {
            assert!(
                !is_temporary_name(name),
                "{}",
                String::from_utf8_lossy(name)
            );
        }
    }

    #[test]
    fn the_entry_name_is_the_same_in_every_build() {
        let key = FileKey {
            path: PathBuf::from("/data/a.jpg"),
            size: 0,
            modified_ns: 0,
            changed_ns: 0,
            device: 0,
            inode: 0,
        };
        assert_eq!(fnv1a(FNV_OFFSET, b""), FNV_OFFSET);
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(key.entry_name(), "8f06818bb5811acf.rgb");
    }
}
