//! Lucene's `ShingleFilter` (Elasticsearch's `shingle` token filter): joins runs of adjacent
//! tokens into word n-grams.
//!
//! This follows Lucene's algorithm step by step (a window of up to `max` input tokens, the gram
//! sizes taken in the circular order `[1,] min..=max`), because its output order, positions,
//! position lengths and offsets are what ES's `_analyze` reports and what phrase queries on
//! shingle fields rely on. A position gap (e.g. a removed stop word) becomes up to `max - 1`
//! filler tokens that occupy a position, appear inside shingles, and are never output alone.

use crate::token::{Tok, TokList, TokenType};

/// Configuration of one `shingle` filter (already validated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Shingle {
    pub min: usize,
    pub max: usize,
    pub output_unigrams: bool,
    pub output_unigrams_if_no_shingles: bool,
    pub token_separator: String,
    pub filler_token: String,
}

impl Shingle {
    /// ES's defaults: bigrams plus unigrams, joined by a space, `_` for gaps.
    pub(crate) fn new(min: usize, max: usize, output_unigrams: bool) -> Self {
        Shingle {
            min,
            max,
            output_unigrams,
            output_unigrams_if_no_shingles: false,
            token_separator: " ".to_string(),
            filler_token: "_".to_string(),
        }
    }
}

#[derive(Clone)]
struct WinTok {
    text: String,
    start: usize,
    end: usize,
    kind: TokenType,
    filler: bool,
}

/// The gram size sequence `{[1,] min, ..., max}` (Lucene's `CircularSequence`).
struct Gram {
    value: usize,
    previous: usize,
    min_value: usize,
    min_shingle: usize,
    max_shingle: usize,
}

impl Gram {
    fn advance(&mut self) {
        self.previous = self.value;
        if self.value == 1 {
            self.value = self.min_shingle;
        } else if self.value == self.max_shingle {
            self.reset();
        } else {
            self.value += 1;
        }
    }
    fn reset(&mut self) {
        self.value = self.min_value;
        self.previous = self.min_value;
    }
    fn at_min(&self) -> bool {
        self.value == self.min_value
    }
}

struct State<'a> {
    cfg: &'a Shingle,
    input: &'a [Tok],
    next_input: usize,
    /// A real token waiting behind the fillers inserted for its position gap.
    pending: Option<&'a Tok>,
    fillers_to_insert: usize,
    window: std::collections::VecDeque<WinTok>,
    gram: Gram,
    builder: String,
    output_here: bool,
    no_shingle_output: bool,
}

impl<'a> State<'a> {
    fn filler_at(&self, offset: usize, kind: TokenType) -> WinTok {
        WinTok {
            text: self.cfg.filler_token.clone(),
            start: offset,
            end: offset,
            kind,
            filler: true,
        }
    }

    fn real(t: &Tok) -> WinTok {
        WinTok {
            text: t.text.clone(),
            start: t.start,
            end: t.end,
            kind: t.kind,
            filler: false,
        }
    }

    fn next_token(&mut self) -> Option<WinTok> {
        if self.fillers_to_insert > 0 {
            let p = self.pending.expect("fillers precede a pending token");
            self.fillers_to_insert -= 1;
            return Some(self.filler_at(p.start, p.kind));
        }
        if let Some(p) = self.pending.take() {
            return Some(Self::real(p));
        }
        let t = self.input.get(self.next_input)?;
        self.next_input += 1;
        if t.pos_inc > 1 {
            self.fillers_to_insert = (t.pos_inc - 1).min(self.cfg.max - 1) - 1;
            self.pending = Some(t);
            return Some(self.filler_at(t.start, t.kind));
        }
        Some(Self::real(t))
    }

    fn shift_window(&mut self) {
        self.window.pop_front();
        while self.window.len() < self.cfg.max {
            match self.next_token() {
                Some(t) => self.window.push_back(t),
                None => break,
            }
        }
        if self.cfg.output_unigrams_if_no_shingles
            && self.no_shingle_output
            && self.gram.min_value > 1
            && self.window.len() < self.cfg.min
        {
            self.gram.min_value = 1;
        }
        self.gram.reset();
        self.output_here = false;
    }

    /// The next output token, or `None` at the end (Lucene's `incrementToken`).
    fn increment(&mut self, out: &mut TokList) -> bool {
        let mut built = 0;
        if self.gram.at_min() || self.window.len() < self.gram.value {
            self.shift_window();
            self.builder.clear();
        } else {
            built = self.gram.previous;
        }
        if self.window.len() < self.gram.value {
            return false;
        }
        let mut all_filler = true;
        let mut last = 0;
        let mut gram_num = 1;
        while gram_num <= self.window.len() && built < self.gram.value {
            let tok = &self.window[gram_num - 1];
            last = gram_num - 1;
            if built < gram_num {
                if built > 0 {
                    self.builder.push_str(&self.cfg.token_separator);
                }
                self.builder.push_str(&tok.text);
                built += 1;
            }
            if all_filler && tok.filler {
                if gram_num == self.gram.value {
                    self.gram.advance();
                }
            } else {
                all_filler = false;
            }
            gram_num += 1;
        }
        if all_filler || built != self.gram.value {
            return false;
        }
        let first = &self.window[0];
        let slot = out.next_slot();
        slot.text.push_str(&self.builder);
        slot.start = first.start;
        slot.end = self.window[last].end;
        slot.pos_inc = if self.output_here { 0 } else { 1 };
        slot.kind = if self.gram.value > 1 {
            self.no_shingle_output = false;
            TokenType::Shingle
        } else {
            first.kind
        };
        slot.pos_len = if self.cfg.output_unigrams {
            built
        } else {
            (built + 1).saturating_sub(self.cfg.min).max(1)
        };
        self.output_here = true;
        self.gram.advance();
        true
    }
}

/// Replaces `toks` with their shingles (using `out` as the new list).
pub(crate) fn shingles(cfg: &Shingle, toks: &mut TokList, out: &mut TokList) {
    out.clear();
    let min_value = if cfg.output_unigrams { 1 } else { cfg.min };
    let mut state = State {
        cfg,
        input: toks.as_slice(),
        next_input: 0,
        pending: None,
        fillers_to_insert: 0,
        window: std::collections::VecDeque::with_capacity(cfg.max),
        gram: Gram {
            value: min_value,
            previous: min_value,
            min_value,
            min_shingle: cfg.min,
            max_shingle: cfg.max,
        },
        builder: String::new(),
        output_here: false,
        no_shingle_output: true,
    };
    while state.increment(out) {}
    std::mem::swap(toks, out);
}

/// The longest prefix (in characters) a `search_as_you_type` field's `._index_prefix` holds.
pub const SAYT_MAX_PREFIX_CHARS: usize = 20;

/// See [`crate::filters::TokenFilter::SaytPrefix`].
pub(crate) fn sayt_prefixes(size: usize, toks: &mut TokList, out: &mut TokList) {
    out.clear();
    let input = toks.as_slice();
    let mut shingle = String::new();
    for (i, t) in input.iter().enumerate() {
        shingle.clear();
        let last = (i + size).min(input.len());
        for (k, part) in input[i..last].iter().enumerate() {
            if k > 0 {
                shingle.push(' ');
            }
            shingle.push_str(&part.text);
        }
        for _ in last..i + size {
            shingle.push(' ');
        }
        let mut pos_inc = t.pos_inc;
        let mut emit = |text: &str| {
            let slot = out.next_slot();
            slot.text.push_str(text);
            slot.start = t.start;
            slot.end = input[last - 1].end;
            slot.pos_inc = pos_inc;
            slot.kind = TokenType::Shingle;
            pos_inc = 0;
        };
        for (at, c) in shingle.char_indices().take(SAYT_MAX_PREFIX_CHARS) {
            emit(&shingle[..at + c.len_utf8()]);
        }
        // ES's `EdgeNGramTokenFilter(.., 1, 20, preserveOriginal = true)`: a longer shingle
        // is kept whole after its grams.
        if shingle.chars().count() > SAYT_MAX_PREFIX_CHARS {
            emit(&shingle);
        }
    }
    std::mem::swap(toks, out);
}
