//! The reference `accounts` workload: corpus generator, query suite, per-request variations.

pub mod accounts;
pub mod queries;
pub mod rng;
pub mod vary;
pub mod vocab;
