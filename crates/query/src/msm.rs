//! `minimum_should_match`: how many of a query's optional clauses must match, in every form
//! Elasticsearch accepts (`"2"`, `"-1"`, `"75%"`, `"-25%"`, `"3<90%"`, `"2<-25% 9<-3"`).

/// Resolves `spec` against `optional_clauses` as Elasticsearch's
/// `Queries.calculateMinShouldMatch` does. The error text is the offending number, as in a
/// Java `NumberFormatException` (`For input string: "x"`).
pub fn min_should_match(optional_clauses: usize, spec: &str) -> Result<usize, String> {
    let count = optional_clauses as i64;
    let spec = spec.trim();
    if spec.contains('<') {
        // Conditional specs: "N<spec" applies `spec` once there are more than N clauses.
        let mut result = count;
        let normalized = normalize_conditions(spec);
        for part in normalized.split_whitespace() {
            let (bound, inner) = part.split_once('<').ok_or_else(|| number_error(part))?;
            let upper: i64 = bound.parse().map_err(|_| number_error(bound))?;
            if count <= upper {
                return Ok(result.max(0) as usize);
            }
            result = simple(count, inner)?;
        }
        return Ok(result.max(0) as usize);
    }
    Ok(simple(count, spec)?.max(0) as usize)
}

fn normalize_conditions(spec: &str) -> String {
    let mut out = String::with_capacity(spec.len());
    let mut chars = spec.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '<' {
            while out.ends_with(char::is_whitespace) {
                out.pop();
            }
            out.push('<');
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn simple(count: i64, spec: &str) -> Result<i64, String> {
    let result = if let Some(pct) = spec.strip_suffix('%') {
        let percent: i64 = pct.parse().map_err(|_| number_error(pct))?;
        // Java: (result * percent) * (1 / 100f), then an int cast (truncation toward zero).
        let calc = (count * percent) as f32 * (1.0f32 / 100.0);
        if calc < 0.0 {
            count + calc as i64
        } else {
            calc as i64
        }
    } else {
        let n: i64 = spec.parse().map_err(|_| number_error(spec))?;
        if n < 0 {
            count + n
        } else {
            n
        }
    };
    Ok(result.max(0))
}

fn number_error(s: &str) -> String {
    format!("For input string: \"{s}\"")
}

#[cfg(test)]
mod tests {
    use super::min_should_match as msm;

    #[test]
    fn integers_and_negatives() {
        assert_eq!(msm(5, "2"), Ok(2));
        assert_eq!(msm(5, "-1"), Ok(4));
        assert_eq!(msm(2, "-5"), Ok(0));
        assert_eq!(msm(3, "7"), Ok(7));
    }

    #[test]
    fn percentages_truncate() {
        assert_eq!(msm(4, "75%"), Ok(3));
        assert_eq!(msm(3, "75%"), Ok(2));
        assert_eq!(msm(4, "-25%"), Ok(3));
        assert_eq!(msm(3, "-25%"), Ok(3));
        assert_eq!(msm(10, "100%"), Ok(10));
    }

    #[test]
    fn conditionals() {
        assert_eq!(msm(3, "3<90%"), Ok(3));
        assert_eq!(msm(10, "3<90%"), Ok(9));
        assert_eq!(msm(2, "2<-25% 9<-3"), Ok(2));
        assert_eq!(msm(8, "2<-25% 9<-3"), Ok(6));
        assert_eq!(msm(12, "2<-25% 9<-3"), Ok(9));
        assert_eq!(msm(10, " 3 < 90% "), Ok(9));
    }

    #[test]
    fn garbage_is_a_number_format_error() {
        assert_eq!(msm(3, "abc"), Err("For input string: \"abc\"".to_string()));
        assert!(msm(3, "x%").is_err());
    }
}

/// The scorer of `minimum_should_match` disjunctions (the vendored tantivy's
/// `MinShouldMatchScorer`: lead and tail clauses, and score pruning for top hits), checked
/// against a naive evaluation of every clause on every document.
#[cfg(test)]
mod scorer_tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;
    use tantivy::collector::{Count, TopDocs};
    use tantivy::query::{BooleanQuery, BoostQuery, ConstScoreQuery, Occur, Query, TermQuery};
    use tantivy::schema::{IndexRecordOption, Schema, TEXT};
    use tantivy::{doc, DocAddress, DocSet, Index, IndexWriter, Score, Searcher, Term, TERMINATED};

    /// Term `t{k}` appears in a document with probability 0.5^(k/2) (common to rare), with a
    /// random frequency; several segments; some documents deleted.
    fn index(seed: u64) -> (Index, tantivy::schema::Field) {
        let mut sb = Schema::builder();
        let f = sb.add_text_field("body", TEXT);
        let index = Index::create_in_ram(sb.build());
        let mut w: IndexWriter = index.writer_with_num_threads(1, 20_000_000).unwrap();
        let mut rng = StdRng::seed_from_u64(seed);
        for i in 0..4000u32 {
            let mut words = Vec::new();
            for k in 0..8u32 {
                if rng.gen::<f64>() < 0.5f64.powf(f64::from(k) / 2.0) {
                    for _ in 0..rng.gen_range(1..4) {
                        words.push(format!("t{k}"));
                    }
                }
            }
            for _ in 0..rng.gen_range(0..6) {
                words.push("filler".to_string());
            }
            words.push(format!("id{i}"));
            w.add_document(doc!(f => words.join(" "))).unwrap();
            if i % 1300 == 1299 {
                w.commit().unwrap();
            }
        }
        w.commit().unwrap();
        for i in (0..4000u32).step_by(7) {
            w.delete_term(Term::from_field_text(f, &format!("id{i}")));
        }
        w.commit().unwrap();
        (index, f)
    }

    /// Per live document, each clause's score where it matches.
    fn clause_scores(
        searcher: &Searcher,
        clauses: &[Box<dyn Query>],
    ) -> Vec<HashMap<DocAddress, Score>> {
        clauses
            .iter()
            .map(|q| {
                let stats = crate::FieldStatistics::new(searcher);
                let weight = q.weight(stats.scoring(searcher)).unwrap();
                let mut out = HashMap::new();
                for (ord, seg) in searcher.segment_readers().iter().enumerate() {
                    let mut s = weight.scorer(seg, 1.0).unwrap();
                    while s.doc() != TERMINATED {
                        if !seg.is_deleted(s.doc()) {
                            out.insert(DocAddress::new(ord as u32, s.doc()), s.score());
                        }
                        s.advance();
                    }
                }
                out
            })
            .collect()
    }

    fn clause(f: tantivy::schema::Field, k: u32, kind: u32) -> Box<dyn Query> {
        let term = TermQuery::new(
            Term::from_field_text(f, &format!("t{k}")),
            IndexRecordOption::WithFreqs,
        );
        match kind % 3 {
            0 => Box::new(term),
            1 => Box::new(ConstScoreQuery::new(Box::new(term), 1.0 + k as f32 / 4.0)),
            _ => Box::new(BoostQuery::new(Box::new(term), 0.5 + k as f32)),
        }
    }

    #[test]
    fn counts_and_top_hits_match_a_naive_evaluation() {
        for seed in 0..3u64 {
            let (index, f) = index(seed);
            let searcher = index.reader().unwrap().searcher();
            assert!(searcher.segment_readers().len() >= 3);
            let mut rng = StdRng::seed_from_u64(100 + seed);
            for _ in 0..25 {
                let n = rng.gen_range(3..7usize);
                let mut ks: Vec<u32> = (0..8).collect();
                for i in 0..n {
                    let j = rng.gen_range(i..8);
                    ks.swap(i, j);
                }
                let make = |rng: &mut StdRng| -> Vec<Box<dyn Query>> {
                    ks[..n].iter().map(|&k| clause(f, k, rng.gen())).collect()
                };
                let clauses = make(&mut rng);
                let msm = rng.gen_range(2..n);
                let per_clause = clause_scores(&searcher, &clauses);
                // The sum in clause order, as the disjunction's combiner adds.
                let mut expected: HashMap<DocAddress, (usize, Score)> = HashMap::new();
                for scores in &per_clause {
                    for (&addr, &s) in scores {
                        let e = expected.entry(addr).or_insert((0, 0.0));
                        e.0 += 1;
                        e.1 += s;
                    }
                }
                let mut want: Vec<(Score, DocAddress)> = expected
                    .into_iter()
                    .filter(|(_, (c, _))| *c >= msm)
                    .map(|(a, (_, s))| (s, a))
                    .collect();
                want.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                let q = BooleanQuery::with_minimum_required_clauses(
                    clauses.into_iter().map(|c| (Occur::Should, c)).collect(),
                    msm,
                );
                let stats = crate::FieldStatistics::new(&searcher);
                assert_eq!(
                    stats.search(&searcher, &q, &Count).unwrap(),
                    want.len(),
                    "{q:?}"
                );
                for k in [1usize, 10, 100] {
                    let got = stats
                        .search(&searcher, &q, &TopDocs::with_limit(k).order_by_score())
                        .unwrap();
                    let want_k: Vec<(Score, DocAddress)> = want.iter().take(k).copied().collect();
                    assert_eq!(got, want_k, "top {k} of {q:?}");
                }
            }
        }
    }
}
