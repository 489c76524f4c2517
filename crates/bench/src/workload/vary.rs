//! Cache honesty: per-request variations of the queries.
//!
//! With `--vary`, each reference query gets fresh parameters drawn from the workload's
//! distributions (another account, another date, another name, another document id), so that
//! neither the request cache, nor a result cache in front of the engine, nor the page cache of
//! a single hot posting list can answer every request. The whole-index aggregations (`metric`,
//! `bucket`, `sum`, `group`) get a `range` filter on `createdTime` whose lower bound lies before
//! the first document: it changes the cache key and matches every document, so the work stays
//! the same. The page queries also draw their status, their sort field (`createdTime`,
//! `createdTimeStr` or `balance`) and order, and a cut-off date on either side.
//!
//! Any query file may also hold placeholders that are filled per request, whatever `--vary`
//! says: `{{acct_id}}`, `{{user_name}}`, `{{name_prefix}}`, `{{doc_id}}`, `{{date}}`
//! (`createdTimeStr` format), `{{epoch_millis}}`, `{{status}}`, `{{balance_type}}`,
//! `{{acct_type}}`, `{{random}}`.

use super::accounts::{AccountsModel, Y2020_MS};
use super::queries::{QueryMethod, QuerySpec};
use super::rng::Rng;
use super::vocab::{ACCT_TYPES, BALANCE_TYPES, DAYS, DAY_MS, SPAN_MS, T0_MS};
use serde_json::{json, Value};
use std::sync::Arc;

/// What the variations draw from: the account model and the number of documents loaded.
pub struct Variation {
    model: Arc<AccountsModel>,
    docs: u64,
}

const PLACEHOLDERS: &[&str] = &[
    "{{acct_id}}",
    "{{user_name}}",
    "{{name_prefix}}",
    "{{doc_id}}",
    "{{date}}",
    "{{epoch_millis}}",
    "{{status}}",
    "{{balance_type}}",
    "{{acct_type}}",
    "{{random}}",
];

/// True when the text holds at least one placeholder.
pub fn has_placeholders(text: &str) -> bool {
    PLACEHOLDERS.iter().any(|p| text.contains(p))
}

impl Variation {
    /// Draws from `model`; document ids are drawn from `1..=docs`.
    pub fn new(model: Arc<AccountsModel>, docs: u64) -> Variation {
        Variation {
            model,
            docs: docs.max(1),
        }
    }

    fn acct_id(&self, rng: &mut Rng) -> String {
        format!("A{:011}", self.model.sample_account(rng))
    }

    fn time_ms(&self, rng: &mut Rng) -> i64 {
        T0_MS + rng.below(SPAN_MS as u64) as i64
    }

    fn date_str(&self, ms: i64) -> String {
        let mut s = String::new();
        self.model.format_time(ms, &mut s);
        s
    }

    fn doc_id(&self, rng: &mut Rng) -> u64 {
        rng.range_inclusive(1, self.docs)
    }

    /// Replaces every placeholder in `text` with a fresh draw.
    pub fn fill(&self, text: &str, rng: &mut Rng) -> String {
        if !text.contains("{{") {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len() + 32);
        let mut rest = text;
        while let Some(pos) = rest.find("{{") {
            out.push_str(&rest[..pos]);
            let tail = &rest[pos..];
            match PLACEHOLDERS.iter().find(|p| tail.starts_with(**p)) {
                Some(p) => {
                    out.push_str(&self.draw(p, rng));
                    rest = &tail[p.len()..];
                }
                None => {
                    out.push_str("{{");
                    rest = &tail[2..];
                }
            }
        }
        out.push_str(rest);
        out
    }

    fn draw(&self, placeholder: &str, rng: &mut Rng) -> String {
        match placeholder {
            "{{acct_id}}" => self.acct_id(rng),
            "{{user_name}}" => {
                let a = self.model.sample_account(rng);
                self.model.account(a).name.clone()
            }
            "{{name_prefix}}" => {
                let a = self.model.sample_account(rng);
                self.model.account(a).name_prefix().to_string()
            }
            "{{doc_id}}" => self.doc_id(rng).to_string(),
            "{{date}}" => self.date_str(self.time_ms(rng)),
            "{{epoch_millis}}" => self.time_ms(rng).to_string(),
            "{{status}}" => self.model.sample_status(rng).to_string(),
            "{{balance_type}}" => rng.choose(BALANCE_TYPES).0.to_string(),
            "{{acct_type}}" => rng.choose(ACCT_TYPES).0.to_string(),
            _ => rng.next_u64().to_string(),
        }
    }

    /// A varied (path, body) for a reference query; `None` if the query is not one.
    pub fn vary_builtin(&self, q: &QuerySpec, rng: &mut Rng) -> Option<(String, String)> {
        if !q.builtin {
            return None;
        }
        if q.method == QueryMethod::Get {
            // detail: another document.
            let base = q.path.rsplit_once('/').map(|(b, _)| b).unwrap_or("");
            return Some((format!("{base}/{}", self.doc_id(rng)), String::new()));
        }
        let mut body: Value = serde_json::from_str(&q.body).ok()?;
        let name = q.name.as_str();
        match name {
            "term" => body["query"] = json!({"term": {"acctId": self.acct_id(rng)}}),
            "range" => {
                let gte = self.date_str(self.time_ms(rng));
                body["query"] = json!({"range": {"createdTimeStr": {"gte": gte}}});
            }
            "match" => {
                let a = self.model.sample_account(rng);
                let text = self.model.account(a).name_prefix().to_string();
                body["query"] = json!({"match": {"userName.analyzed": text}});
            }
            "metric" | "bucket" | "sum" | "group" => {
                // Before the first document: matches everything, but a new cache key.
                let gte = T0_MS - 1 - rng.below(DAY_MS as u64) as i64;
                body["query"] = json!({"range": {"createdTime": {"gte": gte}}});
            }
            "trend" => {
                let day = rng.below((DAYS - 5) as u64 + 1) as i64;
                let gte = T0_MS + day * DAY_MS;
                body["query"] = json!({"bool": {"filter": [
                    {"range": {"createdTime": {"gte": gte, "lt": gte + 5 * DAY_MS}}}
                ]}});
            }
            n if n.starts_with("page-") => {
                // Other pages of hits: another status, another numeric or date sort field in
                // either order, and a cut-off date on either side (or none).
                let status = self.model.sample_status(rng);
                let cut = Y2020_MS + rng.below((T0_MS + SPAN_MS - Y2020_MS) as u64) as i64;
                let mut filter = vec![json!({"term": {"status": status}})];
                match rng.below(3) {
                    0 => filter.push(json!({"range": {"createdTime": {"lt": cut}}})),
                    1 => filter.push(json!({"range": {"createdTime": {"gte": cut}}})),
                    _ => {}
                }
                body["query"] = json!({"bool": {"filter": filter}});
                let field = *rng.choose(&["createdTime", "createdTimeStr", "balance"]);
                let order = *rng.choose(&["asc", "desc"]);
                body["sort"] = json!([{ field: {"order": order} }]);
            }
            "ids_range" => {
                let mut ids: Vec<u64> = (0..50).map(|_| self.doc_id(rng)).collect();
                ids.sort_unstable();
                let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
                let gte = self.time_ms(rng);
                body["query"] = json!({"bool": {"filter": [
                    {"terms": {"_id": ids}},
                    {"range": {"createdTime": {"gte": gte}}}
                ]}});
            }
            _ => return None,
        }
        Some((q.path.clone(), body.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::queries::builtin_suite;

    fn variation() -> Variation {
        Variation::new(Arc::new(AccountsModel::new(42, 2000)), 5000)
    }

    #[test]
    fn every_builtin_query_varies_and_stays_valid_json() {
        let v = variation();
        let mut rng = Rng::new(1);
        for q in builtin_suite("accounts") {
            let (p1, b1) = v.vary_builtin(&q, &mut rng).expect(&q.name);
            let (p2, b2) = v.vary_builtin(&q, &mut rng).unwrap();
            assert!(p1 != p2 || b1 != b2, "{} did not vary", q.name);
            if q.method == QueryMethod::Post {
                let body: Value = serde_json::from_str(&b1).unwrap();
                // What the query measures stays: sizes, sorts and aggregations are kept.
                let orig: Value = serde_json::from_str(&q.body).unwrap();
                assert_eq!(body.get("aggs"), orig.get("aggs"), "{}", q.name);
                assert_eq!(body.get("size"), orig.get("size"), "{}", q.name);
                assert_eq!(body.get("from"), orig.get("from"), "{}", q.name);
            } else {
                let id: u64 = p1.rsplit('/').next().unwrap().parse().unwrap();
                assert!((1..=5000).contains(&id));
            }
        }
    }

    #[test]
    fn placeholders_are_filled() {
        let v = variation();
        let mut rng = Rng::new(3);
        let t = r#"{"a":"{{acct_id}}","b":{{epoch_millis}},"c":"{{date}}","d":"{{unknown}}"}"#;
        assert!(has_placeholders(t));
        let out = v.fill(t, &mut rng);
        let val: Value = serde_json::from_str(&out).unwrap();
        assert!(val["a"].as_str().unwrap().starts_with('A'));
        assert!(val["b"].as_i64().unwrap() >= T0_MS);
        assert!(val["c"].as_str().unwrap().ends_with("+0800"));
        assert_eq!(val["d"], "{{unknown}}");
    }

    #[test]
    fn account_draws_follow_popularity() {
        // Account 0 sits at popularity rank 400 of 2000: drawn with its model weight.
        let v = variation();
        let mut rng = Rng::new(5);
        let n = 100_000;
        let hits = (0..n)
            .filter(|_| v.acct_id(&mut rng) == "A00000000000")
            .count();
        let want = v.model.weight(0) * n as f64;
        assert!(
            (hits as f64 - want).abs() < 5.0 * want.sqrt(),
            "{hits} vs {want}"
        );
    }
}
