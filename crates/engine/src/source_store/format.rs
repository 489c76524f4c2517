//! The `.lsrc` file: a segment's stored records in small zstd blocks.
//!
//! ```text
//! "LSRC" version:u8
//! sections, each: dictionary bytes, then its blocks (one zstd frame each)
//! block index:   per block   first_doc:u32 offset:u64 len:u32
//! section index: per section first_block:u32 dict_offset:u64 dict_len:u32 codec:u8
//! footer:        docs:u32 blocks:u32 sections:u32 index_offset:u64 version:u8 "LSRC"
//! ```
//!
//! A block holds whole records: `n` (varint), the `n` record lengths (varints), the records.
//! A section's blocks are compressed against its dictionary (records sampled from the section
//! itself), with LZ4 (the raw size as a u32, then an LZ4 block whose window starts in the
//! dictionary: Lucene's `LZ4WithPresetDict`) or zstd (a frame using the dictionary as raw
//! content); an empty dictionary means plain blocks. A merge copies a large delete-free
//! segment's sections as they are, so the file can hold several, of either codec.

use std::cell::RefCell;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use lz4_flex::block::DictCompressor;
use tantivy::directory::OwnedBytes;
use tantivy::DocId;
use zstd_safe::{CCtx, CDict, DCtx, DDict};

const MAGIC: &[u8; 4] = b"LSRC";
const VERSION: u8 = 2;
const BLOCK_ENTRY: usize = 16;
const SECTION_ENTRY: usize = 17;
const FOOTER: usize = 4 + 4 + 4 + 8 + 1 + 4;

/// Raw bytes buffered before a section's dictionary is sampled from them.
const SAMPLE_BYTES: usize = 1 << 20;
/// Dictionaries are at most this large (zstd's window reaches all of it from a small block).
const DICT_MAX: usize = 64 * 1024;
/// A section with fewer raw bytes gets no dictionary: it would hold most of its data twice.
const DICT_MIN_SOURCE: usize = 64 * 1024;
/// Raw block size of a section without a dictionary: context must come from the block itself.
const PLAIN_BLOCK: usize = 16 * 1024;
/// No block is larger than this (a block is as large as its largest document at most, and ES
/// refuses bodies over 100 MB by default): a larger size field is corruption.
const MAX_BLOCK_RAW: usize = 1 << 31;

/// How a section's blocks are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Lz4,
    Zstd(i32),
}

const LZ4: u8 = 1;
const ZSTD: u8 = 2;

/// Compression and raw block size: `index.codec` picks one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreCodec {
    pub compression: Compression,
    pub block: usize,
}

impl StoreCodec {
    /// `default`: a fetched document costs the LZ4 decompression of about 2 KiB (a few µs);
    /// the dictionary keeps small blocks as small as 32 KiB LZ4 blocks.
    pub const DEFAULT: StoreCodec = StoreCodec {
        compression: Compression::Lz4,
        block: 2 * 1024,
    };
    /// `best_compression`: zstd against the dictionary, larger blocks, a slower level (a third
    /// smaller than the default on the reference documents).
    pub const BEST_COMPRESSION: StoreCodec = StoreCodec {
        compression: Compression::Zstd(9),
        block: 16 * 1024,
    };
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

fn zstd_err(code: usize) -> io::Error {
    invalid(format!("zstd: {}", zstd_safe::get_error_name(code)))
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn get_varint(bytes: &[u8], pos: &mut usize) -> io::Result<u64> {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = *bytes.get(*pos).ok_or_else(|| invalid("truncated varint"))?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift > 63 {
            return Err(invalid("varint too long"));
        }
    }
}

/// Writes the file: sections of blocks, then the indexes and the footer.
pub struct FileWriter<W: Write> {
    out: W,
    offset: u64,
    blocks: Vec<(u32, u64, u32)>,
    sections: Vec<(u32, u64, u32, u8)>,
    docs: u32,
}

impl<W: Write> FileWriter<W> {
    pub fn new(mut out: W) -> io::Result<Self> {
        out.write_all(MAGIC)?;
        out.write_all(&[VERSION])?;
        Ok(FileWriter {
            out,
            offset: 5,
            blocks: Vec::new(),
            sections: Vec::new(),
            docs: 0,
        })
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    fn begin_section(&mut self, dict: &[u8], codec: u8) -> io::Result<()> {
        self.sections.push((
            self.blocks.len() as u32,
            self.offset,
            dict.len() as u32,
            codec,
        ));
        self.write(dict)
    }

    fn block(&mut self, docs: u32, compressed: &[u8]) -> io::Result<()> {
        self.blocks
            .push((self.docs, self.offset, compressed.len() as u32));
        self.write(compressed)?;
        self.docs += docs;
        Ok(())
    }

    /// Appends every section of `reader` without recompressing it.
    pub fn stack(&mut self, reader: &SourceReader) -> io::Result<()> {
        for s in 0..reader.sections.len() {
            let section = &reader.sections[s];
            self.begin_section(
                reader.slice(section.dict_offset, section.dict_len)?,
                section.codec,
            )?;
            let end = reader
                .sections
                .get(s + 1)
                .map_or(reader.blocks, |next| next.first_block);
            for b in section.first_block..end {
                let (first, offset, len) = reader.block_entry(b)?;
                let next_first = if b + 1 < reader.blocks {
                    reader.block_entry(b + 1)?.0
                } else {
                    reader.docs
                };
                self.block(next_first - first, reader.slice(offset, len)?)?;
            }
        }
        Ok(())
    }

    pub fn docs(&self) -> u32 {
        self.docs
    }

    /// Writes the indexes and the footer; returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        let index_offset = self.offset;
        let mut index = Vec::with_capacity(
            self.blocks.len() * BLOCK_ENTRY + self.sections.len() * SECTION_ENTRY + FOOTER,
        );
        for &(first, offset, len) in &self.blocks {
            index.extend_from_slice(&first.to_le_bytes());
            index.extend_from_slice(&offset.to_le_bytes());
            index.extend_from_slice(&len.to_le_bytes());
        }
        for &(first_block, dict_offset, dict_len, codec) in &self.sections {
            index.extend_from_slice(&first_block.to_le_bytes());
            index.extend_from_slice(&dict_offset.to_le_bytes());
            index.extend_from_slice(&dict_len.to_le_bytes());
            index.push(codec);
        }
        index.extend_from_slice(&self.docs.to_le_bytes());
        index.extend_from_slice(&(self.blocks.len() as u32).to_le_bytes());
        index.extend_from_slice(&(self.sections.len() as u32).to_le_bytes());
        index.extend_from_slice(&index_offset.to_le_bytes());
        index.push(VERSION);
        index.extend_from_slice(MAGIC);
        self.write(&index)?;
        self.out.flush()?;
        Ok(self.out)
    }

    pub fn get_ref(&self) -> &W {
        &self.out
    }
}

/// Turns records into the blocks of one section at a time: the first [`SAMPLE_BYTES`] are
/// held back until the dictionary is sampled from them.
pub struct Encoder {
    codec: StoreCodec,
    pending: Vec<u8>,
    pending_lens: Vec<u32>,
    section: Option<SectionEncoder>,
}

struct SectionEncoder {
    compressor: BlockCompressor,
    target: usize,
    lens: Vec<u32>,
    records: Vec<u8>,
    raw: Vec<u8>,
    compressed: Vec<u8>,
}

impl Encoder {
    pub fn new(codec: StoreCodec) -> Self {
        Encoder {
            codec,
            pending: Vec::new(),
            pending_lens: Vec::new(),
            section: None,
        }
    }

    pub fn mem_usage(&self) -> usize {
        self.pending.capacity()
            + self.pending_lens.capacity() * 4
            + self.section.as_ref().map_or(0, |s| {
                s.records.capacity() + s.raw.capacity() + s.compressed.capacity() + DICT_MAX
            })
    }

    pub fn push<W: Write>(&mut self, record: &[u8], out: &mut FileWriter<W>) -> io::Result<()> {
        match &mut self.section {
            Some(section) => section.add(record, out),
            None => {
                self.pending.extend_from_slice(record);
                self.pending_lens.push(record.len() as u32);
                if self.pending.len() >= SAMPLE_BYTES {
                    self.start(out)?;
                }
                Ok(())
            }
        }
    }

    fn start<W: Write>(&mut self, out: &mut FileWriter<W>) -> io::Result<()> {
        let dict = sample_dictionary(&self.pending, &self.pending_lens);
        let codec = match self.codec.compression {
            Compression::Lz4 => LZ4,
            Compression::Zstd(_) => ZSTD,
        };
        out.begin_section(&dict, codec)?;
        let mut section = SectionEncoder::new(self.codec, dict);
        let mut pos = 0;
        for &len in &self.pending_lens {
            let end = pos + len as usize;
            section.add(&self.pending[pos..end], out)?;
            pos = end;
        }
        self.pending = Vec::new();
        self.pending_lens = Vec::new();
        self.section = Some(section);
        Ok(())
    }

    /// Ends the current section (if any record came since the last one).
    pub fn finish<W: Write>(&mut self, out: &mut FileWriter<W>) -> io::Result<()> {
        if self.section.is_none() {
            if self.pending_lens.is_empty() {
                return Ok(());
            }
            self.start(out)?;
        }
        if let Some(mut section) = self.section.take() {
            section.flush(out)?;
        }
        Ok(())
    }
}

/// Whole records picked evenly over the sample, up to a sixteenth of it (at most [`DICT_MAX`]).
fn sample_dictionary(records: &[u8], lens: &[u32]) -> Vec<u8> {
    if records.len() < DICT_MIN_SOURCE || lens.is_empty() {
        return Vec::new();
    }
    let target = (records.len() / 16).min(DICT_MAX);
    let avg = (records.len() / lens.len()).max(1);
    let stride = (lens.len() / (target / avg).max(1)).max(1);
    let mut starts = Vec::with_capacity(lens.len());
    let mut pos = 0usize;
    for &len in lens {
        starts.push(pos);
        pos += len as usize;
    }
    let mut dict = Vec::with_capacity(target);
    let mut i = 0;
    while i < lens.len() && dict.len() < target {
        let rec = &records[starts[i]..starts[i] + lens[i] as usize];
        let room = target - dict.len();
        dict.extend_from_slice(&rec[..rec.len().min(room)]);
        i += stride;
    }
    dict
}

enum BlockCompressor {
    /// LZ4 against the section's dictionary, its hash table built once per section.
    Lz4(Box<DictCompressor>),
    Zstd {
        cdict: Option<CDict<'static>>,
        cctx: CCtx<'static>,
        level: i32,
    },
}

impl BlockCompressor {
    fn compress(&mut self, raw: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        out.clear();
        match self {
            BlockCompressor::Lz4(lz4) => {
                out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
                out.resize(4 + lz4_flex::block::get_maximum_output_size(raw.len()), 0);
                let n = lz4
                    .compress_into(raw, &mut out[4..])
                    .map_err(|e| invalid(format!("lz4: {e}")))?;
                out.truncate(4 + n);
            }
            BlockCompressor::Zstd { cdict, cctx, level } => {
                out.reserve(zstd_safe::compress_bound(raw.len()));
                match cdict {
                    Some(cdict) => cctx.compress_using_cdict(out, raw, cdict),
                    None => cctx.compress(out, raw, *level),
                }
                .map_err(zstd_err)?;
            }
        }
        Ok(())
    }
}

impl SectionEncoder {
    fn new(codec: StoreCodec, dict: Vec<u8>) -> Self {
        let target = if dict.is_empty() {
            PLAIN_BLOCK.max(codec.block)
        } else {
            codec.block
        };
        let compressor = match codec.compression {
            Compression::Lz4 => BlockCompressor::Lz4(Box::new(DictCompressor::new(&dict))),
            Compression::Zstd(level) => BlockCompressor::Zstd {
                cdict: (!dict.is_empty()).then(|| CDict::create(&dict, level)),
                cctx: CCtx::create(),
                level,
            },
        };
        SectionEncoder {
            compressor,
            target,
            lens: Vec::new(),
            records: Vec::new(),
            raw: Vec::new(),
            compressed: Vec::new(),
        }
    }

    fn add<W: Write>(&mut self, record: &[u8], out: &mut FileWriter<W>) -> io::Result<()> {
        self.lens.push(record.len() as u32);
        self.records.extend_from_slice(record);
        if self.records.len() >= self.target {
            self.flush(out)?;
        }
        Ok(())
    }

    fn flush<W: Write>(&mut self, out: &mut FileWriter<W>) -> io::Result<()> {
        if self.lens.is_empty() {
            return Ok(());
        }
        self.raw.clear();
        put_varint(&mut self.raw, self.lens.len() as u64);
        for &len in &self.lens {
            put_varint(&mut self.raw, u64::from(len));
        }
        self.raw.extend_from_slice(&self.records);
        self.compressor.compress(&self.raw, &mut self.compressed)?;
        out.block(self.lens.len() as u32, &self.compressed)?;
        self.lens.clear();
        self.records.clear();
        Ok(())
    }
}

struct Section {
    first_block: u32,
    dict_offset: u64,
    dict_len: u32,
    codec: u8,
    ddict: OnceLock<Option<DDict<'static>>>,
}

/// Reads one segment's `.lsrc` file (zero-copy over the mmap).
pub struct SourceReader {
    /// Distinguishes readers in the per-thread block cache.
    uid: u64,
    data: OwnedBytes,
    docs: u32,
    blocks: u32,
    index_offset: usize,
    sections: Vec<Section>,
}

static NEXT_UID: AtomicU64 = AtomicU64::new(1);

struct BlockCache {
    dctx: DCtx<'static>,
    uid: u64,
    block: u32,
    raw: Vec<u8>,
}

thread_local! {
    static CACHE: RefCell<BlockCache> = RefCell::new(BlockCache {
        dctx: DCtx::create(),
        uid: 0,
        block: 0,
        raw: Vec::new(),
    });
}

fn le_u32(b: &[u8], at: usize) -> io::Result<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
        .ok_or_else(|| invalid("truncated source store"))
}

fn le_u64(b: &[u8], at: usize) -> io::Result<u64> {
    b.get(at..at + 8)
        .map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
        .ok_or_else(|| invalid("truncated source store"))
}

impl SourceReader {
    pub fn open(data: OwnedBytes) -> io::Result<Self> {
        let b = data.as_slice();
        if b.len() < 5 + FOOTER || &b[..4] != MAGIC || &b[b.len() - 4..] != MAGIC {
            return Err(invalid("not a Lode source store"));
        }
        let f = b.len() - FOOTER;
        let version = b[f + 20];
        if version != VERSION || b[4] != VERSION {
            return Err(invalid(format!(
                "source store version {version} is not supported"
            )));
        }
        let docs = le_u32(b, f)?;
        let blocks = le_u32(b, f + 4)?;
        let n_sections = le_u32(b, f + 8)? as usize;
        let index_offset = le_u64(b, f + 12)? as usize;
        let sections_at = index_offset + blocks as usize * BLOCK_ENTRY;
        if sections_at + n_sections * SECTION_ENTRY != f {
            return Err(invalid("source store index does not match its footer"));
        }
        let mut sections = Vec::with_capacity(n_sections);
        for s in 0..n_sections {
            let at = sections_at + s * SECTION_ENTRY;
            sections.push(Section {
                first_block: le_u32(b, at)?,
                dict_offset: le_u64(b, at + 4)?,
                dict_len: le_u32(b, at + 12)?,
                codec: match b[at + 16] {
                    c @ (LZ4 | ZSTD) => c,
                    c => return Err(invalid(format!("unknown source store codec {c}"))),
                },
                ddict: OnceLock::new(),
            });
        }
        Ok(SourceReader {
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            data,
            docs,
            blocks,
            index_offset,
            sections,
        })
    }

    pub fn num_docs(&self) -> u32 {
        self.docs
    }

    /// How many dictionary sections the file holds (one per stacked segment, one per encoding).
    pub fn num_sections(&self) -> usize {
        self.sections.len()
    }

    /// The file's size in bytes.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs == 0
    }

    fn slice(&self, offset: u64, len: u32) -> io::Result<&[u8]> {
        let start = offset as usize;
        self.data
            .as_slice()
            .get(start..start + len as usize)
            .ok_or_else(|| invalid("source store offset out of range"))
    }

    fn block_entry(&self, block: u32) -> io::Result<(u32, u64, u32)> {
        let at = self.index_offset + block as usize * BLOCK_ENTRY;
        let b = self.data.as_slice();
        Ok((le_u32(b, at)?, le_u64(b, at + 4)?, le_u32(b, at + 12)?))
    }

    fn block_of(&self, doc: DocId) -> io::Result<u32> {
        // The last block whose first document is at most `doc`.
        let (mut lo, mut hi) = (0u32, self.blocks);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.block_entry(mid)?.0 <= doc {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo.checked_sub(1)
            .ok_or_else(|| invalid("document before the first block"))
    }

    fn section(&self, block: u32) -> io::Result<&Section> {
        let s = self
            .sections
            .partition_point(|s| s.first_block <= block)
            .checked_sub(1)
            .ok_or_else(|| invalid("block before the first section"))?;
        Ok(&self.sections[s])
    }

    /// Decompresses block `block` (its compressed bytes are `frame`) into `raw`.
    fn decompress(
        &self,
        block: u32,
        frame: &[u8],
        dctx: &mut DCtx<'static>,
        raw: &mut Vec<u8>,
    ) -> io::Result<()> {
        let section = self.section(block)?;
        let dict = self.slice(section.dict_offset, section.dict_len)?;
        raw.clear();
        if section.codec == LZ4 {
            let size = le_u32(frame, 0)? as usize;
            if size > MAX_BLOCK_RAW {
                return Err(invalid("source block too large"));
            }
            raw.resize(size, 0);
            let n = lz4_flex::block::decompress_into_with_dict(&frame[4..], raw, dict)
                .map_err(|e| invalid(format!("lz4: {e}")))?;
            if n != size {
                return Err(invalid("source block shorter than its size"));
            }
            return Ok(());
        }
        let size = zstd_safe::get_frame_content_size(frame)
            .ok()
            .flatten()
            .filter(|&n| n as usize <= MAX_BLOCK_RAW)
            .ok_or_else(|| invalid("source block without a valid content size"))?;
        raw.reserve(size as usize);
        let ddict = section
            .ddict
            .get_or_init(|| (!dict.is_empty()).then(|| DDict::create(dict)));
        match ddict {
            Some(ddict) => dctx.decompress_using_ddict(raw, frame, ddict),
            None => dctx.decompress(raw, frame),
        }
        .map_err(zstd_err)?;
        Ok(())
    }

    /// Calls `f` with the stored record of `doc` (the block stays decompressed for this thread's
    /// next read: hits and merges read neighbours).
    pub fn with_record<R>(&self, doc: DocId, f: impl FnOnce(&[u8]) -> R) -> io::Result<R> {
        if doc >= self.docs {
            return Err(invalid(format!(
                "document {doc} is not in the source store"
            )));
        }
        let block = self.block_of(doc)?;
        let (first, offset, len) = self.block_entry(block)?;
        CACHE.with(|cache| {
            let mut cache = cache.borrow_mut();
            let cache = &mut *cache;
            if cache.uid != self.uid || cache.block != block {
                cache.uid = 0;
                let frame = self.slice(offset, len)?;
                self.decompress(block, frame, &mut cache.dctx, &mut cache.raw)?;
                cache.uid = self.uid;
                cache.block = block;
            }
            let raw = &cache.raw;
            let mut pos = 0;
            let n = get_varint(raw, &mut pos)? as u32;
            let i = doc - first;
            if i >= n {
                return Err(invalid("document beyond its block"));
            }
            let mut start = 0usize;
            let mut len = 0usize;
            for j in 0..=i {
                let l = get_varint(raw, &mut pos)? as usize;
                if j < i {
                    start += l;
                } else {
                    len = l;
                }
            }
            for _ in i + 1..n {
                get_varint(raw, &mut pos)?;
            }
            let record = raw
                .get(pos + start..pos + start + len)
                .ok_or_else(|| invalid("record beyond its block"))?;
            Ok(f(record))
        })
    }
}

#[cfg(test)]
mod lz4_tests {
    use lz4_flex::block::{compress_into_with_dict, get_maximum_output_size, DictCompressor};

    /// JSON-like documents: repeated keys, varying values (a dictionary finds matches in them).
    fn docs(seed: u64, n: usize) -> Vec<u8> {
        let mut x = seed;
        let mut out = Vec::new();
        for i in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            out.extend_from_slice(
                format!(
                    r#"{{"account_number":{i},"balance":{},"firstname":"N{}","state":"S{}"}}"#,
                    x % 100_000,
                    x >> 40,
                    (x >> 20) % 50
                )
                .as_bytes(),
            );
        }
        out
    }

    #[test]
    fn a_prepared_dictionary_compresses_to_the_same_bytes_as_lz4_flex() {
        let corpus = docs(7, 3000);
        // Empty, too short to use, small, and larger than LZ4's 64 KiB window.
        for dict_len in [0usize, 3, 1000, 40_000, 70_000] {
            let dict = &corpus[corpus.len() - dict_len..];
            let mut prepared = DictCompressor::new(dict);
            // Blocks of several sizes, the last ones past 64 KiB together with the dictionary.
            for (i, len) in [1usize, 100, 2048, 2048, 9000, 30_000]
                .into_iter()
                .enumerate()
            {
                let block = &corpus[i * 1000..i * 1000 + len];
                let mut want = vec![0; get_maximum_output_size(len)];
                let n = compress_into_with_dict(block, &mut want, dict).unwrap();
                let mut got = vec![0; get_maximum_output_size(len)];
                let m = prepared.compress_into(block, &mut got).unwrap();
                assert_eq!(&got[..m], &want[..n], "dictionary {dict_len}, block {len}");
                let mut back = vec![0; len];
                let k =
                    lz4_flex::block::decompress_into_with_dict(&got[..m], &mut back, dict).unwrap();
                assert_eq!(&back[..k], block);
            }
        }
    }
}
