//! Where a document's `_id`, `_routing` and `_source` are kept: a tantivy segment plugin
//! (`.lsrc` files, [`format`]) instead of tantivy's doc store.
//!
//! tantivy's store compresses 32 KiB LZ4 blocks, so every fetched hit or GET decompressed
//! 32 KiB (43% of an `ids_range` search's CPU). Here a block is about 2 KiB, compressed against
//! a dictionary of documents sampled from the segment (Lucene's stored fields do the same with
//! LZ4 and a preset dictionary): a fetch decompresses a sixteenth of the bytes, and the small
//! blocks compress no worse than the large ones. No crate provides a dictionary-compressed block
//! store that follows tantivy's segments, hence this module.
//!
//! Indices created before it keep `_source` in tantivy's store (their schema marks the fields
//! stored); [`SegmentStore`] reads both.

pub mod format;

use std::io;
use std::sync::Arc;

use tantivy::directory::TerminatingWrite;
use tantivy::index::SegmentComponent;
use tantivy::indexer::doc_id_mapping::{DocIdMapping, MappingType};
use tantivy::plugin::{PluginMergeContext, PluginWriter, PluginWriterContext, SegmentPlugin};
use tantivy::schema::document::ErasedDocument;
use tantivy::schema::{Field, Schema, Value};
use tantivy::store::StoreReader;
use tantivy::{DocId, Segment, SegmentReader, TantivyDocument, TantivyError};

pub use format::StoreCodec;
use format::{get_varint, put_varint, Encoder, FileWriter, SourceReader};

use crate::schema::{ID, ROUTING, SOURCE};

/// The file extension the plugin owns.
pub const EXTENSION: &str = "lsrc";

/// What a hit or a GET reads back of a document.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct StoredFields {
    pub id: Option<String>,
    pub routing: Option<String>,
    pub source: Option<Vec<u8>>,
}

impl StoredFields {
    /// The `_source` bytes, empty when the document has none.
    pub fn source_bytes(&self) -> &[u8] {
        self.source.as_deref().unwrap_or_default()
    }
}

const HAS_ID: u8 = 1;
const HAS_ROUTING: u8 = 2;
const HAS_SOURCE: u8 = 4;

/// `flags:u8`, then the `_id` and `_routing` as varint-prefixed bytes when present, then the
/// `_source` to the end.
fn encode_record(
    id: Option<&str>,
    routing: Option<&str>,
    source: Option<&[u8]>,
    out: &mut Vec<u8>,
) {
    out.clear();
    let flags = id.map_or(0, |_| HAS_ID)
        | routing.map_or(0, |_| HAS_ROUTING)
        | source.map_or(0, |_| HAS_SOURCE);
    out.push(flags);
    for s in [id, routing].into_iter().flatten() {
        put_varint(out, s.len() as u64);
        out.extend_from_slice(s.as_bytes());
    }
    if let Some(source) = source {
        out.extend_from_slice(source);
    }
}

fn decode_record(bytes: &[u8]) -> io::Result<StoredFields> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "corrupt stored record");
    let flags = *bytes.first().ok_or_else(bad)?;
    let mut pos = 1;
    let mut string = |present: bool| -> io::Result<Option<String>> {
        if !present {
            return Ok(None);
        }
        let len = get_varint(bytes, &mut pos)? as usize;
        let s = bytes.get(pos..pos + len).ok_or_else(bad)?;
        pos += len;
        String::from_utf8(s.to_vec()).map(Some).map_err(|_| bad())
    };
    let id = string(flags & HAS_ID != 0)?;
    let routing = string(flags & HAS_ROUTING != 0)?;
    let source = (flags & HAS_SOURCE != 0).then(|| bytes[pos..].to_vec());
    Ok(StoredFields {
        id,
        routing,
        source,
    })
}

/// Whether indices with this schema keep `_source` in the plugin (new indices) rather than in
/// tantivy's doc store (indices created before it).
pub fn uses_plugin(schema: &Schema) -> bool {
    schema
        .get_field(SOURCE)
        .map(|f| !schema.get_field_entry(f).is_stored())
        .unwrap_or(false)
}

/// An index in memory with the plugin registered when its schema [`uses_plugin`] (tests).
pub fn create_in_ram(schema: Schema) -> tantivy::Result<tantivy::Index> {
    let mut builder = tantivy::Index::builder().schema(schema.clone());
    if uses_plugin(&schema) {
        builder = builder.register_plugin(SourcePlugin::new(StoreCodec::DEFAULT));
    }
    builder.create_in_ram()
}

/// The segment plugin; registered on every index whose schema [`uses_plugin`].
pub struct SourcePlugin {
    pub codec: StoreCodec,
}

impl SourcePlugin {
    pub fn new(codec: StoreCodec) -> Arc<Self> {
        Arc::new(SourcePlugin { codec })
    }
}

fn io_err(e: io::Error) -> TantivyError {
    TantivyError::IoError(Arc::new(e))
}

#[derive(Clone, Copy)]
struct MetaFields {
    id: Option<Field>,
    routing: Option<Field>,
    source: Option<Field>,
}

impl MetaFields {
    fn of(schema: &Schema) -> Self {
        MetaFields {
            id: schema.get_field(ID).ok(),
            routing: schema.get_field(ROUTING).ok(),
            source: schema.get_field(SOURCE).ok(),
        }
    }
}

struct SourceWriter {
    fields: MetaFields,
    encoder: Encoder,
    file: FileWriter<Vec<u8>>,
    record: Vec<u8>,
}

impl SegmentPlugin for SourcePlugin {
    fn extensions(&self) -> &[&str] {
        &[EXTENSION]
    }

    fn create_writer(&self, ctx: &PluginWriterContext) -> tantivy::Result<Box<dyn PluginWriter>> {
        Ok(Box::new(SourceWriter {
            fields: MetaFields::of(&ctx.segment.schema()),
            encoder: Encoder::new(self.codec),
            file: FileWriter::new(Vec::new()).map_err(io_err)?,
            record: Vec::new(),
        }))
    }

    fn merge(&self, ctx: PluginMergeContext) -> tantivy::Result<()> {
        if ctx.doc_id_mapping.mapping_type() == MappingType::Shuffled {
            return Err(TantivyError::InvalidArgument(
                "the source store cannot follow a sorted merge".into(),
            ));
        }
        let write = ctx
            .target_segment
            .open_write(SegmentComponent::Custom(EXTENSION.into()))?;
        let mut file = FileWriter::new(write).map_err(io_err)?;
        let mut encoder = Encoder::new(self.codec);
        for reader in ctx.readers {
            let source = open_reader(reader)?;
            let alive = reader.alive_bitset();
            // A large segment without deletes keeps its blocks and dictionaries: copying them
            // is what makes a merge cheap (tantivy's store stacks its blocks the same way).
            if alive.is_none() && source.len() >= STACK_MIN_BYTES {
                encoder.finish(&mut file).map_err(io_err)?;
                file.stack(&source).map_err(io_err)?;
                continue;
            }
            for doc in 0..reader.max_doc() {
                if alive.is_some_and(|a| !a.is_alive(doc)) {
                    continue;
                }
                source
                    .with_record(doc, |record| encoder.push(record, &mut file))
                    .and_then(|r| r)
                    .map_err(io_err)?;
            }
        }
        encoder.finish(&mut file).map_err(io_err)?;
        let write = file.finish().map_err(io_err)?;
        write.terminate()?;
        Ok(())
    }
}

/// A merge copies a delete-free segment's compressed sections from this file size on; smaller
/// ones are recompressed into the merged segment's own section (each section carries a
/// dictionary of up to 64 KiB).
const STACK_MIN_BYTES: usize = 512 * 1024;

impl PluginWriter for SourceWriter {
    fn add_document(
        &mut self,
        _doc_id: DocId,
        doc: &dyn ErasedDocument,
        _schema: &Schema,
    ) -> tantivy::Result<()> {
        let doc = doc
            .as_any()
            .downcast_ref::<TantivyDocument>()
            .ok_or_else(|| TantivyError::InvalidArgument("not a TantivyDocument".into()))?;
        let text = |f: Option<Field>| f.and_then(|f| doc.get_first(f)).and_then(|v| v.as_str());
        let source = self
            .fields
            .source
            .and_then(|f| doc.get_first(f))
            .and_then(|v| v.as_bytes());
        encode_record(
            text(self.fields.id),
            text(self.fields.routing),
            source,
            &mut self.record,
        );
        self.encoder
            .push(&self.record, &mut self.file)
            .map_err(io_err)
    }

    fn serialize(
        mut self: Box<Self>,
        segment: &Segment,
        doc_id_map: Option<&DocIdMapping>,
    ) -> tantivy::Result<()> {
        if doc_id_map.is_some() {
            return Err(TantivyError::InvalidArgument(
                "the source store cannot follow a sorted segment".into(),
            ));
        }
        let this = &mut *self;
        this.encoder.finish(&mut this.file).map_err(io_err)?;
        let bytes = std::mem::replace(&mut this.file, FileWriter::new(Vec::new()).map_err(io_err)?)
            .finish()
            .map_err(io_err)?;
        let mut write = segment.open_write(SegmentComponent::Custom(EXTENSION.into()))?;
        io::Write::write_all(&mut write, &bytes)?;
        write.terminate()?;
        Ok(())
    }

    fn mem_usage(&self) -> usize {
        self.file.get_ref().capacity() + self.encoder.mem_usage() + self.record.capacity()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

fn open_reader(reader: &SegmentReader) -> tantivy::Result<SourceReader> {
    let bytes = reader
        .open_read(SegmentComponent::Custom(EXTENSION.into()))?
        .read_bytes()?;
    SourceReader::open(bytes).map_err(io_err)
}

/// One segment's stored documents, in either layout.
pub enum SegmentStore {
    /// `.lsrc` blocks.
    Blocks(SourceReader),
    /// A store that could not be opened: every read of it answers this error.
    Broken(String),
    /// tantivy's doc store (indices created before the plugin).
    Legacy {
        store: StoreReader,
        id: Field,
        routing: Field,
        source: Field,
    },
}

impl SegmentStore {
    pub fn open(reader: &SegmentReader) -> tantivy::Result<SegmentStore> {
        let schema = reader.schema();
        if uses_plugin(schema) {
            return Ok(SegmentStore::Blocks(open_reader(reader)?));
        }
        let field = |name: &str| {
            schema
                .get_field(name)
                .map_err(|_| TantivyError::SchemaError(format!("no {name} field")))
        };
        Ok(SegmentStore::Legacy {
            store: reader.get_store_reader(16)?,
            id: field(ID)?,
            routing: field(ROUTING)?,
            source: field(SOURCE)?,
        })
    }

    pub fn get(&self, doc: DocId) -> tantivy::Result<StoredFields> {
        match self {
            SegmentStore::Blocks(reader) => reader
                .with_record(doc, decode_record)
                .and_then(|r| r)
                .map_err(io_err),
            SegmentStore::Broken(reason) => Err(TantivyError::InternalError(format!(
                "the segment's stored documents cannot be read: {reason}"
            ))),
            SegmentStore::Legacy {
                store,
                id,
                routing,
                source,
            } => {
                let d: TantivyDocument = store.get(doc)?;
                let text = |f: Field| d.get_first(f).and_then(|v| v.as_str()).map(String::from);
                Ok(StoredFields {
                    id: text(*id),
                    routing: text(*routing),
                    source: d
                        .get_first(*source)
                        .and_then(|v| v.as_bytes())
                        .map(<[u8]>::to_vec),
                })
            }
        }
    }

    /// Uncompressed bytes per stored field over every document (`_disk_usage`).
    pub fn raw_bytes(&self, max_doc: DocId) -> tantivy::Result<[(&'static str, u64); 3]> {
        let mut sums = [(ID, 0u64), (SOURCE, 0), (ROUTING, 0)];
        for doc in 0..max_doc {
            let d = self.get(doc)?;
            sums[0].1 += d.id.map_or(0, |s| s.len() as u64);
            sums[1].1 += d.source.map_or(0, |s| s.len() as u64);
            sums[2].1 += d.routing.map_or(0, |s| s.len() as u64);
        }
        Ok(sums)
    }
}

#[cfg(test)]
mod tests;
