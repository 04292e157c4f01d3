//! The tool-result budget: a result too large for the context is stored in a side file and
//! replaced by a preview and the path.
//!
//! **Frozen decisions.** A result is judged once, before it is first sent: only the results
//! after the last assistant message (the ones the model has not seen yet) are candidates.
//! A result the model has already seen stays exactly as it was sent — kept whole or already
//! replaced — so a later request's prefix is byte-identical and the prompt cache holds, even
//! if the limits change mid-session. The decision is thus derived from the history alone:
//! whether a result was replaced is visible in its content ([`is_persisted_preview`]).
//!
//! The preview text and the side file's name depend only on the tool use id and the content,
//! so the same input gives the same bytes.

use std::collections::{BTreeMap, HashSet};
use std::io;
use std::path::PathBuf;

use threadline_message::Message;
use threadline_wire::{Content, ContentBlock};

use crate::units::IdMap;

/// The first line of every preview that replaces a stored result.
pub const PERSISTED_OUTPUT_TAG: &str = "<persisted-output>";

/// Per-tool limits on tool-result size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetOptions {
    /// The limit in characters for a tool not named in `per_tool` (default 50,000).
    pub default_limit: usize,
    /// Limits for named tools (`usize::MAX` exempts a tool, e.g. one whose output is already
    /// bounded).
    pub per_tool: BTreeMap<String, usize>,
    /// The most characters of results one API user message may carry in total (default
    /// 200,000): beyond it, the largest results are stored until the rest fits. The fresh
    /// results (after the last assistant message) are counted together, however many
    /// internal messages hold them: they are sent as one user message.
    pub per_message_limit: usize,
    /// The bytes of the result shown in the preview (default 2,000, cut at a character
    /// boundary).
    pub preview_bytes: usize,
}

impl Default for BudgetOptions {
    fn default() -> Self {
        BudgetOptions {
            default_limit: 50_000,
            per_tool: BTreeMap::new(),
            per_message_limit: 200_000,
            preview_bytes: 2_000,
        }
    }
}

impl BudgetOptions {
    /// The limit for `tool`.
    pub fn limit_for(&self, tool: &str) -> usize {
        self.per_tool
            .get(tool)
            .copied()
            .unwrap_or(self.default_limit)
    }
}

/// Where stored results go.
pub trait SideStore {
    /// Stores `content`, the full text of the result of `tool_use_id`, and returns the path
    /// the preview names. The same id must give the same path.
    fn store(&mut self, tool_use_id: &str, content: &str) -> io::Result<String>;
}

/// A [`SideStore`] writing `DIR/<tool_use_id>.txt` (the id with every character outside
/// `[A-Za-z0-9_-]` replaced by `_`, so a hostile id cannot name another directory).
#[derive(Debug, Clone)]
pub struct DirStore {
    dir: PathBuf,
}

impl DirStore {
    /// A store writing into `dir` (created when first needed).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        DirStore { dir: dir.into() }
    }
}

/// The file name a result of `tool_use_id` is stored under.
pub fn side_file_name(tool_use_id: &str) -> String {
    let safe: String = tool_use_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}.txt")
}

impl SideStore for DirStore {
    /// Writes the file (mode [`SIDE_FILE_MODE`] when it is created on unix, in a directory
    /// created with mode [`SIDE_DIR_MODE`]; existing ones keep theirs).
    fn store(&mut self, tool_use_id: &str, content: &str) -> io::Result<String> {
        let mut dir = std::fs::DirBuilder::new();
        dir.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut dir, SIDE_DIR_MODE);
        dir.create(&self.dir)?;
        let path = self.dir.join(side_file_name(tool_use_id));
        let mut open = std::fs::OpenOptions::new();
        open.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut open, SIDE_FILE_MODE);
        io::Write::write_all(&mut open.open(&path)?, content.as_bytes())?;
        Ok(path.display().to_string())
    }
}

/// The mode a [`DirStore`] creates its files with on unix: a tool's output may hold what
/// only the user should read.
pub const SIDE_FILE_MODE: u32 = 0o600;

/// The mode a [`DirStore`] creates its directory with on unix.
pub const SIDE_DIR_MODE: u32 = 0o700;

/// A [`SideStore`] keeping results in memory, by file name (tests, dry runs).
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    /// The stored results, by the path returned.
    pub files: BTreeMap<String, String>,
}

impl SideStore for MemoryStore {
    fn store(&mut self, tool_use_id: &str, content: &str) -> io::Result<String> {
        let path = format!("tool-results/{}", side_file_name(tool_use_id));
        self.files.insert(path.clone(), content.to_owned());
        Ok(path)
    }
}

/// One result that was stored and replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Persisted {
    /// The tool use whose result it was.
    pub tool_use_id: String,
    /// Where the full text is.
    pub path: String,
    /// The characters of the full text.
    pub original_chars: usize,
}

/// What the budget did.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct BudgetReport {
    /// The results stored and replaced, in array order.
    pub persisted: Vec<Persisted>,
    /// The index (in the history given) of the first message changed in place, if any.
    pub first_changed: Option<usize>,
    /// The results over the limit that could not be stored (kept whole).
    pub failed: Vec<BudgetError>,
}

/// A result over the limit that could not be stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("cannot store the result of {tool_use_id} ({chars} characters): {source}")]
pub struct BudgetError {
    /// The tool use whose result it was.
    pub tool_use_id: String,
    /// Its size in characters.
    pub chars: usize,
    /// Why storing failed.
    #[source]
    pub source: io::Error,
}

/// Whether a tool result's content is a preview written by the budget.
pub fn is_persisted_preview(content: &Content) -> bool {
    match content {
        Content::Text(text) => text.starts_with(PERSISTED_OUTPUT_TAG),
        Content::Blocks(blocks) => matches!(
            blocks.first(),
            Some(ContentBlock::Text(t)) if t.text.starts_with(PERSISTED_OUTPUT_TAG)
        ),
    }
}

/// The text of a tool result's content (text blocks joined by newlines); `None` when it holds
/// anything but text (images and documents are not stored: they are counted at a fixed cost).
fn result_text(content: &Content) -> Option<String> {
    match content {
        Content::Text(text) => Some(text.clone()),
        Content::Blocks(blocks) => {
            let mut out = String::new();
            for (i, block) in blocks.iter().enumerate() {
                let ContentBlock::Text(t) = block else {
                    return None;
                };
                if i > 0 {
                    out.push('\n');
                }
                out.push_str(&t.text);
            }
            Some(out)
        }
    }
}

fn char_count(content: &Content) -> usize {
    match content {
        Content::Text(text) => text.chars().count(),
        Content::Blocks(blocks) => blocks
            .iter()
            .map(|b| match b {
                ContentBlock::Text(t) => t.text.chars().count(),
                _ => 0,
            })
            .sum(),
    }
}

/// The preview that replaces a stored result: the path, the size, and the first
/// `preview_bytes` bytes (cut at a character boundary).
pub fn preview(text: &str, path: &str, preview_bytes: usize) -> String {
    let mut cut = preview_bytes.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{PERSISTED_OUTPUT_TAG}\nOutput too large ({} characters). Full output saved to: {path}\n\nPreview (first {cut} bytes):\n{}\n...\n</persisted-output>",
        text.chars().count(),
        &text[..cut]
    )
}

/// Applies the budget to the results the model has not seen yet (after the last assistant
/// message), in place; see the module docs for why earlier results are never touched.
pub fn apply_budget(
    history: &mut [Message],
    options: &BudgetOptions,
    store: &mut dyn SideStore,
) -> BudgetReport {
    let mut report = BudgetReport::default();
    let split = fresh_from(history);
    let (seen, fresh) = history.split_at_mut(split);
    for (m, index) in chosen(seen, fresh, options) {
        let Some(Message::User(user)) = fresh.get_mut(m) else {
            continue;
        };
        let Some(ContentBlock::ToolResult(r)) = user.content.get_mut(index) else {
            continue;
        };
        let Some(text) = r.content.as_ref().and_then(result_text) else {
            continue;
        };
        let chars = text.chars().count();
        match store.store(&r.tool_use_id, &text) {
            Ok(path) => {
                r.content = Some(Content::Text(preview(&text, &path, options.preview_bytes)));
                report.first_changed.get_or_insert(split + m);
                report.persisted.push(Persisted {
                    tool_use_id: r.tool_use_id.clone(),
                    path,
                    original_chars: chars,
                });
            }
            Err(source) => report.failed.push(BudgetError {
                tool_use_id: r.tool_use_id.clone(),
                chars,
                source,
            }),
        }
    }
    report
}

/// The tool use ids of the results [`apply_budget`] would store for `history`, in array
/// order, without storing anything (what `threadline inspect` reports).
pub fn would_store(history: &[Message], options: &BudgetOptions) -> Vec<String> {
    let (seen, fresh) = history.split_at(fresh_from(history));
    chosen(seen, fresh, options)
        .into_iter()
        .filter_map(|(m, index)| match fresh.get(m)? {
            Message::User(user) => match user.content.get(index)? {
                ContentBlock::ToolResult(r) => Some(r.tool_use_id.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Where the results the model has not seen yet begin: after the last assistant message.
/// The one rule for "fresh": the budget judges only the results from here on, and
/// microcompact clears only results before here (`crate::microcompact`).
pub(crate) fn fresh_from(history: &[Message]) -> usize {
    history
        .iter()
        .rposition(|m| matches!(m, Message::Assistant(_)))
        .map_or(0, |i| i + 1)
}

/// The results of `fresh` the budget stores, as (message index in `fresh`, block index), in
/// array order: each result over its own tool's limit, then, while the fresh results are
/// still over the per-message limit together, the largest of the rest until they fit. The
/// fresh results are counted together, not per internal message: the loop writes each result
/// as its own user message, and normalization merges them all into the one API message the
/// limit is about.
fn chosen(seen: &[Message], fresh: &[Message], options: &BudgetOptions) -> Vec<(usize, usize)> {
    let names = result_tools(seen, fresh);
    // (message index, block index, chars, over its own tool's limit), in array order.
    let mut candidates: Vec<(usize, usize, usize, bool)> = Vec::new();
    for (m, message) in fresh.iter().enumerate() {
        let Message::User(user) = message else {
            continue;
        };
        for (i, block) in user.content.iter().enumerate() {
            let ContentBlock::ToolResult(r) = block else {
                continue;
            };
            let Some(content) = &r.content else {
                continue;
            };
            if is_persisted_preview(content) || result_text(content).is_none() {
                continue;
            }
            let chars = char_count(content);
            let tool = names.get(r.tool_use_id.as_str()).copied().unwrap_or("");
            candidates.push((m, i, chars, chars > options.limit_for(tool)));
        }
    }
    // Over the per-message limit: the largest results go too, until the rest fits. Ties go
    // by position, so the choice is deterministic.
    let mut chosen: Vec<(usize, usize)> = candidates
        .iter()
        .filter(|c| c.3)
        .map(|c| (c.0, c.1))
        .collect();
    let mut remaining = candidates
        .iter()
        .filter(|c| !c.3)
        .fold(0usize, |sum, c| sum.saturating_add(c.2));
    if remaining > options.per_message_limit {
        let mut rest: Vec<&(usize, usize, usize, bool)> =
            candidates.iter().filter(|c| !c.3).collect();
        rest.sort_by(|a, b| b.2.cmp(&a.2).then((a.0, a.1).cmp(&(b.0, b.1))));
        for c in rest {
            if remaining <= options.per_message_limit {
                break;
            }
            chosen.push((c.0, c.1));
            remaining -= c.2;
        }
    }
    chosen.sort_unstable();
    chosen
}

/// The tool names of the results in `fresh`, each from the latest tool use with its id in
/// `seen`. The history is scanned back from its end only until every result is named: a
/// turn's results answer the response just before them, so the budget costs what is new, not
/// the history, however long it is.
fn result_tools<'a>(seen: &'a [Message], fresh: &[Message]) -> IdMap<'a, &'a str> {
    let mut wanted: HashSet<&str, foldhash::fast::RandomState> = HashSet::default();
    for message in fresh {
        if let Message::User(user) = message {
            for block in &user.content {
                if let ContentBlock::ToolResult(r) = block {
                    wanted.insert(r.tool_use_id.as_str());
                }
            }
        }
    }
    let mut names = IdMap::default();
    if wanted.is_empty() {
        return names;
    }
    for message in seen.iter().rev() {
        let Message::Assistant(assistant) = message else {
            continue;
        };
        for block in assistant.content.iter().rev() {
            if let ContentBlock::ToolUse(u) = block
                && wanted.contains(u.id.as_str())
            {
                names.entry(u.id.as_str()).or_insert(u.name.as_str());
            }
        }
        if names.len() == wanted.len() {
            break;
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use threadline_message::tool_result_block;
    use threadline_testkit::messages::{SessionBuilder, tool_use};

    fn session(result_len: usize) -> Vec<Message> {
        let mut b = SessionBuilder::new();
        b.user("grep it");
        let msg = b.response_id();
        b.assistant(&msg, vec![tool_use("toolu_1", "Grep", json!({"q": "x"}))]);
        b.tool_results(vec![tool_result_block(
            "toolu_1",
            "é".repeat(result_len).as_str().into(),
            false,
        )]);
        b.into_messages()
    }

    #[test]
    fn a_large_fresh_result_is_stored_and_previewed() {
        let mut history = session(60_000);
        let mut store = MemoryStore::default();
        let report = apply_budget(&mut history, &BudgetOptions::default(), &mut store);
        assert_eq!(report.persisted.len(), 1);
        assert_eq!(report.persisted[0].original_chars, 60_000);
        let Message::User(u) = &history[2] else {
            panic!("a user message")
        };
        let ContentBlock::ToolResult(r) = &u.content[0] else {
            panic!("a result")
        };
        let content = r.content.as_ref().expect("content");
        assert!(is_persisted_preview(content));
        let Content::Text(text) = content else {
            panic!("text")
        };
        assert!(text.contains("tool-results/toolu_1.txt"), "{text}");
        // 2,000 bytes of two-byte characters: exactly 1,000 of them.
        assert!(text.contains(&"é".repeat(1_000)));
        assert!(!text.contains(&"é".repeat(1_001)));
        assert_eq!(
            store.files["tool-results/toolu_1.txt"].chars().count(),
            60_000
        );
    }

    #[test]
    fn fresh_results_are_named_from_the_response_before_them_only() {
        let mut b = SessionBuilder::new();
        for turn in 0..20 {
            b.user("again");
            let msg = b.response_id();
            let id = format!("toolu_old{turn}");
            b.assistant(&msg, vec![tool_use(&id, "Read", json!({}))]);
            b.tool_results(vec![tool_result_block(&id, "old".into(), false)]);
        }
        b.user("both");
        // One response streamed as two fragments, each with a tool use.
        let msg = b.response_id();
        b.assistant(&msg, vec![tool_use("toolu_x", "Read", json!({}))]);
        b.assistant(&msg, vec![tool_use("toolu_y", "Grep", json!({}))]);
        b.tool_results(vec![
            tool_result_block("toolu_x", "x".repeat(50).as_str().into(), false),
            tool_result_block("toolu_y", "y".repeat(50).as_str().into(), false),
        ]);
        let mut history = b.into_messages();
        let split = fresh_from(&history);
        let (seen, fresh) = history.split_at(split);
        let names = result_tools(seen, fresh);
        assert_eq!(names.len(), 2, "only the fresh results' tools: {names:?}");
        assert_eq!(names.get("toolu_x"), Some(&"Read"));
        assert_eq!(names.get("toolu_y"), Some(&"Grep"));

        // Read's own limit applies to its result, Grep's default to the other.
        let options = BudgetOptions {
            per_tool: BTreeMap::from([("Read".to_owned(), 10)]),
            ..BudgetOptions::default()
        };
        let predicted = would_store(&history, &options);
        assert_eq!(predicted, ["toolu_x"]);
        let report = apply_budget(&mut history, &options, &mut MemoryStore::default());
        let stored: Vec<&str> = report
            .persisted
            .iter()
            .map(|p| p.tool_use_id.as_str())
            .collect();
        assert_eq!(stored, predicted);
    }

    #[test]
    fn a_result_already_sent_is_frozen_even_when_limits_change() {
        let mut history = session(30_000);
        let mut b = SessionBuilder::continuing(history);
        let msg = b.response_id();
        b.assistant(&msg, vec![threadline_testkit::messages::text("seen")]);
        history = b.into_messages();
        let before = serde_json::to_string(&history).expect("json");
        let tight = BudgetOptions {
            default_limit: 10,
            ..BudgetOptions::default()
        };
        let report = apply_budget(&mut history, &tight, &mut MemoryStore::default());
        assert!(report.persisted.is_empty());
        assert_eq!(serde_json::to_string(&history).expect("json"), before);
    }

    #[test]
    fn the_per_message_limit_stores_the_largest_first() {
        let mut b = SessionBuilder::new();
        b.user("go");
        let msg = b.response_id();
        b.assistant(
            &msg,
            vec![
                tool_use("toolu_a", "Read", json!({})),
                tool_use("toolu_b", "Read", json!({})),
            ],
        );
        b.tool_results(vec![
            tool_result_block("toolu_a", "a".repeat(40).as_str().into(), false),
            tool_result_block("toolu_b", "b".repeat(60).as_str().into(), false),
        ]);
        let mut history = b.into_messages();
        let options = BudgetOptions {
            per_message_limit: 70,
            ..BudgetOptions::default()
        };
        let report = apply_budget(&mut history, &options, &mut MemoryStore::default());
        let ids: Vec<&str> = report
            .persisted
            .iter()
            .map(|p| p.tool_use_id.as_str())
            .collect();
        assert_eq!(ids, ["toolu_b"]);
    }

    /// The loop writes each result as its own message; the limit is about the one API
    /// message they are merged into.
    #[test]
    fn the_per_message_limit_counts_results_written_as_separate_messages_together() {
        let mut b = SessionBuilder::new();
        b.user("go");
        let msg = b.response_id();
        let ids: Vec<String> = (0..5).map(|i| format!("toolu_{i}")).collect();
        b.assistant(
            &msg,
            ids.iter()
                .map(|id| tool_use(id, "Read", json!({})))
                .collect(),
        );
        for (i, id) in ids.iter().enumerate() {
            // The third is the largest: 45,000 characters and two more.
            let len = if i == 2 { 45_002 } else { 45_000 };
            b.tool_results(vec![tool_result_block(
                id,
                "r".repeat(len).as_str().into(),
                false,
            )]);
        }
        let mut history = b.into_messages();
        let options = BudgetOptions::default();
        let predicted = would_store(&history, &options);
        let report = apply_budget(&mut history, &options, &mut MemoryStore::default());
        let ids: Vec<&str> = report
            .persisted
            .iter()
            .map(|p| p.tool_use_id.as_str())
            .collect();
        // 225,002 characters together: storing the largest leaves 180,000.
        assert_eq!(ids, ["toolu_2"]);
        assert_eq!(predicted, ids);
    }

    #[test]
    fn hostile_ids_cannot_leave_the_directory() {
        assert_eq!(side_file_name("../../etc/passwd"), "______etc_passwd.txt");
    }

    #[cfg(unix)]
    #[test]
    fn side_files_are_created_for_their_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &std::path::Path| {
            std::fs::metadata(path)
                .expect("exists")
                .permissions()
                .mode()
                & 0o777
        };
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("tool-results");
        let mut store = DirStore::new(&dir);
        let path = store.store("toolu_1", "secret output").expect("stored");
        assert_eq!(mode(std::path::Path::new(&path)), 0o600);
        assert_eq!(mode(&dir), 0o700);
        // Rewritten in place: the content changes, a mode the user set stays.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        store.store("toolu_1", "again").expect("stored");
        assert_eq!(std::fs::read_to_string(&path).expect("readable"), "again");
        assert_eq!(mode(std::path::Path::new(&path)), 0o640);
    }
}
