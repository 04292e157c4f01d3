//! Small helpers shared by the xtask commands.

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// A command failure: a message for the user and the process exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl Failure {
    /// A failure that exits with code 1.
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self {
            code: 1,
            message: message.into(),
        }
    }

    /// A failure with an explicit exit code.
    pub(crate) fn with_code(code: u8, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Result type of every xtask operation.
pub(crate) type XResult<T> = Result<T, Failure>;

/// Adds context to errors of any displayable type.
pub(crate) trait Context<T> {
    /// Turns the error into a [`Failure`] whose message starts with `what`.
    fn context(self, what: impl FnOnce() -> String) -> XResult<T>;
}

impl<T, E: Display> Context<T> for Result<T, E> {
    fn context(self, what: impl FnOnce() -> String) -> XResult<T> {
        self.map_err(|e| Failure::new(format!("{}: {e}", what())))
    }
}

/// The repository root (the parent of the `xtask/` directory).
pub(crate) fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .map_or_else(|| manifest.to_path_buf(), Path::to_path_buf)
}

/// Reads a file as UTF-8 text.
pub(crate) fn read_text(path: &Path) -> XResult<String> {
    std::fs::read_to_string(path).context(|| format!("cannot read {}", path.display()))
}

/// Writes a file, creating parent directories.
pub(crate) fn write_file(path: &Path, contents: &[u8]) -> XResult<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .context(|| format!("cannot create directory {}", parent.display()))?;
    }
    std::fs::write(path, contents).context(|| format!("cannot write {}", path.display()))
}

/// `path` relative to `root`, with `/` separators (for messages and JSON).
pub(crate) fn rel_path(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// A temporary directory removed on drop (no external crate needed).
#[derive(Debug)]
pub(crate) struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates a fresh, private directory under the system temp dir.
    pub(crate) fn new(label: &str) -> XResult<Self> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        for attempt in 0..100u32 {
            let path = std::env::temp_dir().join(format!(
                "xtask-{label}-{}-{nanos}-{attempt}",
                std::process::id()
            ));
            match std::fs::create_dir(&path) {
                Ok(()) => {
                    restrict_permissions(&path);
                    return Ok(Self { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    return Err(Failure::new(format!(
                        "cannot create temporary directory {}: {e}",
                        path.display()
                    )));
                }
            }
        }
        Err(Failure::new("cannot create a temporary directory"))
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        // Best effort: a leftover temp dir is harmless.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(unix)]
fn restrict_permissions(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    // Best effort: the directory may briefly hold the curl config with the API key.
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700));
}

#[cfg(not(unix))]
fn restrict_permissions(_path: &Path) {}

/// Today's date (UTC) as `YYYY-MM-DD`, computed without a date crate.
pub(crate) fn today_utc() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let days = i64::try_from(secs / 86_400).unwrap_or_default();
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Howard Hinnant's `civil_from_days`: days since 1970-01-01 to (year, month, day).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    (
        y,
        u32::try_from(m).unwrap_or_default(),
        u32::try_from(d).unwrap_or_default(),
    )
}

/// The cargo that runs xtask (`$CARGO`), or `cargo` from `PATH`.
pub(crate) fn cargo() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// Runs `cargo <args>` in `root`, printed first as `<label>: $ cargo <args>`, with `env` set;
/// fails with the command line when cargo cannot run or does not succeed.
pub(crate) fn run_cargo(
    label: &str,
    root: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> XResult<()> {
    println!("{label}: $ cargo {}", args.join(" "));
    let mut command = std::process::Command::new(cargo());
    command.args(args).current_dir(root);
    for (key, value) in env {
        command.env(key, value);
    }
    let status = command
        .status()
        .map_err(|e| Failure::new(format!("cannot run cargo {}: {e}", args.join(" "))))?;
    if status.success() {
        Ok(())
    } else {
        Err(Failure::new(format!(
            "`cargo {}` failed ({status})",
            args.join(" ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
    }

    #[test]
    fn temp_dir_is_removed() {
        let dir = TempDir::new("util-test").expect("temp dir can be created");
        let path = dir.path().to_path_buf();
        assert!(path.is_dir());
        drop(dir);
        assert!(!path.exists());
    }
}
