//! Query selection shared by `search`, `compare` and `mixed`.

use crate::cli::CacheOpts;
use crate::control::Control;
use crate::report::KindInfo;
use crate::sources::QuerySource;
use crate::workload::accounts::AccountsModel;
use crate::workload::queries::{builtin_suite, load_path, select, QuerySpec};
use crate::workload::vary::{has_placeholders, Variation};
use crate::workload::vocab::DOCS_DEFAULT;
use anyhow::Result;
use std::path::PathBuf;
use std::sync::Arc;

/// Which queries to send.
#[derive(clap::Args, Debug, Clone)]
pub struct QueryArgs {
    /// Query file (`*.json`: body of `POST /INDEX/_search`; `*.get`: a path to GET) or a
    /// directory of them; repeatable [default: the built-in reference suite]
    #[arg(long = "query", value_name = "PATH")]
    pub queries: Vec<PathBuf>,
    /// Only the queries with these names (comma-separated), e.g. `term,ids_range`
    #[arg(long, value_name = "NAMES")]
    pub only: Vec<String>,
    /// Index the queries run against
    #[arg(long, default_value = "accounts")]
    pub index: String,
}

impl QueryArgs {
    /// The selected queries.
    pub fn load(&self) -> Result<Vec<QuerySpec>> {
        let all = if self.queries.is_empty() {
            builtin_suite(&self.index)
        } else {
            let mut v = Vec::new();
            for p in &self.queries {
                v.extend(load_path(p, &self.index)?);
            }
            v
        };
        select(all, &self.only)
    }
}

/// The variation model when `--vary` is on or a query has placeholders.
pub async fn variation(
    queries: &[QuerySpec],
    cache: &CacheOpts,
    control: &Control,
    index: &str,
) -> Option<Arc<Variation>> {
    let templated = queries
        .iter()
        .any(|q| has_placeholders(&q.body) || has_placeholders(&q.path));
    if !cache.vary && !templated {
        return None;
    }
    if cache.vary {
        for q in queries
            .iter()
            .filter(|q| !q.builtin && !has_placeholders(&q.body))
        {
            eprintln!(
                "note: --vary does not know how to vary {:?}; it is sent unchanged (use placeholders such as {{{{acct_id}}}})",
                q.name
            );
        }
    }
    let docs = match cache.corpus_docs {
        Some(d) => d,
        None => control.count(index).await.unwrap_or(DOCS_DEFAULT),
    };
    let model = Arc::new(AccountsModel::new(cache.corpus_seed, cache.corpus_accounts));
    Some(Arc::new(Variation::new(model, docs)))
}

/// A source for some queries, with its kind descriptions.
pub fn source(
    queries: Vec<QuerySpec>,
    variation: Option<Arc<Variation>>,
    cache: &CacheOpts,
) -> (Arc<QuerySource>, Vec<KindInfo>) {
    let s = QuerySource::new(queries, variation, cache.vary, cache.no_request_cache);
    let kinds = s.kind_infos();
    (Arc::new(s), kinds)
}
