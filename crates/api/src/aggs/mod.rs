//! Aggregations.
