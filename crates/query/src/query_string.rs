//! The two query-string syntaxes, parsed into [`QsNode`] trees (no mapping needed):
//!
//! - `query_string`: Lucene's classic syntax — terms, `"phrases"~slop`, `field:value`,
//!   `field:(grouped terms)`, `AND`/`OR`/`NOT`/`&&`/`||`/`!`, `+`/`-`, `(...)`, `^boost`,
//!   `term~fuzziness`, `*`/`?` wildcards, `/regex/`, ranges `[a TO b]`/`{a TO b}` and ES's
//!   `field:>5`/`>=`/`<`/`<=`, `_exists_:field`, `*:*`. Clauses combine as Lucene's
//!   `QueryParserBase.addClause` combines them.
//! - `simple_query_string`: Lucene's `SimpleQueryParser` — `+` (AND), `|` (OR), `-` (NOT),
//!   `"phrase"~slop`, `prefix*`, `term~N`, `(...)`; it never fails (bad syntax is ignored).
//!
//! Leaves stay unanalyzed text; `plan` resolves fields and runs the analyzers.

use super::parse::{Fuzziness, Operator};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occur {
    Must,
    Should,
    MustNot,
}

#[derive(Debug, Clone, PartialEq)]
pub enum QsNode {
    Bool {
        clauses: Vec<(Occur, QsNode)>,
        boost: f32,
    },
    Leaf {
        /// The explicit `field:` (may hold `*` wildcards); `None` = the query's default fields.
        field: Option<String>,
        term: QsTerm,
        boost: f32,
    },
    /// `field:( ... )`: leaves inside without their own field use `field`.
    Scoped {
        field: String,
        node: Box<QsNode>,
    },
    MatchAll {
        boost: f32,
    },
    /// An empty query string matches nothing.
    MatchNone,
}

#[derive(Debug, Clone, PartialEq)]
pub enum QsTerm {
    /// A plain term, analyzed with the field's search analyzer.
    Term(String),
    Phrase {
        text: String,
        slop: Option<u32>,
    },
    Prefix(String),
    /// ES wildcard syntax (`*`, `?`, `\` escapes kept).
    Wildcard(String),
    Fuzzy {
        text: String,
        /// `None`: the query's `fuzziness` (a bare `~`).
        fuzziness: Option<Fuzziness>,
    },
    Regex(String),
    Range {
        from: Option<String>,
        to: Option<String>,
        include_lower: bool,
        include_upper: bool,
    },
    /// `field:*`, `_exists_:field`, or a bare `*` (all documents when the field is `*`).
    Exists,
}

impl QsNode {
    fn with_boost(self, b: f32) -> QsNode {
        match self {
            QsNode::Bool { clauses, boost } => QsNode::Bool {
                clauses,
                boost: boost * b,
            },
            QsNode::Leaf { field, term, boost } => QsNode::Leaf {
                field,
                term,
                boost: boost * b,
            },
            QsNode::Scoped { field, node } => QsNode::Scoped {
                field,
                node: Box::new(node.with_boost(b)),
            },
            QsNode::MatchAll { boost } => QsNode::MatchAll { boost: boost * b },
            QsNode::MatchNone => QsNode::MatchNone,
        }
    }

    /// Whether a wildcard or prefix term starts with `*` or `?`.
    pub fn has_leading_wildcard(&self) -> bool {
        match self {
            QsNode::Bool { clauses, .. } => clauses.iter().any(|(_, n)| n.has_leading_wildcard()),
            QsNode::Scoped { node, .. } => node.has_leading_wildcard(),
            QsNode::Leaf {
                term: QsTerm::Wildcard(p),
                ..
            } => p.starts_with('*') || p.starts_with('?'),
            _ => false,
        }
    }

    /// Whether any range bound uses date math with `now`.
    pub fn uses_now(&self) -> bool {
        match self {
            QsNode::Bool { clauses, .. } => clauses.iter().any(|(_, n)| n.uses_now()),
            QsNode::Scoped { node, .. } => node.uses_now(),
            QsNode::Leaf {
                term: QsTerm::Range { from, to, .. },
                ..
            } => [from, to]
                .iter()
                .any(|b| b.as_deref().is_some_and(|s| s.contains("now"))),
            _ => false,
        }
    }
}

// ----------------------------------------------------------------------------------------------
// Classic syntax

#[derive(Clone, Copy, PartialEq, Eq)]
enum Conj {
    None,
    And,
    Or,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Modifier {
    None,
    Required,
    Not,
}

struct Classic {
    chars: Vec<char>,
    pos: usize,
    operator: Operator,
}

/// One lexed "word" before it is classified.
struct Word {
    /// With escapes removed.
    text: String,
    /// As written (escapes kept), for wildcard patterns.
    raw: String,
    /// Whether an unescaped `*` or `?` occurs.
    wild: bool,
    /// Whether the last char is an unescaped `*` and it is the only wildcard.
    trailing_star_only: bool,
}

fn is_ws(c: char) -> bool {
    c.is_whitespace() || c == '\u{3000}'
}

/// Characters that cannot appear (unescaped) in a classic-syntax term.
fn is_special(c: char) -> bool {
    is_ws(c)
        || matches!(
            c,
            '(' | ')' | ':' | '^' | '[' | ']' | '"' | '{' | '}' | '~' | '\\' | '/' | '!'
        )
}

/// Parses `query_string` text; the error reads like Lucene's `ParseException` detail.
pub fn parse_classic(text: &str, operator: Operator) -> Result<QsNode, String> {
    if text.trim().is_empty() {
        return Ok(QsNode::MatchNone);
    }
    let mut p = Classic {
        chars: text.chars().collect(),
        pos: 0,
        operator,
    };
    let node = p.query(0)?;
    p.skip_ws();
    if p.pos < p.chars.len() {
        return Err(format!(
            "Encountered \"{}\" at column {}",
            p.chars[p.pos],
            p.pos + 1
        ));
    }
    Ok(node)
}

impl Classic {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, off: usize) -> Option<char> {
        self.chars.get(self.pos + off).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(is_ws) {
            self.pos += 1;
        }
    }

    fn eof_error(&self) -> String {
        format!("Encountered \"<EOF>\" at column {}", self.chars.len())
    }

    /// If the next token is the bare word `w` (followed by a delimiter), consumes it.
    fn eat_keyword(&mut self, w: &str) -> bool {
        let n = w.chars().count();
        let matches = w
            .chars()
            .enumerate()
            .all(|(i, c)| self.peek_at(i) == Some(c));
        if !matches {
            return false;
        }
        match self.peek_at(n) {
            None => {}
            Some(c) if is_ws(c) || matches!(c, '(' | '"' | '[' | '{' | '+' | '-' | '!' | '/') => {}
            Some(_) => return false,
        }
        self.pos += n;
        true
    }

    fn eat_str(&mut self, s: &str) -> bool {
        if s.chars()
            .enumerate()
            .all(|(i, c)| self.peek_at(i) == Some(c))
        {
            self.pos += s.chars().count();
            true
        } else {
            false
        }
    }

    fn conjunction(&mut self) -> Conj {
        if self.eat_keyword("AND") || self.eat_str("&&") {
            Conj::And
        } else if self.eat_keyword("OR") || self.eat_str("||") {
            Conj::Or
        } else {
            Conj::None
        }
    }

    fn modifier(&mut self) -> Modifier {
        match self.peek() {
            Some('+') => {
                self.pos += 1;
                Modifier::Required
            }
            Some('-') => {
                self.pos += 1;
                Modifier::Not
            }
            Some('!') if self.peek_at(1) != Some('=') => {
                self.pos += 1;
                Modifier::Not
            }
            _ if self.eat_keyword("NOT") => Modifier::Not,
            _ => Modifier::None,
        }
    }

    fn query(&mut self, depth: usize) -> Result<QsNode, String> {
        let mut clauses: Vec<(Occur, QsNode)> = Vec::new();
        let mut first: Option<QsNode> = None;
        let mut count = 0usize;
        loop {
            self.skip_ws();
            match self.peek() {
                None => break,
                Some(')') if depth > 0 => break,
                _ => {}
            }
            let conj = if count == 0 {
                Conj::None
            } else {
                self.conjunction()
            };
            self.skip_ws();
            if count == 0 && (self.eat_keyword("AND") || self.eat_keyword("OR")) {
                return Err(format!("Encountered \"AND/OR\" at column {}", self.pos));
            }
            let mods = self.modifier();
            self.skip_ws();
            match self.peek() {
                None => return Err(self.eof_error()),
                Some(')') => return Err(format!("Encountered \")\" at column {}", self.pos + 1)),
                _ => {}
            }
            let node = self.clause(depth)?;
            if count == 0 && mods == Modifier::None {
                first = Some(node.clone());
            }
            self.add_clause(&mut clauses, conj, mods, node);
            count += 1;
        }
        if count == 0 {
            return Err(self.eof_error());
        }
        if count == 1 {
            if let Some(f) = first {
                return Ok(f);
            }
        }
        Ok(QsNode::Bool {
            clauses,
            boost: 1.0,
        })
    }

    /// Lucene's `QueryParserBase.addClause`.
    fn add_clause(
        &self,
        clauses: &mut Vec<(Occur, QsNode)>,
        conj: Conj,
        mods: Modifier,
        node: QsNode,
    ) {
        // Introduced by AND: the preceding clause becomes required (unless prohibited).
        if conj == Conj::And {
            if let Some(last) = clauses.last_mut() {
                if last.0 != Occur::MustNot {
                    last.0 = Occur::Must;
                }
            }
        }
        // With a default AND, a clause introduced by OR makes the preceding one optional.
        if self.operator == Operator::And && conj == Conj::Or {
            if let Some(last) = clauses.last_mut() {
                if last.0 != Occur::MustNot {
                    last.0 = Occur::Should;
                }
            }
        }
        let prohibited = mods == Modifier::Not;
        let required = match self.operator {
            Operator::Or => mods == Modifier::Required || (conj == Conj::And && !prohibited),
            Operator::And => !prohibited && conj != Conj::Or,
        };
        let occur = if prohibited {
            Occur::MustNot
        } else if required {
            Occur::Must
        } else {
            Occur::Should
        };
        clauses.push((occur, node));
    }

    fn clause(&mut self, depth: usize) -> Result<QsNode, String> {
        // An optional `field:` prefix.
        let mut field: Option<String> = None;
        let save = self.pos;
        if self.peek().is_some_and(|c| !is_special(c) || c == '\\') {
            let w = self.word();
            self.skip_ws();
            if self.peek() == Some(':') && !w.text.is_empty() {
                self.pos += 1;
                self.skip_ws();
                field = Some(w.text);
            } else {
                self.pos = save;
            }
        }
        let node = match self.peek() {
            None => return Err(self.eof_error()),
            Some('(') => {
                self.pos += 1;
                let inner = self.query(depth + 1)?;
                self.skip_ws();
                if self.peek() != Some(')') {
                    return Err(self.eof_error());
                }
                self.pos += 1;
                let inner = match self.boost()? {
                    Some(b) => inner.with_boost(b),
                    None => inner,
                };
                return Ok(match field {
                    Some(f) => QsNode::Scoped {
                        field: f,
                        node: Box::new(inner),
                    },
                    None => inner,
                });
            }
            Some('"') => {
                let text = self.quoted()?;
                let slop = self
                    .tilde()?
                    .map(|s| s.parse::<f32>().map(|f| f as u32).unwrap_or(0));
                QsTerm::Phrase { text, slop }
            }
            Some('[') | Some('{') => self.range()?,
            Some('/') => QsTerm::Regex(self.regex()?),
            Some(c) if !is_special(c) || c == '\\' => {
                let w = self.word();
                if w.text.is_empty() && !w.wild {
                    return Err(format!("Encountered \"{c}\" at column {}", self.pos + 1));
                }
                if field.as_deref() == Some("_exists_") {
                    field = Some(w.text.clone());
                    QsTerm::Exists
                } else if let Some(f) = self.tilde()? {
                    let fuzziness = match f.parse::<f32>() {
                        Ok(x) if x >= 1.0 => Some(Fuzziness::Edits(x.min(2.0) as u8)),
                        _ => None,
                    };
                    QsTerm::Fuzzy {
                        text: w.text,
                        fuzziness,
                    }
                } else if w.raw == "*" {
                    if field.as_deref() == Some("*") {
                        let boost = self.boost()?.unwrap_or(1.0);
                        return Ok(QsNode::MatchAll { boost });
                    }
                    QsTerm::Exists
                } else if w.trailing_star_only {
                    QsTerm::Prefix(w.text[..w.text.len() - 1].to_string())
                } else if w.wild {
                    QsTerm::Wildcard(w.raw)
                } else if let Some(r) = comparison_range(&w.text) {
                    r
                } else {
                    QsTerm::Term(w.text)
                }
            }
            Some(c) => return Err(format!("Encountered \"{c}\" at column {}", self.pos + 1)),
        };
        let boost = self.boost()?.unwrap_or(1.0);
        Ok(QsNode::Leaf {
            field,
            term: node,
            boost,
        })
    }

    /// Reads a term: up to whitespace or a special character, `\` escaping the next one.
    /// `+` and `-` are term characters except at the start.
    fn word(&mut self) -> Word {
        let mut w = Word {
            text: String::new(),
            raw: String::new(),
            wild: false,
            trailing_star_only: false,
        };
        let mut wild_count = 0;
        let mut last_was_star = false;
        while let Some(c) = self.peek() {
            if c == '\\' {
                if let Some(n) = self.peek_at(1) {
                    w.text.push(n);
                    w.raw.push('\\');
                    w.raw.push(n);
                    self.pos += 2;
                    last_was_star = false;
                    continue;
                }
                self.pos += 1;
                break;
            }
            if is_special(c) {
                break;
            }
            if (c == '+' || c == '-') && w.raw.is_empty() {
                break;
            }
            if c == '*' || c == '?' {
                w.wild = true;
                wild_count += 1;
            }
            last_was_star = c == '*';
            w.text.push(c);
            w.raw.push(c);
            self.pos += 1;
        }
        w.trailing_star_only = last_was_star && wild_count == 1 && w.raw.len() > 1;
        w
    }

    fn quoted(&mut self) -> Result<String, String> {
        self.pos += 1; // opening quote
        let mut out = String::new();
        loop {
            match self.peek() {
                None => return Err("Lexical error: unterminated quoted string".to_string()),
                Some('\\') => {
                    if let Some(n) = self.peek_at(1) {
                        out.push(n);
                    }
                    self.pos += 2;
                }
                Some('"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn regex(&mut self) -> Result<String, String> {
        self.pos += 1; // opening slash
        let mut out = String::new();
        loop {
            match self.peek() {
                None => return Err("Lexical error: unterminated regular expression".to_string()),
                Some('\\') if self.peek_at(1) == Some('/') => {
                    out.push('/');
                    self.pos += 2;
                }
                Some('\\') => {
                    out.push('\\');
                    if let Some(n) = self.peek_at(1) {
                        out.push(n);
                    }
                    self.pos += 2;
                }
                Some('/') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn range(&mut self) -> Result<QsTerm, String> {
        let include_lower = self.peek() == Some('[');
        self.pos += 1;
        self.skip_ws();
        let from = self.range_value()?;
        self.skip_ws();
        if !self.eat_str("TO") {
            return Err(format!(
                "Encountered unexpected token at column {}, expected \"TO\"",
                self.pos + 1
            ));
        }
        self.skip_ws();
        let to = self.range_value()?;
        self.skip_ws();
        let include_upper = match self.peek() {
            Some(']') => true,
            Some('}') => false,
            None => return Err(self.eof_error()),
            Some(c) => return Err(format!("Encountered \"{c}\" at column {}", self.pos + 1)),
        };
        self.pos += 1;
        let open = |s: String| if s == "*" { None } else { Some(s) };
        Ok(QsTerm::Range {
            from: open(from),
            to: open(to),
            include_lower,
            include_upper,
        })
    }

    fn range_value(&mut self) -> Result<String, String> {
        if self.peek() == Some('"') {
            return self.quoted();
        }
        let mut out = String::new();
        while let Some(c) = self.peek() {
            if is_ws(c) || c == ']' || c == '}' {
                break;
            }
            if c == '\\' {
                if let Some(n) = self.peek_at(1) {
                    out.push(n);
                }
                self.pos += 2;
                continue;
            }
            out.push(c);
            self.pos += 1;
        }
        if out.is_empty() {
            return Err(self.eof_error());
        }
        Ok(out)
    }

    /// `~` with an optional number: `Some("")` for a bare tilde.
    fn tilde(&mut self) -> Result<Option<String>, String> {
        if self.peek() != Some('~') {
            return Ok(None);
        }
        self.pos += 1;
        let mut n = String::new();
        while let Some(c) = self.peek() {
            if c.is_ascii_digit() || c == '.' {
                n.push(c);
                self.pos += 1;
            } else {
                break;
            }
        }
        Ok(Some(n))
    }

    fn boost(&mut self) -> Result<Option<f32>, String> {
        if self.peek() != Some('^') {
            return Ok(None);
        }
        self.pos += 1;
        let mut n = String::new();
        while let Some(c) = self.peek() {
            if c.is_ascii_digit() || c == '.' {
                n.push(c);
                self.pos += 1;
            } else {
                break;
            }
        }
        let b = n.parse::<f32>().map_err(|_| {
            format!(
                "Encountered \"^\" without a boost value at column {}",
                self.pos
            )
        })?;
        // A fuzzy suffix may also follow the boost (`term^2~1`); it is ignored there.
        let _ = self.tilde()?;
        Ok(Some(b))
    }
}

/// ES's `field:>5`, `>=5`, `<5`, `<=5`.
fn comparison_range(text: &str) -> Option<QsTerm> {
    let (rest, lower, inclusive) = if let Some(r) = text.strip_prefix(">=") {
        (r, true, true)
    } else if let Some(r) = text.strip_prefix('>') {
        (r, true, false)
    } else if let Some(r) = text.strip_prefix("<=") {
        (r, false, true)
    } else if let Some(r) = text.strip_prefix('<') {
        (r, false, false)
    } else {
        return None;
    };
    if rest.is_empty() {
        return None;
    }
    let v = Some(rest.to_string());
    Some(if lower {
        QsTerm::Range {
            from: v,
            to: None,
            include_lower: inclusive,
            include_upper: true,
        }
    } else {
        QsTerm::Range {
            from: None,
            to: v,
            include_lower: true,
            include_upper: inclusive,
        }
    })
}

// ----------------------------------------------------------------------------------------------
// Simple syntax (a port of Lucene's SimpleQueryParser)

struct SimpleState {
    top: Option<QsNode>,
    current: Option<Occur>,
    previous: Option<Occur>,
    not: u32,
}

impl SimpleState {
    fn new() -> SimpleState {
        SimpleState {
            top: None,
            current: None,
            previous: None,
            not: 0,
        }
    }
}

/// Parses `simple_query_string` text (never fails).
pub fn parse_simple(text: &str, operator: Operator) -> QsNode {
    let chars: Vec<char> = text.chars().collect();
    let default = match operator {
        Operator::And => Occur::Must,
        Operator::Or => Occur::Should,
    };
    let mut state = SimpleState::new();
    simple_sub(&chars, 0, chars.len(), default, &mut state);
    state.top.unwrap_or(QsNode::MatchNone)
}

fn simple_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

fn simple_token_finished(c: char) -> bool {
    matches!(c, '"' | '|' | '+' | '(' | ')') || simple_ws(c)
}

fn simple_sub(data: &[char], mut i: usize, end: usize, default: Occur, state: &mut SimpleState) {
    while i < end {
        let c = data[i];
        match c {
            '(' => i = simple_subquery(data, i, end, default, state),
            ')' => i += 1,
            '"' => i = simple_phrase(data, i, end, default, state),
            '+' => {
                if state.current.is_none() && state.top.is_some() {
                    state.current = Some(Occur::Must);
                }
                i += 1;
            }
            '|' => {
                if state.current.is_none() && state.top.is_some() {
                    state.current = Some(Occur::Should);
                }
                i += 1;
            }
            '-' => {
                state.not += 1;
                i += 1;
                continue;
            }
            c if simple_ws(c) => i += 1,
            _ => i = simple_token(data, i, end, default, state),
        }
        state.not = 0;
    }
}

fn simple_subquery(
    data: &[char],
    i: usize,
    end: usize,
    default: Occur,
    state: &mut SimpleState,
) -> usize {
    let start = i + 1;
    let mut j = start;
    let mut depth = 1;
    let mut escaped = false;
    while j < end {
        if !escaped {
            match data[j] {
                '\\' => {
                    escaped = true;
                    j += 1;
                    continue;
                }
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
        }
        escaped = false;
        j += 1;
    }
    if j == end {
        // No closing parenthesis: the opening one is ignored.
        start
    } else if j == start {
        state.current = None;
        j + 1
    } else {
        let mut sub = SimpleState::new();
        simple_sub(data, start, j, default, &mut sub);
        build_tree(state, sub.top, default);
        j + 1
    }
}

fn simple_phrase(
    data: &[char],
    i: usize,
    end: usize,
    default: Occur,
    state: &mut SimpleState,
) -> usize {
    let start = i + 1;
    let mut j = start;
    let mut escaped = false;
    let mut text = String::new();
    let mut has_slop = false;
    while j < end {
        if !escaped {
            if data[j] == '\\' {
                escaped = true;
                j += 1;
                continue;
            }
            if data[j] == '"' {
                if j + 1 < end && data[j + 1] == '~' {
                    j += 1;
                    if j + 1 < end {
                        has_slop = true;
                    }
                }
                break;
            }
        }
        escaped = false;
        text.push(data[j]);
        j += 1;
    }
    if j == end {
        return start;
    }
    if j == start {
        state.current = None;
        return j + 1;
    }
    let slop = if has_slop {
        let (n, next) = simple_fuzziness(data, j, end);
        j = next;
        n
    } else {
        0
    };
    build_tree(
        state,
        Some(QsNode::Leaf {
            field: None,
            term: QsTerm::Phrase {
                text,
                slop: Some(slop),
            },
            boost: 1.0,
        }),
        default,
    );
    j + 1
}

/// Parses the number after `~` at `data[i]`; returns it and the index of the last char read.
fn simple_fuzziness(data: &[char], mut i: usize, end: usize) -> (u32, usize) {
    let mut text = String::new();
    if i < end && data[i] == '~' {
        loop {
            i += 1;
            if i >= end || simple_token_finished(data[i]) {
                break;
            }
            text.push(data[i]);
        }
        let n = if text.is_empty() {
            2
        } else {
            text.parse::<i64>().unwrap_or(0).max(0) as u32
        };
        // Point at the last consumed char (the caller steps past it).
        return (n, i.saturating_sub(1));
    }
    (0, i)
}

fn simple_token(
    data: &[char],
    mut i: usize,
    end: usize,
    default: Occur,
    state: &mut SimpleState,
) -> usize {
    let mut text = String::new();
    let mut escaped = false;
    let mut prefix = false;
    let mut fuzzy = false;
    while i < end {
        if !escaped {
            if data[i] == '\\' {
                escaped = true;
                prefix = false;
                i += 1;
                continue;
            }
            if simple_token_finished(data[i]) {
                break;
            }
            if !text.is_empty() && data[i] == '~' {
                fuzzy = true;
                break;
            }
            prefix = !text.is_empty() && data[i] == '*';
        }
        escaped = false;
        text.push(data[i]);
        i += 1;
    }
    if text.is_empty() {
        return i;
    }
    let term = if fuzzy {
        let (n, last) = simple_fuzziness(data, i, end);
        i = last + 1;
        let n = n.min(2);
        if n == 0 {
            QsTerm::Term(text)
        } else {
            QsTerm::Fuzzy {
                text,
                fuzziness: Some(Fuzziness::Edits(n as u8)),
            }
        }
    } else if prefix {
        text.pop();
        QsTerm::Prefix(text)
    } else {
        QsTerm::Term(text)
    };
    build_tree(
        state,
        Some(QsNode::Leaf {
            field: None,
            term,
            boost: 1.0,
        }),
        default,
    );
    i
}

/// Lucene's `SimpleQueryParser.buildQueryTree`.
fn build_tree(state: &mut SimpleState, branch: Option<QsNode>, default: Occur) {
    let Some(mut branch) = branch else {
        return;
    };
    if state.not % 2 == 1 {
        branch = QsNode::Bool {
            clauses: vec![
                (Occur::MustNot, branch),
                (Occur::Should, QsNode::MatchAll { boost: 1.0 }),
            ],
            boost: 1.0,
        };
    }
    match state.top.take() {
        None => state.top = Some(branch),
        Some(top) => {
            let op = state.current.unwrap_or(default);
            let mut top = if state.previous != Some(op) {
                QsNode::Bool {
                    clauses: vec![(op, top)],
                    boost: 1.0,
                }
            } else {
                top
            };
            if let QsNode::Bool { clauses, .. } = &mut top {
                clauses.push((op, branch));
            }
            state.top = Some(top);
            state.previous = Some(op);
        }
    }
    state.current = None;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(field: Option<&str>, term: QsTerm) -> QsNode {
        QsNode::Leaf {
            field: field.map(str::to_string),
            term,
            boost: 1.0,
        }
    }

    fn t(s: &str) -> QsTerm {
        QsTerm::Term(s.to_string())
    }

    fn classic(s: &str) -> QsNode {
        parse_classic(s, Operator::Or).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn single_terms_and_fields() {
        assert_eq!(classic("quick"), leaf(None, t("quick")));
        assert_eq!(classic("title:quick"), leaf(Some("title"), t("quick")));
        assert_eq!(classic("title : quick"), leaf(Some("title"), t("quick")));
        assert_eq!(classic("wi-fi"), leaf(None, t("wi-fi")));
        assert_eq!(classic("a\\:b"), leaf(None, t("a:b")));
        assert_eq!(classic("江苏千米"), leaf(None, t("江苏千米")));
        assert_eq!(classic(""), QsNode::MatchNone);
    }

    #[test]
    fn default_or_and_operators() {
        let n = classic("a b");
        assert_eq!(
            n,
            QsNode::Bool {
                clauses: vec![
                    (Occur::Should, leaf(None, t("a"))),
                    (Occur::Should, leaf(None, t("b")))
                ],
                boost: 1.0
            }
        );
        let n = classic("a AND b OR c");
        let QsNode::Bool { clauses, .. } = n else {
            panic!()
        };
        let occurs: Vec<Occur> = clauses.iter().map(|c| c.0).collect();
        assert_eq!(occurs, vec![Occur::Must, Occur::Must, Occur::Should]);
        let n = classic("+a -b c");
        let QsNode::Bool { clauses, .. } = n else {
            panic!()
        };
        let occurs: Vec<Occur> = clauses.iter().map(|c| c.0).collect();
        assert_eq!(occurs, vec![Occur::Must, Occur::MustNot, Occur::Should]);
        let n = classic("a && !b");
        let QsNode::Bool { clauses, .. } = n else {
            panic!()
        };
        let occurs: Vec<Occur> = clauses.iter().map(|c| c.0).collect();
        assert_eq!(occurs, vec![Occur::Must, Occur::MustNot]);
        let n = parse_classic("a b OR c", Operator::And).unwrap();
        let QsNode::Bool { clauses, .. } = n else {
            panic!()
        };
        let occurs: Vec<Occur> = clauses.iter().map(|c| c.0).collect();
        assert_eq!(occurs, vec![Occur::Must, Occur::Should, Occur::Should]);
        let n = classic("NOT a");
        assert_eq!(
            n,
            QsNode::Bool {
                clauses: vec![(Occur::MustNot, leaf(None, t("a")))],
                boost: 1.0
            }
        );
        // Words that merely start with an operator are terms.
        assert_eq!(classic("ANDROID"), leaf(None, t("ANDROID")));
    }

    #[test]
    fn groups_phrases_boosts() {
        let n = classic("title:(quick fox)^2");
        let QsNode::Scoped { field, node } = n else {
            panic!()
        };
        assert_eq!(field, "title");
        assert!(matches!(*node, QsNode::Bool { boost, .. } if boost == 2.0));
        assert_eq!(
            classic("\"quick fox\"~2"),
            leaf(
                None,
                QsTerm::Phrase {
                    text: "quick fox".into(),
                    slop: Some(2)
                }
            )
        );
        assert_eq!(
            classic("body:\"a \\\"b\\\"\""),
            leaf(
                Some("body"),
                QsTerm::Phrase {
                    text: "a \"b\"".into(),
                    slop: None
                }
            )
        );
        assert_eq!(
            classic("fox^3"),
            QsNode::Leaf {
                field: None,
                term: t("fox"),
                boost: 3.0
            }
        );
    }

    #[test]
    fn wildcards_fuzzy_regex_exists() {
        assert_eq!(classic("qu*"), leaf(None, QsTerm::Prefix("qu".into())));
        assert_eq!(
            classic("qu?ck*"),
            leaf(None, QsTerm::Wildcard("qu?ck*".into()))
        );
        assert_eq!(classic("*ck"), leaf(None, QsTerm::Wildcard("*ck".into())));
        assert_eq!(
            classic("quikc~"),
            leaf(
                None,
                QsTerm::Fuzzy {
                    text: "quikc".into(),
                    fuzziness: None
                }
            )
        );
        assert_eq!(
            classic("quikc~1"),
            leaf(
                None,
                QsTerm::Fuzzy {
                    text: "quikc".into(),
                    fuzziness: Some(Fuzziness::Edits(1))
                }
            )
        );
        assert_eq!(
            classic("name:/joh?n(ath[oa]n)/"),
            leaf(Some("name"), QsTerm::Regex("joh?n(ath[oa]n)".into()))
        );
        assert_eq!(
            classic("_exists_:title"),
            leaf(Some("title"), QsTerm::Exists)
        );
        assert_eq!(classic("title:*"), leaf(Some("title"), QsTerm::Exists));
        assert_eq!(classic("*:*"), QsNode::MatchAll { boost: 1.0 });
        assert!(classic("*ck").has_leading_wildcard());
    }

    #[test]
    fn ranges() {
        assert_eq!(
            classic("age:[10 TO 20}"),
            leaf(
                Some("age"),
                QsTerm::Range {
                    from: Some("10".into()),
                    to: Some("20".into()),
                    include_lower: true,
                    include_upper: false
                }
            )
        );
        assert_eq!(
            classic("date:{* TO now-1d}"),
            leaf(
                Some("date"),
                QsTerm::Range {
                    from: None,
                    to: Some("now-1d".into()),
                    include_lower: false,
                    include_upper: false
                }
            )
        );
        assert_eq!(
            classic("age:>=5"),
            leaf(
                Some("age"),
                QsTerm::Range {
                    from: Some("5".into()),
                    to: None,
                    include_lower: true,
                    include_upper: true
                }
            )
        );
        assert_eq!(
            classic("age:<5"),
            leaf(
                Some("age"),
                QsTerm::Range {
                    from: None,
                    to: Some("5".into()),
                    include_lower: true,
                    include_upper: false
                }
            )
        );
        assert!(classic("date:{* TO now-1d}").uses_now());
    }

    #[test]
    fn syntax_errors() {
        for bad in [
            "foo AND", "(foo", "foo)", "title:", "\"open", "[1 TO", "AND foo", "a^", "a:(b",
        ] {
            assert!(parse_classic(bad, Operator::Or).is_err(), "{bad}");
        }
    }

    fn simple(s: &str) -> QsNode {
        parse_simple(s, Operator::Or)
    }

    #[test]
    fn simple_syntax() {
        assert_eq!(simple("fox"), leaf(None, t("fox")));
        assert_eq!(simple(""), QsNode::MatchNone);
        assert_eq!(simple("qu*"), leaf(None, QsTerm::Prefix("qu".into())));
        assert_eq!(
            simple("fox~1"),
            leaf(
                None,
                QsTerm::Fuzzy {
                    text: "fox".into(),
                    fuzziness: Some(Fuzziness::Edits(1))
                }
            )
        );
        assert_eq!(
            simple("fox~"),
            leaf(
                None,
                QsTerm::Fuzzy {
                    text: "fox".into(),
                    fuzziness: Some(Fuzziness::Edits(2))
                }
            )
        );
        assert_eq!(
            simple("\"a b\"~3"),
            leaf(
                None,
                QsTerm::Phrase {
                    text: "a b".into(),
                    slop: Some(3)
                }
            )
        );
        let n = simple("a +b");
        assert_eq!(
            n,
            QsNode::Bool {
                clauses: vec![
                    (Occur::Must, leaf(None, t("a"))),
                    (Occur::Must, leaf(None, t("b")))
                ],
                boost: 1.0
            }
        );
        let n = simple("a | b c");
        let QsNode::Bool { clauses, .. } = n else {
            panic!()
        };
        assert_eq!(clauses.len(), 3);
        let n = simple("-a");
        assert_eq!(
            n,
            QsNode::Bool {
                clauses: vec![
                    (Occur::MustNot, leaf(None, t("a"))),
                    (Occur::Should, QsNode::MatchAll { boost: 1.0 })
                ],
                boost: 1.0
            }
        );
        // Unbalanced syntax is ignored rather than rejected.
        assert_eq!(simple("(fox"), leaf(None, t("fox")));
        assert_eq!(simple("\"fox"), leaf(None, t("fox")));
        // Mixed operators nest to keep precedence: (a AND b) OR c.
        let n = simple("a +b | c");
        let QsNode::Bool { clauses, .. } = n else {
            panic!()
        };
        assert_eq!(clauses.len(), 2);
        assert_eq!(clauses[1], (Occur::Should, leaf(None, t("c"))));
        assert!(
            matches!(&clauses[0], (Occur::Should, QsNode::Bool { clauses, .. }) if clauses.len() == 2)
        );
    }
}
