mod more_like_this;

/// Module containing the different query implementations.
mod query;

pub use self::more_like_this::MoreLikeThis;
pub use self::query::{MoreLikeThisQuery, MoreLikeThisQueryBuilder};
