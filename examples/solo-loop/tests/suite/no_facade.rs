//! `cargo tree -p solo-loop -e normal`: the facade is nowhere in the agent's dependencies.

use std::process::Command;

#[test]
fn the_facade_is_not_a_dependency() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args([
            "tree",
            "-p",
            "solo-loop",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let tree = String::from_utf8(output.stdout).expect("UTF-8");
    let lines: Vec<&str> = tree.lines().collect();
    assert!(lines[0].starts_with("solo-loop v"), "{tree}");
    for expected in [
        "threadline-query v",
        "threadline-compact v",
        "threadline-cache v",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(expected)),
            "{expected}: {tree}"
        );
    }
    let facade: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("threadline v"))
        .collect();
    assert_eq!(facade, Vec::<&&str>::new(), "{tree}");
}
