//! The error type shared by every fallible function of the crate.

/// A date, format, time zone or time value that could not be understood.
///
/// `reason` reads like the matching Elasticsearch message, so it can be
/// passed through to API responses unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct DateError {
    pub reason: String,
}

impl DateError {
    pub(crate) fn new(reason: impl Into<String>) -> DateError {
        DateError {
            reason: reason.into(),
        }
    }

    /// `failed to parse date field [input] with format [spec]`.
    pub(crate) fn unparsable(input: &str, spec: &str) -> DateError {
        DateError::new(format!(
            "failed to parse date field [{input}] with format [{spec}]"
        ))
    }
}
