//! Property tests: random appends with random duplicate ids and random JSON texts load back as
//! the first occurrence of each id, in order, byte for byte; random key parts stay opaque.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use threadline_store::{Entry, JsonlStore, MemoryStore, SessionKey, SessionStore, SqliteStore};

use crate::common::block_on;

/// Whitespace JSON allows between tokens.
fn ws() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["", "", "", " ", "  ", "\t", " \t "])
}

/// A JSON string literal: escaped by serde_json, or with `\u` escapes of its own.
fn string_literal() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>().prop_map(|s| serde_json::to_string(&s).unwrap_or_default()),
        prop::collection::vec(any::<char>(), 0..6).prop_map(|chars| {
            let mut out = String::from("\"");
            for c in chars {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            out.push('"');
            out
        }),
        Just(r#""é中😀 \"\\\/\b\f\n\r\t""#.to_owned()),
    ]
}

/// A JSON value as text with odd spacing and number spellings.
fn value_text() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("false".to_owned()),
        prop::sample::select(vec![
            "1.0e10",
            "-0",
            "0.50",
            "1E-7",
            "12345678901234567890123",
            "-1.5e+300"
        ])
        .prop_map(str::to_owned),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:?}")),
        string_literal(),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            (prop::collection::vec((inner.clone(), ws()), 0..4), ws()).prop_map(|(items, w)| {
                let body: Vec<String> = items
                    .into_iter()
                    .map(|(v, w)| format!("{w}{v}{w}"))
                    .collect();
                format!("[{w}{}]", body.join(","))
            }),
            (prop::collection::vec((key_name(), inner, ws()), 0..4)).prop_map(members),
        ]
    })
}

/// Top-level keys other than `uuid`, including ones the store never heard of.
fn key_name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,3}",
        Just("uuidx".to_owned()),
        Just("Uuid".to_owned()),
        Just("".to_owned())
    ]
}

fn members(items: Vec<(String, String, &'static str)>) -> String {
    let body: Vec<String> = items
        .into_iter()
        .map(|(k, v, w)| {
            format!(
                "{w}{}{w}:{w}{v}",
                serde_json::to_string(&k).unwrap_or_default()
            )
        })
        .collect();
    format!("{{{}}}", body.join(","))
}

/// One entry: an object with an optional `uuid` from a small pool (so ids repeat) placed
/// among random members.
fn entry_text() -> impl Strategy<Value = (Option<u8>, String)> {
    (
        prop::option::weighted(0.8, 0u8..12),
        prop::collection::vec((key_name(), value_text(), ws()), 0..4),
        any::<prop::sample::Index>(),
        ws(),
    )
        .prop_map(|(id, mut items, at, w)| {
            if let Some(id) = id {
                let at = at.index(items.len() + 1);
                items.insert(at, ("uuid".to_owned(), format!("\"id-{id}\""), w));
            }
            (id, members(items))
        })
}

fn batches() -> impl Strategy<Value = Vec<Vec<(Option<u8>, String)>>> {
    prop::collection::vec(prop::collection::vec(entry_text(), 0..6), 1..8)
}

/// Appends `batches` to a fresh key of `store`, checking each call's counts and the load
/// against the model: the first occurrence of each id, entries without one always, in order.
fn check(store: &dyn SessionStore, project: &str, batches: &[Vec<(Option<u8>, String)>]) {
    let key = SessionKey::new(project, "s").expect("key");
    let mut seen = HashSet::new();
    let mut expected: Vec<Vec<u8>> = Vec::new();
    for batch in batches {
        let entries: Vec<Entry> = batch
            .iter()
            .map(|(_, text)| Entry::new(text.clone().into_bytes()).expect("valid by construction"))
            .collect();
        let mut written = 0;
        for ((id, text), e) in batch.iter().zip(&entries) {
            // Duplicate top-level keys: the parser's last `uuid` wins; the model follows it.
            assert_eq!(
                e.id().map(str::to_owned),
                id.map(|i| format!("id-{i}")),
                "{text}"
            );
            if id.is_none_or(|id| seen.insert(id)) {
                expected.push(text.clone().into_bytes());
                written += 1;
            }
        }
        let done = block_on(store.append(&key, &entries)).expect("append");
        assert_eq!(
            (done.written, done.duplicates),
            (written, entries.len() - written)
        );
    }
    let loaded = block_on(store.load(&key)).expect("load");
    let loaded: Vec<Vec<u8>> = loaded
        .unwrap_or_default()
        .iter()
        .map(|e| e.bytes().to_vec())
        .collect();
    assert_eq!(loaded, expected);
}

static CASE: AtomicUsize = AtomicUsize::new(0);

fn fresh_project() -> String {
    format!("case-{}", CASE.fetch_add(1, Ordering::Relaxed))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn memory_loads_the_first_occurrence_of_each_id(batches in batches()) {
        check(&MemoryStore::new(), "p", &batches);
    }

    #[test]
    fn jsonl_loads_the_first_occurrence_of_each_id(batches in batches()) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = JsonlStore::new(dir.path());
        check(&store, "p", &batches);
        // A fresh store (another process) reads the same ids from the file.
        check(&JsonlStore::new(dir.path()), &fresh_project(), &batches);
    }

    /// Random key parts: the file is under the root, one segment per part, and lists back.
    #[test]
    fn jsonl_keeps_any_key_part_opaque(
        project in "[^\\p{Cc}]{1,40}",
        session in "[^\\p{Cc}]{1,40}",
        subpath in "[^\\p{Cc}]{1,40}",
    ) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = JsonlStore::new(dir.path());
        let key = SessionKey::new(project.clone(), session.clone()).expect("key");
        let sub = key.with_subpath(subpath.clone()).expect("subkey");
        let e = Entry::new(&b"{}"[..]).expect("entry");
        // Up to 40 characters of 4 bytes each, percent-encoded, can pass the 255-byte limit of
        // a file name: such a key is refused, as the store documents, and nothing is written.
        let too_long = [&project, &session, &subpath].iter().any(|part| part.len() * 3 > 200);
        match block_on(store.append(&sub, std::slice::from_ref(&e))) {
            Err(threadline_store::StoreError::InvalidKey { reason, .. }) => {
                prop_assert!(too_long, "refused a short key: {}", reason);
                prop_assert!(reason.contains("too long"), "{}", reason);
                prop_assert!(store.path_of(&sub).is_err());
                let written = std::fs::read_dir(dir.path()).map_or(0, |d| d.count());
                prop_assert_eq!(written, 0);
                return Ok(());
            }
            appended => appended.expect("append"),
        };
        let path = store.path_of(&sub).expect("path");
        let below = path.strip_prefix(dir.path()).expect("under the root");
        prop_assert_eq!(below.components().count(), 3);
        prop_assert!(below.components().all(|c| matches!(c, std::path::Component::Normal(_))));
        let listed = block_on(store.list_sessions(&project)).expect("list");
        prop_assert_eq!(listed.iter().map(|i| i.session.clone()).collect::<Vec<_>>(), vec![session]);
        prop_assert_eq!(block_on(store.list_subkeys(&key)).expect("subkeys"), vec![subpath]);
        prop_assert_eq!(block_on(store.load(&sub)).expect("load"), Some(vec![e]));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn sqlite_loads_the_first_occurrence_of_each_id(batches in batches()) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = SqliteStore::open(dir.path().join("p.db")).expect("open");
        check(&store, "p", &batches);
    }
}
