//! Index blocks (`index.blocks.*`), as Elasticsearch 8's `IndexMetadata.APIBlock`: each block
//! is a `ClusterBlock` with an id, a description, an HTTP status and the levels it blocks
//! (`READ`, `WRITE`, `METADATA_READ`, `METADATA_WRITE`). A blocked operation fails with a
//! `cluster_block_exception` whose reason and status follow `ClusterBlockException`.

use crate::settings::FlatSettings;
use crate::EsError;
use serde_json::Value;

/// What an operation does, as ES's `ClusterBlockLevel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Read,
    Write,
    MetadataRead,
    MetadataWrite,
}

/// The five API blocks, in ES's `APIBlock` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    ReadOnly,
    Read,
    Write,
    Metadata,
    ReadOnlyAllowDelete,
}

impl Block {
    pub const ALL: [Block; 5] = [
        Block::ReadOnly,
        Block::Read,
        Block::Write,
        Block::Metadata,
        Block::ReadOnlyAllowDelete,
    ];

    /// The name the `_block` API takes (`APIBlock#name`).
    pub fn name(self) -> &'static str {
        match self {
            Block::ReadOnly => "read_only",
            Block::Read => "read",
            Block::Write => "write",
            Block::Metadata => "metadata",
            Block::ReadOnlyAllowDelete => "read_only_allow_delete",
        }
    }

    pub fn setting(self) -> &'static str {
        match self {
            Block::ReadOnly => "index.blocks.read_only",
            Block::Read => "index.blocks.read",
            Block::Write => "index.blocks.write",
            Block::Metadata => "index.blocks.metadata",
            Block::ReadOnlyAllowDelete => "index.blocks.read_only_allow_delete",
        }
    }

    /// `APIBlock.fromName`.
    pub fn from_name(name: &str) -> Option<Block> {
        Block::ALL.into_iter().find(|b| b.name() == name)
    }

    fn id(self) -> u32 {
        match self {
            Block::ReadOnly => 5,
            Block::Read => 7,
            Block::Write => 8,
            Block::Metadata => 9,
            Block::ReadOnlyAllowDelete => 12,
        }
    }

    fn description(self) -> &'static str {
        match self {
            Block::ReadOnly => "index read-only (api)",
            Block::Read => "index read (api)",
            Block::Write => "index write (api)",
            Block::Metadata => "index metadata (api)",
            Block::ReadOnlyAllowDelete => {
                "disk usage exceeded flood-stage watermark, index has read-only-allow-delete block"
            }
        }
    }

    /// HTTP status; `RestStatus` name as ES prints it in the reason.
    fn status(self) -> (u16, &'static str) {
        match self {
            Block::ReadOnlyAllowDelete => (429, "TOO_MANY_REQUESTS"),
            _ => (403, "FORBIDDEN"),
        }
    }

    /// The levels each block covers (ES 8: `read_only_allow_delete` blocks writes only;
    /// deleting the index stays allowed).
    pub fn blocks(self, level: Level) -> bool {
        use Level::*;
        match self {
            Block::ReadOnly => matches!(level, Write | MetadataWrite),
            Block::Read => level == Read,
            Block::Write => level == Write,
            Block::Metadata => matches!(level, MetadataWrite | MetadataRead),
            Block::ReadOnlyAllowDelete => level == Write,
        }
    }

    /// `status/id/description`, as `ClusterBlockException` prints a block.
    fn describe(self) -> String {
        format!("{}/{}/{}", self.status().1, self.id(), self.description())
    }
}

/// A boolean index setting as ES reads it (`true`/`false`, booleans or strings).
pub fn flag(settings: &FlatSettings, key: &str) -> bool {
    match settings.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s == "true",
        _ => false,
    }
}

/// The blocks an index's settings set, in id order.
pub fn active(settings: &FlatSettings) -> Vec<Block> {
    let mut out: Vec<Block> = Block::ALL
        .into_iter()
        .filter(|b| flag(settings, b.setting()))
        .collect();
    out.sort_by_key(|b| b.id());
    out
}

/// The blocks of `settings` that block `level`.
pub fn blocking(settings: &FlatSettings, level: Level) -> Vec<Block> {
    active(settings)
        .into_iter()
        .filter(|b| b.blocks(level))
        .collect()
}

/// `ClusterBlockException` for index-level blocks: the reason lists each index with its
/// blocks; the status is 429 when every block is `TOO_MANY_REQUESTS`, else the highest
/// status of the others.
pub fn exception(per_index: &[(String, Vec<Block>)]) -> EsError {
    let mut reason = String::new();
    for (index, blocks) in per_index {
        let list: Vec<String> = blocks.iter().map(|b| b.describe()).collect();
        reason.push_str(&format!(
            "index [{index}] blocked by: [{}];",
            list.join(", ")
        ));
    }
    let all: Vec<Block> = per_index.iter().flat_map(|(_, b)| b.clone()).collect();
    let status = if all.iter().all(|b| b.status().0 == 429) {
        429
    } else {
        all.iter()
            .map(|b| b.status().0)
            .filter(|s| *s != 429)
            .max()
            .unwrap_or(403)
    };
    EsError::new(status, "cluster_block_exception", reason)
}

/// Fails when `settings` block `level` on `index`.
pub fn check(index: &str, settings: &FlatSettings, level: Level) -> crate::EsResult<()> {
    let b = blocking(settings, level);
    if b.is_empty() {
        Ok(())
    } else {
        Err(exception(&[(index.to_string(), b)]))
    }
}

/// `ClusterBlocks#indicesBlockedException`: one exception naming every blocked index.
pub fn check_all(
    indices: &[std::sync::Arc<crate::IndexService>],
    level: Level,
) -> crate::EsResult<()> {
    let blocked: Vec<(String, Vec<Block>)> = indices
        .iter()
        .map(|i| (i.name.clone(), i.blocks_for(level)))
        .filter(|(_, b)| !b.is_empty())
        .collect();
    if blocked.is_empty() {
        Ok(())
    } else {
        Err(exception(&blocked))
    }
}

/// `TransportUpdateSettingsAction#checkBlock`: a request that sets `read_only` or
/// `read_only_allow_delete`, or only `metadata`, passes metadata-write blocks (otherwise a
/// blocked index could never be unblocked).
pub fn settings_update_exempt(update: &FlatSettings) -> bool {
    (update.len() == 1 && update.contains_key(Block::Metadata.setting()))
        || update.contains_key(Block::ReadOnly.setting())
        || update.contains_key(Block::ReadOnlyAllowDelete.setting())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn s(pairs: &[(&str, Value)]) -> FlatSettings {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn write_block_message_and_status() {
        let st = s(&[("index.blocks.write", json!("true"))]);
        let e = check("logs", &st, Level::Write).unwrap_err();
        assert_eq!(e.status, 403);
        assert_eq!(e.kind, "cluster_block_exception");
        assert_eq!(
            e.reason,
            "index [logs] blocked by: [FORBIDDEN/8/index write (api)];"
        );
        assert!(check("logs", &st, Level::Read).is_ok());
        assert!(check("logs", &st, Level::MetadataWrite).is_ok());
    }

    #[test]
    fn levels_per_block() {
        let ro = s(&[("index.blocks.read_only", json!(true))]);
        assert!(check("i", &ro, Level::Write).is_err());
        assert!(check("i", &ro, Level::MetadataWrite).is_err());
        assert!(check("i", &ro, Level::Read).is_ok());
        assert!(check("i", &ro, Level::MetadataRead).is_ok());
        let md = s(&[("index.blocks.metadata", json!("true"))]);
        assert!(check("i", &md, Level::MetadataRead).is_err());
        assert!(check("i", &md, Level::Write).is_ok());
        let rd = s(&[("index.blocks.read", json!("true"))]);
        assert_eq!(
            check("i", &rd, Level::Read).unwrap_err().reason,
            "index [i] blocked by: [FORBIDDEN/7/index read (api)];"
        );
        let off = s(&[("index.blocks.read", json!("false"))]);
        assert!(check("i", &off, Level::Read).is_ok());
    }

    #[test]
    fn flood_stage_block_is_429_and_mixed_blocks_are_403() {
        let f = s(&[("index.blocks.read_only_allow_delete", json!("true"))]);
        let e = check("i", &f, Level::Write).unwrap_err();
        assert_eq!(e.status, 429);
        assert_eq!(e.reason, "index [i] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block];");
        assert!(check("i", &f, Level::MetadataWrite).is_ok());
        let both = s(&[
            ("index.blocks.read_only_allow_delete", json!("true")),
            ("index.blocks.write", json!("true")),
        ]);
        let e = check("i", &both, Level::Write).unwrap_err();
        assert_eq!(e.status, 403);
        assert!(e
            .reason
            .starts_with("index [i] blocked by: [FORBIDDEN/8/index write (api), TOO_MANY"));
    }

    #[test]
    fn block_settings_are_booleans() {
        let bad = s(&[("index.blocks.write", json!("yes"))]);
        let e = crate::settings::IndexConfig::from_flat(&bad).err().unwrap();
        assert_eq!(
            e.reason,
            "Failed to parse value [yes] as only [true] or [false] are allowed. for setting [index.blocks.write]"
        );
        let ok = s(&[("index.blocks.read", json!(false))]);
        assert!(crate::settings::IndexConfig::from_flat(&ok).is_ok());
    }

    #[test]
    fn settings_exemptions() {
        assert!(settings_update_exempt(&s(&[(
            "index.blocks.metadata",
            json!("false")
        )])));
        assert!(!settings_update_exempt(&s(&[
            ("index.blocks.metadata", json!("false")),
            ("index.refresh_interval", json!("1s"))
        ])));
        assert!(settings_update_exempt(&s(&[
            ("index.blocks.read_only", json!("false")),
            ("index.refresh_interval", json!("1s"))
        ])));
        assert!(!settings_update_exempt(&s(&[(
            "index.blocks.write",
            json!("false")
        )])));
    }
}
