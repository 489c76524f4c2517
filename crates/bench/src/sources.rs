//! Request sources: queries (fixed or varied), document writes, replayed requests.

use crate::http::Request;
use crate::report::KindInfo;
use crate::runner::{Planned, Source};
use crate::workload::accounts::{AccountDoc, AccountsGenerator, AccountsModel};
use crate::workload::queries::{QueryMethod, QuerySpec};
use crate::workload::rng::Rng;
use crate::workload::vary::{has_placeholders, Variation};
use bytes::Bytes;
use hyper::Method;
use std::sync::{Arc, Mutex};

/// Appends `request_cache=false` to a path.
pub fn without_request_cache(path: &str) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}request_cache=false")
}

/// Queries sent round-robin (one kind per query).
pub struct QuerySource {
    queries: Vec<QuerySpec>,
    fixed: Vec<Option<Request>>,
    variation: Option<Arc<Variation>>,
    vary: bool,
    no_request_cache: bool,
}

impl QuerySource {
    /// A source for `queries`; `variation` is needed for `--vary` and for placeholders.
    pub fn new(
        queries: Vec<QuerySpec>,
        variation: Option<Arc<Variation>>,
        vary: bool,
        no_request_cache: bool,
    ) -> QuerySource {
        let mut s = QuerySource {
            fixed: Vec::new(),
            queries,
            variation,
            vary,
            no_request_cache,
        };
        s.fixed = s
            .queries
            .iter()
            .map(|q| {
                let templated = has_placeholders(&q.body) || has_placeholders(&q.path);
                let varied = s.vary && q.builtin;
                (!templated && !varied).then(|| s.build(q, q.path.clone(), q.body.clone()))
            })
            .collect();
        s
    }

    /// Kind descriptions.
    pub fn kind_infos(&self) -> Vec<KindInfo> {
        self.queries
            .iter()
            .map(|q| KindInfo {
                name: q.name.clone(),
                method: method(q).to_string(),
                path: self.path(&q.path),
            })
            .collect()
    }

    fn path(&self, p: &str) -> String {
        if self.no_request_cache && p.contains("_search") {
            without_request_cache(p)
        } else {
            p.to_string()
        }
    }

    fn build(&self, q: &QuerySpec, path: String, body: String) -> Request {
        Request::json(method(q), self.path(&path), Bytes::from(body))
    }
}

fn method(q: &QuerySpec) -> Method {
    match q.method {
        QueryMethod::Get => Method::GET,
        QueryMethod::Post => Method::POST,
    }
}

impl Source for QuerySource {
    fn kinds(&self) -> Vec<String> {
        self.queries.iter().map(|q| q.name.clone()).collect()
    }

    fn plan(&self, index: u64, rng: &mut Rng) -> Planned {
        let kind = (index % self.queries.len() as u64) as usize;
        let request = match &self.fixed[kind] {
            Some(r) => r.clone(),
            None => {
                let q = &self.queries[kind];
                let v = self
                    .variation
                    .as_ref()
                    .expect("variation for varied queries");
                let (path, body) = if self.vary {
                    v.vary_builtin(q, rng)
                        .unwrap_or_else(|| (q.path.clone(), q.body.clone()))
                } else {
                    (q.path.clone(), q.body.clone())
                };
                self.build(q, v.fill(&path, rng), v.fill(&body, rng))
            }
        };
        Planned {
            kind,
            request,
            docs: 0,
            bulk: false,
        }
    }
}

/// What documents a write source writes.
pub enum Docs {
    /// The same document every time (e.g. books.json).
    Fixed(String),
    /// Generated accounts documents.
    Accounts(Mutex<AccountsGenerator>),
}

/// Document writes: `POST /{index}/_doc` (one document) or `POST /_bulk` (`bulk` documents).
pub struct WriteSource {
    index: String,
    docs: Docs,
    bulk: Option<usize>,
    name: String,
    fixed: Option<Request>,
    with_ids: bool,
    overwrite: Option<u64>,
}

impl WriteSource {
    /// Writes into `index`; `bulk` documents per `_bulk` request, or single-document writes.
    pub fn new(index: &str, docs: Docs, bulk: Option<usize>, name: &str) -> WriteSource {
        let bulk = bulk.filter(|b| *b > 0);
        let mut s = WriteSource {
            index: index.to_string(),
            docs,
            bulk,
            name: name.to_string(),
            fixed: None,
            with_ids: false,
            overwrite: None,
        };
        if let Docs::Fixed(doc) = &s.docs {
            s.fixed = Some(match s.bulk {
                None => Request::json(Method::POST, s.doc_path(), doc.clone()),
                Some(n) => {
                    let action = format!("{{\"index\":{{\"_index\":\"{}\"}}}}\n", s.index);
                    let one = compact(doc);
                    let body: String = (0..n).map(|_| format!("{action}{one}\n")).collect();
                    Request::ndjson("/_bulk", body)
                }
            });
        }
        s
    }

    /// Generated documents carry their sequence number as `_id` (`PUT /INDEX/_doc/ID`, or
    /// `_id` in the bulk action) instead of getting an auto-generated id.
    pub fn with_ids(mut self) -> WriteSource {
        self.with_ids = matches!(self.docs, Docs::Accounts(_));
        self
    }

    /// Generated documents take the ids `1..=docs` in turn (implies [`WriteSource::with_ids`]):
    /// each write replaces a document already indexed, so the index keeps its size while the
    /// replaced versions become deletes for merges to reclaim.
    pub fn overwriting(mut self, docs: u64) -> WriteSource {
        self = self.with_ids();
        self.overwrite = (self.with_ids && docs > 0).then_some(docs);
        self
    }

    fn next_doc(&self, g: &mut AccountsGenerator) -> AccountDoc {
        let mut d = g.next_doc();
        if let Some(n) = self.overwrite {
            d.id = (d.id - 1) % n + 1;
        }
        d
    }

    fn doc_path(&self) -> String {
        format!("/{}/_doc", self.index)
    }

    /// Kind description.
    pub fn kind_info(&self) -> KindInfo {
        let single = if self.with_ids { "PUT" } else { "POST" };
        KindInfo {
            name: self.name.clone(),
            method: if self.bulk.is_some() { "POST" } else { single }.into(),
            path: match (self.bulk, self.with_ids) {
                (Some(_), _) => "/_bulk".into(),
                (None, true) => format!("{}/{{id}}", self.doc_path()),
                (None, false) => self.doc_path(),
            },
        }
    }
}

/// A JSON document on one line (bulk bodies are line-delimited).
fn compact(doc: &str) -> String {
    serde_json::from_str::<serde_json::Value>(doc)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| doc.replace('\n', " "))
}

impl Source for WriteSource {
    fn kinds(&self) -> Vec<String> {
        vec![self.name.clone()]
    }

    fn plan(&self, _index: u64, _rng: &mut Rng) -> Planned {
        let docs = self.bulk.unwrap_or(1) as u64;
        let request = match (&self.fixed, &self.docs) {
            (Some(r), _) => r.clone(),
            (None, Docs::Accounts(g)) => {
                let mut g = g.lock().expect("generator lock");
                let mut body = String::with_capacity(400 * docs as usize);
                match self.bulk {
                    None => {
                        let d = self.next_doc(&mut g);
                        g.model().write_source(&d, &mut body);
                        if self.with_ids {
                            let path = format!("{}/{}", self.doc_path(), d.id);
                            Request::json(Method::PUT, path, body)
                        } else {
                            Request::json(Method::POST, self.doc_path(), body)
                        }
                    }
                    Some(n) => {
                        for _ in 0..n {
                            let d = self.next_doc(&mut g);
                            g.model()
                                .write_bulk(&d, &self.index, self.with_ids, &mut body);
                        }
                        Request::ndjson("/_bulk", body)
                    }
                }
            }
            (None, Docs::Fixed(_)) => unreachable!("fixed documents are prebuilt"),
        };
        Planned {
            kind: 0,
            request,
            docs,
            bulk: self.bulk.is_some(),
        }
    }
}

/// Generated accounts documents for writes during a benchmark (their own stream, so they do
/// not repeat the loaded corpus), numbered from `first_id`.
pub fn account_docs(corpus_seed: u64, accounts: u32, stream: u64, first_id: u64) -> Docs {
    let model = Arc::new(AccountsModel::new(corpus_seed, accounts));
    Docs::Accounts(Mutex::new(AccountsGenerator::with_stream(
        model, first_id, stream,
    )))
}

/// Recorded requests in file order.
pub struct ReplaySource {
    /// (kind index, request).
    pub entries: Vec<(usize, Request)>,
    /// Kind descriptions.
    pub kinds: Vec<KindInfo>,
}

impl Source for ReplaySource {
    fn kinds(&self) -> Vec<String> {
        self.kinds.iter().map(|k| k.name.clone()).collect()
    }

    fn plan(&self, index: u64, _rng: &mut Rng) -> Planned {
        let (kind, request) = &self.entries[index as usize];
        let bulk = request
            .path
            .split('?')
            .next()
            .unwrap_or("")
            .ends_with("/_bulk");
        let docs = if bulk {
            crate::commands::load::count_bulk_docs(&request.body)
        } else if matches!(request.method, Method::POST | Method::PUT)
            && crate::report::endpoint(request.method.as_str(), &request.path).ends_with("_doc")
        {
            1
        } else {
            0
        };
        Planned {
            kind: *kind,
            request: request.clone(),
            docs,
            bulk,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::queries::builtin_suite;

    #[test]
    fn query_source_round_robin_and_request_cache() {
        let suite: Vec<_> = builtin_suite("accounts").into_iter().take(3).collect();
        let s = QuerySource::new(suite, None, false, true);
        let mut rng = Rng::new(1);
        let kinds: Vec<usize> = (0..6).map(|i| s.plan(i, &mut rng).kind).collect();
        assert_eq!(kinds, [0, 1, 2, 0, 1, 2]);
        let p = s.plan(0, &mut rng);
        assert_eq!(p.request.path, "/accounts/_search?request_cache=false");
        assert_eq!(p.request.content_type, Some("application/json"));
        assert_eq!(
            without_request_cache("/a/_search?x=1"),
            "/a/_search?x=1&request_cache=false"
        );
    }

    #[test]
    fn varied_queries_differ() {
        let suite = builtin_suite("accounts");
        let v = Arc::new(Variation::new(Arc::new(AccountsModel::new(42, 1000)), 1000));
        let s = QuerySource::new(suite, Some(v), true, false);
        let mut rng = Rng::new(1);
        let a = s.plan(0, &mut rng).request;
        let b = s.plan(14, &mut rng).request;
        assert_ne!(a.body, b.body);
        let d = s.plan(12, &mut rng).request;
        assert_eq!(d.method, Method::GET);
        assert!(d.path.starts_with("/accounts/_doc/"));
        assert!(d.body.is_empty());
    }

    #[test]
    fn write_sources() {
        let w = WriteSource::new("books", Docs::Fixed("{\"a\":\n1}".into()), None, "write");
        let p = w.plan(0, &mut Rng::new(1));
        assert_eq!(p.request.path, "/books/_doc");
        assert_eq!((p.docs, p.bulk), (1, false));
        let w = WriteSource::new("books", Docs::Fixed("{\"a\":\n1}".into()), Some(3), "bulk");
        let p = w.plan(0, &mut Rng::new(1));
        assert_eq!(p.request.path, "/_bulk");
        let body = String::from_utf8(p.request.body.to_vec()).unwrap();
        assert_eq!(body.lines().count(), 6);
        assert_eq!(body.lines().nth(1), Some("{\"a\":1}"));
        assert_eq!((p.docs, p.bulk), (3, true));
        let w = WriteSource::new("acc", account_docs(42, 100, 9, 1), Some(2), "bulk");
        let p1 = w.plan(0, &mut Rng::new(1));
        let p2 = w.plan(1, &mut Rng::new(1));
        assert_ne!(p1.request.body, p2.request.body);
        assert!(String::from_utf8_lossy(&p1.request.body)
            .starts_with("{\"index\":{\"_index\":\"acc\"}}"));
        let w = WriteSource::new("acc", account_docs(42, 100, 9, 501), None, "write").with_ids();
        assert_eq!(w.kind_info().method, "PUT");
        let p = w.plan(0, &mut Rng::new(1));
        assert_eq!(
            (p.request.method, p.request.path.as_str()),
            (Method::PUT, "/acc/_doc/501")
        );
        let p = w.plan(1, &mut Rng::new(1));
        assert_eq!(p.request.path, "/acc/_doc/502");
        // Overwriting cycles over the ids already indexed.
        let w = WriteSource::new("acc", account_docs(42, 100, 9, 1), None, "write").overwriting(2);
        let paths: Vec<String> = (0..5)
            .map(|i| w.plan(i, &mut Rng::new(1)).request.path)
            .collect();
        assert_eq!(
            paths,
            [
                "/acc/_doc/1",
                "/acc/_doc/2",
                "/acc/_doc/1",
                "/acc/_doc/2",
                "/acc/_doc/1"
            ]
        );
    }
}
