//! [`SqliteStore`]: sessions in one SQLite database (feature `sqlite`, SQLite compiled in).

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use futures::channel::oneshot;
use futures::future::BoxFuture;
use rusqlite::{Connection, TransactionBehavior, params};

use crate::entry::Entry;
use crate::error::StoreError;
use crate::key::{SessionKey, check_part};
use crate::memory::now_ms;
use crate::store::{Appended, SessionInfo, SessionStore};

/// How long a call waits for another connection's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS entries (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    project  TEXT NOT NULL,
    session  TEXT NOT NULL,
    subpath  TEXT NOT NULL,
    entry_id TEXT,
    body     BLOB NOT NULL,
    mtime_ms INTEGER NOT NULL,
    UNIQUE (project, session, subpath, entry_id)
);
CREATE INDEX IF NOT EXISTS entries_by_key ON entries (project, session, subpath, seq);
";

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// Sessions in a SQLite database. A clone shares the connection's thread.
///
/// One row per entry:
///
/// ```sql
/// CREATE TABLE entries (
///     seq      INTEGER PRIMARY KEY AUTOINCREMENT,  -- append order
///     project  TEXT NOT NULL,
///     session  TEXT NOT NULL,
///     subpath  TEXT NOT NULL,                      -- '' for the main session
///     entry_id TEXT,                               -- the entry's uuid (NULL: none)
///     body     BLOB NOT NULL,                      -- the entry's bytes, unchanged
///     mtime_ms INTEGER NOT NULL,
///     UNIQUE (project, session, subpath, entry_id)
/// );
/// ```
///
/// An append is one `IMMEDIATE` transaction of `INSERT … ON CONFLICT DO NOTHING` (the unique
/// constraint makes it idempotent by id, also across processes; entries without an id are
/// `NULL`s, which never conflict). A file database runs in WAL mode (checked), `synchronous =
/// NORMAL` (an append survives a process crash; a power cut may lose the last ones), with a
/// 5-second busy timeout, so several processes can share it.
///
/// The connection lives on a thread of its own, fed by a channel; each call awaits its
/// answer on a oneshot channel, so no async executor is blocked by SQLite. Dropping the last
/// clone of the store ends the thread.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    jobs: mpsc::Sender<Job>,
}

fn backend(action: impl Into<String>, source: rusqlite::Error) -> StoreError {
    StoreError::Backend {
        backend: "sqlite",
        action: action.into(),
        source: Box::new(source),
    }
}

impl SqliteStore {
    /// The store in the database file at `path` (created if missing, private: mode `0600`
    /// on unix, which SQLite gives its `-wal` and `-shm` files too), in WAL mode.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        // Created private before SQLite opens it (SQLite would create it with the umask's mode).
        threadline_wire::secret::private_file_options()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| StoreError::Io {
                action: "creating",
                path: path.to_path_buf(),
                source: e,
            })?;
        let conn = Connection::open(path)
            .map_err(|e| backend(format!("opening {}", path.display()), e))?;
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(|e| backend("setting journal_mode = WAL", e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Backend {
                backend: "sqlite",
                action: format!("setting journal_mode = WAL on {}", path.display()),
                source: format!("the database answered journal_mode = {mode}").into(),
            });
        }
        Self::start(conn)
    }

    /// A store in a private in-memory database (gone with the store; no WAL, which an
    /// in-memory database does not have).
    pub fn open_in_memory() -> Result<Self, StoreError> {
        let conn = Connection::open_in_memory()
            .map_err(|e| backend("opening an in-memory database", e))?;
        Self::start(conn)
    }

    fn start(mut conn: Connection) -> Result<Self, StoreError> {
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| backend("setting synchronous = NORMAL", e))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| backend("setting the busy timeout", e))?;
        conn.execute_batch(SCHEMA)
            .map_err(|e| backend("creating the schema", e))?;
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("threadline-sqlite".into())
            .spawn(move || {
                while let Ok(job) = queue.recv() {
                    job(&mut conn);
                }
            })
            .map_err(|e| StoreError::Backend {
                backend: "sqlite",
                action: "starting the connection's thread".into(),
                source: Box::new(e),
            })?;
        Ok(SqliteStore { jobs })
    }

    /// Runs `work` on the connection's thread; its answer.
    async fn call<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (answer, answered) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            // The caller may have gone away (a dropped future): nothing to tell then.
            let _ = answer.send(work(conn));
        });
        let stopped = || StoreError::Backend {
            backend: "sqlite",
            action: "reaching the connection's thread".into(),
            source: "the thread stopped".into(),
        };
        self.jobs.send(job).map_err(|_| stopped())?;
        answered.await.map_err(|_| stopped())?
    }
}

/// The `(project, session, subpath)` columns of `key` (`''`: the main session).
fn columns(key: &SessionKey) -> (String, String, String) {
    (
        key.project.clone(),
        key.session.clone(),
        key.subpath.clone().unwrap_or_default(),
    )
}

fn append_rows(
    conn: &mut Connection,
    (project, session, subpath): &(String, String, String),
    entries: &[Entry],
) -> Result<Appended, StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| backend("beginning an append", e))?;
    let mut done = Appended::default();
    {
        let mut insert = tx
            .prepare(
                "INSERT INTO entries (project, session, subpath, entry_id, body, mtime_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
            )
            .map_err(|e| backend("preparing an append", e))?;
        let mtime = i64::try_from(now_ms()).unwrap_or(i64::MAX);
        for entry in entries {
            let changed = insert
                .execute(params![
                    project,
                    session,
                    subpath,
                    entry.id(),
                    &entry.bytes()[..],
                    mtime
                ])
                .map_err(|e| backend("appending", e))?;
            if changed == 0 {
                done.duplicates += 1;
            } else {
                done.written += 1;
            }
        }
    }
    tx.commit()
        .map_err(|e| backend("committing an append", e))?;
    Ok(done)
}

fn load_rows(
    conn: &mut Connection,
    (project, session, subpath): &(String, String, String),
) -> Result<Option<Vec<Entry>>, StoreError> {
    let mut select = conn
        .prepare(
            "SELECT seq, body FROM entries WHERE project = ?1 AND session = ?2 AND subpath = ?3
             ORDER BY seq",
        )
        .map_err(|e| backend("preparing a load", e))?;
    let rows = select
        .query_map(params![project, session, subpath], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, Vec<u8>>(1)?))
        })
        .map_err(|e| backend("loading", e))?;
    let mut entries = Vec::new();
    for row in rows {
        let (seq, body) = row.map_err(|e| backend("loading", e))?;
        let entry = Entry::new(body).map_err(|e| StoreError::Corrupt {
            location: format!("sqlite row seq {seq}"),
            reason: e.to_string(),
        })?;
        entries.push(entry);
    }
    Ok((!entries.is_empty()).then_some(entries))
}

fn list_rows(conn: &mut Connection, project: &str) -> Result<Vec<SessionInfo>, StoreError> {
    let mut select = conn
        .prepare(
            "SELECT session, MAX(mtime_ms) FROM entries WHERE project = ?1
             GROUP BY session ORDER BY session",
        )
        .map_err(|e| backend("preparing a listing", e))?;
    let rows = select
        .query_map(params![project], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
        })
        .map_err(|e| backend("listing sessions", e))?;
    let mut sessions = Vec::new();
    for row in rows {
        let (session, mtime) = row.map_err(|e| backend("listing sessions", e))?;
        sessions.push(SessionInfo::new(session, u64::try_from(mtime).unwrap_or(0)));
    }
    Ok(sessions)
}

fn delete_rows(conn: &mut Connection, key: &SessionKey) -> Result<(), StoreError> {
    let (project, session, subpath) = columns(key);
    let deleted = if key.is_main() {
        conn.execute(
            "DELETE FROM entries WHERE project = ?1 AND session = ?2",
            params![project, session],
        )
    } else {
        conn.execute(
            "DELETE FROM entries WHERE project = ?1 AND session = ?2 AND subpath = ?3",
            params![project, session, subpath],
        )
    };
    deleted.map(|_| ()).map_err(|e| backend("deleting", e))
}

fn subkey_rows(conn: &mut Connection, key: &SessionKey) -> Result<Vec<String>, StoreError> {
    let mut select = conn
        .prepare(
            "SELECT DISTINCT subpath FROM entries
             WHERE project = ?1 AND session = ?2 AND subpath <> '' ORDER BY subpath",
        )
        .map_err(|e| backend("preparing a subkey listing", e))?;
    let rows = select
        .query_map(params![key.project, key.session], |row| {
            row.get::<_, String>(0)
        })
        .map_err(|e| backend("listing subkeys", e))?;
    rows.collect::<Result<Vec<_>, _>>()
        .map_err(|e| backend("listing subkeys", e))
}

impl SessionStore for SqliteStore {
    fn append<'a>(
        &'a self,
        key: &'a SessionKey,
        entries: &'a [Entry],
    ) -> BoxFuture<'a, Result<Appended, StoreError>> {
        Box::pin(async move {
            key.validate()?;
            if entries.is_empty() {
                return Ok(Appended::default());
            }
            let columns = columns(key);
            // Cheap clones: the bytes are shared.
            let entries = entries.to_vec();
            self.call(move |conn| append_rows(conn, &columns, &entries))
                .await
        })
    }

    fn load<'a>(
        &'a self,
        key: &'a SessionKey,
    ) -> BoxFuture<'a, Result<Option<Vec<Entry>>, StoreError>> {
        Box::pin(async move {
            key.validate()?;
            let columns = columns(key);
            self.call(move |conn| load_rows(conn, &columns)).await
        })
    }

    fn list_sessions<'a>(
        &'a self,
        project: &'a str,
    ) -> BoxFuture<'a, Result<Vec<SessionInfo>, StoreError>> {
        Box::pin(async move {
            check_part("project", project)?;
            let project = project.to_owned();
            self.call(move |conn| list_rows(conn, &project)).await
        })
    }

    fn delete<'a>(&'a self, key: &'a SessionKey) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            key.validate()?;
            let key = key.clone();
            self.call(move |conn| delete_rows(conn, &key)).await
        })
    }

    fn list_subkeys<'a>(
        &'a self,
        key: &'a SessionKey,
    ) -> BoxFuture<'a, Result<Vec<String>, StoreError>> {
        Box::pin(async move {
            key.validate()?;
            let key = key.clone();
            self.call(move |conn| subkey_rows(conn, &key)).await
        })
    }
}
