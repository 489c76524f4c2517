//! The error type shared by every part of the crate, shaped like an Elasticsearch error body.

use std::fmt;

/// An analysis error as Elasticsearch reports it: `kind` is the ES error `type`
/// (always `illegal_argument_exception` today) and `reason` the ES message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalysisError {
    /// The Elasticsearch error type, e.g. `illegal_argument_exception`.
    pub kind: &'static str,
    /// The human readable message, worded like Elasticsearch's.
    pub reason: String,
}

impl AnalysisError {
    /// An `illegal_argument_exception` with the given reason.
    pub fn illegal_argument(reason: impl Into<String>) -> Self {
        AnalysisError {
            kind: "illegal_argument_exception",
            reason: reason.into(),
        }
    }
}

impl fmt::Display for AnalysisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for AnalysisError {}

/// Shorthand used across the crate.
pub(crate) fn illegal(reason: impl Into<String>) -> AnalysisError {
    AnalysisError::illegal_argument(reason)
}
