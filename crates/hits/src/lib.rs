//! What a hit is made of, shared by search and the `top_hits` aggregation: sort keys and the
//! collector that keeps the top `from + size` documents by them (`sort`), the walk that feeds
//! it from a numeric or keyword lead key's points index instead of every match (`walk`; a
//! keyword's ordinals and terms in `ords`; a scanned page of several keys first selected on
//! the lead value in `lead_select`), `_source`
//! filtering (`source`), `docvalue_fields` read from the columns (`docvalues`), `highlight`, and the
//! named queries a hit matches (`matched`).

// `EsError` is the workspace-wide error type; its size is a deliberate trade-off.
#![allow(clippy::result_large_err)]

pub mod docvalues;
pub mod highlight;
pub mod lead_select;
pub mod matched;
pub mod ords;
pub mod sort;
pub mod source;
pub mod term_table;
pub mod walk;
