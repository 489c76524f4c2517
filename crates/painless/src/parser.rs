//! Recursive-descent parser from tokens to a tree the interpreter walks. Variables are resolved
//! to slots here, so undefined names, duplicate declarations, unknown static methods and
//! `break` outside a loop are compile errors, as they are in Painless.

use super::lexer::{tokenize, Tok, Token};
use super::CompileError;
use std::sync::Arc;

/// Deeper trees are refused: the interpreter recurses over them on a server thread's stack.
const MAX_EXPR_DEPTH: u32 = 200;
const MAX_NESTING: usize = 64;

pub(crate) const CTX_SLOT: usize = 0;
pub(crate) const PARAMS_SLOT: usize = 1;
/// Search scripts only: `doc` and `_score`.
pub(crate) const DOC_SLOT: usize = 2;
pub(crate) const SCORE_SLOT: usize = 3;
/// Aggregation scripts only: `_value`.
pub(crate) const VALUE_SLOT: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    Def,
    Object,
    Int,
    Long,
    Short,
    Byte,
    Char,
    Double,
    Float,
    Boolean,
    String,
    Number,
    List,
    Set,
    Collection,
    Map,
}

impl Ty {
    fn from_name(name: &str) -> Option<Ty> {
        Some(match name {
            "def" => Ty::Def,
            "Object" => Ty::Object,
            "int" | "Integer" => Ty::Int,
            "long" | "Long" => Ty::Long,
            "short" | "Short" => Ty::Short,
            "byte" | "Byte" => Ty::Byte,
            "char" | "Character" => Ty::Char,
            "double" | "Double" => Ty::Double,
            "float" | "Float" => Ty::Float,
            "boolean" | "Boolean" => Ty::Boolean,
            "String" | "CharSequence" => Ty::String,
            "Number" => Ty::Number,
            "List" | "ArrayList" => Ty::List,
            "Set" | "HashSet" | "LinkedHashSet" => Ty::Set,
            "Collection" | "Iterable" => Ty::Collection,
            "Map" | "HashMap" | "LinkedHashMap" => Ty::Map,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Ty::Def => "def",
            Ty::Object => "java.lang.Object",
            Ty::Int => "int",
            Ty::Long => "long",
            Ty::Short => "short",
            Ty::Byte => "byte",
            Ty::Char => "char",
            Ty::Double => "double",
            Ty::Float => "float",
            Ty::Boolean => "boolean",
            Ty::String => "java.lang.String",
            Ty::Number => "java.lang.Number",
            Ty::List => "java.util.List",
            Ty::Set => "java.util.Set",
            Ty::Collection => "java.util.Collection",
            Ty::Map => "java.util.Map",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Shl,
    Shr,
    Ushr,
    BitAnd,
    BitOr,
    BitXor,
    Eq,
    Ne,
    RefEq,
    RefNe,
    Lt,
    Le,
    Gt,
    Ge,
}

impl BinOp {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Ushr => ">>>",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::RefEq => "===",
            BinOp::RefNe => "!==",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnOp {
    Neg,
    Plus,
    Not,
    BitNot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NewKind {
    List,
    Set,
    Map,
}

/// The kind is boxed to keep `Expr` small: unoptimized builds reserve stack for every
/// temporary `Result<Expr, _>` in the recursive parser and interpreter.
#[derive(Debug)]
pub(crate) struct Expr {
    pub kind: Box<ExprKind>,
    pub pos: usize,
    depth: u32,
}

#[derive(Debug)]
pub(crate) enum ExprKind {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Arc<str>),
    Var(usize),
    ListLit(Vec<Expr>),
    MapLit(Vec<(Expr, Expr)>),
    New(NewKind, Vec<Expr>),
    Field {
        obj: Expr,
        name: Arc<str>,
        null_safe: bool,
    },
    Index {
        obj: Expr,
        idx: Expr,
    },
    Call {
        obj: Expr,
        method: String,
        args: Vec<Expr>,
        null_safe: bool,
    },
    Static {
        class: &'static str,
        method: &'static str,
        args: Vec<Expr>,
    },
    Unary(UnOp, Expr),
    Binary(BinOp, Expr, Expr),
    And(Expr, Expr),
    Or(Expr, Expr),
    Cond(Expr, Expr, Expr),
    Elvis(Expr, Expr),
    Assign {
        target: Expr,
        op: Option<BinOp>,
        value: Expr,
    },
    IncDec {
        target: Expr,
        delta: i64,
        prefix: bool,
    },
    Cast(Ty, Expr),
    InstanceOf(Expr, Ty),
}

impl ExprKind {
    fn children(&self) -> Vec<&Expr> {
        match self {
            ExprKind::Null
            | ExprKind::Bool(_)
            | ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Str(_)
            | ExprKind::Var(_) => vec![],
            ExprKind::ListLit(v) | ExprKind::New(_, v) | ExprKind::Static { args: v, .. } => {
                v.iter().collect()
            }
            ExprKind::MapLit(kv) => kv.iter().flat_map(|(k, v)| [k, v]).collect(),
            ExprKind::Field { obj, .. } => vec![obj],
            ExprKind::Index { obj, idx } => vec![obj, idx],
            ExprKind::Call { obj, args, .. } => std::iter::once(obj).chain(args).collect(),
            ExprKind::Unary(_, e)
            | ExprKind::Cast(_, e)
            | ExprKind::InstanceOf(e, _)
            | ExprKind::IncDec { target: e, .. } => vec![e],
            ExprKind::Binary(_, a, b)
            | ExprKind::And(a, b)
            | ExprKind::Or(a, b)
            | ExprKind::Elvis(a, b)
            | ExprKind::Assign {
                target: a,
                value: b,
                ..
            } => vec![a, b],
            ExprKind::Cond(a, b, c) => vec![a, b, c],
        }
    }

    /// Painless refuses expression statements whose value is thrown away.
    fn is_statement(&self) -> bool {
        matches!(
            self,
            ExprKind::Assign { .. }
                | ExprKind::IncDec { .. }
                | ExprKind::Call { .. }
                | ExprKind::Static { .. }
                | ExprKind::New(..)
        )
    }
}

#[derive(Debug)]
pub(crate) struct Stmt {
    pub kind: StmtKind,
    pub pos: usize,
}

#[derive(Debug)]
pub(crate) enum StmtKind {
    Empty,
    Expr(Expr),
    Decl(Vec<(usize, Option<Expr>)>),
    Block(Vec<Stmt>),
    If(Expr, Box<Stmt>, Option<Box<Stmt>>),
    While(Expr, Box<Stmt>),
    DoWhile(Box<Stmt>, Expr),
    For {
        init: Option<Box<Stmt>>,
        cond: Option<Expr>,
        update: Vec<Expr>,
        body: Box<Stmt>,
    },
    ForEach {
        slot: usize,
        iterable: Expr,
        body: Box<Stmt>,
    },
    Return(Option<Expr>),
    Break,
    Continue,
    Throw(&'static str, Option<Expr>),
}

#[derive(Debug)]
pub(crate) struct Program {
    pub body: Vec<Stmt>,
    /// Declared type of every slot, enforced on assignment as Java would.
    pub slot_types: Vec<Ty>,
}

/// Static methods and their arity ranges; the interpreter implements each of these.
const STATICS: &[(&str, &str, usize, usize)] = &[
    ("Math", "max", 2, 2),
    ("Math", "min", 2, 2),
    ("Math", "abs", 1, 1),
    ("Math", "floor", 1, 1),
    ("Math", "ceil", 1, 1),
    ("Math", "round", 1, 1),
    ("Math", "rint", 1, 1),
    ("Math", "pow", 2, 2),
    ("Math", "sqrt", 1, 1),
    ("Math", "cbrt", 1, 1),
    ("Math", "log", 1, 1),
    ("Math", "log10", 1, 1),
    ("Math", "exp", 1, 1),
    ("Math", "signum", 1, 1),
    ("Math", "hypot", 2, 2),
    ("Math", "floorDiv", 2, 2),
    ("Math", "floorMod", 2, 2),
    ("Math", "sin", 1, 1),
    ("Math", "cos", 1, 1),
    ("Math", "tan", 1, 1),
    ("Math", "atan", 1, 1),
    ("Math", "atan2", 2, 2),
    ("Math", "toRadians", 1, 1),
    ("Math", "toDegrees", 1, 1),
    ("Integer", "parseInt", 1, 1),
    ("Integer", "valueOf", 1, 1),
    ("Integer", "toString", 1, 1),
    ("Long", "parseLong", 1, 1),
    ("Long", "valueOf", 1, 1),
    ("Long", "toString", 1, 1),
    ("Double", "parseDouble", 1, 1),
    ("Double", "valueOf", 1, 1),
    ("Double", "toString", 1, 1),
    ("Double", "isNaN", 1, 1),
    ("Float", "parseFloat", 1, 1),
    ("Float", "valueOf", 1, 1),
    ("Boolean", "parseBoolean", 1, 1),
    ("Boolean", "valueOf", 1, 1),
    ("Boolean", "toString", 1, 1),
    ("String", "valueOf", 1, 1),
    ("String", "join", 2, 2),
    ("System", "currentTimeMillis", 0, 0),
    ("Collections", "sort", 1, 1),
    ("Collections", "reverse", 1, 1),
    ("Objects", "equals", 2, 2),
    ("Objects", "isNull", 1, 1),
    ("Objects", "nonNull", 1, 1),
    ("MovingFunctions", "max", 1, 1),
    ("MovingFunctions", "min", 1, 1),
    ("MovingFunctions", "sum", 1, 1),
    ("MovingFunctions", "unweightedAvg", 1, 1),
    ("MovingFunctions", "linearWeightedAvg", 1, 1),
    ("MovingFunctions", "stdDev", 2, 2),
    ("MovingFunctions", "ewma", 2, 2),
    ("MovingFunctions", "holt", 3, 3),
    ("MovingFunctions", "holtWinters", 6, 6),
];

const CLASSES: &[&str] = &[
    "Math",
    "Integer",
    "Long",
    "Double",
    "Float",
    "Boolean",
    "String",
    "System",
    "Collections",
    "Objects",
    "MovingFunctions",
];

const EXCEPTIONS: &[(&str, &str)] = &[
    ("IllegalArgumentException", "illegal_argument_exception"),
    ("IllegalStateException", "illegal_state_exception"),
    (
        "UnsupportedOperationException",
        "unsupported_operation_exception",
    ),
    ("RuntimeException", "runtime_exception"),
    ("Exception", "exception"),
];

const RESERVED: &[&str] = &[
    "if",
    "else",
    "while",
    "do",
    "for",
    "in",
    "continue",
    "break",
    "return",
    "new",
    "try",
    "catch",
    "throw",
    "this",
    "instanceof",
    "true",
    "false",
    "null",
];

/// The script contexts: which globals a script sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Update scripts: `ctx`, `params`.
    Update,
    /// Search scripts: `params`, `doc`, `_score` (read-only); no `ctx`.
    Search,
    /// A runtime field's script: a search script that also has `emit(value)`.
    Runtime,
    /// An aggregation's script: a search script that also has `_value` (the field's value,
    /// for a value script).
    AggValue,
    /// `bucket_script` / `bucket_selector`: `params` only (the bucket values are in it).
    Bucket,
    /// `moving_fn`: `params` and `values`, the window as a `double[]`.
    MovingFn,
}

/// `moving_fn` scripts: the window's values.
pub(crate) const VALUES_SLOT: usize = 2;

/// Parses a script of the given context.
pub(crate) fn parse(src: &str, kind: Kind) -> Result<Program, CompileError> {
    let tokens = tokenize(src)?;
    let search = matches!(kind, Kind::Search | Kind::Runtime | Kind::AggValue);
    let (globals, slot_types): (Vec<(String, usize)>, _) = match kind {
        Kind::Search | Kind::Runtime => (
            vec![
                ("params".into(), PARAMS_SLOT),
                ("doc".into(), DOC_SLOT),
                ("_score".into(), SCORE_SLOT),
            ],
            vec![Ty::Map, Ty::Map, Ty::Map, Ty::Def],
        ),
        Kind::AggValue => (
            vec![
                ("params".into(), PARAMS_SLOT),
                ("doc".into(), DOC_SLOT),
                ("_score".into(), SCORE_SLOT),
                ("_value".into(), VALUE_SLOT),
            ],
            vec![Ty::Map, Ty::Map, Ty::Map, Ty::Def, Ty::Def],
        ),
        Kind::Update => (
            vec![("ctx".into(), CTX_SLOT), ("params".into(), PARAMS_SLOT)],
            vec![Ty::Map, Ty::Map],
        ),
        Kind::Bucket => (vec![("params".into(), PARAMS_SLOT)], vec![Ty::Map, Ty::Map]),
        Kind::MovingFn => (
            vec![
                ("params".into(), PARAMS_SLOT),
                ("values".into(), VALUES_SLOT),
            ],
            vec![Ty::Map, Ty::Map, Ty::Def],
        ),
    };
    let mut p = Parser {
        toks: tokens,
        i: 0,
        scopes: vec![globals],
        slot_types,
        search,
        moving_fn: kind == Kind::MovingFn,
        runtime: kind == Kind::Runtime,
        loops: 0,
        nesting: 0,
        deferred: None,
    };
    let mut body = Vec::new();
    while p.peek() != &Tok::Eof {
        body.push(p.statement()?);
    }
    if let Some(e) = p.deferred {
        return Err(e);
    }
    let last = body.len().checked_sub(1);
    for (i, s) in body.iter().enumerate() {
        check_statements(s, Some(i) == last)?;
    }
    Ok(Program {
        body,
        slot_types: p.slot_types,
    })
}

fn check_statements(s: &Stmt, last: bool) -> Result<(), CompileError> {
    match &s.kind {
        StmtKind::Expr(e) if !last && !e.kind.is_statement() => {
            Err(CompileError::new(e.pos, "not a statement: result not used"))
        }
        StmtKind::Block(b) => b.iter().try_for_each(|s| check_statements(s, false)),
        StmtKind::If(_, a, b) => {
            check_statements(a, false)?;
            b.as_deref().map_or(Ok(()), |b| check_statements(b, false))
        }
        StmtKind::While(_, b)
        | StmtKind::DoWhile(b, _)
        | StmtKind::For { body: b, .. }
        | StmtKind::ForEach { body: b, .. } => check_statements(b, false),
        _ => Ok(()),
    }
}

struct Parser {
    toks: Vec<Token>,
    i: usize,
    scopes: Vec<Vec<(String, usize)>>,
    slot_types: Vec<Ty>,
    loops: usize,
    nesting: usize,
    deferred: Option<CompileError>,
    search: bool,
    /// A runtime field's script: `emit(value)` is defined.
    runtime: bool,
    moving_fn: bool,
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => format!("'{s}'"),
        Tok::Int(i) => format!("'{i}'"),
        Tok::Float(f) => format!("'{f}'"),
        Tok::Str(s) => format!("'{s}'"),
        Tok::Punct(p) => format!("'{p}'"),
        Tok::Eof => "<EOF>".into(),
    }
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.i].tok
    }

    fn peek_at(&self, n: usize) -> &Tok {
        &self.toks[(self.i + n).min(self.toks.len() - 1)].tok
    }

    fn pos(&self) -> usize {
        self.toks[self.i].pos
    }

    fn bump(&mut self) -> Token {
        let t = self.toks[self.i].clone();
        if self.i < self.toks.len() - 1 {
            self.i += 1;
        }
        t
    }

    fn is(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s == kw)
    }

    fn eat(&mut self, p: &str) -> bool {
        if self.is(p) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn unexpected(&self, expected: &str) -> CompileError {
        CompileError::new(
            self.pos(),
            format!(
                "unexpected token [{}] was expecting one of [{expected}].",
                describe(self.peek())
            ),
        )
    }

    fn expect(&mut self, p: &str) -> Result<(), CompileError> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("'{p}'")))
        }
    }

    fn ident(&mut self) -> Result<String, CompileError> {
        match self.peek().clone() {
            Tok::Ident(s) if !RESERVED.contains(&s.as_str()) => {
                self.bump();
                Ok(s)
            }
            _ => Err(self.unexpected("<identifier>")),
        }
    }

    /// A statement ends with `;`, before `}` or the end, or (leniently) at a line break.
    fn end_statement(&mut self) -> Result<(), CompileError> {
        if self.eat(";")
            || self.is("}")
            || self.is_kw("else")
            || self.peek() == &Tok::Eof
            || self.toks[self.i].nl_before
        {
            Ok(())
        } else {
            Err(self.unexpected("{<EOF>, ';'}"))
        }
    }

    fn lookup(&self, name: &str) -> Option<usize> {
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|(n, _)| n == name)
            .map(|(_, slot)| *slot)
    }

    /// Painless reports syntax errors before semantic ones, so the first semantic error is
    /// kept aside until the whole script has parsed.
    fn semantic(&mut self, e: CompileError) {
        self.deferred.get_or_insert(e);
    }

    fn declare(&mut self, name: String, ty: Ty, pos: usize) -> Result<usize, CompileError> {
        if self.lookup(&name).is_some() {
            self.semantic(CompileError::new(
                pos,
                format!("variable [{name}] is already defined"),
            ));
        }
        let slot = self.slot_types.len();
        self.slot_types.push(ty);
        self.scopes.last_mut().unwrap().push((name, slot));
        Ok(slot)
    }

    fn enter(&mut self) -> Result<(), CompileError> {
        self.nesting += 1;
        if self.nesting > MAX_NESTING {
            return Err(CompileError::new(self.pos(), "script is nested too deeply"));
        }
        Ok(())
    }

    fn mk(&self, kind: ExprKind, pos: usize) -> Result<Expr, CompileError> {
        let depth = 1 + kind.children().iter().map(|c| c.depth).max().unwrap_or(0);
        if depth > MAX_EXPR_DEPTH {
            return Err(CompileError::new(pos, "expression is nested too deeply"));
        }
        Ok(Expr {
            kind: Box::new(kind),
            pos,
            depth,
        })
    }

    /// `Type name` at the cursor starts a declaration.
    fn decl_type(&self) -> Option<Ty> {
        match (self.peek(), self.peek_at(1)) {
            (Tok::Ident(t), Tok::Ident(n)) if !RESERVED.contains(&n.as_str()) => Ty::from_name(t),
            _ => None,
        }
    }

    fn statement(&mut self) -> Result<Stmt, CompileError> {
        self.enter()?;
        let r = self.statement_inner();
        self.nesting -= 1;
        r
    }

    /// One function per statement kind: unoptimized builds give a function a stack slot for
    /// every temporary of every arm, and this frame is on the stack once per nesting level.
    fn statement_inner(&mut self) -> Result<Stmt, CompileError> {
        let pos = self.pos();
        let kind = match self.peek() {
            Tok::Punct("{") => self.block().map(StmtKind::Block),
            Tok::Punct(";") => {
                self.bump();
                Ok(StmtKind::Empty)
            }
            Tok::Ident(kw) => match kw.as_str() {
                "if" => self.if_statement(),
                "while" => self.while_statement(),
                "do" => self.do_statement(),
                "for" => {
                    self.bump();
                    return self.for_statement(pos);
                }
                "return" => self.return_statement(),
                "break" | "continue" => self.jump_statement(pos),
                "throw" => self.throw_statement(),
                _ => self.simple_statement(),
            },
            _ => self.simple_statement(),
        }?;
        Ok(Stmt { kind, pos })
    }

    fn if_statement(&mut self) -> Result<StmtKind, CompileError> {
        self.bump();
        self.expect("(")?;
        let cond = self.expr()?;
        self.expect(")")?;
        let then = self.scoped_statement()?;
        let other = if self.is_kw("else") {
            self.bump();
            Some(Box::new(self.scoped_statement()?))
        } else {
            None
        };
        Ok(StmtKind::If(cond, Box::new(then), other))
    }

    fn while_statement(&mut self) -> Result<StmtKind, CompileError> {
        self.bump();
        self.expect("(")?;
        let cond = self.expr()?;
        self.expect(")")?;
        let body = self.loop_body()?;
        Ok(StmtKind::While(cond, Box::new(body)))
    }

    fn do_statement(&mut self) -> Result<StmtKind, CompileError> {
        self.bump();
        let body = self.loop_body()?;
        if !self.is_kw("while") {
            return Err(self.unexpected("'while'"));
        }
        self.bump();
        self.expect("(")?;
        let cond = self.expr()?;
        self.expect(")")?;
        self.end_statement()?;
        Ok(StmtKind::DoWhile(Box::new(body), cond))
    }

    fn return_statement(&mut self) -> Result<StmtKind, CompileError> {
        self.bump();
        let value = if self.is(";") || self.is("}") || self.peek() == &Tok::Eof {
            None
        } else {
            Some(self.expr()?)
        };
        self.end_statement()?;
        Ok(StmtKind::Return(value))
    }

    fn jump_statement(&mut self, pos: usize) -> Result<StmtKind, CompileError> {
        let brk = self.is_kw("break");
        if self.loops == 0 {
            self.semantic(CompileError::new(
                pos,
                if brk {
                    "invalid break statement: not inside a loop"
                } else {
                    "invalid continue statement: not inside a loop"
                },
            ));
        }
        self.bump();
        self.end_statement()?;
        Ok(if brk {
            StmtKind::Break
        } else {
            StmtKind::Continue
        })
    }

    fn throw_statement(&mut self) -> Result<StmtKind, CompileError> {
        self.bump();
        if !self.is_kw("new") {
            return Err(self.unexpected("'new'"));
        }
        self.bump();
        let epos = self.pos();
        let name = self.ident()?;
        let kind = EXCEPTIONS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, k)| *k)
            .ok_or_else(|| CompileError::new(epos, format!("cannot resolve type [{name}]")))?;
        let mut args = self.args()?;
        if args.len() > 1 {
            return Err(CompileError::new(
                epos,
                format!("constructor [{name}/{}] not found", args.len()),
            ));
        }
        self.end_statement()?;
        Ok(StmtKind::Throw(kind, args.pop()))
    }

    fn simple_statement(&mut self) -> Result<StmtKind, CompileError> {
        let kind = match self.decl_type() {
            Some(ty) => self.declaration(ty)?,
            None => StmtKind::Expr(self.expr()?),
        };
        self.end_statement()?;
        Ok(kind)
    }

    fn declaration(&mut self, ty: Ty) -> Result<StmtKind, CompileError> {
        self.bump();
        let mut vars = Vec::new();
        loop {
            let pos = self.pos();
            let name = self.ident()?;
            let init = if self.eat("=") {
                Some(self.expr()?)
            } else {
                None
            };
            // declared after the initializer, so `int x = x` does not resolve
            let slot = self.declare(name, ty, pos)?;
            vars.push((slot, init));
            if !self.eat(",") {
                break;
            }
        }
        Ok(StmtKind::Decl(vars))
    }

    /// The branch of an `if` gets its own scope even without braces.
    fn scoped_statement(&mut self) -> Result<Stmt, CompileError> {
        self.scopes.push(Vec::new());
        let r = self.statement();
        self.scopes.pop();
        r
    }

    fn loop_body(&mut self) -> Result<Stmt, CompileError> {
        self.loops += 1;
        let r = self.scoped_statement();
        self.loops -= 1;
        r
    }

    fn block(&mut self) -> Result<Vec<Stmt>, CompileError> {
        self.expect("{")?;
        self.scopes.push(Vec::new());
        let mut out = Vec::new();
        while !self.is("}") {
            if self.peek() == &Tok::Eof {
                self.scopes.pop();
                return Err(self.unexpected("'}'"));
            }
            match self.statement() {
                Ok(s) => out.push(s),
                Err(e) => {
                    self.scopes.pop();
                    return Err(e);
                }
            }
        }
        self.bump();
        self.scopes.pop();
        Ok(out)
    }

    fn for_statement(&mut self, pos: usize) -> Result<Stmt, CompileError> {
        self.expect("(")?;
        self.scopes.push(Vec::new());
        let r = self.for_rest(pos);
        self.scopes.pop();
        r
    }

    fn for_rest(&mut self, pos: usize) -> Result<Stmt, CompileError> {
        let each = match (self.peek(), self.peek_at(1), self.peek_at(2)) {
            (Tok::Ident(t), Tok::Ident(_), Tok::Punct(":")) => {
                Some(Ty::from_name(t).ok_or_else(|| {
                    CompileError::new(self.pos(), format!("cannot resolve type [{t}]"))
                })?)
            }
            (Tok::Ident(_), Tok::Ident(kw), _) if kw == "in" => Some(Ty::Def),
            _ => None,
        };
        if let Some(ty) = each {
            if !matches!(self.peek_at(1), Tok::Ident(kw) if kw == "in") {
                self.bump();
            }
            let vpos = self.pos();
            let name = self.ident()?;
            if !self.eat(":") {
                self.bump();
            }
            let iterable = self.expr()?;
            self.expect(")")?;
            let slot = self.declare(name, ty, vpos)?;
            let body = self.loop_body()?;
            return Ok(Stmt {
                kind: StmtKind::ForEach {
                    slot,
                    iterable,
                    body: Box::new(body),
                },
                pos,
            });
        }
        let init = if self.is(";") {
            None
        } else {
            let ipos = self.pos();
            let kind = if let Some(ty) = self.decl_type() {
                self.declaration(ty)?
            } else {
                let mut exprs = vec![self.expr()?];
                while self.eat(",") {
                    exprs.push(self.expr()?);
                }
                StmtKind::Block(
                    exprs
                        .into_iter()
                        .map(|e| Stmt {
                            pos: e.pos,
                            kind: StmtKind::Expr(e),
                        })
                        .collect(),
                )
            };
            Some(Box::new(Stmt { kind, pos: ipos }))
        };
        self.expect(";")?;
        let cond = if self.is(";") {
            None
        } else {
            Some(self.expr()?)
        };
        self.expect(";")?;
        let mut update = Vec::new();
        if !self.is(")") {
            update.push(self.expr()?);
            while self.eat(",") {
                update.push(self.expr()?);
            }
        }
        self.expect(")")?;
        let body = self.loop_body()?;
        Ok(Stmt {
            kind: StmtKind::For {
                init,
                cond,
                update,
                body: Box::new(body),
            },
            pos,
        })
    }

    pub(crate) fn expr(&mut self) -> Result<Expr, CompileError> {
        self.enter()?;
        let r = self.assignment();
        self.nesting -= 1;
        r
    }

    /// The rarely taken branches of `assignment`, `conditional` and `binary` live in their
    /// own functions so that the frames on the recursive path stay small in debug builds.
    fn assignment(&mut self) -> Result<Expr, CompileError> {
        let lhs = self.conditional()?;
        match self.peek() {
            Tok::Punct("=") => self.assignment_rest(lhs, None),
            Tok::Punct(p) => match compound(p) {
                Some(op) => self.assignment_rest(lhs, Some(op)),
                None => Ok(lhs),
            },
            _ => Ok(lhs),
        }
    }

    fn assignment_rest(&mut self, lhs: Expr, op: Option<BinOp>) -> Result<Expr, CompileError> {
        let pos = self.pos();
        self.bump();
        self.check_target(&lhs);
        let value = self.expr()?;
        self.mk(
            ExprKind::Assign {
                target: lhs,
                op,
                value,
            },
            pos,
        )
    }

    fn check_target(&mut self, e: &Expr) {
        let err = match &*e.kind {
            ExprKind::Var(CTX_SLOT) => "variable [ctx] is read-only",
            ExprKind::Var(PARAMS_SLOT) => "variable [params] is read-only",
            ExprKind::Var(DOC_SLOT) if self.search => "variable [doc] is read-only",
            ExprKind::Var(SCORE_SLOT) if self.search => "variable [_score] is read-only",
            ExprKind::Var(_) | ExprKind::Index { .. } => return,
            ExprKind::Field {
                null_safe: false, ..
            } => return,
            _ => "invalid assignment: cannot assign a value to this expression",
        };
        self.semantic(CompileError::new(e.pos, err));
    }

    fn conditional(&mut self) -> Result<Expr, CompileError> {
        let c = self.binary(0)?;
        if self.is("?") || self.is("?:") {
            return self.conditional_rest(c);
        }
        Ok(c)
    }

    fn conditional_rest(&mut self, c: Expr) -> Result<Expr, CompileError> {
        let pos = self.pos();
        if self.eat("?:") {
            let b = self.nested(Self::conditional)?;
            return self.mk(ExprKind::Elvis(c, b), pos);
        }
        self.bump();
        let a = self.expr()?;
        self.expect(":")?;
        let b = self.nested(Self::conditional)?;
        self.mk(ExprKind::Cond(c, a, b), pos)
    }

    fn nested(
        &mut self,
        f: fn(&mut Self) -> Result<Expr, CompileError>,
    ) -> Result<Expr, CompileError> {
        self.enter()?;
        let r = f(self);
        self.nesting -= 1;
        r
    }

    fn binary(&mut self, min_prec: u8) -> Result<Expr, CompileError> {
        let mut lhs = self.unary()?;
        while let Some((prec, op)) = self.binop() {
            if prec < min_prec {
                break;
            }
            lhs = self.binary_rest(lhs, prec, op)?;
        }
        Ok(lhs)
    }

    fn binary_rest(&mut self, lhs: Expr, prec: u8, op: Bin) -> Result<Expr, CompileError> {
        let pos = self.pos();
        self.bump();
        if op == Bin::InstanceOf {
            let tpos = self.pos();
            let name = self.ident()?;
            let ty = Ty::from_name(&name)
                .ok_or_else(|| CompileError::new(tpos, format!("cannot resolve type [{name}]")))?;
            return self.mk(ExprKind::InstanceOf(lhs, ty), pos);
        }
        self.enter()?;
        let rhs = self.binary(prec + 1);
        self.nesting -= 1;
        let rhs = rhs?;
        let kind = match op {
            Bin::And => ExprKind::And(lhs, rhs),
            Bin::Or => ExprKind::Or(lhs, rhs),
            Bin::Op(op) => ExprKind::Binary(op, lhs, rhs),
            Bin::InstanceOf => unreachable!("handled above"),
        };
        self.mk(kind, pos)
    }

    fn binop(&self) -> Option<(u8, Bin)> {
        let p = match self.peek() {
            Tok::Punct(p) => *p,
            Tok::Ident(s) if s == "instanceof" => return Some((7, Bin::InstanceOf)),
            _ => return None,
        };
        Some(match p {
            "||" => (1, Bin::Or),
            "&&" => (2, Bin::And),
            "|" => (3, Bin::Op(BinOp::BitOr)),
            "^" => (4, Bin::Op(BinOp::BitXor)),
            "&" => (5, Bin::Op(BinOp::BitAnd)),
            "==" => (6, Bin::Op(BinOp::Eq)),
            "!=" => (6, Bin::Op(BinOp::Ne)),
            "===" => (6, Bin::Op(BinOp::RefEq)),
            "!==" => (6, Bin::Op(BinOp::RefNe)),
            "<" => (7, Bin::Op(BinOp::Lt)),
            "<=" => (7, Bin::Op(BinOp::Le)),
            ">" => (7, Bin::Op(BinOp::Gt)),
            ">=" => (7, Bin::Op(BinOp::Ge)),
            "<<" => (8, Bin::Op(BinOp::Shl)),
            ">>" => (8, Bin::Op(BinOp::Shr)),
            ">>>" => (8, Bin::Op(BinOp::Ushr)),
            "+" => (9, Bin::Op(BinOp::Add)),
            "-" => (9, Bin::Op(BinOp::Sub)),
            "*" => (10, Bin::Op(BinOp::Mul)),
            "/" => (10, Bin::Op(BinOp::Div)),
            "%" => (10, Bin::Op(BinOp::Rem)),
            _ => return None,
        })
    }

    fn unary(&mut self) -> Result<Expr, CompileError> {
        match self.peek() {
            Tok::Punct("-" | "+" | "!" | "~") => self.prefix_op(),
            Tok::Punct("++" | "--") => self.prefix_incdec(),
            Tok::Punct("(") if self.at_cast() => self.cast(),
            _ => {
                let e = self.primary()?;
                self.postfix_ops(e)
            }
        }
    }

    fn prefix_op(&mut self) -> Result<Expr, CompileError> {
        let pos = self.pos();
        let op = match self.bump().tok {
            Tok::Punct("-") => UnOp::Neg,
            Tok::Punct("+") => UnOp::Plus,
            Tok::Punct("!") => UnOp::Not,
            _ => UnOp::BitNot,
        };
        let e = self.nested(Self::unary)?;
        self.mk(ExprKind::Unary(op, e), pos)
    }

    fn prefix_incdec(&mut self) -> Result<Expr, CompileError> {
        let pos = self.pos();
        let delta = if self.bump().tok == Tok::Punct("++") {
            1
        } else {
            -1
        };
        let target = self.nested(Self::unary)?;
        self.check_target(&target);
        self.mk(
            ExprKind::IncDec {
                target,
                delta,
                prefix: true,
            },
            pos,
        )
    }

    fn at_cast(&self) -> bool {
        matches!(
            (self.peek_at(1), self.peek_at(2)),
            (Tok::Ident(t), Tok::Punct(")")) if Ty::from_name(t).is_some()
        )
    }

    fn cast(&mut self) -> Result<Expr, CompileError> {
        let pos = self.pos();
        self.bump();
        let Tok::Ident(t) = self.bump().tok else {
            unreachable!("checked by at_cast")
        };
        self.bump();
        let ty = Ty::from_name(&t).expect("checked by at_cast");
        let e = self.nested(Self::unary)?;
        self.mk(ExprKind::Cast(ty, e), pos)
    }

    fn postfix_ops(&mut self, mut e: Expr) -> Result<Expr, CompileError> {
        loop {
            e = match self.peek() {
                Tok::Punct("." | "?.") => self.member(e)?,
                Tok::Punct("[") => self.index(e)?,
                Tok::Punct("++" | "--") if !self.toks[self.i].nl_before => {
                    self.postfix_incdec(e)?
                }
                _ => return Ok(e),
            };
        }
    }

    fn member(&mut self, e: Expr) -> Result<Expr, CompileError> {
        let pos = self.pos();
        let null_safe = self.is("?.");
        self.bump();
        let Tok::Ident(name) = self.peek().clone() else {
            return Err(self.unexpected("<identifier>"));
        };
        self.bump();
        if self.is("(") {
            let args = self.args()?;
            return self.mk(
                ExprKind::Call {
                    obj: e,
                    method: name,
                    args,
                    null_safe,
                },
                pos,
            );
        }
        self.mk(
            ExprKind::Field {
                obj: e,
                name: name.into(),
                null_safe,
            },
            pos,
        )
    }

    fn index(&mut self, e: Expr) -> Result<Expr, CompileError> {
        let pos = self.pos();
        self.bump();
        let idx = self.expr()?;
        self.expect("]")?;
        self.mk(ExprKind::Index { obj: e, idx }, pos)
    }

    fn postfix_incdec(&mut self, e: Expr) -> Result<Expr, CompileError> {
        let pos = self.pos();
        let delta = if self.is("++") { 1 } else { -1 };
        self.bump();
        self.check_target(&e);
        self.mk(
            ExprKind::IncDec {
                target: e,
                delta,
                prefix: false,
            },
            pos,
        )
    }

    fn args(&mut self) -> Result<Vec<Expr>, CompileError> {
        self.expect("(")?;
        let mut out = Vec::new();
        if self.eat(")") {
            return Ok(out);
        }
        loop {
            out.push(self.expr()?);
            if self.eat(")") {
                return Ok(out);
            }
            if !self.eat(",") {
                return Err(self.unexpected("{',', ')'}"));
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, CompileError> {
        let pos = self.pos();
        let tok = self.peek().clone();
        let kind = match tok {
            Tok::Int(i) => {
                self.bump();
                ExprKind::Int(i)
            }
            Tok::Float(f) => {
                self.bump();
                ExprKind::Float(f)
            }
            Tok::Str(s) => {
                self.bump();
                ExprKind::Str(s.into())
            }
            Tok::Punct("(") => {
                self.bump();
                let e = self.expr()?;
                self.expect(")")?;
                return Ok(e);
            }
            Tok::Punct("[") => {
                self.bump();
                return self.collection_literal(pos);
            }
            Tok::Ident(name) => {
                self.bump();
                match name.as_str() {
                    "true" => ExprKind::Bool(true),
                    "false" => ExprKind::Bool(false),
                    "null" => ExprKind::Null,
                    "new" => return self.new_object(),
                    _ => return self.name(name, pos),
                }
            }
            _ => return Err(self.unexpected("<expression>")),
        };
        self.mk(kind, pos)
    }

    fn collection_literal(&mut self, pos: usize) -> Result<Expr, CompileError> {
        if self.eat("]") {
            return self.mk(ExprKind::ListLit(vec![]), pos);
        }
        if self.is(":") && matches!(self.peek_at(1), Tok::Punct("]")) {
            self.bump();
            self.bump();
            return self.mk(ExprKind::MapLit(vec![]), pos);
        }
        let first = self.expr()?;
        if self.eat(":") {
            let v = self.expr()?;
            let mut pairs = vec![(first, v)];
            while self.eat(",") {
                let k = self.expr()?;
                self.expect(":")?;
                let v = self.expr()?;
                pairs.push((k, v));
            }
            self.expect("]")?;
            return self.mk(ExprKind::MapLit(pairs), pos);
        }
        let mut items = vec![first];
        while self.eat(",") {
            items.push(self.expr()?);
        }
        self.expect("]")?;
        self.mk(ExprKind::ListLit(items), pos)
    }

    fn new_object(&mut self) -> Result<Expr, CompileError> {
        let pos = self.pos();
        let name = self.ident()?;
        let kind = match name.as_str() {
            "ArrayList" | "LinkedList" => NewKind::List,
            "HashMap" | "LinkedHashMap" => NewKind::Map,
            "HashSet" | "LinkedHashSet" => NewKind::Set,
            _ => {
                return Err(CompileError::new(
                    pos,
                    format!("cannot resolve type [{name}]"),
                ))
            }
        };
        let args = self.args()?;
        if args.len() > 1 {
            return Err(CompileError::new(
                pos,
                format!("constructor [{name}/{}] not found", args.len()),
            ));
        }
        self.mk(ExprKind::New(kind, args), pos)
    }

    fn name(&mut self, name: String, pos: usize) -> Result<Expr, CompileError> {
        if RESERVED.contains(&name.as_str()) {
            return Err(CompileError::new(
                pos,
                format!("unexpected token ['{name}'] was expecting one of [<expression>]."),
            ));
        }
        if let Some(slot) = self.lookup(&name) {
            return self.mk(ExprKind::Var(slot), pos);
        }
        // `emit` exists only in a runtime field's script, as in ES.
        if name == "emit" && self.runtime && self.is("(") {
            let args = self.args()?;
            if args.len() != 1 {
                return Err(CompileError::new(
                    pos,
                    format!("Unknown call [emit] with [{}] arguments.", args.len()),
                ));
            }
            return self.mk(
                ExprKind::Static {
                    class: "",
                    method: "emit",
                    args,
                },
                pos,
            );
        }
        // `MovingFunctions` is only in the `moving_fn` script context, as in ES.
        let Some(class) = CLASSES
            .iter()
            .find(|c| **c == name && (**c != "MovingFunctions" || self.moving_fn))
        else {
            self.semantic(CompileError::new(
                pos,
                format!("cannot resolve symbol [{name}]"),
            ));
            return self.mk(ExprKind::Null, pos);
        };
        self.expect(".")?;
        let mpos = self.pos();
        let member = self.ident()?;
        if !self.is("(") {
            let kind = match (*class, member.as_str()) {
                ("Math", "PI") => ExprKind::Float(std::f64::consts::PI),
                ("Math", "E") => ExprKind::Float(std::f64::consts::E),
                ("Integer", "MAX_VALUE") => ExprKind::Int(i32::MAX as i64),
                ("Integer", "MIN_VALUE") => ExprKind::Int(i32::MIN as i64),
                ("Long", "MAX_VALUE") => ExprKind::Int(i64::MAX),
                ("Long", "MIN_VALUE") => ExprKind::Int(i64::MIN),
                ("Double", "MAX_VALUE") => ExprKind::Float(f64::MAX),
                ("Double", "MIN_VALUE") => ExprKind::Float(f64::from_bits(1)),
                _ => {
                    return Err(CompileError::new(
                        mpos,
                        format!("cannot resolve symbol [{class}.{member}]"),
                    ))
                }
            };
            return self.mk(kind, pos);
        }
        let args = self.args()?;
        let n = args.len();
        let Some(&(class, method, _, _)) = STATICS
            .iter()
            .find(|(c, m, lo, hi)| c == class && *m == member && (*lo..=*hi).contains(&n))
        else {
            self.semantic(CompileError::new(
                mpos,
                format!("unknown call [{member}] with [{n}] arguments on type [{class}]"),
            ));
            return self.mk(ExprKind::Null, pos);
        };
        self.mk(
            ExprKind::Static {
                class,
                method,
                args,
            },
            pos,
        )
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Bin {
    Or,
    And,
    InstanceOf,
    Op(BinOp),
}

fn compound(p: &str) -> Option<BinOp> {
    Some(match p {
        "+=" => BinOp::Add,
        "-=" => BinOp::Sub,
        "*=" => BinOp::Mul,
        "/=" => BinOp::Div,
        "%=" => BinOp::Rem,
        "&=" => BinOp::BitAnd,
        "|=" => BinOp::BitOr,
        "^=" => BinOp::BitXor,
        "<<=" => BinOp::Shl,
        ">>=" => BinOp::Shr,
        ">>>=" => BinOp::Ushr,
        _ => return None,
    })
}
