//! The token buffer that tokenizers fill and token filters rewrite in place.
//!
//! Tokens live in a [`TokList`] whose slots (and their `String`s) are reused from one
//! analysis to the next, so that the indexing path does not allocate per token.

/// The Lucene/Elasticsearch token type reported by `_analyze`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenType {
    Alphanum,
    Num,
    Ideographic,
    Hiragana,
    Katakana,
    Hangul,
    SoutheastAsian,
    Emoji,
    Word,
    /// IK: a Chinese dictionary word.
    CnWord,
    /// IK: a single Chinese character.
    CnChar,
    /// IK: a run of Latin letters.
    English,
    /// IK: a run of digits.
    Arabic,
    /// IK: letters and digits mixed (with connectors).
    Letter,
    /// IK: a single kana, hangul or other CJK-form character.
    OtherCjk,
    /// A word n-gram made by the `shingle` filter.
    Shingle,
}

impl TokenType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TokenType::Alphanum => "<ALPHANUM>",
            TokenType::Num => "<NUM>",
            TokenType::Ideographic => "<IDEOGRAPHIC>",
            TokenType::Hiragana => "<HIRAGANA>",
            TokenType::Katakana => "<KATAKANA>",
            TokenType::Hangul => "<HANGUL>",
            TokenType::SoutheastAsian => "<SOUTHEAST_ASIAN>",
            TokenType::Emoji => "<EMOJI>",
            TokenType::Word => "word",
            TokenType::CnWord => "CN_WORD",
            TokenType::CnChar => "CN_CHAR",
            TokenType::English => "ENGLISH",
            TokenType::Arabic => "ARABIC",
            TokenType::Letter => "LETTER",
            TokenType::OtherCjk => "OTHER_CJK",
            TokenType::Shingle => "shingle",
        }
    }
}

/// One token while it moves through the chain.
///
/// `start`/`end` are byte offsets into the text the tokenizer saw (after char filters);
/// `pos_inc` is Lucene's position increment (0 = same position as the previous token).
#[derive(Debug, Clone)]
pub(crate) struct Tok {
    pub text: String,
    pub start: usize,
    pub end: usize,
    pub pos_inc: usize,
    /// Lucene's position length: how many positions the token spans (shingles span several).
    pub pos_len: usize,
    pub kind: TokenType,
}

impl Default for Tok {
    fn default() -> Self {
        Tok {
            text: String::new(),
            start: 0,
            end: 0,
            pos_inc: 1,
            pos_len: 1,
            kind: TokenType::Word,
        }
    }
}

/// A growable list of tokens whose slots beyond `len` are kept for reuse.
#[derive(Debug, Default)]
pub(crate) struct TokList {
    slots: Vec<Tok>,
    len: usize,
}

impl TokList {
    pub fn clear(&mut self) {
        self.len = 0;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn as_slice(&self) -> &[Tok] {
        &self.slots[..self.len]
    }

    pub fn as_mut_slice(&mut self) -> &mut [Tok] {
        &mut self.slots[..self.len]
    }

    /// Appends a token with the given text, offsets, position increment and type.
    pub fn push(&mut self, text: &str, start: usize, end: usize, pos_inc: usize, kind: TokenType) {
        let slot = self.next_slot();
        slot.text.push_str(text);
        slot.start = start;
        slot.end = end;
        slot.pos_inc = pos_inc;
        slot.kind = kind;
    }

    /// Appends a copy of `tok` with another position increment.
    pub fn push_copy(&mut self, tok: &Tok, pos_inc: usize) {
        self.push(&tok.text, tok.start, tok.end, pos_inc, tok.kind);
    }

    /// Returns a cleared slot at the end of the list (its `String` keeps its capacity).
    pub fn next_slot(&mut self) -> &mut Tok {
        if self.len == self.slots.len() {
            self.slots.push(Tok::default());
        }
        let slot = &mut self.slots[self.len];
        self.len += 1;
        slot.text.clear();
        slot.pos_inc = 1;
        slot.pos_len = 1;
        slot
    }

    /// Keeps only the tokens for which `keep` says so, in order.
    ///
    /// With `carry_positions` the position increments of removed tokens are added to the
    /// next kept token, as Lucene's `FilteringTokenFilter` does (stop words leave gaps).
    pub fn retain(&mut self, carry_positions: bool, mut keep: impl FnMut(&Tok) -> bool) {
        let mut write = 0;
        let mut carry = 0;
        for read in 0..self.len {
            if keep(&self.slots[read]) {
                self.slots[read].pos_inc += carry;
                carry = 0;
                self.slots.swap(write, read);
                write += 1;
            } else if carry_positions {
                carry += self.slots[read].pos_inc;
            }
        }
        self.len = write;
    }
}
