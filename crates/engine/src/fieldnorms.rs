//! Field norms for fields a segment predates. Schemas only grow (see ARCHITECTURE.md); a
//! segment written before a text field existed has no norms for it, and tantivy's merge needs
//! norms for every normed field of the schema, so such segments could never merge again. When
//! the schema grows, each segment's norms file is rewritten with the missing fields added as
//! "empty" (norm 0: the document has no tokens there, which is the truth).

use std::path::Path;

use tantivy::fieldnorm::{FieldNormReaders, FieldNormsSerializer};
use tantivy::index::SegmentComponent;
use tantivy::{Directory, Index};

use crate::directory::LazySyncDirectory;
use crate::{EsError, EsResult};

/// Adds norms for every normed schema field missing from a segment. Called with no writer open.
pub fn backfill(index: &Index, dir: &LazySyncDirectory, root: &Path) -> EsResult<usize> {
    let schema = index.schema();
    // The fields tantivy keeps norms for (its `fields_with_fieldnorm`, which is crate-private).
    let normed: Vec<_> = schema
        .fields()
        .filter(|(_, e)| e.is_indexed() && e.has_fieldnorms())
        .map(|(f, _)| f)
        .collect();
    let io = |e: &dyn std::fmt::Display| EsError::internal(format!("field norms: {e}"));
    let mut rewritten = 0;
    for segment in index.searchable_segments()? {
        let rel = segment.relative_path(SegmentComponent::FieldNorms);
        let file = index.directory().open_read(&rel).map_err(|e| io(&e))?;
        let readers = FieldNormReaders::open(file)?;
        let mut missing = false;
        for f in &normed {
            missing |= readers.get_field(*f)?.is_none();
        }
        if !missing {
            continue;
        }
        let max_doc = segment.meta().max_doc();
        let tmp = rel.with_extension("fieldnorm.grow");
        let _ = index.directory().delete(&tmp);
        let write = index.directory().open_write(&tmp).map_err(|e| io(&e))?;
        let mut out = FieldNormsSerializer::from_write(write)?;
        for f in &normed {
            let ids: Vec<u8> = match readers.get_field(*f)? {
                Some(r) => (0..max_doc).map(|d| r.fieldnorm_id(d)).collect(),
                None => vec![0; max_doc as usize],
            };
            out.serialize_field(*f, &ids)?;
        }
        out.close()?;
        // The new file replaces the old one atomically; open readers keep the old inode.
        let tmp_path = root.join(&tmp);
        std::fs::File::open(&tmp_path)?.sync_all()?;
        std::fs::rename(&tmp_path, root.join(&rel))?;
        dir.mark_replaced(&rel);
        rewritten += 1;
    }
    if rewritten > 0 {
        std::fs::File::open(root)?.sync_all()?;
    }
    Ok(rewritten)
}
