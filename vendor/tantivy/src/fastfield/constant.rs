//! Lode patch: string columns whose every row holds one value, whatever the segment stored.
//!
//! Elasticsearch's `constant_keyword` reads its value from the mapping for every document of the
//! index (`ConstantIndexFieldData`), including documents indexed before the value was set, which
//! stored nothing. Lode registers such a column's value on the [`Index`](crate::Index); every
//! consumer of [`FastFieldReaders`](super::FastFieldReaders) (aggregations, sorts, doc values,
//! scripts) then reads a column holding it on every row, so no consumer needs to know. Merges
//! read the stored columns (`FastFieldReaders::columnar`) and are unaffected.
//!
//! A segment's constant column is built once (a `ColumnarWriter` over its rows) and kept until
//! the segment leaves the index's searchable set.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, RwLock};

use columnar::{ColumnarReader, ColumnarWriter, DynamicColumnHandle, RowId};

use crate::index::SegmentId;

/// The constant string columns of an index, shared by its clones and segment readers.
#[derive(Clone, Default)]
pub struct ConstantColumns(Arc<RwLock<Inner>>);

#[derive(Default)]
struct Inner {
    values: HashMap<String, String>,
    built: HashMap<(SegmentId, String), Option<DynamicColumnHandle>>,
}

impl ConstantColumns {
    /// Replaces the constant columns: column name to the value of every row.
    pub fn set(&self, values: HashMap<String, String>) {
        let mut inner = self.0.write().unwrap();
        if inner.values != values {
            inner.built.clear();
            inner.values = values;
        }
    }

    /// The handle of `column` for a segment of `num_rows` rows: `None` when the column is not
    /// constant, `Some(None)` when it is but the segment has no rows.
    pub(crate) fn handle(
        &self,
        segment: SegmentId,
        column: &str,
        num_rows: RowId,
    ) -> io::Result<Option<Option<DynamicColumnHandle>>> {
        let key = (segment, column.to_string());
        let value = {
            let inner = self.0.read().unwrap();
            let Some(value) = inner.values.get(column) else {
                return Ok(None);
            };
            if let Some(handle) = inner.built.get(&key) {
                return Ok(Some(handle.clone()));
            }
            value.clone()
        };
        let handle = build(column, &value, num_rows)?;
        let mut inner = self.0.write().unwrap();
        // The value may have been replaced while the column was built.
        if inner.values.get(column) == Some(&value) {
            inner.built.insert(key, handle.clone());
        }
        Ok(Some(handle))
    }

    /// Forgets the columns built for segments no longer searchable.
    pub(crate) fn retain_segments(&self, live: &[SegmentId]) {
        let mut inner = self.0.write().unwrap();
        if !inner.built.is_empty() {
            inner.built.retain(|(segment, _), _| live.contains(segment));
        }
    }
}

fn build(column: &str, value: &str, num_rows: RowId) -> io::Result<Option<DynamicColumnHandle>> {
    if num_rows == 0 {
        return Ok(None);
    }
    let mut writer = ColumnarWriter::default();
    for row in 0..num_rows {
        writer.record_str(row, column, value);
    }
    let mut bytes = Vec::new();
    writer.serialize(num_rows, None, &mut bytes)?;
    let reader = ColumnarReader::open(bytes)?;
    Ok(reader.read_columns(column)?.into_iter().next())
}
