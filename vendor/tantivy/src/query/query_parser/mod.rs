mod query_parser;

pub mod logical_ast;
pub use self::query_parser::{QueryParser, QueryParserError};
