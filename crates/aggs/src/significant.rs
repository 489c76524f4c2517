//! `significant_terms`: the background (superset) counts, read from every shard of every
//! index the search aggregates over, and Elasticsearch's JLH score.
//!
//! Without a `background_filter` the background is every live document: its size is the
//! documents' count and a term's frequency its live document frequency (the term dictionary
//! minus deleted documents, see `term_counts`). With one, the filter's live documents are
//! walked and their terms counted from the column.

use super::dsl::{build_dsl, DslQuery};
use super::exec::Exec;
use super::term_counts::live_term_counts;
use lode_engine::mapping::Storage;
use lode_engine::object_parser::{At, Field, ObjectParser, Style};
use lode_engine::{EsError, EsResult};
use serde_json::{Map, Value};
use std::collections::HashMap;
use tantivy::query::EnableScoring;
use tantivy::{DocId, DocSet, TERMINATED};

/// The background: its size and each term's document count.
pub(crate) struct Background {
    pub size: u64,
    pub counts: HashMap<String, u64>,
}

/// How the background counts a numeric value (a date's milliseconds, a boolean's 0/1).
pub(crate) fn numeric_term(v: i64) -> String {
    format!("#{v}")
}

/// A segment's background documents counted per value of a numeric field.
struct NumericCounts {
    /// Documents counted from `weight` (0 without it: the caller counts live documents).
    docs: u64,
    values: HashMap<i64, u64>,
}

fn numeric_counts(
    segment: &tantivy::SegmentReader,
    field: &str,
    storage: Storage,
    weight: Option<&dyn tantivy::query::Weight>,
) -> tantivy::Result<NumericCounts> {
    let ff = segment.fast_fields();
    let ints = match storage {
        Storage::Bool => None,
        _ => ff.column_opt::<i64>(field)?,
    };
    let bools = match storage {
        Storage::Bool => ff.column_opt::<bool>(field)?,
        _ => None,
    };
    let alive = segment.alive_bitset();
    let mut out = NumericCounts {
        docs: 0,
        values: HashMap::new(),
    };
    let mut vals: Vec<i64> = Vec::new();
    let mut count = |doc: DocId, out: &mut NumericCounts| {
        vals.clear();
        if let Some(c) = &ints {
            vals.extend(c.values_for_doc(doc));
        }
        if let Some(c) = &bools {
            vals.extend(c.values_for_doc(doc).map(i64::from));
        }
        vals.sort_unstable();
        vals.dedup();
        for &v in &vals {
            *out.values.entry(v).or_default() += 1;
        }
    };
    match weight {
        Some(w) => {
            let mut scorer = w.scorer(segment, 1.0)?;
            let mut doc = scorer.doc();
            while doc != TERMINATED {
                if alive.is_none_or(|a| a.is_alive(doc)) {
                    out.docs += 1;
                    count(doc, &mut out);
                }
                doc = scorer.advance();
            }
        }
        None => {
            // Every live document (nested objects hold no values of a root field).
            for doc in 0..segment.max_doc() {
                if alive.is_none_or(|a| a.is_alive(doc)) {
                    count(doc, &mut out);
                }
            }
        }
    }
    Ok(out)
}

fn internal(e: tantivy::TantivyError) -> EsError {
    EsError::internal(format!("significant_terms failure: {e}"))
}

pub(crate) fn background(
    exec: &Exec,
    field: &str,
    filter: Option<&DslQuery>,
) -> EsResult<Background> {
    let mut bg = Background {
        size: 0,
        counts: HashMap::new(),
    };
    for pt in &exec.targets {
        let nested = pt.target.ctx.meta.nested;
        // With nested documents, the background is the root documents (as ES's non-nested
        // filter makes it).
        // A constant_keyword's terms are only those of the documents that stored its value:
        // its background is read from the constant column, over every root document.
        let constant = pt
            .target
            .ctx
            .mapping
            .field(field)
            .is_some_and(|d| d.ty == lode_engine::mapping::FieldType::ConstantKeyword);
        let query = filter
            .map(|q| build_dsl(q, pt.target.ctx))
            .transpose()?
            .or_else(|| constant.then(|| Box::new(tantivy::query::AllQuery) as _))
            .map(|q| lode_query::nested::non_nested(q, nested));
        for shard in pt.target.shards {
            let searcher = &shard.searcher;
            let live_docs = || -> EsResult<u64> {
                Ok(match nested {
                    None => searcher.num_docs(),
                    Some(_) => {
                        lode_query::nested::non_nested(Box::new(tantivy::query::AllQuery), nested)
                            .count(searcher)
                            .map_err(internal)? as u64
                    }
                })
            };
            let numeric = pt
                .target
                .ctx
                .mapping
                .field(field)
                .map(|d| d.storage())
                .filter(|s| matches!(s, Storage::I64 | Storage::Bool));
            if let Some(storage) = numeric {
                // Numbers, dates and booleans have no terms to read frequencies from: count
                // the background documents of each value (each document once per value),
                // as ES counts a point query per value.
                if query.is_none() {
                    bg.size += live_docs()?;
                }
                let weight = query
                    .as_ref()
                    .map(|q| q.weight(EnableScoring::disabled_from_searcher(searcher)))
                    .transpose()
                    .map_err(internal)?;
                for segment in searcher.segment_readers() {
                    let counted = numeric_counts(segment, field, storage, weight.as_deref())
                        .map_err(internal)?;
                    bg.size += counted.docs;
                    for (v, n) in counted.values {
                        *bg.counts.entry(numeric_term(v)).or_default() += n;
                    }
                }
                continue;
            }
            let Ok(schema_field) = shard.schema.get_field(field) else {
                if query.is_none() {
                    bg.size += live_docs()?;
                }
                continue;
            };
            let Some(query) = &query else {
                bg.size += live_docs()?;
                for segment in searcher.segment_readers() {
                    for (term, n) in
                        live_term_counts(segment, schema_field, field).map_err(internal)?
                    {
                        *bg.counts.entry(term).or_default() += n;
                    }
                }
                continue;
            };
            let weight = query
                .weight(EnableScoring::disabled_from_searcher(searcher))
                .map_err(internal)?;
            for segment in searcher.segment_readers() {
                let column = segment.fast_fields().str(field).map_err(internal)?;
                let alive = segment.alive_bitset();
                let mut per_ord: HashMap<u64, u64> = HashMap::new();
                let mut ords: Vec<u64> = Vec::new();
                let mut scorer = weight.scorer(segment, 1.0).map_err(internal)?;
                let mut doc = scorer.doc();
                while doc != TERMINATED {
                    if alive.is_none_or(|a| a.is_alive(doc)) {
                        bg.size += 1;
                        if let Some(c) = &column {
                            // A document counts once per term: segments written before
                            // keyword columns were sets may repeat a value.
                            ords.clear();
                            ords.extend(c.term_ords(doc));
                            ords.sort_unstable();
                            ords.dedup();
                            for &ord in &ords {
                                *per_ord.entry(ord).or_default() += 1;
                            }
                        }
                    }
                    doc = scorer.advance();
                }
                if let Some(c) = &column {
                    let mut s = String::new();
                    for (ord, n) in per_ord {
                        s.clear();
                        c.ord_to_str(ord, &mut s)
                            .map_err(|e| EsError::internal(format!("significant_terms: {e}")))?;
                        *bg.counts.entry(s.clone()).or_default() += n;
                    }
                }
            }
        }
    }
    Ok(bg)
}

/// A significance heuristic, as Elasticsearch's `SignificanceHeuristic` subclasses: the score
/// of a term from its frequency in the subset (the bucket) and in the superset (the background).
pub(crate) enum Heuristic {
    Jlh,
    /// `mutual_information` and `chi_square` (ES's `NXYSignificanceHeuristic`s).
    MutualInformation(Nxy),
    ChiSquare(Nxy),
    /// `gnd`: `include_negatives` is always true.
    Gnd(Nxy),
    Percentage,
    /// `script_heuristic`: a Painless script over `params._subset_freq`, `_subset_size`,
    /// `_superset_freq` and `_superset_size` (longs).
    Script(lode_painless::AggScript),
}

/// The parameters of the heuristics built on the 2x2 contingency table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Nxy {
    pub include_negatives: bool,
    /// When false, the background does not hold the subset: the subset is added to it.
    pub background_is_superset: bool,
}

/// `NXYSignificanceHeuristic.SCORE_ERROR_MESSAGE`.
const SCORE_ERROR: &str = ", does your background filter not include all documents in the bucket? If so and it is intentional, set \"background_is_superset\": false";

/// The 2x2 table of document counts (ES's `Frequencies`): `n_xy` where x is "has the term"
/// and y is "is in the subset".
struct Table {
    n00: f64,
    n01: f64,
    n10: f64,
    n11: f64,
    n0_: f64,
    n1_: f64,
    n_0: f64,
    n_1: f64,
    n: f64,
}

fn check_validity(sub_f: u64, sub_n: u64, sup_f: u64, sup_n: u64, name: &str) -> EsResult<()> {
    if sub_f > sub_n {
        return Err(EsError::illegal_argument(format!(
            "subsetFreq > subsetSize, in {name}"
        )));
    }
    if sup_f > sup_n {
        return Err(EsError::illegal_argument(format!(
            "supersetFreq > supersetSize, in {name}"
        )));
    }
    Ok(())
}

impl Nxy {
    fn table(&self, sub_f: u64, sub_n: u64, sup_f: u64, sup_n: u64, name: &str) -> EsResult<Table> {
        check_validity(sub_f, sub_n, sup_f, sup_n, name)?;
        let (a, b, c, d) = (sub_f as f64, sub_n as f64, sup_f as f64, sup_n as f64);
        if self.background_is_superset {
            let refuse =
                |what: &str| Err(EsError::illegal_argument(format!("{what}{SCORE_ERROR}")));
            if sub_f > sup_f {
                return refuse("subsetFreq > supersetFreq");
            }
            if sub_n > sup_n {
                return refuse("subsetSize > supersetSize");
            }
            if sup_f - sub_f > sup_n - sub_n {
                return refuse("supersetFreq - subsetFreq > supersetSize - subsetSize");
            }
            Ok(Table {
                n00: d - c - (b - a),
                n01: b - a,
                n10: c - a,
                n11: a,
                n0_: d - c,
                n1_: c,
                n_0: d - b,
                n_1: b,
                n: d,
            })
        } else {
            Ok(Table {
                n00: d - c,
                n01: b - a,
                n10: c,
                n11: a,
                n0_: d - c + b - a,
                n1_: c + a,
                n_0: d,
                n_1: b,
                n: d + b,
            })
        }
    }

    /// The term is rarer in the subset than in the rest of the background (as ES compares it,
    /// in doubles: 0/0 is NaN and compares false).
    fn negative(&self, t: &Table) -> bool {
        !self.include_negatives && t.n11 / t.n_1 < t.n10 / t.n_0
    }
}

/// One term of the mutual information sum, 0 where ES's `getMITerm` treats `0 * log(0)` as 0.
fn mi_term(nxy: f64, nx_: f64, n_y: f64, n: f64) -> f64 {
    let numerator = (n * nxy).abs();
    let denominator = (nx_ * n_y).abs();
    let factor = (nxy / n).abs();
    if numerator < 1e-7 && factor < 1e-7 {
        0.0
    } else {
        factor * (numerator / denominator).ln()
    }
}

impl Heuristic {
    /// The term's score; ES's reduce keeps only the terms scored above 0.
    pub(crate) fn score(&self, sub_f: u64, sub_n: u64, sup_f: u64, sup_n: u64) -> EsResult<f64> {
        match self {
            Heuristic::Jlh => {
                check_validity(sub_f, sub_n, sup_f, sup_n, "JLHScore")?;
                Ok(jlh(sub_f, sub_n, sup_f, sup_n))
            }
            Heuristic::MutualInformation(p) => {
                let t = p.table(sub_f, sub_n, sup_f, sup_n, "MutualInformation")?;
                let mut score = (mi_term(t.n00, t.n0_, t.n_0, t.n)
                    + mi_term(t.n01, t.n0_, t.n_1, t.n)
                    + mi_term(t.n10, t.n1_, t.n_0, t.n)
                    + mi_term(t.n11, t.n1_, t.n_1, t.n))
                    / std::f64::consts::LN_2;
                if score.is_nan() || p.negative(&t) {
                    score = f64::NEG_INFINITY;
                }
                Ok(score)
            }
            Heuristic::ChiSquare(p) => {
                let t = p.table(sub_f, sub_n, sup_f, sup_n, "ChiSquare")?;
                if p.negative(&t) {
                    return Ok(f64::NEG_INFINITY);
                }
                Ok(t.n * (t.n11 * t.n00 - t.n01 * t.n10).powi(2) / (t.n_1 * t.n1_ * t.n0_ * t.n_0))
            }
            Heuristic::Gnd(p) => {
                let t = p.table(sub_f, sub_n, sup_f, sup_n, "GND")?;
                let (fx, fy, fxy) = (t.n1_, t.n_1, t.n11);
                if fxy == 0.0 {
                    return Ok(0.0);
                }
                if fx == fy && fx == fxy {
                    return Ok(1.0);
                }
                let score = (fx.ln().max(fy.ln()) - fxy.ln()) / (t.n.ln() - fx.ln().min(fy.ln()));
                Ok((-score).exp())
            }
            Heuristic::Percentage => {
                check_validity(sub_f, sub_n, sup_f, sup_n, "PercentageScore")?;
                if sup_f == 0 {
                    return Ok(0.0);
                }
                Ok(sub_f as f64 / sup_f as f64)
            }
            Heuristic::Script(script) => script.heuristic(&[
                ("_subset_freq", sub_f as i64),
                ("_subset_size", sub_n as i64),
                ("_superset_freq", sup_f as i64),
                ("_superset_size", sup_n as i64),
            ]),
        }
    }
}

/// A body that takes a significance heuristic (`significant_terms`, `significant_text`).
pub(crate) trait Heuristics {
    fn heuristic(&mut self) -> &mut Option<Heuristic>;
}

/// The heuristics, one key each, as ES's builders declare them (`declareObject`, one per
/// registered heuristic); the last one written is the aggregation's (`jlh` when none).
pub(crate) const fn heuristic_fields<T: Heuristics>() -> [Field<T>; 6] {
    [
        Field::new("jlh", "o", set_heuristic::<T>),
        Field::new("mutual_information", "o", set_heuristic::<T>),
        Field::new("chi_square", "o", set_heuristic::<T>),
        Field::new("gnd", "o", set_heuristic::<T>),
        Field::new("percentage", "o", set_heuristic::<T>),
        Field::new("script_heuristic", "o", set_heuristic::<T>),
    ]
}

fn set_heuristic<T: Heuristics>(t: &mut T, at: &At<'_>, v: &Value) -> EsResult<()> {
    let o = v.as_object().expect("declared as an object");
    // ES parses a heuristic as a named object of the aggregation's parser: what the
    // heuristic's own parser refuses comes out as it is, not wrapped.
    *t.heuristic() = Some(heuristic(at.key, o)?);
    Ok(())
}

/// A heuristic's parameters as read.
#[derive(Default)]
struct Params {
    include_negatives: Option<bool>,
    background_is_superset: Option<bool>,
    script: Option<Value>,
}

type PF = Field<Params>;

/// `declareBoolean`: a boolean, or the strings `true` / `false`.
fn flag(at: &At<'_>, v: &Value) -> EsResult<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s == "true" => Ok(true),
        Value::String(s) if s == "false" => Ok(false),
        other => Err(EsError::x_content_parse(format!(
            "[{}] failed to parse field [{}]",
            at.parser, at.key
        ))
        .caused_by(EsError::illegal_argument(format!(
            "Failed to parse value [{}] as only [true] or [false] are allowed.",
            other
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| other.to_string())
        )))),
    }
}

const fn include_negatives() -> PF {
    PF::new("include_negatives", "bs", |p, at, v| {
        p.include_negatives = Some(flag(at, v)?);
        Ok(())
    })
}

const fn background_is_superset() -> PF {
    PF::new("background_is_superset", "bs", |p, at, v| {
        p.background_is_superset = Some(flag(at, v)?);
        Ok(())
    })
}

static JLH: ObjectParser<Params> = ObjectParser {
    name: "jlh",
    style: Style::Object,
    fields: &[],
};

static MUTUAL_INFORMATION: ObjectParser<Params> = ObjectParser {
    name: "mutual_information",
    style: Style::Object,
    fields: &[&[include_negatives(), background_is_superset()]],
};

static CHI_SQUARE: ObjectParser<Params> = ObjectParser {
    name: "chi_square",
    style: Style::Object,
    fields: &[&[include_negatives(), background_is_superset()]],
};

static GND: ObjectParser<Params> = ObjectParser {
    name: "gnd",
    style: Style::Object,
    fields: &[&[background_is_superset()]],
};

static PERCENTAGE: ObjectParser<Params> = ObjectParser {
    name: "percentage",
    style: Style::Object,
    fields: &[],
};

static SCRIPT_HEURISTIC: ObjectParser<Params> = ObjectParser {
    name: "script_heuristic",
    style: Style::Object,
    fields: &[&[PF::new("script", "so", |p, _, v| {
        p.script = Some(v.clone());
        Ok(())
    })]],
};

/// The heuristic `name` with its parameters `o`.
fn heuristic(name: &str, o: &Map<String, Value>) -> EsResult<Heuristic> {
    let parser = match name {
        "jlh" => &JLH,
        "mutual_information" => &MUTUAL_INFORMATION,
        "chi_square" => &CHI_SQUARE,
        "gnd" => &GND,
        "percentage" => &PERCENTAGE,
        _ => &SCRIPT_HEURISTIC,
    };
    let p = parser.parse(o)?;
    let nxy = Nxy {
        include_negatives: p.include_negatives.unwrap_or(false),
        background_is_superset: p.background_is_superset.unwrap_or(true),
    };
    Ok(match name {
        "jlh" => Heuristic::Jlh,
        "mutual_information" => Heuristic::MutualInformation(nxy),
        "chi_square" => Heuristic::ChiSquare(nxy),
        // GND counts the negatives too
        "gnd" => Heuristic::Gnd(Nxy {
            include_negatives: true,
            ..nxy
        }),
        "percentage" => Heuristic::Percentage,
        _ => {
            let Some(script) = p.script else {
                return Err(EsError::illegal_argument("Required [script]"));
            };
            Heuristic::Script(lode_painless::AggScript::compile_bucket(&script, None)?)
        }
    })
}

/// Elasticsearch's `JLHScore`: the absolute change in probability times the relative change,
/// 0 when the term is not more frequent in the subset. A term missing from the background
/// (possible with a `background_filter`) counts as found once there.
pub(crate) fn jlh(
    subset_freq: u64,
    subset_size: u64,
    superset_freq: u64,
    superset_size: u64,
) -> f64 {
    if subset_size == 0 || superset_size == 0 {
        return 0.0;
    }
    let superset_freq = superset_freq.max(1);
    let subset = subset_freq as f64 / subset_size as f64;
    let superset = superset_freq as f64 / superset_size as f64;
    let change = subset - superset;
    if change <= 0.0 {
        return 0.0;
    }
    change * (subset / superset)
}

#[cfg(test)]
mod tests {
    use super::{heuristic_fields, jlh, Heuristic, Heuristics, Nxy};
    use lode_engine::object_parser::{ObjectParser, Style};
    use serde_json::json;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12 * b.abs().max(1.0)
    }

    fn nxy(include_negatives: bool, background_is_superset: bool) -> Nxy {
        Nxy {
            include_negatives,
            background_is_superset,
        }
    }

    #[derive(Default)]
    struct Body(Option<Heuristic>);

    impl Heuristics for Body {
        fn heuristic(&mut self) -> &mut Option<Heuristic> {
            &mut self.0
        }
    }

    static P: ObjectParser<Body> = ObjectParser {
        name: "significant_terms",
        style: Style::Object,
        fields: &[&heuristic_fields()],
    };

    fn parse(v: serde_json::Value) -> lode_engine::EsResult<Heuristic> {
        Ok(P.parse(v.as_object().unwrap())?.0.unwrap_or(Heuristic::Jlh))
    }

    #[test]
    fn jlh_as_elasticsearch() {
        // 5 of 10 in the subset, 10 of 100 in the superset: (0.5 - 0.1) * (0.5 / 0.1).
        assert!((jlh(5, 10, 10, 100) - 2.0).abs() < 1e-12);
        assert_eq!(jlh(1, 10, 10, 100), 0.0);
        assert_eq!(jlh(1, 0, 10, 100), 0.0);
        // A term missing from the background counts once there: (0.5 - 0.01) * 50.
        assert!(close(jlh(5, 10, 0, 100), 0.49 * 50.0));
    }

    // The tables below by hand for 5 of 10 in the subset, 10 of 100 in the superset:
    // N00 = 85, N01 = 5, N10 = 5, N11 = 5, N0_ = 90, N1_ = 10, N_0 = 90, N_1 = 10, N = 100;
    // with the background not a superset, N00 = 90, N10 = 10, N0_ = 95, N1_ = 15, N_0 = 100,
    // N = 110.

    #[test]
    fn chi_square_as_elasticsearch() {
        let h = Heuristic::ChiSquare(nxy(false, true));
        // 100 * (5 * 85 - 5 * 5)^2 / (10 * 10 * 90 * 90)
        assert!(close(h.score(5, 10, 10, 100).unwrap(), 19.753086419753085));
        // 1 of 10 against 49 of the other 90: a negative term, dropped unless included.
        assert_eq!(h.score(1, 10, 50, 100).unwrap(), f64::NEG_INFINITY);
        let h = Heuristic::ChiSquare(nxy(true, true));
        // 100 * (1 * 41 - 9 * 49)^2 / (10 * 50 * 50 * 90)
        assert!(close(
            h.score(1, 10, 50, 100).unwrap(),
            100.0 * 160000.0 / 2250000.0
        ));
        let h = Heuristic::ChiSquare(nxy(false, false));
        // 110 * (5 * 90 - 5 * 10)^2 / (10 * 15 * 95 * 100)
        assert!(close(h.score(5, 10, 10, 100).unwrap(), 12.350877192982455));
    }

    #[test]
    fn mutual_information_as_elasticsearch() {
        // The sum of N_xy/N * log2(N * N_xy / (N_x. * N_.y)) over the four cells.
        let h = Heuristic::MutualInformation(nxy(false, true));
        assert!(close(h.score(5, 10, 10, 100).unwrap(), 0.0904065073539886));
        assert_eq!(h.score(1, 10, 50, 100).unwrap(), f64::NEG_INFINITY);
        let h = Heuristic::MutualInformation(nxy(true, true));
        assert!(close(
            h.score(1, 10, 50, 100).unwrap(),
            0.058236799454230916
        ));
        let h = Heuristic::MutualInformation(nxy(false, false));
        assert!(close(h.score(5, 10, 10, 100).unwrap(), 0.05736697639287818));
    }

    #[test]
    fn superset_checks_as_elasticsearch() {
        let h = Heuristic::MutualInformation(nxy(false, true));
        let e = h.score(5, 10, 3, 100).unwrap_err();
        assert_eq!(e.status, 400);
        assert!(e
            .reason
            .starts_with("subsetFreq > supersetFreq, does your background filter"));
        let e = h.score(5, 200, 10, 100).unwrap_err();
        assert!(e.reason.starts_with("subsetSize > supersetSize"));
        // Not a superset: the subset is added to the background, nothing to check.
        let h = Heuristic::MutualInformation(nxy(false, false));
        assert!(h.score(5, 10, 3, 100).unwrap() > 0.0);
    }

    #[test]
    fn gnd_and_percentage_as_elasticsearch() {
        let h = Heuristic::Gnd(nxy(true, true));
        // exp(-(ln 10 - ln 5) / (ln 100 - ln 10))
        assert!(close(h.score(5, 10, 10, 100).unwrap(), 0.7400555739554517));
        assert_eq!(h.score(10, 10, 10, 100).unwrap(), 1.0);
        assert_eq!(h.score(0, 10, 10, 100).unwrap(), 0.0);
        assert_eq!(Heuristic::Percentage.score(5, 10, 10, 100).unwrap(), 0.5);
        assert_eq!(Heuristic::Percentage.score(0, 10, 0, 100).unwrap(), 0.0);
    }

    #[test]
    fn script_heuristic_reads_the_four_longs() {
        let h = parse(json!({"script_heuristic": {"script": {
            "source": "params._subset_freq / (params._superset_freq - params._subset_freq + 1) + params.k",
            "params": {"k": 0.5}}}}))
        .unwrap();
        // Long division as in Painless: 5 / 6 = 0.
        assert_eq!(h.score(5, 10, 10, 100).unwrap(), 0.5);
        let h = parse(json!({"script_heuristic": {"script":
            "(double) params._subset_size / params._superset_size"}}))
        .unwrap();
        assert_eq!(h.score(5, 10, 10, 100).unwrap(), 0.1);
    }

    #[test]
    fn parameters_as_elasticsearch() {
        let Heuristic::MutualInformation(p) = parse(json!({"mutual_information": {}})).unwrap()
        else {
            panic!()
        };
        assert_eq!(p, nxy(false, true));
        let Heuristic::ChiSquare(p) = parse(json!({"chi_square": {
            "include_negatives": true, "background_is_superset": false}}))
        .unwrap() else {
            panic!()
        };
        assert_eq!(p, nxy(true, false));
        // the heuristic's own refusal, as its parser words it
        let err = |v| {
            let Err(e) = parse(v) else { panic!("refused") };
            (e.kind.clone(), e.reason.clone(), e.caused_by.is_some())
        };
        let own = |kind: &str, reason: &str| (kind.to_string(), reason.to_string(), false);
        assert_eq!(
            err(json!({"gnd": {"include_negatives": true}})),
            own(
                "x_content_parse_exception",
                "[gnd] unknown field [include_negatives]"
            )
        );
        assert_eq!(
            err(json!({"chi_square": {"include_negatives": 3}})),
            own(
                "x_content_parse_exception",
                "[chi_square] include_negatives doesn't support values of type: VALUE_NUMBER"
            )
        );
        assert_eq!(
            err(json!({"chi_square": {"include_negatives": "maybe"}})).1,
            "[chi_square] failed to parse field [include_negatives]"
        );
        assert_eq!(
            err(json!({"percentage": {"x": 1}})),
            own(
                "x_content_parse_exception",
                "[percentage] unknown field [x]"
            )
        );
        assert_eq!(
            err(json!({"jlh": {"x": 1}})),
            own("x_content_parse_exception", "[jlh] unknown field [x]")
        );
        assert_eq!(
            err(json!({"mutual_information": {"background_is_superst": false}})).1,
            "[mutual_information] unknown field [background_is_superst] did you mean [background_is_superset]?"
        );
        assert_eq!(
            err(json!({"script_heuristic": {}})),
            own("illegal_argument_exception", "Required [script]")
        );
        assert_eq!(
            err(json!({"gnd": true})),
            own(
                "x_content_parse_exception",
                "[significant_terms] gnd doesn't support values of type: VALUE_BOOLEAN"
            )
        );
    }
}
