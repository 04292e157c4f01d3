//! The packaging step: every publishable crate packages alone, in dependency order.
//!
//! `cargo package --workspace --exclude <each publish = false member> --no-verify
//! --allow-dirty` packages the publishable crates together: cargo orders them by dependency
//! and resolves the internal dependencies against a local registry of the crates it just
//! packaged, so a crate that needs an unpublished one (a dev-dependency on the testkit that
//! carries a `version`) fails here as it would on `cargo publish`. Any `warning:` cargo
//! prints (missing metadata, a target whose file is left out of the package) fails the step.
//!
//! Why `--no-verify`: verification builds every packaged crate again from its tarball in
//! `target/package/`, outside the workspace, so without its profiles (full debug info) and
//! with every dependency rebuilt per crate. On the 2-core CI machine that took 17 min 24 s
//! and 2.3 GB of `target/`, against about 20 s without. What the build would catch that
//! packaging alone does not is a file the package leaves out, so instead each crate's
//! `cargo package --list` must hold its manifest, the root file of each library and binary
//! target, and every file its sources `include_str!`/`include_bytes!`; and the manifest must
//! carry `description`, `license`, `repository` and `readme`.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::{Failure, XResult, cargo};

/// One workspace member that `cargo publish` would upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Publishable {
    /// The package name.
    pub(crate) name: String,
    /// The directory holding its `Cargo.toml`.
    pub(crate) dir: PathBuf,
    /// The root source files of its library and binary targets.
    pub(crate) roots: Vec<PathBuf>,
}

/// The workspace members split into publishable ones and the names of the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Members {
    /// Members without `publish = false`, in `cargo metadata` order.
    pub(crate) publishable: Vec<Publishable>,
    /// Names of the `publish = false` members.
    pub(crate) unpublished: Vec<String>,
}

/// Runs `cargo <args>` in `root` and returns its stdout; stderr is shown and returned too.
pub(crate) fn cargo_output(root: &Path, args: &[&str]) -> XResult<(String, String)> {
    let output = Command::new(cargo())
        .args(args)
        .current_dir(root)
        .output()
        .map_err(|e| Failure::new(format!("cannot run cargo {}: {e}", args.join(" "))))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    eprint!("{stderr}");
    if output.status.success() {
        Ok((stdout, stderr))
    } else {
        Err(Failure::new(format!(
            "`cargo {}` failed ({})",
            args.join(" "),
            output.status
        )))
    }
}

/// The lines of cargo's output that are warnings.
pub(crate) fn warnings(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| line.trim_start().starts_with("warning:"))
        .collect()
}

/// Reads the workspace members from `cargo metadata --no-deps` output.
pub(crate) fn members(metadata: &Value) -> XResult<Members> {
    let packages = metadata["packages"]
        .as_array()
        .ok_or_else(|| Failure::new("cargo metadata: no `packages` array"))?;
    let mut out = Members {
        publishable: Vec::new(),
        unpublished: Vec::new(),
    };
    let mut missing = Vec::new();
    for package in packages {
        let name = package["name"].as_str().unwrap_or_default().to_owned();
        // `publish = false` is an empty registry list; absent (null) means crates.io.
        if package["publish"].as_array().is_some_and(Vec::is_empty) {
            out.unpublished.push(name);
            continue;
        }
        for field in ["description", "license", "repository", "readme"] {
            if package[field].as_str().is_none_or(str::is_empty) {
                missing.push(format!("{name}: `{field}`"));
            }
        }
        let manifest = PathBuf::from(package["manifest_path"].as_str().unwrap_or_default());
        let dir = manifest.parent().map(Path::to_path_buf).unwrap_or_default();
        let roots = package["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| {
                t["kind"].as_array().is_some_and(|kinds| {
                    kinds
                        .iter()
                        .any(|k| matches!(k.as_str(), Some("lib" | "rlib" | "bin")))
                })
            })
            .filter_map(|t| t["src_path"].as_str().map(PathBuf::from))
            .collect();
        out.publishable.push(Publishable { name, dir, roots });
    }
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(Failure::new(format!(
            "publishable crates lack manifest fields crates.io shows: {}",
            missing.join(", ")
        )))
    }
}

/// The string literals of `include_str!("…")` and `include_bytes!("…")` in `source`.
pub(crate) fn included_paths(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    for mac in ["include_str!(", "include_bytes!("] {
        let mut rest = source;
        while let Some(at) = rest.find(mac) {
            rest = &rest[at + mac.len()..];
            let literal = rest.trim_start();
            if let Some(body) = literal.strip_prefix('"')
                && let Some(end) = body.find('"')
            {
                out.push(body[..end].to_owned());
            }
        }
    }
    out
}

/// `path` with `.` and `..` resolved lexically; `None` if it climbs above its start.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// What a crate's package must hold that `listed` (its `cargo package --list`) lacks.
pub(crate) fn missing_files(
    crate_dir: &Path,
    roots: &[PathBuf],
    listed: &BTreeSet<String>,
) -> XResult<Vec<String>> {
    let mut needed = vec!["Cargo.toml".to_owned(), "README.md".to_owned()];
    for root in roots {
        if let Ok(rel) = root.strip_prefix(crate_dir) {
            needed.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
    let src = crate_dir.join("src");
    for file in rust_files(&src)? {
        let text = std::fs::read_to_string(&file)
            .map_err(|e| Failure::new(format!("cannot read {}: {e}", file.display())))?;
        let dir = file.parent().unwrap_or(&src);
        for included in included_paths(&text) {
            let resolved = dir
                .join(&included)
                .strip_prefix(crate_dir)
                .ok()
                .and_then(normalize);
            match resolved {
                Some(rel) => needed.push(rel.to_string_lossy().replace('\\', "/")),
                None => needed.push(format!("{included} (included by {})", file.display())),
            }
        }
    }
    Ok(needed
        .into_iter()
        .filter(|f| !listed.contains(f))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect())
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> XResult<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| Failure::new(format!("cannot read {}: {e}", dir.display())))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The step: see the module documentation.
pub(crate) fn run(root: &Path) -> XResult<()> {
    let (metadata, _) = cargo_output(
        root,
        &["metadata", "--no-deps", "--format-version", "1", "--quiet"],
    )?;
    let metadata: Value = serde_json::from_str(&metadata)
        .map_err(|e| Failure::new(format!("cargo metadata: not JSON: {e}")))?;
    let members = members(&metadata)?;

    let mut args = vec!["package", "--workspace"];
    for name in &members.unpublished {
        args.extend(["--exclude", name.as_str()]);
    }
    args.extend(["--no-verify", "--allow-dirty"]);
    println!("ci: $ cargo {}", args.join(" "));
    let (_, stderr) = cargo_output(root, &args)?;
    let warned = warnings(&stderr);
    if !warned.is_empty() {
        return Err(Failure::new(format!(
            "cargo package warned: {}",
            warned.join(" | ")
        )));
    }

    let mut problems = Vec::new();
    for package in &members.publishable {
        let args = ["package", "--list", "--allow-dirty", "-p", &package.name];
        let (list, stderr) = cargo_output(root, &args)?;
        let listed: BTreeSet<String> = list.lines().map(str::to_owned).collect();
        for warning in warnings(&stderr) {
            problems.push(format!("{}: {warning}", package.name));
        }
        for file in missing_files(&package.dir, &package.roots, &listed)? {
            problems.push(format!("{}: the package lacks {file}", package.name));
        }
    }
    if !problems.is_empty() {
        return Err(Failure::new(problems.join("; ")));
    }
    let names: Vec<&str> = members
        .publishable
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    println!(
        "package: {} crates package alone ({}); not published: {}",
        names.len(),
        names.join(", "),
        members.unpublished.join(", ")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata() -> Value {
        serde_json::json!({
            "packages": [
                {
                    "name": "a", "publish": null, "description": "d", "license": "MIT",
                    "repository": "r", "readme": "README.md",
                    "manifest_path": "/w/crates/a/Cargo.toml",
                    "targets": [
                        {"kind": ["lib"], "src_path": "/w/crates/a/src/lib.rs"},
                        {"kind": ["test"], "src_path": "/w/crates/a/tests/all.rs"},
                        {"kind": ["bin"], "src_path": "/w/crates/a/src/main.rs"}
                    ]
                },
                {"name": "kit", "publish": [], "manifest_path": "/w/crates/kit/Cargo.toml"}
            ]
        })
    }

    #[test]
    fn publish_false_members_are_excluded_and_roots_are_lib_and_bin() {
        let members = members(&metadata()).expect("complete metadata");
        assert_eq!(members.unpublished, vec!["kit".to_owned()]);
        assert_eq!(
            members.publishable,
            vec![Publishable {
                name: "a".to_owned(),
                dir: PathBuf::from("/w/crates/a"),
                roots: vec![
                    PathBuf::from("/w/crates/a/src/lib.rs"),
                    PathBuf::from("/w/crates/a/src/main.rs"),
                ],
            }]
        );
    }

    #[test]
    fn a_publishable_crate_without_readme_or_repository_fails_naming_both() {
        let mut metadata = metadata();
        metadata["packages"][0]["readme"] = Value::Null;
        metadata["packages"][0]["repository"] = Value::Null;
        let failure = members(&metadata).expect_err("fields missing");
        assert_eq!(
            failure.message,
            "publishable crates lack manifest fields crates.io shows: a: `repository`, a: `readme`"
        );
    }

    #[test]
    fn included_paths_are_the_literals_of_both_macros() {
        let source = r#"const A: &str = include_str!("../data/a.json");
            const B: &[u8] = include_bytes!( "b.bin" );
            const C: &str = include_str!(concat!("x", "y"));"#;
        assert_eq!(
            included_paths(source),
            vec!["../data/a.json".to_owned(), "b.bin".to_owned()]
        );
    }

    #[test]
    fn only_cargo_warning_lines_count() {
        let stderr = "   Packaging a v0.1.0\nwarning: manifest has no documentation\n  = note: x\n";
        assert_eq!(
            warnings(stderr),
            vec!["warning: manifest has no documentation"]
        );
    }

    #[test]
    fn a_file_outside_the_crate_or_left_out_is_missing() {
        let dir = std::env::temp_dir().join(format!("xtask-publish-{}", std::process::id()));
        let src = dir.join("src");
        std::fs::create_dir_all(&src).expect("temp dir");
        std::fs::write(
            src.join("lib.rs"),
            r#"const A: &str = include_str!("../data/a.json");
               const B: &str = include_str!("../../../fixtures/b.json");"#,
        )
        .expect("write lib.rs");
        let listed: BTreeSet<String> = ["Cargo.toml", "README.md", "src/lib.rs"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        let missing = missing_files(&dir, &[src.join("lib.rs")], &listed).expect("reads");
        std::fs::remove_dir_all(&dir).expect("clean up");
        assert_eq!(
            missing,
            vec![
                format!(
                    "../../../fixtures/b.json (included by {})",
                    src.join("lib.rs").display()
                ),
                "data/a.json".to_owned(),
            ]
        );
    }
}
