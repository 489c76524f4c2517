//! The `lode bench` subcommands.

pub mod compare;
pub mod gen;
pub mod load;
pub mod mixed;
pub mod queries;
pub mod replay;
pub mod search;
pub mod write;

/// `lode bench <subcommand>`.
#[derive(clap::Subcommand, Debug)]
pub enum BenchCommand {
    /// Generate the reference accounts corpus as `_bulk` NDJSON
    Gen(gen::GenArgs),
    /// Create the index from its mapping and bulk-load generated documents or NDJSON files
    Load(load::LoadArgs),
    /// Fire queries (a file, a directory, or the built-in suite) at a URL
    Search(search::SearchArgs),
    /// Single-document or bulk writes at a concurrency
    Write(write::WriteArgs),
    /// Searches at a fixed rate while writes go on (and an optional force merge)
    Mixed(mixed::MixedArgs),
    /// Replay recorded requests at their recorded pace, faster, or as fast as possible
    Replay(replay::ReplayArgs),
    /// The same queries against two URLs, alternating per query, with ratios
    Compare(compare::CompareArgs),
}

impl BenchCommand {
    /// The `--threads` option of the subcommand.
    pub fn threads(&self) -> Option<usize> {
        match self {
            BenchCommand::Gen(_) => Some(1),
            BenchCommand::Load(a) => a.threads,
            BenchCommand::Search(a) => a.out.threads,
            BenchCommand::Write(a) => a.out.threads,
            BenchCommand::Mixed(a) => a.out.threads,
            BenchCommand::Replay(a) => a.out.threads,
            BenchCommand::Compare(a) => a.out.threads,
        }
    }
}
