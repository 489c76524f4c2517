//! The `accounts` corpus generator: the schema and distributions of `gen_accounts.py`.
//!
//! [`AccountsModel`] holds what is fixed per seed (200,000 accounts with their names, types and
//! popularity; the remark table); [`AccountsGenerator`] draws documents from it one by one.
//! The document stream depends only on the seed, so a corpus of N documents is a prefix of a
//! larger one with the same seed. Output is not byte-identical to the Python generator (a
//! different PRNG), but every distribution documented in `shared/bench/README.md` is the same.

use super::rng::Rng;
use super::vocab::*;
use std::fmt::Write as _;

/// One account: a company with a fixed name and account type.
#[derive(Clone, Debug)]
pub struct Account {
    /// `userName`, e.g. `江苏千米网络科技有限公司`.
    pub name: String,
    /// Byte length of the region + brand prefix of `name` (`江苏千米`), the kind of text
    /// the `match` query searches for.
    pub prefix_len: usize,
    /// `acctType`.
    pub acct_type: &'static str,
}

impl Account {
    /// Region + brand, e.g. `江苏千米`.
    pub fn name_prefix(&self) -> &str {
        &self.name[..self.prefix_len]
    }
}

/// Everything fixed for a seed: accounts, popularity, lookup tables.
pub struct AccountsModel {
    seed: u64,
    accounts: Vec<Account>,
    /// Account number at each popularity rank.
    rank_to_account: Vec<u32>,
    /// Popularity rank of each account.
    account_rank: Vec<u32>,
    /// Cumulative probability by rank; the last entry is 1.
    rank_cum: Vec<f64>,
    type_tbl: Vec<u8>,
    status_tbl: Vec<u8>,
    remarks: Vec<String>,
    day_prefix: Vec<String>,
}

/// Expands (value, weight) pairs into a table of `2^bits` slots, as `gen_accounts.py` does.
fn quantize(weights: &[f64], bits: u32) -> Vec<u8> {
    let size = 1usize << bits;
    let total: f64 = weights.iter().sum();
    let mut table = Vec::with_capacity(size);
    let mut cum = 0.0;
    for (i, w) in weights.iter().enumerate() {
        cum += w;
        let end = ((cum / total * size as f64).round() as usize).min(size);
        while table.len() < end {
            table.push(i as u8);
        }
    }
    while table.len() < size {
        table.push((weights.len() - 1) as u8);
    }
    table
}

fn weighted_index(rng: &mut Rng, cum: &[f64]) -> usize {
    let x = rng.next_f64() * cum[cum.len() - 1];
    cum.partition_point(|&c| c <= x).min(cum.len() - 1)
}

fn cumulative<T>(items: &[(T, f64)]) -> Vec<f64> {
    let mut c = 0.0;
    items
        .iter()
        .map(|(_, w)| {
            c += w;
            c
        })
        .collect()
}

/// Minimal JSON string escaping (the vocabularies hold no control characters).
pub(crate) fn json_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Account popularity weight at a rank: 50 % uniform plus 50 % Zipf(s=1, offset 50).
fn rank_weights(n: usize) -> Vec<f64> {
    let zs: f64 = (0..n).map(|r| 1.0 / (r as f64 + 50.0)).sum();
    (0..n)
        .map(|r| 0.5 / n as f64 + 0.5 * (1.0 / (r as f64 + 50.0)) / zs)
        .collect()
}

impl AccountsModel {
    /// Builds the model for `seed` with `n_accounts` accounts (at least 1).
    pub fn new(seed: u64, n_accounts: u32) -> AccountsModel {
        let n = n_accounts.max(1) as usize;
        let mut rng = Rng::new(seed);
        let reg_cum = cumulative(REGIONS);
        let ind_cum = cumulative(INDUSTRIES);
        let suf_cum = cumulative(SUFFIXES);
        let at_cum = cumulative(ACCT_TYPES);
        let mut accounts = Vec::with_capacity(n);
        for _ in 0..n {
            let region = REGIONS[weighted_index(&mut rng, &reg_cum)].0;
            let x = rng.next_f64();
            let brand = if x < 0.55 {
                rng.choose(BRAND2).to_string()
            } else if x < 0.70 {
                rng.choose(BRAND3).to_string()
            } else {
                let a = *rng.choose(BRAND2);
                let mut b = *rng.choose(BRAND2);
                while b == a {
                    b = *rng.choose(BRAND2);
                }
                format!("{a}{b}")
            };
            let industry = INDUSTRIES[weighted_index(&mut rng, &ind_cum)].0;
            let suffix = SUFFIXES[weighted_index(&mut rng, &suf_cum)].0;
            let acct_type = ACCT_TYPES[weighted_index(&mut rng, &at_cum)].0;
            accounts.push(Account {
                prefix_len: region.len() + brand.len(),
                name: format!("{region}{brand}{industry}{suffix}"),
                acct_type,
            });
        }
        accounts[0] = Account {
            name: ACCOUNT0_NAME.to_string(),
            prefix_len: "江苏千米".len(),
            acct_type: "BASIC",
        };

        // Popularity: a seeded permutation of accounts over ranks, account 0 moved to
        // ACCOUNT0_RANK so that it gets a moderate number of documents.
        let mut perm: Vec<u32> = (0..n as u32).collect();
        rng.shuffle(&mut perm);
        let r0 = ACCOUNT0_RANK.min(n - 1);
        let i0 = perm
            .iter()
            .position(|&a| a == 0)
            .expect("account 0 present");
        perm.swap(i0, r0);
        let mut c = 0.0;
        let mut rank_cum: Vec<f64> = rank_weights(n)
            .into_iter()
            .map(|w| {
                c += w;
                c
            })
            .collect();
        *rank_cum.last_mut().expect("n >= 1") = 1.0;

        let type_w: Vec<f64> = BALANCE_TYPES.iter().map(|(_, w)| *w).collect();
        let status_w: Vec<f64> = STATUS_WEIGHTS.iter().map(|(_, w)| *w).collect();

        let mut rrng = Rng::new(seed.wrapping_mul(104_729).wrapping_add(2));
        let remarks = (0..128)
            .map(|i| match i % 3 {
                2 => rrng.choose(REMARK_EN).to_string(),
                1 => format!("{} {}", rrng.choose(REMARK_CN), rrng.choose(REMARK_EN)),
                _ => rrng.choose(REMARK_CN).to_string(),
            })
            .collect();

        let d0 = chrono::NaiveDate::from_ymd_opt(2018, 1, 1).expect("valid date");
        let day_prefix = (0..DAYS)
            .map(|i| format!("{}T", (d0 + chrono::Days::new(i as u64)).format("%Y-%m-%d")))
            .collect();

        let mut account_rank = vec![0u32; n];
        for (rank, &a) in perm.iter().enumerate() {
            account_rank[a as usize] = rank as u32;
        }
        AccountsModel {
            seed,
            accounts,
            rank_to_account: perm,
            account_rank,
            rank_cum,
            type_tbl: quantize(&type_w, 10),
            status_tbl: quantize(&status_w, 6),
            remarks,
            day_prefix,
        }
    }

    /// The seed this model was built from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Number of accounts.
    pub fn len(&self) -> usize {
        self.accounts.len()
    }

    /// Always false: a model has at least one account.
    pub fn is_empty(&self) -> bool {
        self.accounts.is_empty()
    }

    /// Account by number.
    pub fn account(&self, number: u32) -> &Account {
        &self.accounts[number as usize]
    }

    /// Probability that a document belongs to account `number`.
    pub fn weight(&self, number: u32) -> f64 {
        let rank = self.account_rank[number as usize] as usize;
        let lo = if rank == 0 {
            0.0
        } else {
            self.rank_cum[rank - 1]
        };
        self.rank_cum[rank] - lo
    }

    /// Draws an account number from the popularity distribution.
    pub fn sample_account(&self, rng: &mut Rng) -> u32 {
        let u = rng.next_f64();
        let rank = self
            .rank_cum
            .partition_point(|&c| c <= u)
            .min(self.rank_cum.len() - 1);
        self.rank_to_account[rank]
    }

    /// Draws a `status` value from its distribution.
    pub fn sample_status(&self, rng: &mut Rng) -> u8 {
        STATUS_WEIGHTS[self.status_tbl[rng.below(64) as usize] as usize].0
    }

    /// Draws one document (without its `_id`).
    fn sample_doc(&self, rng: &mut Rng, id: u64) -> AccountDoc {
        let account = self.sample_account(rng);
        let t = ((rng.next_u64() as u128 * SPAN_MS as u128) >> 64) as i64;
        let u = rng.next_f64();
        let balance = if u < 0.06 {
            -rng.lognormal(300.0, 1.2)
        } else if u < 0.07 {
            0.0
        } else {
            rng.lognormal(2000.0, 1.6)
        };
        let r = rng.next_u64();
        AccountDoc {
            id,
            account,
            created_ms: T0_MS + t,
            balance_cents: (balance * 100.0).round() as i64,
            balance_type: self.type_tbl[(r & 1023) as usize],
            status: STATUS_WEIGHTS[self.status_tbl[((r >> 10) & 63) as usize] as usize].0,
            remark: ((r >> 16) & 127) as u8,
        }
    }

    /// `createdTimeStr` for an epoch-millisecond instant inside the corpus span, e.g.
    /// `2021-10-12T13:40:21.659+0800`.
    pub fn format_time(&self, epoch_ms: i64, out: &mut String) {
        let t = (epoch_ms - T0_MS).clamp(0, SPAN_MS - 1);
        let (day, rem) = (t / DAY_MS, t % DAY_MS);
        let secs = rem / 1000;
        out.push_str(&self.day_prefix[day as usize]);
        let _ = write!(
            out,
            "{:02}:{:02}:{:02}.{:03}+0800",
            secs / 3600,
            (secs / 60) % 60,
            secs % 60,
            rem % 1000
        );
    }

    /// Appends the document's `_source` JSON (no trailing newline).
    pub fn write_source(&self, doc: &AccountDoc, out: &mut String) {
        let acct = &self.accounts[doc.account as usize];
        let _ = write!(
            out,
            "{{\"acctId\":\"A{:011}\",\"userName\":\"{}\",\"acctType\":\"{}\",\"createdTimeStr\":\"",
            doc.account,
            json_escape(&acct.name),
            acct.acct_type
        );
        self.format_time(doc.created_ms, out);
        out.push_str("\",\"createdTime\":");
        let _ = write!(out, "{}", doc.created_ms);
        out.push_str(",\"balance\":");
        write_cents(doc.balance_cents, out);
        let _ = write!(
            out,
            ",\"balanceTypeName\":\"{}\",\"status\":{},\"remark\":\"{}\"}}",
            BALANCE_TYPES[doc.balance_type as usize].0,
            doc.status,
            json_escape(&self.remarks[doc.remark as usize])
        );
    }

    /// Appends a `_bulk` pair: the `index` action line (with `_id` unless `with_id` is false)
    /// and the source line, both newline-terminated.
    pub fn write_bulk(&self, doc: &AccountDoc, index: &str, with_id: bool, out: &mut String) {
        if with_id {
            let _ = writeln!(
                out,
                "{{\"index\":{{\"_index\":\"{index}\",\"_id\":\"{}\"}}}}",
                doc.id
            );
        } else {
            let _ = writeln!(out, "{{\"index\":{{\"_index\":\"{index}\"}}}}");
        }
        self.write_source(doc, out);
        out.push('\n');
    }

    /// The remark text with this table index.
    pub fn remark(&self, index: u8) -> &str {
        &self.remarks[index as usize]
    }
}

/// `12.30`, `-0.05`, `0.00` from cents.
fn write_cents(cents: i64, out: &mut String) {
    let sign = if cents < 0 { "-" } else { "" };
    let abs = cents.unsigned_abs();
    let _ = write!(out, "{sign}{}.{:02}", abs / 100, abs % 100);
}

/// One generated document, in structured form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccountDoc {
    /// `_id` (sequence number).
    pub id: u64,
    /// Account number (`acctId` is `A` + 11 digits of it).
    pub account: u32,
    /// `createdTime` in epoch milliseconds.
    pub created_ms: i64,
    /// `balance` in cents.
    pub balance_cents: i64,
    /// Index into [`BALANCE_TYPES`].
    pub balance_type: u8,
    /// `status` 0..=3.
    pub status: u8,
    /// Index into the model's remark table.
    pub remark: u8,
}

/// A deterministic stream of documents.
pub struct AccountsGenerator {
    model: std::sync::Arc<AccountsModel>,
    rng: Rng,
    next_id: u64,
}

impl AccountsGenerator {
    /// Documents from `model`, numbered from `start_id`. The stream depends only on the
    /// model's seed, not on `start_id`.
    pub fn new(model: std::sync::Arc<AccountsModel>, start_id: u64) -> AccountsGenerator {
        let seed = model.seed.wrapping_mul(1_000_003).wrapping_add(12_345);
        AccountsGenerator {
            model,
            rng: Rng::new(seed),
            next_id: start_id,
        }
    }

    /// Like [`AccountsGenerator::new`], but with its own stream (e.g. for writes during a
    /// benchmark that must not repeat the loaded documents).
    pub fn with_stream(
        model: std::sync::Arc<AccountsModel>,
        start_id: u64,
        stream: u64,
    ) -> AccountsGenerator {
        let mut g = AccountsGenerator::new(model, start_id);
        g.rng = Rng::new(g.rng.next_u64() ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        g
    }

    /// The model documents are drawn from.
    pub fn model(&self) -> &AccountsModel {
        &self.model
    }

    /// The next document.
    pub fn next_doc(&mut self) -> AccountDoc {
        let id = self.next_id;
        self.next_id += 1;
        self.model.sample_doc(&mut self.rng, id)
    }
}

/// Distribution summary of a generated corpus (what `gen_accounts.py --stats` prints).
#[derive(Debug, Default, Clone)]
pub struct CorpusStats {
    /// Documents seen.
    pub docs: u64,
    /// Documents per account number.
    pub per_account: Vec<u32>,
    /// Documents of `A00000000000`.
    pub account0: u64,
    /// Documents whose `userName` contains any of 江, 苏, 千, 米 (the `match` query).
    pub match_jiangsu_qianmi: u64,
    /// Documents on/after 2020-01-01T00:00:00+08:00 (the `range` query).
    pub since_2020: u64,
    /// Documents in the last 5 days (the `trend` query).
    pub last_5_days: u64,
    /// Negative balances.
    pub negative: u64,
    /// Zero balances.
    pub zero: u64,
    /// Sum of balances in cents.
    pub sum_cents: i128,
    /// Documents per `status`.
    pub status: [u64; 4],
    /// Documents per `balanceTypeName` (index into [`BALANCE_TYPES`]).
    pub balance_types: Vec<u64>,
    /// Documents per `acctType` name.
    pub acct_types: std::collections::BTreeMap<&'static str, u64>,
    /// Positive balances in cents (for the median).
    pub positive_cents: Vec<i64>,
}

/// 2020-01-01T00:00:00+08:00 in epoch milliseconds.
pub const Y2020_MS: i64 = 1_577_808_000_000;

impl CorpusStats {
    /// An empty summary for a model.
    pub fn new(model: &AccountsModel) -> CorpusStats {
        CorpusStats {
            per_account: vec![0; model.len()],
            balance_types: vec![0; BALANCE_TYPES.len()],
            ..CorpusStats::default()
        }
    }

    /// Adds one document.
    pub fn add(&mut self, model: &AccountsModel, doc: &AccountDoc) {
        self.docs += 1;
        self.per_account[doc.account as usize] += 1;
        let acct = model.account(doc.account);
        if doc.account == 0 {
            self.account0 += 1;
        }
        if acct.name.chars().any(|c| "江苏千米".contains(c)) {
            self.match_jiangsu_qianmi += 1;
        }
        if doc.created_ms >= Y2020_MS {
            self.since_2020 += 1;
        }
        if doc.created_ms >= T0_MS + (DAYS - 5) * DAY_MS {
            self.last_5_days += 1;
        }
        match doc.balance_cents {
            c if c < 0 => self.negative += 1,
            0 => self.zero += 1,
            c => self.positive_cents.push(c),
        }
        self.sum_cents += doc.balance_cents as i128;
        self.status[doc.status as usize] += 1;
        self.balance_types[doc.balance_type as usize] += 1;
        *self.acct_types.entry(acct.acct_type).or_default() += 1;
    }

    /// Accounts with at least one document.
    pub fn distinct_accounts(&self) -> u64 {
        self.per_account.iter().filter(|&&c| c > 0).count() as u64
    }

    /// A human-readable summary in the spirit of `gen_accounts.py --stats`.
    pub fn summary(&self) -> String {
        let n = self.docs.max(1) as f64;
        let pct = |x: u64| 100.0 * x as f64 / n;
        let mut s = String::new();
        let _ = writeln!(s, "docs                                  {}", self.docs);
        let _ = writeln!(
            s,
            "distinct acctId                       {}",
            self.distinct_accounts()
        );
        let _ = writeln!(s, "acctId == A00000000000                {}", self.account0);
        let _ = writeln!(
            s,
            "userName has any of 江/苏/千/米        {} ({:.2}%)",
            self.match_jiangsu_qianmi,
            pct(self.match_jiangsu_qianmi)
        );
        let _ = writeln!(
            s,
            "createdTimeStr >= 2020-01-01 (+0800)  {} ({:.2}%)",
            self.since_2020,
            pct(self.since_2020)
        );
        let _ = writeln!(
            s,
            "createdTime in last 5 days            {}",
            self.last_5_days
        );
        let _ = writeln!(
            s,
            "balance < 0                           {} ({:.2}%)",
            self.negative,
            pct(self.negative)
        );
        let _ = writeln!(
            s,
            "sum(balance)                          {:.2}",
            self.sum_cents as f64 / 100.0
        );
        let _ = writeln!(
            s,
            "status 0/1/2/3                        {:.1}% / {:.1}% / {:.1}% / {:.1}%",
            pct(self.status[0]),
            pct(self.status[1]),
            pct(self.status[2]),
            pct(self.status[3])
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Generates `docs` documents with the default 200,000 accounts.
    fn corpus(docs: u64) -> (Arc<AccountsModel>, CorpusStats) {
        let model = Arc::new(AccountsModel::new(42, ACCOUNTS_DEFAULT));
        let mut g = AccountsGenerator::new(model.clone(), 1);
        let mut stats = CorpusStats::new(&model);
        for _ in 0..docs {
            let d = g.next_doc();
            stats.add(&model, &d);
        }
        (model, stats)
    }

    fn share(x: u64, n: u64) -> f64 {
        x as f64 / n as f64
    }

    /// Checks the distributions documented in shared/bench/README.md.
    #[test]
    fn distributions_match_the_reference_generator() {
        let n = 400_000;
        let (model, s) = corpus(n);
        // Half of the documents on/after 2020-01-01.
        assert!(
            (share(s.since_2020, n) - 0.5).abs() < 0.005,
            "{}",
            s.since_2020
        );
        // balance: 6 % negative, 1 % exactly zero, positive median ~2,000.
        assert!((share(s.negative, n) - 0.06).abs() < 0.003);
        assert!((share(s.zero, n) - 0.01).abs() < 0.001);
        let mut pos = s.positive_cents.clone();
        pos.sort_unstable();
        let median = pos[pos.len() / 2] as f64 / 100.0;
        assert!((1850.0..2150.0).contains(&median), "median {median}");
        // status 0 70 %, 1 19 %, 2 8 %, 3 3 %.
        for (st, want) in [(0, 0.70), (1, 0.19), (2, 0.08), (3, 0.03)] {
            let got = share(s.status[st], n);
            assert!((got - want).abs() < 0.006, "status {st}: {got}");
        }
        // balanceTypeName: 消费 18.6 %, 充值 14.5 %, 货款结算 11.3 %, 罚款 0.1 %.
        for (name, want) in [
            ("消费", 0.186),
            ("充值", 0.145),
            ("货款结算", 0.113),
            ("罚款", 0.001),
        ] {
            let i = BALANCE_TYPES.iter().position(|(t, _)| *t == name).unwrap();
            let got = share(s.balance_types[i], n);
            assert!((got - want).abs() < 0.004, "{name}: {got}");
        }
        // The match query's share: about a quarter (285,498 / 1,120,000 = 25.5 %).
        let m = share(s.match_jiangsu_qianmi, n);
        assert!((0.23..0.28).contains(&m), "match share {m}");
        // acctType per account: BASIC 40 %, SETTLEMENT 25 %, ... ESCROW 4 %.
        let mut per_type = std::collections::BTreeMap::<&str, u64>::new();
        for a in 0..model.len() as u32 {
            *per_type.entry(model.account(a).acct_type).or_default() += 1;
        }
        for (t, want) in [("BASIC", 0.40), ("SETTLEMENT", 0.25), ("ESCROW", 0.04)] {
            let got = share(per_type[t], model.len() as u64);
            assert!((got - want).abs() < 0.006, "{t}: {got}");
        }
        // Account 0 is the documented company, BASIC, with ~152 docs per 1.12M docs.
        assert_eq!(model.account(0).name, "江苏千米网络科技有限公司");
        let expected0 = model.weight(0) * n as f64;
        assert!((expected0 / n as f64 * 1_120_000.0 - 152.9).abs() < 1.0);
        assert!((s.account0 as f64 - expected0).abs() < 4.0 * expected0.sqrt() + 1.0);
        // Distinct accounts: expectation of a multinomial draw.
        let expected_distinct: f64 = (0..model.len() as u32)
            .map(|a| 1.0 - (1.0 - model.weight(a)).powf(n as f64))
            .sum();
        let distinct = s.distinct_accounts() as f64;
        assert!(
            (distinct - expected_distinct).abs() < 400.0,
            "{distinct} vs {expected_distinct}"
        );
        // The most popular accounts: ~1,350 docs per 1.12M docs (rank 0 weight).
        let top = *s.per_account.iter().max().unwrap() as f64 * 1_120_000.0 / n as f64;
        assert!((1200.0..1500.0).contains(&top), "top {top}");
        // Median account: 4 docs per 1.12M docs, i.e. weight ~ 3.6e-6.
        let mut w: Vec<f64> = (0..model.len() as u32).map(|a| model.weight(a)).collect();
        w.sort_by(f64::total_cmp);
        let median_docs = w[w.len() / 2] * 1_120_000.0;
        assert!(
            (3.0..5.0).contains(&median_docs),
            "median account {median_docs}"
        );
        // With the default corpus size, ~3 % of accounts have no document (194,637 seen).
        let distinct_default: f64 = w.iter().map(|w| 1.0 - (1.0 - w).powf(1_120_000.0)).sum();
        assert!(
            (distinct_default - 194_637.0).abs() < 500.0,
            "{distinct_default}"
        );
    }

    #[test]
    fn same_seed_same_corpus_and_prefix_property() {
        let model = Arc::new(AccountsModel::new(7, 1000));
        let mut a = AccountsGenerator::new(model.clone(), 1);
        let mut b = AccountsGenerator::new(Arc::new(AccountsModel::new(7, 1000)), 1);
        let da: Vec<_> = (0..500).map(|_| a.next_doc()).collect();
        let db: Vec<_> = (0..1000).map(|_| b.next_doc()).collect();
        assert_eq!(da[..], db[..500]);
        let mut c = AccountsGenerator::new(Arc::new(AccountsModel::new(8, 1000)), 1);
        let dc: Vec<_> = (0..500).map(|_| c.next_doc()).collect();
        assert_ne!(da, dc);
    }

    #[test]
    fn documents_follow_the_mapping_schema() {
        let model = Arc::new(AccountsModel::new(42, 1000));
        let mut g = AccountsGenerator::new(model.clone(), 1);
        let mut out = String::new();
        for _ in 0..200 {
            let d = g.next_doc();
            model.write_bulk(&d, "accounts", true, &mut out);
        }
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 400);
        assert_eq!(lines[0], r#"{"index":{"_index":"accounts","_id":"1"}}"#);
        for pair in lines.chunks(2) {
            let _action: serde_json::Value = serde_json::from_str(pair[0]).unwrap();
            let src: serde_json::Value = serde_json::from_str(pair[1]).unwrap();
            let keys: Vec<&str> = src
                .as_object()
                .unwrap()
                .keys()
                .map(|k| k.as_str())
                .collect();
            assert_eq!(
                keys,
                [
                    "acctId",
                    "userName",
                    "acctType",
                    "createdTimeStr",
                    "createdTime",
                    "balance",
                    "balanceTypeName",
                    "status",
                    "remark"
                ]
            );
            let acct = src["acctId"].as_str().unwrap();
            assert!(acct.len() == 12 && acct.starts_with('A'));
            // createdTimeStr and createdTime are the same instant.
            let s = src["createdTimeStr"].as_str().unwrap();
            let parsed = chrono::DateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.3f%z").unwrap();
            assert_eq!(
                parsed.timestamp_millis(),
                src["createdTime"].as_i64().unwrap()
            );
            assert!(src["balance"].is_number());
            assert!((0..=3).contains(&src["status"].as_i64().unwrap()));
        }
    }

    #[test]
    fn time_formatting_in_plus_eight() {
        let model = AccountsModel::new(1, 10);
        let mut s = String::new();
        model.format_time(T0_MS, &mut s);
        assert_eq!(s, "2018-01-01T00:00:00.000+0800");
        s.clear();
        model.format_time(T0_MS + SPAN_MS - 1, &mut s);
        assert_eq!(s, "2021-12-31T23:59:59.999+0800");
        s.clear();
        model.format_time(Y2020_MS, &mut s);
        assert_eq!(s, "2020-01-01T00:00:00.000+0800");
        let mut c = String::new();
        write_cents(-5, &mut c);
        write_cents(123_456, &mut c);
        assert_eq!(c, "-0.051234.56");
    }
}
