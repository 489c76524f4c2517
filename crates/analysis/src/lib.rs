//! Elasticsearch-compatible text analysis for Lode.
//!
//! Lode must split text into exactly the tokens Elasticsearch would, or `match` queries,
//! phrase positions and `_analyze` output drift from ES. This crate re-implements the parts
//! of ES/Lucene analysis that Lode supports:
//!
//! - **Tokenizers**: `standard` (UAX#29 words; each Han ideograph and each
//!   Hiragana character is its own token, so unspaced Chinese is indexed as unigrams),
//!   `letter`, `lowercase`, `whitespace`, `keyword`, `char_group`, `ngram`, `edge_ngram`,
//!   and Chinese words (jieba-rs): the IK plugin's `ik_smart` / `ik_max_word` and
//!   analysis-smartcn's `smartcn_tokenizer`.
//! - **Token filters**: `lowercase`, `uppercase`, `asciifolding`
//!   (`preserve_original`), `stop` (`_english_`, `_none_`, word lists, `ignore_case`,
//!   `remove_trailing`; removed words leave position gaps), `length`, `trim`, `unique`,
//!   `truncate`, `reverse`, `ngram`, `edge_ngram`, `porter_stem`, `smartcn_stop`, `shingle`.
//! - **Char filters**: `html_strip`, `mapping`.
//! - **Analyzers**: `standard`, `simple`, `whitespace`, `keyword`, `stop`, `ik_smart`,
//!   `ik_max_word`, `smartcn`, and `custom`
//!   chains from an index's `settings.index.analysis`; **normalizers** (`lowercase` and
//!   custom ones made of `lowercase`/`uppercase`/`asciifolding`/`trim`) for keyword fields.
//!
//! Entry point: [`AnalysisRegistry`], built from the analysis settings, hands out
//! [`Analyzer`]s. An analyzer reports tokens for `_analyze` ([`Analyzer::analyze`], offsets
//! in UTF-16 units like ES) and implements tantivy's `Tokenizer` trait (byte offsets, ES
//! positions) so the engine can wrap it in `tantivy::tokenizer::TextAnalyzer`.
//! Errors are [`AnalysisError`]s carrying the ES error type and message.
//!
//! Parity is checked against Lucene 9.12 itself (the analysis library inside Elasticsearch
//! 8.x) with the development tools in `tools/` (see `tools/README.md`).

mod analyzer;
mod char_filters;
mod error;
mod filters;
mod registry;
mod settings;
mod token;
mod tokenizer;
mod unicode;

pub use analyzer::{
    has_word_character, AnalyzedToken, Analyzer, AnalyzerTokenStream,
    DEFAULT_POSITION_INCREMENT_GAP,
};
pub use error::AnalysisError;
pub use filters::shingle::SAYT_MAX_PREFIX_CHARS;
pub use registry::{
    sayt_prefix_analyzer, sayt_shingle_analyzer, AnalysisRegistry, DEFAULT_MAX_SHINGLE_DIFF,
};

#[cfg(test)]
mod tests;
