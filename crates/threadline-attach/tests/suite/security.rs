//! Nothing outside the workspace is read, and nothing is read past its limit.

use std::path::Path;

use threadline_attach::{
    Collector, FileMentions, Limits, NestedInstructions, Note, Refusal, Truncation, Turn, Workspace,
};
use threadline_message::Attachment;

#[cfg(unix)]
#[path = "security/hostile_git.rs"]
mod hostile_git;

/// A workspace directory `ws` inside a temporary directory that also holds `outside/secret`.
fn setup() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("ws")).expect("ws");
    std::fs::create_dir(dir.path().join("outside")).expect("outside");
    std::fs::write(dir.path().join("outside/secret"), "TOP SECRET\n").expect("secret");
    std::fs::write(dir.path().join("ws/ok.txt"), "fine\n").expect("ok");
    let workspace = Workspace::new(dir.path().join("ws")).expect("workspace");
    (dir, workspace)
}

fn collect(workspace: &Workspace, input: &str, limits: Limits) -> threadline_attach::Collected {
    Collector::new()
        .with(FileMentions::with_limits(limits))
        .with(NestedInstructions::new())
        .collect_blocking(&Turn::new(&[]).with_input(input).with_workspace(workspace))
        .expect("runtime")
}

/// The refusal reported for `subject`.
fn refusal_of<'c>(collected: &'c threadline_attach::Collected, subject: &str) -> &'c Refusal {
    collected
        .report
        .iter()
        .find_map(|e| match e.note() {
            Some(Note::Refused {
                subject: s,
                refusal,
            }) if s == subject => Some(refusal),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no refusal for {subject}: {:?}", collected.report))
}

fn assert_no_secret(collected: &threadline_attach::Collected) {
    for attachment in &collected.attachments {
        assert!(
            !format!("{attachment:?}").contains("TOP SECRET"),
            "{attachment:?}"
        );
    }
}

#[test]
fn parent_traversal_is_refused_without_reading() {
    let (_dir, workspace) = setup();
    let collected = collect(
        &workspace,
        "look at @../outside/secret and @ok.txt",
        Limits::default(),
    );
    assert_eq!(
        refusal_of(&collected, "@../outside/secret"),
        &Refusal::ParentTraversal
    );
    assert_eq!(
        collected.report[0].to_string(),
        "attachment source `file_mentions`: @../outside/secret: refused: `..` is not allowed: \
         paths must stay inside the workspace"
    );
    // `..` that would land back inside is refused too: the rule is lexical and simple.
    assert_eq!(
        workspace.resolve("a/../ok.txt"),
        Err(Refusal::ParentTraversal)
    );
    assert_no_secret(&collected);
    // The good mention in the same input is unaffected.
    assert!(
        matches!(&collected.attachments[..], [Attachment::File { path, content, truncated: false }] if path == "ok.txt" && content == "fine\n")
    );
}

#[test]
fn absolute_paths_outside_are_refused_and_inside_are_read() {
    let (dir, workspace) = setup();
    let secret = dir.path().join("outside/secret");
    let inside = workspace.root().join("ok.txt");
    let input = format!("@/etc/passwd @{} @{}", secret.display(), inside.display());
    let collected = collect(&workspace, &input, Limits::default());
    assert_eq!(
        refusal_of(&collected, "@/etc/passwd"),
        &Refusal::OutsideWorkspace
    );
    assert_eq!(
        refusal_of(&collected, &format!("@{}", secret.display())),
        &Refusal::OutsideWorkspace
    );
    assert_no_secret(&collected);
    assert!(!format!("{:?}", collected.attachments).contains("root:"));
    assert!(
        matches!(&collected.attachments[..], [Attachment::File { path, .. }] if path == "ok.txt")
    );
}

#[cfg(unix)]
#[test]
fn symlinks_leading_out_are_refused_and_symlinks_inside_are_followed() {
    let (dir, workspace) = setup();
    let ws = workspace.root();
    std::os::unix::fs::symlink(dir.path().join("outside/secret"), ws.join("link")).expect("link");
    std::os::unix::fs::symlink(dir.path().join("outside"), ws.join("door")).expect("door");
    std::os::unix::fs::symlink(ws.join("ok.txt"), ws.join("alias")).expect("alias");
    let collected = collect(
        &workspace,
        "@link @door/secret @door @alias",
        Limits::default(),
    );
    assert_eq!(refusal_of(&collected, "@link"), &Refusal::SymlinkEscape);
    assert_eq!(
        refusal_of(&collected, "@door/secret"),
        &Refusal::SymlinkEscape
    );
    assert_eq!(refusal_of(&collected, "@door"), &Refusal::SymlinkEscape);
    assert_no_secret(&collected);
    // A link that stays inside resolves to its target's workspace path.
    assert!(
        matches!(&collected.attachments[..], [Attachment::File { path, .. }] if path == "ok.txt")
    );
}

#[cfg(unix)]
#[test]
fn a_nested_instructions_file_linking_out_is_refused() {
    let (dir, workspace) = setup();
    let ws = workspace.root();
    std::fs::create_dir(ws.join("sub")).expect("sub");
    std::fs::write(ws.join("sub/code.rs"), "fn x() {}\n").expect("code");
    std::os::unix::fs::symlink(dir.path().join("outside/secret"), ws.join("sub/AGENTS.md"))
        .expect("link");
    let collected = collect(&workspace, "@sub/code.rs", Limits::default());
    assert_eq!(
        refusal_of(&collected, "sub/AGENTS.md"),
        &Refusal::SymlinkEscape
    );
    assert_eq!(collected.report[0].source_name, "nested_instructions");
    assert_no_secret(&collected);
    assert_eq!(collected.attachments.len(), 1);
}

#[test]
fn a_50_mb_file_is_cut_at_the_byte_limit() {
    let (_dir, workspace) = setup();
    let path = workspace.root().join("huge.log");
    let file = std::fs::File::create(&path).expect("create");
    // Sparse: 50 MB of NUL bytes on disk costs nothing. Text at the start, so it is not binary.
    std::io::Write::write_all(&mut &file, "line\n".repeat(20_000).as_bytes()).expect("write");
    file.set_len(50 * 1024 * 1024).expect("set_len");
    drop(file);

    let limits = Limits::default()
        .with_max_bytes(64 * 1024)
        .with_max_lines(1_000_000);
    let collected = collect(&workspace, "@huge.log", limits);
    let [
        Attachment::File {
            content, truncated, ..
        },
    ] = &collected.attachments[..]
    else {
        panic!("one file: {:?}", collected.report)
    };
    assert!(*truncated);
    assert_eq!(content.len(), 64 * 1024);
    assert!(matches!(
        collected.report[0].note(),
        Some(Note::Truncated { subject, truncation: Truncation::Bytes { limit: 65536 } }) if subject == "@huge.log"
    ));

    // With the default limits, the line limit cuts first, with a note.
    let collected = collect(&workspace, "@huge.log", Limits::default());
    let [
        Attachment::File {
            content,
            truncated: true,
            ..
        },
    ] = &collected.attachments[..]
    else {
        panic!("one file: {:?}", collected.report)
    };
    assert_eq!(content.lines().count(), 2000);
    assert!(content.len() as u64 <= Limits::default().max_bytes);
    assert_eq!(
        collected.report[0].to_string(),
        "attachment source `file_mentions`: @huge.log: truncated: cut at the limit of 2000 lines"
    );
}

#[tokio::test]
async fn the_reader_never_pulls_past_the_limit() {
    // Count what the 50 MB file's reader hands out: at most the limit and one byte.
    let (_dir, workspace) = setup();
    let path = workspace.root().join("huge.bin");
    let file = std::fs::File::create(&path).expect("create");
    std::io::Write::write_all(&mut &file, b"x").expect("write");
    file.set_len(50 * 1024 * 1024).expect("set_len");
    drop(file);
    let resolved = workspace.resolve("huge.bin").expect("resolves");
    let limits = Limits::default().with_max_bytes(10_000);
    let counted = Counting::new(
        tokio::fs::File::open(&resolved.canonical)
            .await
            .expect("open"),
    );
    let total = counted.total.clone();
    // A NUL at byte 1: refused as binary, after reading no more than the limit.
    assert_eq!(
        threadline_workspace::read_limited(counted, &limits).await,
        Err(Refusal::Binary)
    );
    assert!(total.load(std::sync::atomic::Ordering::SeqCst) <= 10_001);

    // The same with text: the content is cut at the limit, the reader stops one byte after.
    let text = workspace.root().join("huge.txt");
    let file = std::fs::File::create(&text).expect("create");
    std::io::Write::write_all(&mut &file, "abc\n".repeat(5_000).as_bytes()).expect("write");
    file.set_len(50 * 1024 * 1024).expect("set_len");
    drop(file);
    let counted = Counting::new(tokio::fs::File::open(&text).await.expect("open"));
    let total = counted.total.clone();
    let read = threadline_workspace::read_limited(counted, &limits.with_max_lines(usize::MAX))
        .await
        .expect("text");
    assert_eq!(read.content.len(), 10_000);
    assert_eq!(read.truncated, Some(Truncation::Bytes { limit: 10_000 }));
    assert_eq!(total.load(std::sync::atomic::Ordering::SeqCst), 10_001);
}

#[test]
fn binary_files_are_refused() {
    let (_dir, workspace) = setup();
    std::fs::write(
        workspace.root().join("image.png"),
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
    )
    .expect("png");
    let collected = collect(&workspace, "@image.png", Limits::default());
    assert_eq!(refusal_of(&collected, "@image.png"), &Refusal::Binary);
    assert!(collected.attachments.is_empty());
    assert_eq!(
        collected.report[0].to_string(),
        "attachment source `file_mentions`: @image.png: refused: a binary file (a NUL byte in \
         its first 8192 bytes)"
    );
}

#[test]
fn missing_paths_are_refused_with_a_reason() {
    let (_dir, workspace) = setup();
    let collected = collect(&workspace, "@nope.txt", Limits::default());
    assert_eq!(refusal_of(&collected, "@nope.txt"), &Refusal::NotFound);
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_instead_of_blocking() {
    let (_dir, workspace) = setup();
    let fifo = workspace.root().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo (coreutils) runs");
    assert!(made.success());
    let collected = collect(&workspace, "@pipe", Limits::default());
    assert_eq!(refusal_of(&collected, "@pipe"), &Refusal::NotRegular);
}

#[test]
fn the_workspace_root_must_exist() {
    assert!(Workspace::new(Path::new("/definitely/not/here")).is_err());
}

/// An `AsyncRead` that counts the bytes it hands out.
struct Counting<R> {
    inner: R,
    total: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R> Counting<R> {
    fn new(inner: R) -> Self {
        Counting {
            inner,
            total: Default::default(),
        }
    }
}

impl<R: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Counting<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let poll = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = (buf.filled().len() - before) as u64;
        self.total
            .fetch_add(read, std::sync::atomic::Ordering::SeqCst);
        poll
    }
}
