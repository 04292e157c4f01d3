//! `Read`: a file's lines, numbered, from an optional line offset, within byte and line
//! limits.
//!
//! The file is named by `file_path`, the name Claude Code's Read tool uses and the one the
//! synthetic Read calls of `@` mentions and compaction re-attachments carry, so the model sees
//! one name for one tool; `path` is still accepted as an alias.
//!
//! Memory: at most the byte limit plus one byte is read (never the whole file, however long
//! its lines), and the limit is clamped to [`MAX_READ_BYTES`], so one call holds a few times
//! that at most, whatever the file.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use threadline_query::JsonSchema;
use threadline_query::{
    BoxFuture, Tool, ToolContext, ToolOutput, ToolStream, TypedTool, call_typed,
};
use threadline_workspace::{Limits, PathKind, Truncation, Workspace};

use crate::text::{refused, truncation_note};

/// At most this many lines are returned by default (the model may ask for fewer).
pub const DEFAULT_READ_LINES: usize = 2_000;

/// The input property naming the file (Claude Code's name, and the synthetic Read calls').
pub const FILE_PATH: &str = "file_path";

/// The highest byte limit [`ReadFile::with_max_bytes`] accepts (8 MiB); a higher one is
/// clamped, so a Read's memory stays bounded.
pub const MAX_READ_BYTES: u64 = 8 * 1024 * 1024;

/// The input of a Read call. The loop has checked it against the hand-written schema
/// ([`ReadFile::input_schema`], kept byte for byte: the derived one would spell `minimum` as
/// `1.0` and each optional property's type as `["string", "null"]`, changing the tools every
/// cached prefix holds); a unit test checks that both name the same properties and that
/// every input the schema accepts parses.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(crate = "threadline_query::schemars")]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// The file, relative to the workspace root (required).
    pub file_path: Option<String>,
    /// An alias of `file_path`, accepted for older callers.
    pub path: Option<String>,
    /// The first line to show (from 1).
    pub offset: Option<u64>,
    /// How many lines (at most [`DEFAULT_READ_LINES`]).
    pub limit: Option<u64>,
}

/// Reads a text file inside the workspace. A [`TypedTool`] of [`ReadArgs`]; its [`Tool`]
/// impl keeps the hand-written schema and parses through [`call_typed`].
#[derive(Debug, Clone)]
pub struct ReadFile {
    workspace: Arc<Workspace>,
    max_bytes: u64,
}

impl ReadFile {
    /// Reads in `workspace`, at most 256 KiB of a file.
    pub fn new(workspace: Arc<Workspace>) -> ReadFile {
        ReadFile {
            workspace,
            max_bytes: Limits::default().max_bytes,
        }
    }

    /// With another byte limit (at most [`MAX_READ_BYTES`]).
    pub fn with_max_bytes(mut self, max_bytes: u64) -> ReadFile {
        self.max_bytes = max_bytes.min(MAX_READ_BYTES);
        self
    }
}

impl Tool for ReadFile {
    fn name(&self) -> &str {
        "Read"
    }

    fn description(&self) -> &str {
        "Reads a text file in the workspace, named by `file_path` (relative to the workspace root, or absolute inside it). Lines are numbered from 1; `offset` is the first line to show and `limit` how many (at most 2000)."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                FILE_PATH: {"type": "string", "minLength": 1, "description": "The file, relative to the workspace root (required)."},
                "path": {"type": "string", "minLength": 1, "description": "An alias of `file_path`, accepted for older callers."},
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": DEFAULT_READ_LINES}
            },
            // Not `required: ["file_path"]`: the loop checks inputs against this schema, and
            // an input naming the file by its alias `path` must pass; the call itself says
            // when neither is given.
            "additionalProperties": false
        })
    }

    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        true
    }

    fn is_idempotent(&self, _input: &Value) -> bool {
        true
    }

    fn call(&self, input: Value, ctx: ToolContext) -> ToolStream {
        call_typed(self, input, ctx)
    }
}

impl TypedTool for ReadFile {
    type Args = ReadArgs;

    fn call(&self, args: ReadArgs, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let workspace = Arc::clone(&self.workspace);
        let limits = Limits::default()
            .with_max_bytes(self.max_bytes)
            .with_max_lines(usize::MAX);
        Box::pin(async move {
            let Some(path) = args.file_path.as_deref().or(args.path.as_deref()) else {
                return ToolOutput::error(format!("missing required property `{FILE_PATH}`"));
            };
            let offset = args.offset.map_or(1, |n| n.max(1) as usize);
            let limit = args
                .limit
                .map_or(DEFAULT_READ_LINES, |n| (n as usize).min(DEFAULT_READ_LINES));
            let resolved = match workspace.resolve(path) {
                Ok(resolved) => resolved,
                Err(refusal) => return refused(path, &refusal),
            };
            if resolved.kind == PathKind::Directory {
                return ToolOutput::error(format!("{path}: is a directory (use LS)"));
            }
            let read = match workspace.read_text(&resolved, &limits).await {
                Ok(read) => read,
                Err(refusal) => return refused(path, &refusal),
            };
            number_lines(&read.content, offset, limit, read.truncated.as_ref())
        })
    }
}

/// `cat -n` style lines `offset..offset + limit`, with a note when more exists.
fn number_lines(
    content: &str,
    offset: usize,
    limit: usize,
    cut: Option<&Truncation>,
) -> ToolOutput {
    if content.is_empty() {
        return ToolOutput::text("(empty file)");
    }
    let total = content.lines().count();
    if offset > total {
        return ToolOutput::error(format!(
            "offset {offset} is past the end: the file has {total} lines"
        ));
    }
    let mut out = String::new();
    let shown = content.lines().enumerate().skip(offset - 1).take(limit);
    let mut last = offset - 1;
    for (i, line) in shown {
        out.push_str(&format!("{:>6}\t{line}\n", i + 1));
        last = i + 1;
    }
    if last < total {
        out.push_str(&format!(
            "[{} more lines; read on with offset {}]\n",
            total - last,
            last + 1
        ));
    }
    if let Some(cut) = cut {
        out.push_str(&truncation_note(cut));
    }
    ToolOutput::text(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(output: &ToolOutput) -> &str {
        match &output.content {
            threadline_wire::Content::Text(t) => t,
            threadline_wire::Content::Blocks(_) => "",
        }
    }

    #[test]
    fn lines_are_numbered_and_ranges_say_what_follows() {
        let out = number_lines("a\nb\nc\n", 2, 1, None);
        assert_eq!(
            text(&out),
            "     2\tb\n[1 more lines; read on with offset 3]\n"
        );
        assert!(number_lines("a\n", 5, 1, None).is_error);
        assert_eq!(text(&number_lines("", 1, 1, None)), "(empty file)");
    }

    fn read_schema() -> Value {
        let dir = std::env::temp_dir();
        match Workspace::new(&dir) {
            Ok(ws) => ReadFile::new(Arc::new(ws)).input_schema(),
            Err(e) => panic!("a workspace at {}: {e}", dir.display()),
        }
    }

    #[test]
    fn the_hand_written_schema_and_the_typed_input_name_the_same_properties() {
        let derived = threadline_query::tool_schema_for::<ReadArgs>();
        let keys = |schema: &Value| -> Vec<String> {
            schema["properties"]
                .as_object()
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default()
        };
        assert_eq!(keys(&read_schema()), keys(&derived));
        assert_eq!(derived["additionalProperties"], false);
        assert_eq!(read_schema()["additionalProperties"], false);
        // Neither requires a property: `path` may stand for `file_path`.
        assert!(derived.get("required").is_none());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, failure_persistence: None, ..Default::default() })]

        /// Every input the hand-written schema accepts parses into `ReadArgs` with the same
        /// values (the typed call sees what the untyped one read), and none that it rejects
        /// reaches the call.
        #[test]
        fn what_the_schema_accepts_parses_the_same(
            file_path in proptest::option::of(proptest::prelude::any::<String>()),
            path in proptest::option::of(".{0,4}"),
            offset in proptest::option::of(proptest::prelude::any::<u64>()),
            limit in proptest::option::of(0u64..3000),
            extra in proptest::option::of("[a-z]{1,3}"),
        ) {
            let mut input = serde_json::Map::new();
            if let Some(v) = &file_path { input.insert(FILE_PATH.into(), json!(v)); }
            if let Some(v) = &path { input.insert("path".into(), json!(v)); }
            if let Some(v) = offset { input.insert("offset".into(), json!(v)); }
            if let Some(v) = limit { input.insert("limit".into(), json!(v)); }
            if let Some(k) = &extra { input.insert(format!("x_{k}"), json!(1)); }
            let input = Value::Object(input);
            if threadline_query::schema::check(&read_schema(), &input).is_ok() {
                let args = threadline_query::parse_tool_args::<ReadArgs>(input.clone());
                proptest::prop_assert!(args.is_ok(), "{input}: {args:?}");
                let args = args.unwrap_or(ReadArgs { file_path: None, path: None, offset: None, limit: None });
                proptest::prop_assert_eq!(args.file_path.as_deref(), input[FILE_PATH].as_str());
                proptest::prop_assert_eq!(args.path.as_deref(), input["path"].as_str());
                proptest::prop_assert_eq!(args.offset, input["offset"].as_u64());
                proptest::prop_assert_eq!(args.limit, input["limit"].as_u64());
            }
        }
    }
}
