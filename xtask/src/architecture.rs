//! ARCHITECTURE.md's dependency list against the workspace's real graph.
//!
//! The section "Dependency direction" of `ARCHITECTURE.md` holds a fenced block tagged
//! `deps`: one line per workspace package, `name -> dep, dep?, …`, naming the package's
//! **normal** dependencies on other workspace packages (`?`: optional, behind a feature;
//! dev- and build-dependencies are left out). The test below reads `cargo metadata
//! --format-version 1 --no-deps` and fails, with the lines that differ and the block as it
//! should read, when the two disagree.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// Package name → its normal workspace dependencies (`?`-suffixed when optional).
type Graph = BTreeMap<String, BTreeSet<String>>;

/// The block's opening fence.
const FENCE: &str = "```deps";

/// The graph the `deps` block of `markdown` documents.
fn documented(markdown: &str) -> Result<Graph, String> {
    let mut lines = markdown.lines().skip_while(|line| line.trim() != FENCE);
    if lines.next().is_none() {
        return Err(format!("no `{FENCE}` block"));
    }
    let mut graph = Graph::new();
    for line in lines.take_while(|line| line.trim() != "```") {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (name, deps) = line
            .split_once("->")
            .ok_or_else(|| format!("not `crate -> deps`: `{line}`"))?;
        let deps = deps
            .split(',')
            .map(str::trim)
            .filter(|dep| !dep.is_empty())
            .map(str::to_owned)
            .collect();
        if graph.insert(name.trim().to_owned(), deps).is_some() {
            return Err(format!("`{}` is listed twice", name.trim()));
        }
    }
    Ok(graph)
}

/// The real graph, from `cargo metadata --no-deps` output.
fn actual(metadata: &Value) -> Graph {
    let packages = metadata["packages"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let names: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    packages
        .iter()
        .filter_map(|package| {
            let name = package["name"].as_str()?;
            let deps = package["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|dep| dep["kind"].is_null())
                .filter_map(|dep| {
                    let dep_name = dep["name"].as_str()?;
                    let optional = dep["optional"].as_bool().unwrap_or(false);
                    names
                        .contains(dep_name)
                        .then(|| format!("{dep_name}{}", if optional { "?" } else { "" }))
                })
                .collect();
            Some((name.to_owned(), deps))
        })
        .collect()
}

/// One readable line per difference; empty when the two graphs agree.
fn diff(documented: &Graph, actual: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    let names: BTreeSet<&String> = documented.keys().chain(actual.keys()).collect();
    for name in names {
        match (documented.get(name), actual.get(name)) {
            (None, Some(deps)) => out.push(format!("missing line: {}", line(name, deps))),
            (Some(_), None) => out.push(format!("`{name}` is not a workspace package")),
            (Some(doc), Some(real)) => {
                for extra in doc.difference(real) {
                    out.push(format!(
                        "{name}: lists `{extra}`, which is not one of its normal dependencies"
                    ));
                }
                for missing in real.difference(doc) {
                    out.push(format!("{name}: depends on `{missing}`, not listed"));
                }
            }
            (None, None) => {}
        }
    }
    out
}

/// `name -> a, b` as the block writes it.
fn line(name: &str, deps: &BTreeSet<String>) -> String {
    let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
    format!("{name} -> {}", deps.join(", "))
        .trim_end()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::process::Command;

    use crate::util::{cargo, repo_root};

    #[test]
    fn the_architecture_dependency_list_is_the_workspace_graph() {
        let root = repo_root();
        let output = Command::new(cargo())
            .args(["metadata", "--format-version", "1", "--no-deps", "--quiet"])
            .current_dir(&root)
            .output()
            .expect("cargo metadata runs");
        assert!(output.status.success(), "cargo metadata failed");
        let metadata: Value = serde_json::from_slice(&output.stdout).expect("metadata is JSON");
        let real = actual(&metadata);
        let markdown =
            std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
        let doc = documented(&markdown).expect("ARCHITECTURE.md has a readable deps block");
        let problems = diff(&doc, &real);
        let expected: Vec<String> = real.iter().map(|(name, deps)| line(name, deps)).collect();
        assert!(
            problems.is_empty(),
            "ARCHITECTURE.md's `deps` block differs from `cargo metadata`:\n  {}\n\n\
             Its lines as they should read (any order):\n{}\n",
            problems.join("\n  "),
            expected.join("\n")
        );
    }

    #[test]
    fn the_block_parses_and_differences_are_named() {
        let markdown = "# A\n\n```deps\na -> b, c?\n\nb ->\nc -> b\n```\n\n```deps\nz -> y\n```\n";
        let doc = documented(markdown).expect("parses");
        assert_eq!(doc.len(), 3);
        assert!(doc["a"].contains("c?"));
        assert!(doc["b"].is_empty());
        let metadata = serde_json::json!({"packages": [
            {"name": "a", "dependencies": [
                {"name": "b", "kind": null, "optional": false},
                {"name": "c", "kind": null, "optional": true},
                {"name": "d", "kind": null, "optional": false},
                {"name": "serde", "kind": null, "optional": false}
            ]},
            {"name": "b", "dependencies": [{"name": "c", "kind": "dev", "optional": false}]},
            {"name": "c", "dependencies": []},
            {"name": "d", "dependencies": []}
        ]});
        let real = actual(&metadata);
        assert_eq!(line("a", &real["a"]), "a -> b, c?, d");
        assert_eq!(line("b", &real["b"]), "b ->");
        assert_eq!(
            diff(&doc, &real),
            [
                "a: depends on `d`, not listed",
                "c: lists `b`, which is not one of its normal dependencies",
                "missing line: d ->",
            ]
        );
        let mut unknown = doc.clone();
        unknown.insert("z".to_owned(), BTreeSet::new());
        assert_eq!(diff(&unknown, &doc), ["`z` is not a workspace package"]);
        assert!(documented("no block").is_err());
        assert!(documented("```deps\na -> b\na -> c\n```").is_err());
        assert!(documented("```deps\nnot a line\n```").is_err());
    }
}
