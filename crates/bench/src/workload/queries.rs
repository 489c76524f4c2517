//! The query suite: the built-in reference queries and user query files.
//!
//! A `*.json` file is a search body sent as `POST /{index}/_search`; a `*.get` file holds a
//! path sent as `GET` (the built-in `detail.get` is `/accounts/_doc/560000`). A query's name
//! is its file stem.

use anyhow::{bail, Context, Result};
use std::path::Path;

/// The built-in suite, in the order of `shared/bench/README.md`: (name, file text).
const BUILTIN: &[(&str, &str, &str)] = &[
    (
        "term",
        "json",
        include_str!("../../workload/queries/term.json"),
    ),
    (
        "range",
        "json",
        include_str!("../../workload/queries/range.json"),
    ),
    (
        "match",
        "json",
        include_str!("../../workload/queries/match.json"),
    ),
    (
        "metric",
        "json",
        include_str!("../../workload/queries/metric.json"),
    ),
    (
        "bucket",
        "json",
        include_str!("../../workload/queries/bucket.json"),
    ),
    (
        "sum",
        "json",
        include_str!("../../workload/queries/sum.json"),
    ),
    (
        "trend",
        "json",
        include_str!("../../workload/queries/trend.json"),
    ),
    (
        "group",
        "json",
        include_str!("../../workload/queries/group.json"),
    ),
    (
        "page-1",
        "json",
        include_str!("../../workload/queries/page-1.json"),
    ),
    (
        "page-10",
        "json",
        include_str!("../../workload/queries/page-10.json"),
    ),
    (
        "page-100",
        "json",
        include_str!("../../workload/queries/page-100.json"),
    ),
    (
        "page-1000",
        "json",
        include_str!("../../workload/queries/page-1000.json"),
    ),
    (
        "detail",
        "get",
        include_str!("../../workload/queries/detail.get"),
    ),
    (
        "ids_range",
        "json",
        include_str!("../../workload/queries/ids_range.json"),
    ),
];

/// The reference index body (settings + mappings) of the accounts workload.
pub const ACCOUNTS_MAPPING: &str = include_str!("../../workload/mapping-accounts.json");

/// The document posted by the reference write test.
pub const BOOKS_DOC: &str = include_str!("../../workload/books.json");

/// Names of the built-in queries, in suite order.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTIN.iter().map(|(n, _, _)| *n).collect()
}

/// HTTP method of a query.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum QueryMethod {
    /// `GET path`, no body.
    Get,
    /// `POST path` with a JSON body.
    Post,
}

/// One query of a suite.
#[derive(Clone, Debug)]
pub struct QuerySpec {
    /// Name shown in reports (file stem).
    pub name: String,
    /// GET or POST.
    pub method: QueryMethod,
    /// Request path, e.g. `/accounts/_search`.
    pub path: String,
    /// Request body (POST only).
    pub body: String,
    /// True for the reference queries (which `--vary` knows how to vary).
    pub builtin: bool,
}

fn spec(name: &str, ext: &str, text: &str, index: &str, builtin: bool) -> Result<QuerySpec> {
    match ext {
        "json" => {
            serde_json::from_str::<serde_json::Value>(text)
                .or_else(|e| {
                    // Templates may hold placeholders that are not valid JSON by themselves.
                    if text.contains("{{") {
                        Ok(serde_json::Value::Null)
                    } else {
                        Err(e)
                    }
                })
                .with_context(|| format!("query {name}: not valid JSON"))?;
            Ok(QuerySpec {
                name: name.to_string(),
                method: QueryMethod::Post,
                path: format!("/{index}/_search"),
                body: text.trim().to_string(),
                builtin,
            })
        }
        "get" => {
            let mut path = text.trim().lines().next().unwrap_or("").trim().to_string();
            if !path.starts_with('/') {
                bail!("query {name}: a .get file holds a path starting with '/'");
            }
            if builtin && index != "accounts" {
                if let Some(rest) = path.strip_prefix("/accounts/") {
                    path = format!("/{index}/{rest}");
                }
            }
            Ok(QuerySpec {
                name: name.to_string(),
                method: QueryMethod::Get,
                path,
                body: String::new(),
                builtin,
            })
        }
        other => bail!("query {name}: unknown extension .{other} (use .json or .get)"),
    }
}

/// The built-in suite against `index`.
pub fn builtin_suite(index: &str) -> Vec<QuerySpec> {
    BUILTIN
        .iter()
        .map(|(n, ext, text)| spec(n, ext, text, index, true).expect("built-in query is valid"))
        .collect()
}

/// Queries from a file or a directory (its `*.json` and `*.get` files, sorted by name).
pub fn load_path(path: &Path, index: &str) -> Result<Vec<QuerySpec>> {
    if path.is_dir() {
        let mut files: Vec<_> = std::fs::read_dir(path)
            .with_context(|| format!("reading {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("json" | "get")))
            .collect();
        files.sort();
        if files.is_empty() {
            bail!("no *.json or *.get query files in {}", path.display());
        }
        files.iter().map(|f| load_file(f, index)).collect()
    } else {
        Ok(vec![load_file(path, index)?])
    }
}

fn load_file(path: &Path, index: &str) -> Result<QuerySpec> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("query")
        .to_string();
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("json");
    // A user file named like a reference query (e.g. shared/bench/queries/term.json) with the
    // same content is treated as that reference query, so `--vary` can vary it.
    let builtin = BUILTIN
        .iter()
        .any(|(n, _, t)| *n == name && t.trim() == text.trim());
    spec(&name, ext, &text, index, builtin)
}

/// Keeps only the queries named in `only` (comma-separated lists allowed), in suite order.
pub fn select(queries: Vec<QuerySpec>, only: &[String]) -> Result<Vec<QuerySpec>> {
    if only.is_empty() {
        return Ok(queries);
    }
    let wanted: Vec<&str> = only
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    for w in &wanted {
        if !queries.iter().any(|q| q.name == *w) {
            let names: Vec<&str> = queries.iter().map(|q| q.name.as_str()).collect();
            bail!("no query named {w:?}; known: {}", names.join(", "));
        }
    }
    Ok(queries
        .into_iter()
        .filter(|q| wanted.contains(&q.name.as_str()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_suite_is_complete_and_valid() {
        let suite = builtin_suite("accounts");
        let names: Vec<&str> = suite.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(names.len(), 14);
        assert!(names.contains(&"ids_range") && names.contains(&"page-1000"));
        let detail = suite.iter().find(|q| q.name == "detail").unwrap();
        assert_eq!(detail.method, QueryMethod::Get);
        assert_eq!(detail.path, "/accounts/_doc/560000");
        let other = builtin_suite("acc2");
        assert_eq!(other[0].path, "/acc2/_search");
        assert_eq!(
            other.iter().find(|q| q.name == "detail").unwrap().path,
            "/acc2/_doc/560000"
        );
        serde_json::from_str::<serde_json::Value>(ACCOUNTS_MAPPING).unwrap();
        serde_json::from_str::<serde_json::Value>(BOOKS_DOC).unwrap();
    }

    /// The project's copies (embedded in the binary, read by the Python tests) must stay equal
    /// to the reference workload in ../shared/bench when it is present.
    #[test]
    fn embedded_copies_match_shared_bench() {
        let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/bench");
        if !shared.is_dir() {
            eprintln!("skipped: {} not present", shared.display());
            return;
        }
        for (name, ext, text) in BUILTIN {
            let f = shared.join("queries").join(format!("{name}.{ext}"));
            assert_eq!(
                std::fs::read_to_string(&f).unwrap().trim(),
                text.trim(),
                "{name}"
            );
        }
        let ours = Path::new(env!("CARGO_MANIFEST_DIR")).join("workload");
        for file in ["mapping-accounts.json", "books.json", "gen_accounts.py"] {
            assert_eq!(
                std::fs::read_to_string(shared.join(file)).unwrap(),
                std::fs::read_to_string(ours.join(file)).unwrap(),
                "{file}"
            );
        }
        let dir = load_path(&shared.join("queries"), "accounts").unwrap();
        assert_eq!(dir.len(), 14);
        assert!(dir.iter().all(|q| q.builtin));
    }

    #[test]
    fn select_by_name() {
        let s = select(builtin_suite("accounts"), &["term,match".into()]).unwrap();
        assert_eq!(s.len(), 2);
        assert!(select(builtin_suite("accounts"), &["nope".into()]).is_err());
    }
}
