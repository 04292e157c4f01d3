//! `cargo xtask e2e [--update-screenshot]`: `threadline inspect --html` of every real
//! transcript in `fixtures/`, opened in headless Chromium.
//!
//! For each fixture transcript the page (with `--plan default`, so recorded, predicted and
//! re-planned bars) must (1) hold one bar group per request the report
//! lists, in the DOM Chromium built (`--dump-dom`), (2) log no console error while loading, and
//! (3) draw: the screenshot must have the bar colours in the chart area. Before that, the same
//! checks run on two pages made to fail them (one logging a console error, one drawing the
//! chart's grid and threshold lines but no bar), so a
//! check that cannot fail is caught.
//!
//! Chromium comes from the distribution (`apt-get install chromium`, Debian's package, at
//! least [`MIN_CHROMIUM_MAJOR`]); it is installed when missing and the process may (root).
//! `--update-screenshot` writes the screenshot of [`README_FIXTURE`] to
//! [`README_SCREENSHOT`], the picture in the README.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::util::{Failure, TempDir, XResult, read_text, run_cargo};

/// The oldest Chromium major version accepted.
pub(crate) const MIN_CHROMIUM_MAJOR: u32 = 120;
/// The transcript whose picture the README shows.
pub(crate) const README_FIXTURE: &str = "fixtures/recorded/marot__spotter/tool_heavy.jsonl";
/// Where that picture is kept.
pub(crate) const README_SCREENSHOT: &str = "docs/inspect-timeline.png";
/// The window the screenshots are taken in.
const WINDOW: (u32, u32) = (1400, 720);
/// The rows of the screenshot where the token chart is (below the title, facts and legend).
const CHART_ROWS: std::ops::Range<u32> = 110..440;
/// Bar-coloured pixels the chart area must hold at least.
const MIN_BAR_PIXELS: usize = 2_000;

/// Requests of the synthetic long session the pages are also checked on.
const LONG_SESSION_REQUESTS: usize = 2_000;

/// A threadline transcript of `requests` prompt/answer pairs, a minute apart, with usage that
/// grows as a session's context does and an idle hour in the middle.
fn long_session(requests: usize) -> String {
    let mut out = String::new();
    for i in 0..requests {
        let minutes = i as u64 + if i >= requests / 2 { 60 } else { 0 };
        let at = |second: u64| {
            format!(
                "2026-11-{:02}T{:02}:{:02}:{:02}Z",
                1 + minutes / 1440,
                (minutes / 60) % 24,
                minutes % 60,
                second
            )
        };
        let read = 20_000 + 50 * i as u64;
        out.push_str(&format!(
            concat!(
                r#"{{"type":"user","id":"u{i}","timestamp":"{t0}","content":[{{"type":"text","text":"step {i}"}}]}}"#,
                "\n",
                r#"{{"type":"assistant","id":"a{i}","timestamp":"{t1}","api_message_id":"msg_{i}","request_id":"req_{i}","model":"claude-sonnet-4-6","content":[{{"type":"text","text":"done {i}"}}],"stop_reason":"end_turn","usage":{{"input_tokens":3,"cache_creation_input_tokens":60,"cache_read_input_tokens":{read},"output_tokens":12}}}}"#,
                "\n"
            ),
            i = i,
            t0 = at(0),
            t1 = at(5),
            read = read,
        ));
    }
    out
}

/// Arguments of `cargo xtask e2e`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct E2eArgs {
    /// Write the screenshot the README shows (`docs/inspect-timeline.png`).
    #[arg(long)]
    pub(crate) update_screenshot: bool,
}

pub(crate) fn run(root: &Path, args: &E2eArgs) -> XResult<()> {
    let chromium = ensure_chromium()?;
    run_cargo(
        "e2e",
        root,
        &["build", "-p", "threadline-cli", "--bin", "threadline"],
        &[],
    )?;
    let threadline = root.join("target/debug/threadline");
    let temp = TempDir::new("e2e")?;

    self_check(&chromium, temp.path())?;

    let mut transcripts = fixture_transcripts(root)?;
    if transcripts.is_empty() {
        return Err(Failure::new("e2e: no fixture transcript is indexed"));
    }
    // And a long session, which must still draw every request.
    let long = temp.path().join("long-session.jsonl");
    std::fs::write(&long, long_session(LONG_SESSION_REQUESTS))
        .map_err(|e| Failure::new(format!("e2e: {}: {e}", long.display())))?;
    transcripts.push(long.display().to_string());
    for (i, transcript) in transcripts.iter().enumerate() {
        let html = temp.path().join(format!("page-{i}.html"));
        let out = Command::new(&threadline)
            .current_dir(root)
            .args([
                "inspect", transcript, "--json", "--plan", "default", "--html",
            ])
            .arg(&html)
            .output()
            .map_err(|e| Failure::new(format!("e2e: cannot run threadline: {e}")))?;
        if !out.status.success() {
            return Err(Failure::new(format!(
                "e2e: threadline inspect {transcript} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        let report: Value = serde_json::from_slice(&out.stdout)
            .map_err(|e| Failure::new(format!("e2e: {transcript}: the report is not JSON: {e}")))?;
        let requests = report["requests"].as_array().map_or(0, Vec::len);
        let png = temp.path().join(format!("page-{i}.png"));
        let page = load(&chromium, &html, &png)?;
        page.expect_groups(requests, transcript)?;
        page.expect_no_console_error(transcript)?;
        let drawn = bar_pixels(&png)?;
        if drawn < MIN_BAR_PIXELS {
            return Err(Failure::new(format!(
                "e2e: {transcript}: the chart did not draw ({drawn} bar pixels, want ≥ {MIN_BAR_PIXELS})"
            )));
        }
        println!(
            "e2e: {transcript}: {requests} requests, {} bar groups, {drawn} bar pixels, no console error",
            page.groups
        );
        if args.update_screenshot && transcript == README_FIXTURE {
            let target = root.join(README_SCREENSHOT);
            if let Some(dir) = target.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| Failure::new(format!("e2e: {}: {e}", dir.display())))?;
            }
            std::fs::copy(&png, &target)
                .map_err(|e| Failure::new(format!("e2e: {}: {e}", target.display())))?;
            println!("e2e: wrote {README_SCREENSHOT}");
        }
    }
    println!("e2e: {} pages checked in {chromium}", transcripts.len());
    Ok(())
}

/// The Chromium binary, installed from the distribution's packages when missing.
fn ensure_chromium() -> XResult<String> {
    if let Some(found) = chromium_version("chromium") {
        return checked(found);
    }
    println!("e2e: chromium is missing; installing Debian's package");
    let apt = |args: &[&str]| -> XResult<()> {
        println!("e2e: $ apt-get {}", args.join(" "));
        let status = Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .map_err(|e| {
                Failure::new(format!(
                    "e2e: cannot run apt-get (install chromium by hand): {e}"
                ))
            })?;
        if status.success() {
            Ok(())
        } else {
            Err(Failure::new(format!(
                "e2e: apt-get {} failed ({status})",
                args.join(" ")
            )))
        }
    };
    apt(&["update", "-qq"])?;
    apt(&[
        "install",
        "-y",
        "-qq",
        "--no-install-recommends",
        "chromium",
    ])?;
    let found = chromium_version("chromium")
        .ok_or_else(|| Failure::new("e2e: chromium was installed but does not run"))?;
    checked(found)
}

fn checked((binary, major): (String, u32)) -> XResult<String> {
    if major < MIN_CHROMIUM_MAJOR {
        return Err(Failure::new(format!(
            "e2e: Chromium {major} is older than {MIN_CHROMIUM_MAJOR}"
        )));
    }
    Ok(binary)
}

/// `(binary, major version)` if `binary --version` prints `Chromium N.…`.
fn chromium_version(binary: &str) -> Option<(String, u32)> {
    let out = Command::new(binary).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let major = text
        .split_whitespace()
        .skip_while(|w| *w != "Chromium")
        .nth(1)?
        .split('.')
        .next()?
        .parse()
        .ok()?;
    Some((binary.to_owned(), major))
}

/// What Chromium saw of a page.
struct Page {
    groups: usize,
    console_errors: Vec<String>,
}

impl Page {
    fn expect_groups(&self, requests: usize, what: &str) -> XResult<()> {
        if self.groups == requests {
            Ok(())
        } else {
            Err(Failure::new(format!(
                "e2e: {what}: {} bar groups for {requests} requests",
                self.groups
            )))
        }
    }

    fn expect_no_console_error(&self, what: &str) -> XResult<()> {
        match self.console_errors.first() {
            None => Ok(()),
            Some(first) => Err(Failure::new(format!(
                "e2e: {what}: {} console errors, the first: {first}",
                self.console_errors.len()
            ))),
        }
    }
}

fn headless(chromium: &str) -> Command {
    let mut command = Command::new(chromium);
    command.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-extensions",
        "--enable-logging=stderr",
        "--v=0",
    ]);
    command
}

/// Loads `html` twice: once for the DOM (and its console), once for the screenshot.
fn load(chromium: &str, html: &Path, png: &Path) -> XResult<Page> {
    let url = format!("file://{}", html.display());
    let dom = headless(chromium)
        .args(["--dump-dom", &url])
        .output()
        .map_err(|e| Failure::new(format!("e2e: cannot run {chromium}: {e}")))?;
    if !dom.status.success() {
        return Err(Failure::new(format!(
            "e2e: {chromium} --dump-dom failed: {}",
            String::from_utf8_lossy(&dom.stderr)
        )));
    }
    let text = String::from_utf8_lossy(&dom.stdout);
    let groups = text.matches(r#"<g class="request""#).count();
    let console_errors = console_errors(&String::from_utf8_lossy(&dom.stderr));
    let shot = headless(chromium)
        .arg(format!("--window-size={},{}", WINDOW.0, WINDOW.1))
        .arg(format!("--screenshot={}", png.display()))
        .arg(&url)
        .output()
        .map_err(|e| Failure::new(format!("e2e: cannot run {chromium}: {e}")))?;
    if !shot.status.success() || !png.is_file() {
        return Err(Failure::new(format!(
            "e2e: {chromium} --screenshot failed: {}",
            String::from_utf8_lossy(&shot.stderr)
        )));
    }
    Ok(Page {
        groups,
        console_errors,
    })
}

/// The console messages Chromium logged on stderr (with `--enable-logging=stderr`, each is a
/// log line naming `CONSOLE`). Chromium logs them all at one level, so an error cannot be told
/// from a `console.log`; the page runs no script, so every console message (a resource that
/// failed to load, an uncaught error) counts as an error.
pub(crate) fn console_errors(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|line| line.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect()
}

/// Pixels of the chart area in the bar colours (blue cache reads, orange cache writes, red
/// uncached input, at any of the opacities the page uses over white).
fn bar_pixels(png: &Path) -> XResult<usize> {
    let file = std::fs::File::open(png)
        .map_err(|e| Failure::new(format!("e2e: {}: {e}", png.display())))?;
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder
        .read_info()
        .map_err(|e| Failure::new(format!("e2e: {}: not a PNG: {e}", png.display())))?;
    let mut buffer = vec![0; reader.output_buffer_size().unwrap_or(0)];
    let info = reader
        .next_frame(&mut buffer)
        .map_err(|e| Failure::new(format!("e2e: {}: {e}", png.display())))?;
    let channels = info.color_type.samples();
    if channels < 3 {
        return Err(Failure::new(format!(
            "e2e: {}: not a colour image",
            png.display()
        )));
    }
    let mut count = 0;
    for y in CHART_ROWS.start..CHART_ROWS.end.min(info.height) {
        for x in 0..info.width {
            let at = (y as usize * info.width as usize + x as usize) * channels;
            let (r, g, b) = (buffer[at], buffer[at + 1], buffer[at + 2]);
            if is_bar_colour(r, g, b) {
                count += 1;
            }
        }
    }
    Ok(count)
}

/// The bars' blue (green above red: not the purple threshold lines), orange or red,
/// saturated enough not to be text, grid or background.
fn is_bar_colour(r: u8, g: u8, b: u8) -> bool {
    let (r, g, b) = (i32::from(r), i32::from(g), i32::from(b));
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    let blue = b > r + 30 && g > r;
    let warm = r > b + 60 && r > 150;
    max - min >= 50 && (blue || warm)
}

/// The checks must be able to fail: a page that logs a console error, and a page that draws
/// everything of the token chart but the bars (grid, labels, thresholds), are both caught.
fn self_check(chromium: &str, dir: &Path) -> XResult<()> {
    let noisy = dir.join("noisy.html");
    let blank = dir.join("blank.html");
    std::fs::write(
        &noisy,
        r#"<!DOCTYPE html><html><body><svg><g class="request"></g></svg><script>console.error("e2e self-check");</script></body></html>"#,
    )
    .map_err(|e| Failure::new(format!("e2e: {e}")))?;
    // Everything the token chart draws but the bars: grid, labels and the threshold lines
    // (purple, across the whole chart).
    let lines: String = (0..4)
        .map(|i| {
            format!(
                r##"<line x1="70" x2="1380" y1="{y}" y2="{y}" stroke="#7c3aed" stroke-width="3"/><line x1="70" x2="1380" y1="{z}" y2="{z}" stroke="#a855f7" stroke-width="3"/><line x1="70" x2="1380" y1="{g}" y2="{g}" stroke="#e5e7eb"/><text x="60" y="{g}" fill="#374151">{g}</text>"##,
                g = 150 + 60 * i,
                y = 140 + 60 * i,
                z = 170 + 60 * i
            )
        })
        .collect();
    std::fs::write(
        &blank,
        format!(
            r#"<!DOCTYPE html><html><body style="margin:16px"><div style="height:90px"></div><svg width="1400" height="400">{lines}</svg></body></html>"#
        ),
    )
    .map_err(|e| Failure::new(format!("e2e: {e}")))?;
    let page = load(chromium, &noisy, &dir.join("noisy.png"))?;
    if page.console_errors.is_empty() {
        return Err(Failure::new(
            "e2e: self-check: a console.error was not seen, so the console check cannot fail",
        ));
    }
    if page.groups != 1 {
        return Err(Failure::new(format!(
            "e2e: self-check: {} bar groups seen in a page with one",
            page.groups
        )));
    }
    load(chromium, &blank, &dir.join("blank.png"))?;
    let drawn = bar_pixels(&dir.join("blank.png"))?;
    if drawn >= MIN_BAR_PIXELS {
        return Err(Failure::new(format!(
            "e2e: self-check: a chart without bars has {drawn} bar pixels, so the drawing check cannot fail"
        )));
    }
    println!("e2e: self-check: a console error and a chart without bars are both caught");
    Ok(())
}

/// The Claude Code transcripts `fixtures/canonical/index.json` lists, relative to the root.
fn fixture_transcripts(root: &Path) -> XResult<Vec<String>> {
    let index: Value =
        serde_json::from_str(&read_text(&root.join("fixtures/canonical/index.json"))?)
            .map_err(|e| Failure::new(format!("e2e: the fixture index is not JSON: {e}")))?;
    Ok(index["files"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["kind"] == "claude_code_transcript")
        .filter_map(|f| f["path"].as_str().map(str::to_owned))
        .collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_messages_are_told_from_other_log_lines() {
        let stderr = "[1:1:1201/113602.320533:ERROR:dbus/bus.cc:405] Failed to connect to the bus\n\
                      [1:1:1201/113602.1:WARNING:media/gpu/vaapi/vaapi_wrapper.cc:1655] no devices\n\
                      [1:1:1201/113754.083464:INFO:CONSOLE:1] \"boom\", source: file:///x.html (1)\n";
        let errors = console_errors(stderr);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("boom"));
    }

    #[test]
    fn bar_colours_are_not_text_or_background() {
        for (r, g, b) in [
            (0x3b, 0x82, 0xf6),
            (0xf5, 0x9e, 0x0b),
            (0xef, 0x44, 0x44),
            (0x9d, 0xc0, 0xfa),
        ] {
            assert!(is_bar_colour(r, g, b), "{r} {g} {b}");
        }
        for (r, g, b) in [
            (255, 255, 255),
            (0x11, 0x18, 0x27),
            (0xe5, 0xe7, 0xeb),
            (0x37, 0x41, 0x51),
        ] {
            assert!(!is_bar_colour(r, g, b), "{r} {g} {b}");
        }
    }
}
