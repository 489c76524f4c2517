//! [`Analyzer`]: a char filter → tokenizer → token filter chain, usable both for the
//! `_analyze` API ([`Analyzer::analyze`]) and as a tantivy tokenizer at indexing time.

use std::fmt;
use std::sync::Arc;

use tantivy_tokenizer_api::{Token, TokenStream, Tokenizer as TantivyTokenizer};

use crate::char_filters::{CharFilter, OffsetMap};
use crate::filters::{FilterScratch, TokenFilter};
use crate::token::TokList;
use crate::tokenizer::Tokenizer;

/// Elasticsearch's default `position_increment_gap` for text fields.
pub const DEFAULT_POSITION_INCREMENT_GAP: usize = 100;

/// One token as the Elasticsearch `_analyze` API reports it.
///
/// Offsets are in UTF-16 code units (what Java, hence Elasticsearch, reports).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalyzedToken {
    pub token: String,
    pub start_offset: usize,
    pub end_offset: usize,
    /// `<ALPHANUM>`, `<NUM>`, `<IDEOGRAPHIC>`, ..., or `word`.
    pub token_type: String,
    pub position: usize,
    /// How many positions the token spans (`positionLength` in `_analyze` when above 1).
    pub position_length: usize,
}

/// The immutable definition of an analysis chain.
#[derive(Debug, Clone)]
pub(crate) struct Chain {
    pub name: String,
    pub char_filters: Vec<CharFilter>,
    pub tokenizer: Tokenizer,
    pub filters: Vec<TokenFilter>,
    pub position_increment_gap: usize,
}

/// Buffers reused across calls on one `Analyzer` value (not shared between clones).
#[derive(Default)]
struct Scratch {
    toks: TokList,
    spare: TokList,
    text: String,
    filtered: String,
    filtered_next: String,
    maps: Vec<OffsetMap>,
    current: Token,
}

impl Chain {
    /// Runs the chain over `text`, leaving the tokens (offsets in bytes of `text`) in `s.toks`.
    fn run(&self, text: &str, s: &mut Scratch) {
        s.toks.clear();
        let input_len = if self.char_filters.is_empty() {
            self.tokenizer.tokenize(text, &mut s.toks);
            text.len()
        } else {
            if s.maps.len() < self.char_filters.len() {
                s.maps
                    .resize_with(self.char_filters.len(), OffsetMap::default);
            }
            let mut current = std::mem::take(&mut s.filtered);
            let mut next = std::mem::take(&mut s.filtered_next);
            for (k, char_filter) in self.char_filters.iter().enumerate() {
                let input: &str = if k == 0 { text } else { &current };
                char_filter.apply(input, &mut next, &mut s.maps[k]);
                std::mem::swap(&mut current, &mut next);
            }
            self.tokenizer.tokenize(&current, &mut s.toks);
            let len = current.len();
            s.filtered = current;
            s.filtered_next = next;
            len
        };
        let mut scratch = FilterScratch {
            spare: &mut s.spare,
            text: &mut s.text,
            input_len,
        };
        for filter in &self.filters {
            filter.apply(&mut s.toks, &mut scratch);
        }
        if !self.char_filters.is_empty() {
            let maps = &s.maps[..self.char_filters.len()];
            // Safety net: offsets must be char boundaries of `text`, in order.
            let clamp = |mut x: usize| {
                x = x.min(text.len());
                while !text.is_char_boundary(x) {
                    x -= 1;
                }
                x
            };
            for t in s.toks.as_mut_slice() {
                for map in maps.iter().rev() {
                    t.start = map.correct(t.start);
                    t.end = map.correct(t.end);
                }
                t.start = clamp(t.start);
                t.end = clamp(t.end).max(t.start);
            }
        }
    }
}

/// Whether `text` holds a character every analyzer for which [`Analyzer::keeps_every_word`]
/// holds turns into a token: an ASCII letter or digit, or a CJK ideograph.
pub fn has_word_character(text: &str) -> bool {
    text.chars()
        .any(|c| c.is_ascii_alphanumeric() || crate::unicode::is_han(c))
}

/// A ready-to-use analyzer (or normalizer). Cheap to clone; every clone has its own buffers,
/// so the tantivy tokenizer path does not allocate per token once warmed up.
pub struct Analyzer {
    chain: Arc<Chain>,
    scratch: Box<Scratch>,
}

impl Clone for Analyzer {
    fn clone(&self) -> Self {
        Analyzer {
            chain: Arc::clone(&self.chain),
            scratch: Box::default(),
        }
    }
}

impl fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Analyzer")
            .field("chain", &self.chain)
            .finish()
    }
}

impl Analyzer {
    pub(crate) fn new(chain: Chain) -> Self {
        Analyzer {
            chain: Arc::new(chain),
            scratch: Box::default(),
        }
    }

    /// This analyzer's chain with `filter` appended, named `name`.
    pub(crate) fn with_filter(&self, name: String, filter: TokenFilter) -> Analyzer {
        let mut chain = (*self.chain).clone();
        chain.name = name;
        chain.filters.push(filter);
        Analyzer::new(chain)
    }

    /// The analyzer's name (registry name, or `_anonymous_` for ad-hoc chains).
    pub fn name(&self) -> &str {
        &self.chain.name
    }

    /// Whether every text for which [`has_word_character`] holds yields at least one token:
    /// the chain has no char filter, a tokenizer that keeps ASCII letters and digits and CJK
    /// ideographs (UAX#29 words and ideograph unigrams, whitespace-separated runs) and only
    /// filters that never drop a token. For such an analyzer a value's field norm says
    /// whether it was indexed, so the engine need not list it in `_field_names` (see
    /// `lode_engine::document`).
    pub fn keeps_every_word(&self) -> bool {
        let chain = &self.chain;
        chain.char_filters.is_empty()
            && matches!(
                chain.tokenizer,
                Tokenizer::Standard { .. } | Tokenizer::Whitespace { .. }
            )
            && chain.filters.iter().all(|f| {
                matches!(
                    f,
                    TokenFilter::Lowercase
                        | TokenFilter::Uppercase
                        | TokenFilter::AsciiFolding { .. }
                )
            })
    }

    /// Positions added between the values of a multi-valued field (ES default 100).
    pub fn position_increment_gap(&self) -> usize {
        self.chain.position_increment_gap
    }

    /// Analyzes `text` the way Elasticsearch's `_analyze` API reports it.
    pub fn analyze(&self, text: &str) -> Vec<AnalyzedToken> {
        let mut s = Scratch::default();
        self.chain.run(text, &mut s);
        let mut utf16 = Utf16Offsets::new(text);
        let mut position = Positions::default();
        s.toks
            .as_slice()
            .iter()
            .map(|t| AnalyzedToken {
                token: t.text.clone(),
                start_offset: utf16.convert(t.start),
                end_offset: utf16.convert(t.end),
                token_type: t.kind.as_str().to_string(),
                position: position.advance(t.pos_inc),
                position_length: t.pos_len,
            })
            .collect()
    }

    /// As [`Analyzer::analyze`] with offsets in bytes of `text` (to slice it, e.g. when
    /// highlighting).
    pub fn analyze_bytes(&self, text: &str) -> Vec<AnalyzedToken> {
        let mut s = Scratch::default();
        self.chain.run(text, &mut s);
        let mut position = Positions::default();
        s.toks
            .as_slice()
            .iter()
            .map(|t| AnalyzedToken {
                token: t.text.clone(),
                start_offset: t.start,
                end_offset: t.end,
                token_type: t.kind.as_str().to_string(),
                position: position.advance(t.pos_inc),
                position_length: t.pos_len,
            })
            .collect()
    }

    /// Normalizer convenience: the single token's text (or the concatenation of all tokens
    /// should a chain emit several), e.g. the keyword value to index.
    pub fn normalize(&self, text: &str) -> String {
        let mut s = Scratch::default();
        self.chain.run(text, &mut s);
        let toks = s.toks.as_slice();
        match toks {
            [one] => one.text.clone(),
            many => many.iter().map(|t| t.text.as_str()).collect(),
        }
    }
}

/// Turns position increments into absolute positions (first token at `inc - 1`).
#[derive(Default)]
struct Positions {
    next: usize,
}

impl Positions {
    #[inline]
    fn advance(&mut self, inc: usize) -> usize {
        self.next += inc;
        self.next.saturating_sub(1)
    }
}

/// Converts increasing byte offsets of one text to UTF-16 offsets without rescanning.
struct Utf16Offsets<'a> {
    text: &'a str,
    byte: usize,
    unit: usize,
}

impl<'a> Utf16Offsets<'a> {
    fn new(text: &'a str) -> Self {
        Utf16Offsets {
            text,
            byte: 0,
            unit: 0,
        }
    }

    fn convert(&mut self, byte: usize) -> usize {
        if byte < self.byte {
            self.byte = 0;
            self.unit = 0;
        }
        self.unit += self.text[self.byte..byte]
            .chars()
            .map(char::len_utf16)
            .sum::<usize>();
        self.byte = byte;
        self.unit
    }
}

/// The tantivy token stream of an [`Analyzer`]: offsets are byte offsets into the input.
pub struct AnalyzerTokenStream<'a> {
    scratch: &'a mut Scratch,
    index: usize,
    positions: Positions,
}

impl TokenStream for AnalyzerTokenStream<'_> {
    fn advance(&mut self) -> bool {
        let Some(t) = self.scratch.toks.as_slice().get(self.index) else {
            return false;
        };
        self.index += 1;
        let current = &mut self.scratch.current;
        current.text.clear();
        current.text.push_str(&t.text);
        current.offset_from = t.start;
        current.offset_to = t.end;
        current.position = self.positions.advance(t.pos_inc);
        current.position_length = t.pos_len;
        true
    }

    fn token(&self) -> &Token {
        &self.scratch.current
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.scratch.current
    }
}

impl TantivyTokenizer for Analyzer {
    type TokenStream<'a> = AnalyzerTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        self.chain.run(text, &mut self.scratch);
        self.scratch.current.reset();
        AnalyzerTokenStream {
            scratch: &mut self.scratch,
            index: 0,
            positions: Positions::default(),
        }
    }
}
