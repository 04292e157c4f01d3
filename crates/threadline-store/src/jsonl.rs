//! [`JsonlStore`]: one JSONL file per session under a root directory, in Claude Code's layout.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::UNIX_EPOCH;

use bytes::Bytes;
use futures::future::BoxFuture;

use crate::entry::{Entry, MAX_ENTRY_BYTES};
use crate::error::StoreError;
use crate::jsonl_file;
use crate::key::{SessionKey, check_part};
use crate::store::{Appended, SessionInfo, SessionStore};

/// The suffix of every session file.
const SUFFIX: &str = ".jsonl";

/// The longest file name the store writes (most file systems' limit).
const MAX_FILE_NAME_BYTES: usize = 255;

/// How many files' ids the store keeps in memory at most.
const MAX_CACHED_FILES: usize = 256;

/// How often an append retries when its file is deleted under it (a concurrent delete).
const OPEN_ATTEMPTS: usize = 8;

/// Sessions as JSONL files under a root directory, one per session. A clone shares the id
/// cache.
///
/// # Layout
///
/// ```text
/// <root>/<enc(project)>/<enc(session)>.jsonl                    the main session
/// <root>/<enc(project)>/<enc(session)>/<enc(subpath)>.jsonl     a sub-session
/// ```
///
/// `enc` percent-encodes (`%XX`, upper-case hex) every byte outside `[A-Za-z0-9._-]`, a
/// leading `.`, and the `.` of a trailing `.jsonl`. So every key part is exactly one file
/// name segment (`../x`, `a/b`, `:` and `%2F` stay inside `<project>`), no segment is `.`,
/// `..` or hidden, and a session directory never has the name of a session file (the session
/// `x.jsonl` is the file `x%2Ejsonl.jsonl`, its sub-sessions under `x%2Ejsonl/`). A subpath
/// such as `subagents/agent-1` is one file, `subagents%2Fagent-1.jsonl`; `list_subkeys`
/// decodes it back. File names that are not such an encoding (foreign files) are not listed.
/// An encoded name longer than 255 bytes is refused with [`StoreError::InvalidKey`] (a key
/// part of up to 83 arbitrary bytes, or 249 plain ones, always fits).
///
/// # Lines
///
/// One entry per line: the entry's bytes unchanged, then `\n`. An append writes its whole
/// batch with one `write_all` of a prepared buffer while holding an exclusive lock on the
/// file ([`File::lock`]), so appenders in any number of processes never interleave, and a
/// reader, which takes a shared lock, never sees part of a batch. A failed write is cut back
/// off the file (`set_len`), so a failed append leaves nothing.
///
/// Appends are idempotent by entry id across processes: under the lock the store knows every
/// id in the file. It caches the ids per file (up to 256 files) with the length it scanned
/// and, when the file has grown (another process appended), scans only the new tail; a file
/// that shrank or was replaced (another device, inode or creation time) is scanned again from
/// the start.
///
/// # A torn tail
///
/// The end of a file follows the rules of [`jsonl_file`](crate::jsonl_file), the one writer
/// of threadline's JSONL files (transcripts too): a last line without its `\n` that is not a
/// complete JSON value is the remains of a write cut short (a crash, a full disk).
/// [`SessionStore::load`] leaves it out, [`JsonlStore::torn_tail`] reports its size, and the
/// next append drops it (truncates the file to its last whole line) before it writes, so a
/// torn line is never glued to a later entry; the entries of that torn write were never
/// acknowledged, so the caller retries them (idempotently). A last line that is complete but
/// lacks its `\n` (a crash just before it) is an entry like the others: loaded, its id known,
/// terminated by the next append. A crash in the middle of a multi-line batch can leave the
/// batch's first lines complete: the atomicity of one call holds for failures the process
/// sees, not for a power cut.
///
/// Files are created private (mode `0600` on unix), directories `0700`.
///
/// Reading is bounded: a line longer than [`MAX_ENTRY_BYTES`] (or not one JSON object) is
/// [`StoreError::Corrupt`] naming the file and line; empty lines are skipped.
///
/// The file I/O runs on the task that awaits (short local-disk reads and writes; waiting for
/// another process's lock blocks for the length of its append).
#[derive(Debug, Clone)]
pub struct JsonlStore {
    root: PathBuf,
    sync: bool,
    ids: Arc<Mutex<HashMap<PathBuf, IdCache>>>,
}

/// The ids of one file, as far as it was scanned.
#[derive(Debug)]
struct IdCache {
    file: FileId,
    scanned: u64,
    ids: HashSet<String>,
}

impl JsonlStore {
    /// The store under `root` (created on the first append). Appends are not fsynced: see
    /// [`JsonlStore::sync`].
    pub fn new(root: impl Into<PathBuf>) -> Self {
        JsonlStore {
            root: root.into(),
            sync: false,
            ids: Arc::default(),
        }
    }

    /// Whether each append is flushed to the disk (`fsync` of the file, and of its directory
    /// when the append created it) before it returns (default `false`: an append survives the
    /// process crashing, not the machine losing power).
    #[must_use]
    pub fn sync(mut self, on: bool) -> Self {
        self.sync = on;
        self
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file that holds `key`'s entries (whether or not it exists).
    pub fn path_of(&self, key: &SessionKey) -> Result<PathBuf, StoreError> {
        key.validate()?;
        let mut path = self.session_base(&key.project, &key.session)?;
        match &key.subpath {
            None => {
                path.set_file_name(file_name("session", &key.session)?);
            }
            Some(subpath) => path.push(file_name("subpath", subpath)?),
        }
        Ok(path)
    }

    /// The size in bytes of the torn last line of `key`'s file (a line without its `\n`, left
    /// by a write cut short), `0` when there is none or no file. `load` leaves it out; the
    /// next append drops it.
    pub fn torn_tail(&self, key: &SessionKey) -> Result<u64, StoreError> {
        let path = self.path_of(key)?;
        let Some(file) = open_shared(&path)? else {
            return Ok(0);
        };
        let len = file
            .metadata()
            .map_err(|e| io_error("reading", &path, e))?
            .len();
        let end = match jsonl_file::tail(&file, len).map_err(|e| io_error("reading", &path, e))? {
            jsonl_file::Tail::Cut { at } => at,
            jsonl_file::Tail::Clean | jsonl_file::Tail::Unterminated => len,
        };
        Ok(len.saturating_sub(end))
    }

    /// `<root>/<enc(project)>/<enc(session)>`: the session's directory of sub-sessions.
    fn session_base(&self, project: &str, session: &str) -> Result<PathBuf, StoreError> {
        let mut path = self.project_dir(project)?;
        path.push(segment("session", session)?);
        Ok(path)
    }

    fn project_dir(&self, project: &str) -> Result<PathBuf, StoreError> {
        check_part("project", project)?;
        Ok(self.root.join(segment("project", project)?))
    }

    fn cache(&self) -> MutexGuard<'_, HashMap<PathBuf, IdCache>> {
        self.ids
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn append_now(&self, key: &SessionKey, entries: &[Entry]) -> Result<Appended, StoreError> {
        let path = self.path_of(key)?;
        if entries.is_empty() {
            return Ok(Appended::default());
        }
        let dir = path.parent().unwrap_or(&self.root);
        for _ in 0..OPEN_ATTEMPTS {
            threadline_wire::secret::create_private_dir_all(dir)
                .map_err(|e| io_error("creating", dir, e))?;
            let file = match jsonl_file::open(&path, false) {
                Ok(file) => file,
                // A concurrent delete removed the directory: make it again.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_error("opening", &path, e)),
            };
            file.lock().map_err(|e| io_error("locking", &path, e))?;
            // A concurrent delete may have unlinked the file while this waited for the lock.
            if !still_at(&file, &path) {
                continue;
            }
            return self.append_locked(&file, &path, entries);
        }
        Err(io_error(
            "appending to",
            &path,
            io::Error::other("the file was deleted under every attempt"),
        ))
    }

    /// The append, `file` locked exclusively.
    fn append_locked(
        &self,
        file: &File,
        path: &Path,
        entries: &[Entry],
    ) -> Result<Appended, StoreError> {
        let meta = file.metadata().map_err(|e| io_error("reading", path, e))?;
        let len = meta.len();
        let id = file_id(&meta);
        let mut cache = self.cache();
        if cache.len() >= MAX_CACHED_FILES && !cache.contains_key(path) {
            // Bounded memory: forget the other files' ids (they are scanned again when used).
            cache.clear();
        }
        let known = cache.entry(path.to_path_buf()).or_insert_with(|| IdCache {
            file: id,
            scanned: 0,
            ids: HashSet::new(),
        });
        if known.file != id || known.scanned > len {
            // Replaced or truncated by someone else: start over.
            known.file = id;
            known.scanned = 0;
            known.ids.clear();
        }
        if known.scanned < len {
            let ids = &mut known.ids;
            let end = scan(file, known.scanned, path, |line, _| {
                if let Some(id) = line.id() {
                    ids.insert(id.to_owned());
                }
                Ok(())
            })?;
            known.scanned = end;
        }
        let mut end = known.scanned;
        if end < len {
            // A tail without its newline: dropped when torn, terminated when complete (its
            // entry was scanned), so it is never glued to the next entry.
            let tail =
                jsonl_file::tail(file, len).map_err(|e| io_error("reading the end of", path, e))?;
            end = jsonl_file::settle(file, len, tail)
                .map_err(|e| io_error("settling the end of", path, e))?;
            known.scanned = end;
        }
        let mut done = Appended::default();
        let mut fresh: Vec<&str> = Vec::new();
        let mut buffer = Vec::with_capacity(entries.iter().map(|e| e.bytes().len() + 1).sum());
        for entry in entries {
            if let Some(id) = entry.id() {
                if known.ids.contains(id) || fresh.contains(&id) {
                    done.duplicates += 1;
                    continue;
                }
                fresh.push(id);
            }
            buffer.extend_from_slice(entry.bytes());
            buffer.push(b'\n');
            done.written += 1;
        }
        if buffer.is_empty() {
            return Ok(done);
        }
        let written = jsonl_file::append_lines(file, end, &buffer, self.sync).and_then(|()| {
            if self.sync && end == 0 {
                // A new file: its directory entry must reach the disk too.
                sync_dir(path)
            } else {
                Ok(())
            }
        });
        if let Err(e) = written {
            // Leave nothing of a failed append (best effort: the disk may be gone).
            let _ = file.set_len(end);
            return Err(io_error("appending to", path, e));
        }
        known.ids.extend(fresh.into_iter().map(str::to_owned));
        known.scanned = end + buffer.len() as u64;
        Ok(done)
    }

    fn load_now(&self, key: &SessionKey) -> Result<Option<Vec<Entry>>, StoreError> {
        let path = self.path_of(key)?;
        let Some(file) = open_shared(&path)? else {
            return Ok(None);
        };
        let mut entries = Vec::new();
        scan(&file, 0, &path, |entry, _| {
            entries.push(entry);
            Ok(())
        })?;
        Ok((!entries.is_empty()).then_some(entries))
    }

    fn list_now(&self, project: &str) -> Result<Vec<SessionInfo>, StoreError> {
        let dir = self.project_dir(project)?;
        let mut sessions: BTreeMap<String, u64> = BTreeMap::new();
        for (name, kind) in read_dir(&dir)? {
            let found = match kind {
                Kind::File => name
                    .strip_suffix(SUFFIX)
                    .and_then(decode)
                    .and_then(|session| Some((session, mtime_of(&dir.join(&name))?))),
                Kind::Dir => decode(&name).and_then(|session| {
                    let sub_dir = dir.join(&name);
                    let newest = read_dir(&sub_dir)
                        .ok()?
                        .into_iter()
                        .filter(|(n, k)| {
                            *k == Kind::File && n.strip_suffix(SUFFIX).and_then(decode).is_some()
                        })
                        .filter_map(|(n, _)| mtime_of(&sub_dir.join(n)))
                        .max()?;
                    Some((session, newest))
                }),
            };
            if let Some((session, mtime)) = found {
                let slot = sessions.entry(session).or_default();
                *slot = (*slot).max(mtime);
            }
        }
        Ok(sessions
            .into_iter()
            .map(|(session, mtime)| SessionInfo::new(session, mtime))
            .collect())
    }

    fn delete_now(&self, key: &SessionKey) -> Result<(), StoreError> {
        let path = self.path_of(key)?;
        remove_file(&path)?;
        let base = self.session_base(&key.project, &key.session)?;
        if key.is_main() {
            match fs::remove_dir_all(&base) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_error("deleting", &base, e)),
            }
            self.cache()
                .retain(|cached, _| cached != &path && !cached.starts_with(&base));
        } else {
            // The session's directory, if this was its last sub-session (fails harmlessly
            // otherwise).
            let _ = fs::remove_dir(&base);
            self.cache().remove(&path);
        }
        if let Some(project_dir) = base.parent() {
            let _ = fs::remove_dir(project_dir);
        }
        Ok(())
    }

    fn subkeys_now(&self, key: &SessionKey) -> Result<Vec<String>, StoreError> {
        key.validate()?;
        let dir = self.session_base(&key.project, &key.session)?;
        let mut subpaths: Vec<String> = read_dir(&dir)?
            .into_iter()
            .filter(|(_, kind)| *kind == Kind::File)
            .filter_map(|(name, _)| {
                let subpath = name.strip_suffix(SUFFIX).and_then(decode)?;
                mtime_of(&dir.join(&name)).map(|_| subpath)
            })
            .collect();
        subpaths.sort();
        Ok(subpaths)
    }
}

impl SessionStore for JsonlStore {
    fn append<'a>(
        &'a self,
        key: &'a SessionKey,
        entries: &'a [Entry],
    ) -> BoxFuture<'a, Result<Appended, StoreError>> {
        Box::pin(async move { self.append_now(key, entries) })
    }

    fn load<'a>(
        &'a self,
        key: &'a SessionKey,
    ) -> BoxFuture<'a, Result<Option<Vec<Entry>>, StoreError>> {
        Box::pin(async move { self.load_now(key) })
    }

    fn list_sessions<'a>(
        &'a self,
        project: &'a str,
    ) -> BoxFuture<'a, Result<Vec<SessionInfo>, StoreError>> {
        Box::pin(async move { self.list_now(project) })
    }

    fn delete<'a>(&'a self, key: &'a SessionKey) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.delete_now(key) })
    }

    fn list_subkeys<'a>(
        &'a self,
        key: &'a SessionKey,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        Box::pin(async move { self.subkeys_now(key) })
    }
}

// ---- names ----

/// Whether `byte` at `at` of `part` stays as it is.
fn plain(part: &[u8], at: usize) -> bool {
    match part[at] {
        b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' => true,
        b'.' => at != 0 && !(part.ends_with(SUFFIX.as_bytes()) && at + SUFFIX.len() == part.len()),
        _ => false,
    }
}

/// `part` percent-encoded into one file-name segment (see [`JsonlStore`]).
pub(crate) fn encode(part: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let bytes = part.as_bytes();
    let mut out = String::with_capacity(bytes.len());
    for (at, &byte) in bytes.iter().enumerate() {
        if plain(bytes, at) {
            out.push(char::from(byte));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0xf)]));
        }
    }
    out
}

/// The part `name` encodes, if it is exactly [`encode`]'s output for some key part.
pub(crate) fn decode(name: &str) -> Option<String> {
    let bytes = name.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = bytes.get(at + 1..at + 3)?;
            let digit = |b: u8| match b {
                b'0'..=b'9' => Some(b - b'0'),
                b'A'..=b'F' => Some(b - b'A' + 10),
                _ => None,
            };
            out.push(digit(hex[0])? << 4 | digit(hex[1])?);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    let part = String::from_utf8(out).ok()?;
    (!part.is_empty() && encode(&part) == name && check_part("part", &part).is_ok()).then_some(part)
}

/// `part` encoded, refused if it cannot be a file name even with the suffix.
fn segment(which: &'static str, part: &str) -> Result<String, StoreError> {
    let encoded = encode(part);
    if encoded.len() + SUFFIX.len() > MAX_FILE_NAME_BYTES {
        return Err(StoreError::InvalidKey {
            part: which,
            reason: "is too long for a file name once percent-encoded (JSONL store)",
        });
    }
    Ok(encoded)
}

fn file_name(which: &'static str, part: &str) -> Result<String, StoreError> {
    Ok(format!("{}{SUFFIX}", segment(which, part)?))
}

// ---- files ----

fn io_error(action: &'static str, path: &Path, source: io::Error) -> StoreError {
    StoreError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// `path` opened for reading under a shared lock (`None`: no such file).
fn open_shared(path: &Path) -> Result<Option<File>, StoreError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error("opening", path, e)),
    };
    file.lock_shared()
        .map_err(|e| io_error("locking", path, e))?;
    Ok(Some(file))
}

/// Flushes the directory holding `path` (where the file system supports it).
fn sync_dir(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

fn remove_file(path: &Path) -> Result<(), StoreError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_error("deleting", path, e)),
    }
}

/// Calls `each` on every complete line of `file` from byte `from` (a line start), as an entry
/// with its 1-based line number counted from `from`; returns the offset just past the last
/// complete line (less than the file's length when the tail is torn).
fn scan(
    file: &File,
    from: u64,
    path: &Path,
    mut each: impl FnMut(Entry, usize) -> Result<(), StoreError>,
) -> Result<u64, StoreError> {
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    reader
        .seek(SeekFrom::Start(from))
        .map_err(|e| io_error("reading", path, e))?;
    let mut end = from;
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        let limit = MAX_ENTRY_BYTES as u64 + 1;
        let read = (&mut reader)
            .take(limit)
            .read_until(b'\n', &mut line)
            .map_err(|e| io_error("reading", path, e))?;
        if read == 0 {
            return Ok(end);
        }
        number += 1;
        let bytes = if line.last() == Some(&b'\n') {
            end += read as u64;
            &line[..line.len() - 1]
        } else {
            if read as u64 == limit {
                return Err(StoreError::Corrupt {
                    location: format!("{}:{number}", path.display()),
                    reason: format!("a line longer than {MAX_ENTRY_BYTES} bytes"),
                });
            }
            if !jsonl_file::is_complete(&line) {
                // A torn tail: not returned.
                return Ok(end);
            }
            // A complete last line without its newline: an entry (the returned end stays
            // the end of the whole lines).
            &line[..]
        };
        // A file whose line endings were converted to CRLF (an editor, a checkout on
        // Windows) reads as it was written: the `\r` is the ending's, never the entry's (an
        // entry holds no line break).
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        if bytes.is_empty() {
            continue;
        }
        let entry = Entry::new(Bytes::copy_from_slice(bytes)).map_err(|e| StoreError::Corrupt {
            location: format!("{}:{number}", path.display()),
            reason: e.to_string(),
        })?;
        each(entry, number)?;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
}

/// The UTF-8 names of `dir`'s files and directories (symbolic links and the rest left out);
/// nothing when `dir` does not exist.
fn read_dir(dir: &Path) -> Result<Vec<(String, Kind)>, StoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error("listing", dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error("listing", dir, e))?;
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let kind = if kind.is_file() {
            Kind::File
        } else if kind.is_dir() {
            Kind::Dir
        } else {
            continue;
        };
        if let Ok(name) = entry.file_name().into_string() {
            out.push((name, kind));
        }
    }
    Ok(out)
}

/// A non-empty file's modification time in milliseconds since the epoch (`None`: gone or
/// empty).
fn mtime_of(path: &Path) -> Option<u64> {
    let meta = fs::metadata(path).ok()?;
    if meta.len() == 0 {
        return None;
    }
    let since = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
    Some(u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
}

/// What identifies a file on its file system: device and inode on Unix, and the creation
/// time where the file system records it (an inode number is soon reused after a delete).
#[cfg(unix)]
type FileId = (u64, u64, Option<std::time::SystemTime>);
#[cfg(not(unix))]
type FileId = Option<std::time::SystemTime>;

#[cfg(unix)]
fn file_id(meta: &fs::Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino(), meta.created().ok())
}

#[cfg(not(unix))]
fn file_id(meta: &fs::Metadata) -> FileId {
    meta.created().ok()
}

/// Whether `path` still names the open `file` (not unlinked or replaced since it was opened).
fn still_at(file: &File, path: &Path) -> bool {
    match (file.metadata(), fs::metadata(path)) {
        (Ok(open), Ok(named)) => file_id(&open) == file_id(&named),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_encode_into_one_segment_and_decode_back() {
        for (part, name) in [
            ("abc-1_2.x", "abc-1_2.x"),
            ("../x", "%2E.%2Fx"),
            ("a/b", "a%2Fb"),
            (":", "%3A"),
            ("%2F", "%252F"),
            (".hidden", "%2Ehidden"),
            ("x.jsonl", "x%2Ejsonl"),
            ("subagents/agent-1", "subagents%2Fagent-1"),
            ("é", "%C3%A9"),
        ] {
            assert_eq!(encode(part), name, "{part}");
            assert_eq!(decode(name).as_deref(), Some(part), "{name}");
        }
        // Not an encoding this store writes: lower-case hex, a plain dot first, bad escapes.
        for foreign in ["a%2fb", ".x", "%", "%4", "%ZZ", "a%41", "", "%FF", "a%0Ab"] {
            assert_eq!(decode(foreign), None, "{foreign}");
        }
    }
}
