//! Tool use ids the API would reject, rewritten deterministically.

use threadline_validate::{is_valid_server_tool_use_id, is_valid_tool_use_id};
use threadline_wire::ContentBlock;

use crate::draft::{Draft, server_result_id};
use crate::report::{Pass, RepairKind, Report};

/// Step 1 of [`ensure_tool_result_pairing`](super::ensure_tool_result_pairing): the ids the
/// API would reject, rewritten in place (`ToolUseIdRewritten`, once per tool use).
///
/// A `tool_use` id and every `tool_result` id are mapped by the same pure function, so a
/// result still names its use; a `server_tool_use` id is mapped with the results of its own
/// message (server tool results never leave it).
pub(super) fn rewrite_invalid_ids(drafts: &mut [Draft<'_>], report: &mut Report) {
    for draft in drafts.iter_mut() {
        // Tool uses in user messages are removed later, not rewritten.
        let assistant = draft.is_assistant();
        let mut server_renames: Vec<(String, String)> = Vec::new();
        for block in &mut draft.blocks {
            match block {
                ContentBlock::ToolUse(tool_use)
                    if assistant && !is_valid_tool_use_id(&tool_use.id) =>
                {
                    let to = client_id(&tool_use.id);
                    let from = std::mem::replace(&mut tool_use.id, to.clone());
                    let kind = RepairKind::ToolUseIdRewritten { from, to };
                    report.push(Pass::EnsureToolResultPairing, kind, draft.origin);
                }
                ContentBlock::ToolResult(result) if !is_valid_tool_use_id(&result.tool_use_id) => {
                    result.tool_use_id = client_id(&result.tool_use_id);
                }
                ContentBlock::ServerToolUse(server_use)
                    if assistant && !is_valid_server_tool_use_id(&server_use.id) =>
                {
                    let to = server_id(&server_use.id);
                    let from = std::mem::replace(&mut server_use.id, to.clone());
                    server_renames.push((from.clone(), to.clone()));
                    let kind = RepairKind::ToolUseIdRewritten { from, to };
                    report.push(Pass::EnsureToolResultPairing, kind, draft.origin);
                }
                _ => {}
            }
        }
        if server_renames.is_empty() {
            continue;
        }
        for block in &mut draft.blocks {
            let Some(id) = server_result_id(block) else {
                continue;
            };
            let Some((_, to)) = server_renames.iter().find(|(from, _)| from == id) else {
                continue;
            };
            let to = to.clone();
            if let ContentBlock::Unknown(value) = block {
                if let Some(object) = value.as_object_mut() {
                    object.insert("tool_use_id".into(), serde_json::Value::String(to));
                }
            } else if let Some(result) = block.server_tool_result_mut() {
                result.tool_use_id = to;
            }
        }
    }
}

/// 32-bit FNV-1a: a fixed hash, so a rewritten id is the same on every run.
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |hash, &b| {
        (hash ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// `id` made to match `^[a-zA-Z0-9_-]+$`: other characters become `_`, and the hash of the
/// original is appended (`call|x` → `call_x_1a2b3c4d`).
pub(super) fn client_id(id: &str) -> String {
    let mut out: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() {
        out.push_str("toolu");
    }
    out.push_str(&format!("_{:08x}", fnv1a(id.as_bytes())));
    out
}

/// `id` made to match `^srvtoolu_[a-zA-Z0-9_]+$`, the same way.
pub(super) fn server_id(id: &str) -> String {
    let rest = id.strip_prefix("srvtoolu_").unwrap_or(id);
    let mut out = String::from("srvtoolu_");
    out.extend(
        rest.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }),
    );
    if rest.is_empty() {
        out.push_str(&format!("{:08x}", fnv1a(id.as_bytes())));
    } else {
        out.push_str(&format!("_{:08x}", fnv1a(id.as_bytes())));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn rewritten(blocks: Vec<ContentBlock>) -> (Vec<String>, Vec<RepairKind>) {
        let messages = [asst(blocks)];
        let mut drafts = drafts(&messages);
        let mut report = Report::default();
        rewrite_invalid_ids(&mut drafts, &mut report);
        let shapes = drafts[0].blocks.iter().map(block_shape).collect();
        (shapes, report.repairs.into_iter().map(|r| r.kind).collect())
    }

    #[test]
    fn rewritten_ids_match_the_pattern_and_stay_distinct() {
        for id in ["call|x", "call:x", "", "Bash:12", "消息", "a b"] {
            let to = client_id(id);
            assert!(is_valid_tool_use_id(&to), "{id:?} -> {to}");
            assert_eq!(client_id(id), to, "deterministic");
        }
        assert_ne!(client_id("call|x"), client_id("call:x"));
        for id in ["srv-1", "", "srvtoolu_", "srvtoolu_a-b", "toolu_1"] {
            let to = server_id(id);
            assert!(is_valid_server_tool_use_id(&to), "{id:?} -> {to}");
        }
    }

    #[test]
    fn a_server_tool_use_and_its_result_are_renamed_together() {
        let (shapes, repairs) = rewritten(vec![
            server_use("srv-1"),
            server_result("srv-1"),
            server_use("srvtoolu_ok"),
            server_result("srvtoolu_ok"),
        ]);
        let to = server_id("srv-1");
        assert_eq!(
            shapes,
            [
                format!("srv({to})"),
                format!("srvres({to})"),
                "srv(srvtoolu_ok)".to_owned(),
                "srvres(srvtoolu_ok)".to_owned()
            ]
        );
        assert_eq!(
            repairs,
            [RepairKind::ToolUseIdRewritten {
                from: "srv-1".into(),
                to
            }]
        );
    }
}
