//! The `## Feature flags` section of the crate docs lists every feature of `Cargo.toml`, in
//! its order, and nothing else.

/// The feature names of the manifest's `[features]` table, in order.
fn manifest_features(manifest: &str) -> Vec<String> {
    manifest
        .lines()
        .skip_while(|line| line.trim() != "[features]")
        .skip(1)
        .take_while(|line| !line.trim_start().starts_with('['))
        .filter(|line| !line.trim_start().starts_with('#'))
        .filter_map(|line| line.split_once('=').map(|(name, _)| name.trim().to_owned()))
        .filter(|name| !name.is_empty())
        .collect()
}

/// The features the doc section names: each `//! - `name`: …` item, in order.
fn documented_features(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|line| line.strip_prefix("//!"))
        .map(str::trim_start)
        .skip_while(|line| *line != "## Feature flags")
        .skip(1)
        .take_while(|line| !line.starts_with('#'))
        .filter_map(|line| line.strip_prefix("- `"))
        .filter_map(|item| item.split_once("`:").map(|(name, _)| name.to_owned()))
        .collect()
}

#[test]
fn the_feature_flags_section_lists_every_feature_of_the_manifest() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let manifest = std::fs::read_to_string(format!("{dir}/Cargo.toml")).expect("Cargo.toml");
    let lib = std::fs::read_to_string(format!("{dir}/src/lib.rs")).expect("src/lib.rs");
    let features = manifest_features(&manifest);
    assert_eq!(features.first().map(String::as_str), Some("default"));
    assert!(features.len() >= 13, "{features:?}");
    assert_eq!(documented_features(&lib), features);
}

#[test]
fn the_parsers_read_what_they_are_given() {
    let manifest = "[package]\nname = \"x\"\n\n[features]\n# a comment\ndefault = [\"a\"]\na = []\n\n[dependencies]\nb = \"1\"\n";
    assert_eq!(manifest_features(manifest), ["default", "a"]);
    let lib = "//! Intro.\n//!\n//! ## Feature flags\n//!\n//! - `default`: `a`.\n//! - `a`: the\n//!   module.\n//!\n//! ## Next\n//! - `b`: not a feature.\n";
    assert_eq!(documented_features(lib), ["default", "a"]);
}
