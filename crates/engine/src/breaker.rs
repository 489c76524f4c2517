//! Memory circuit breakers, as Elasticsearch's `HierarchyCircuitBreakerService`: child
//! breakers (`request`, `fielddata`, `in_flight_requests`) each account estimated bytes
//! against their own limit, and every reservation is also checked against the `parent`
//! breaker. Exceeding a limit is ES's 429 `circuit_breaking_exception`, before the memory is
//! allocated.
//!
//! Lode has no JVM heap, so limits are relative to the node's **memory budget**: the node
//! setting `node.memory` (a byte size, or a percentage of the machine's RAM), by default the
//! machine's RAM (`MemTotal`, or the cgroup's memory limit when lower). With
//! `indices.breaker.total.use_real_memory` (default `true`, as ES), the parent checks the
//! process's resident anonymous memory (`RssAnon`) plus the new reservation, as ES checks the JVM heap in
//! use; otherwise the sum of the children's estimates.
//!
//! Reservations are RAII guards ([`Reservation`]): dropped (on success, error or panic), they
//! give their bytes back.

use crate::{EsError, EsResult};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::OnceLock;

pub const TOTAL_LIMIT: &str = "indices.breaker.total.limit";
pub const USE_REAL_MEMORY: &str = "indices.breaker.total.use_real_memory";
pub const REQUEST_LIMIT: &str = "indices.breaker.request.limit";
pub const REQUEST_OVERHEAD: &str = "indices.breaker.request.overhead";
pub const FIELDDATA_LIMIT: &str = "indices.breaker.fielddata.limit";
pub const FIELDDATA_OVERHEAD: &str = "indices.breaker.fielddata.overhead";
pub const IN_FLIGHT_LIMIT: &str = "network.breaker.inflight_requests.limit";
pub const IN_FLIGHT_OVERHEAD: &str = "network.breaker.inflight_requests.overhead";
/// Lode's own node setting: the memory the limits' percentages are of (ES: the JVM heap).
pub const NODE_MEMORY: &str = "node.memory";

/// Settings that `PUT _cluster/settings` may change (ES's dynamic breaker settings).
pub const DYNAMIC: &[&str] = &[
    TOTAL_LIMIT,
    REQUEST_LIMIT,
    REQUEST_OVERHEAD,
    FIELDDATA_LIMIT,
    FIELDDATA_OVERHEAD,
    IN_FLIGHT_LIMIT,
    IN_FLIGHT_OVERHEAD,
];
/// Node-only settings (`-E`, `lode.yml`).
pub const STATIC: &[&str] = &[USE_REAL_MEMORY, NODE_MEMORY];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    Transient,
    Permanent,
}

impl Durability {
    pub fn as_str(self) -> &'static str {
        match self {
            Durability::Transient => "TRANSIENT",
            Durability::Permanent => "PERMANENT",
        }
    }
}

/// ES's `ByteSizeValue#toString`: the largest unit reached, one decimal (a trailing `.0` dropped).
pub fn byte_size_string(bytes: i64) -> String {
    const UNITS: [(&str, f64); 5] = [
        ("pb", 1125899906842624.0),
        ("tb", 1099511627776.0),
        ("gb", 1073741824.0),
        ("mb", 1048576.0),
        ("kb", 1024.0),
    ];
    let b = bytes as f64;
    for (suffix, size) in UNITS {
        if b >= size {
            let v = (b / size * 10.0).floor() / 10.0;
            let s = format!("{v:.1}");
            let s = s.strip_suffix(".0").unwrap_or(&s).to_string();
            return format!("{s}{suffix}");
        }
    }
    format!("{bytes}b")
}

/// ES's `CircuitBreakingException` (429, with `bytes_wanted`, `bytes_limit`, `durability`).
pub fn circuit_breaking(reason: String, wanted: i64, limit: i64, d: Durability) -> EsError {
    EsError::new(429, "circuit_breaking_exception", reason)
        .with("bytes_wanted", wanted)
        .with("bytes_limit", limit)
        .with("durability", d.as_str())
}

/// One child breaker.
pub struct Breaker {
    pub name: &'static str,
    limit: AtomicI64,
    overhead_bits: AtomicU64,
    used: AtomicI64,
    tripped: AtomicU64,
    pub durability: Durability,
}

impl Breaker {
    fn new(name: &'static str, overhead: f64, durability: Durability) -> Breaker {
        Breaker {
            name,
            limit: AtomicI64::new(-1),
            overhead_bits: AtomicU64::new(overhead.to_bits()),
            used: AtomicI64::new(0),
            tripped: AtomicU64::new(0),
            durability,
        }
    }
    pub fn limit(&self) -> i64 {
        self.limit.load(Ordering::Relaxed)
    }
    pub fn overhead(&self) -> f64 {
        f64::from_bits(self.overhead_bits.load(Ordering::Relaxed))
    }
    pub fn used(&self) -> i64 {
        self.used.load(Ordering::Relaxed)
    }
    pub fn tripped(&self) -> u64 {
        self.tripped.load(Ordering::Relaxed)
    }
    fn used_with_overhead(&self) -> i64 {
        (self.used() as f64 * self.overhead()) as i64
    }
}

/// The breakers of one node.
pub struct BreakerService {
    budget: AtomicI64,
    parent_limit: AtomicI64,
    use_real_memory: AtomicBool,
    parent_tripped: AtomicU64,
    pub request: Breaker,
    pub fielddata: Breaker,
    pub in_flight_requests: Breaker,
    /// The process's real memory in use (RSS); replaceable in tests.
    real_memory: fn() -> i64,
}

/// Which child breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Request,
    Fielddata,
    InFlightRequests,
}

/// Resolved breaker settings.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakerSettings {
    pub budget: i64,
    pub use_real_memory: bool,
    pub total: i64,
    pub request: (i64, f64),
    pub fielddata: (i64, f64),
    pub in_flight: (i64, f64),
}

/// A limit: a percentage of `budget` ("60%") or a byte size ("512mb"; "-1" = no limit).
pub fn parse_limit(key: &str, v: &str, budget: i64) -> EsResult<i64> {
    let t = v.trim();
    if let Some(p) = t.strip_suffix('%') {
        let pct: f64 = p.trim().parse().map_err(|_| bad_percent(key, v))?;
        if !(0.0..=100.0).contains(&pct) {
            return Err(bad_percent(key, v));
        }
        return Ok((budget as f64 * pct / 100.0) as i64);
    }
    if t == "-1" {
        return Ok(-1);
    }
    Ok(crate::disk::parse_bytes(key, t)? as i64)
}

fn bad_percent(key: &str, v: &str) -> EsError {
    EsError::new(
        400,
        "parse_exception",
        format!("failed to parse [{v}] as a percentage for setting [{key}]"),
    )
}

fn parse_overhead(key: &str, v: &str) -> EsResult<f64> {
    match v.trim().parse::<f64>() {
        Ok(o) if o >= 0.0 && o.is_finite() => Ok(o),
        Ok(_) => Err(EsError::illegal_argument(format!(
            "Failed to parse value [{v}] for setting [{key}] must be >= 0.0"
        ))),
        Err(_) => Err(EsError::illegal_argument(format!(
            "Failed to parse value [{v}] for setting [{key}]"
        ))),
    }
}

impl BreakerSettings {
    /// Reads the settings from `get` (effective value of a key, unset = ES's default);
    /// `ram` is the machine's memory, which `node.memory` percentages are of.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>, ram: i64) -> EsResult<Self> {
        let budget = match get(NODE_MEMORY) {
            None => ram,
            Some(v) => {
                let b = parse_limit(NODE_MEMORY, &v, ram)?;
                if b <= 0 {
                    return Err(EsError::illegal_argument(format!(
                        "failed to parse value [{v}] for setting [{NODE_MEMORY}], must be > [0b]"
                    )));
                }
                b
            }
        };
        let use_real_memory = match get(USE_REAL_MEMORY).as_deref() {
            None | Some("true") => true,
            Some("false") => false,
            Some(v) => {
                return Err(EsError::illegal_argument(format!(
                    "Failed to parse value [{v}] as only [true] or [false] are allowed."
                )))
            }
        };
        let limit = |key: &str, default: &str| -> EsResult<i64> {
            let v = get(key).unwrap_or_else(|| default.to_string());
            parse_limit(key, &v, budget)
        };
        let overhead = |key: &str, default: f64| -> EsResult<f64> {
            get(key).map_or(Ok(default), |v| parse_overhead(key, &v))
        };
        let total = limit(TOTAL_LIMIT, if use_real_memory { "95%" } else { "70%" })?;
        if total < 0 {
            return Err(EsError::illegal_argument(format!(
                "Total circuit breaker setting [{TOTAL_LIMIT}] must be >= 0"
            )));
        }
        Ok(BreakerSettings {
            budget,
            use_real_memory,
            total,
            request: (
                limit(REQUEST_LIMIT, "60%")?,
                overhead(REQUEST_OVERHEAD, 1.0)?,
            ),
            fielddata: (
                limit(FIELDDATA_LIMIT, "40%")?,
                overhead(FIELDDATA_OVERHEAD, 1.03)?,
            ),
            in_flight: (
                limit(IN_FLIGHT_LIMIT, "100%")?,
                overhead(IN_FLIGHT_OVERHEAD, 2.0)?,
            ),
        })
    }
}

/// The machine's memory: `MemTotal`, or the cgroup v2 limit when lower (1 GiB if unknown).
pub fn machine_memory() -> i64 {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
            .map(|kb| kb * 1024)
    });
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok());
    match (total, cgroup) {
        (Some(t), Some(c)) => t.min(c),
        (Some(t), None) => t,
        (None, Some(c)) => c,
        (None, None) => 1 << 30,
    }
}

/// The process's resident anonymous memory (`RssAnon`: its heap, what a JVM heap would hold),
/// or `VmRSS` on kernels without it; 0 if unknown. The index files tantivy maps into memory
/// are resident too, but they are page cache the kernel reclaims, not the process's memory.
///
/// Read at most once per [`RESIDENT_REFRESH`]: the parent breaker asks on every charge (every
/// request body), and reading `/proc` costs three system calls and a parse, a tenth of a
/// cheap search's CPU. ES's own check reads the JVM's heap counter, which costs nothing.
pub fn resident_memory() -> i64 {
    static READ_AT: AtomicU64 = AtomicU64::new(u64::MAX);
    static VALUE: AtomicI64 = AtomicI64::new(0);
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    let now = START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64;
    let at = READ_AT.load(Ordering::Relaxed);
    if at != u64::MAX && now.saturating_sub(at) < RESIDENT_REFRESH.as_nanos() as u64 {
        return VALUE.load(Ordering::Relaxed);
    }
    let v = read_resident_memory();
    VALUE.store(v, Ordering::Relaxed);
    READ_AT.store(now, Ordering::Relaxed);
    v
}

/// How long a reading of the process's resident memory serves.
const RESIDENT_REFRESH: std::time::Duration = std::time::Duration::from_millis(10);

fn read_resident_memory() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
    };
    field("RssAnon:")
        .or_else(|| field("VmRSS:"))
        .map_or(0, |kb| kb * 1024)
}

/// The node's breakers (one node per process).
pub fn service() -> &'static BreakerService {
    static SERVICE: OnceLock<BreakerService> = OnceLock::new();
    SERVICE.get_or_init(|| {
        let s = BreakerService::new(resident_memory);
        let defaults = BreakerSettings::from_lookup(|_| None, machine_memory())
            .expect("the default breaker settings are valid");
        s.apply(&defaults);
        s
    })
}

impl BreakerService {
    pub fn new(real_memory: fn() -> i64) -> BreakerService {
        BreakerService {
            budget: AtomicI64::new(0),
            parent_limit: AtomicI64::new(-1),
            use_real_memory: AtomicBool::new(true),
            parent_tripped: AtomicU64::new(0),
            request: Breaker::new("request", 1.0, Durability::Transient),
            fielddata: Breaker::new("fielddata", 1.03, Durability::Permanent),
            in_flight_requests: Breaker::new("in_flight_requests", 2.0, Durability::Transient),
            real_memory,
        }
    }

    /// Applies resolved settings (at startup and on `PUT _cluster/settings`).
    pub fn apply(&self, s: &BreakerSettings) {
        self.budget.store(s.budget, Ordering::Relaxed);
        self.use_real_memory
            .store(s.use_real_memory, Ordering::Relaxed);
        self.parent_limit.store(s.total, Ordering::Relaxed);
        for (b, (limit, overhead)) in [
            (&self.request, s.request),
            (&self.fielddata, s.fielddata),
            (&self.in_flight_requests, s.in_flight),
        ] {
            b.limit.store(limit, Ordering::Relaxed);
            b.overhead_bits.store(overhead.to_bits(), Ordering::Relaxed);
        }
    }

    pub fn budget(&self) -> i64 {
        self.budget.load(Ordering::Relaxed)
    }

    pub fn breaker(&self, kind: Kind) -> &Breaker {
        match kind {
            Kind::Request => &self.request,
            Kind::Fielddata => &self.fielddata,
            Kind::InFlightRequests => &self.in_flight_requests,
        }
    }

    fn children(&self) -> [&Breaker; 3] {
        [&self.request, &self.fielddata, &self.in_flight_requests]
    }

    pub fn parent_limit(&self) -> i64 {
        self.parent_limit.load(Ordering::Relaxed)
    }

    /// (total usage, real usage) as the parent sees it with `new_bytes` about to be reserved.
    fn parent_usage(&self, new_bytes: i64) -> (i64, i64) {
        if self.use_real_memory.load(Ordering::Relaxed) {
            let real = (self.real_memory)();
            (real + new_bytes, real)
        } else {
            let sum = self.children().iter().map(|b| b.used_with_overhead()).sum();
            (sum, 0)
        }
    }

    /// Adds `bytes` to the `kind` breaker, or trips it (or the parent) with ES's exception;
    /// a trip leaves the breaker as it was. Negative `bytes` release without a check.
    pub fn add_estimate(&self, kind: Kind, bytes: i64, label: &str) -> EsResult<()> {
        let b = self.breaker(kind);
        if bytes <= 0 {
            b.used.fetch_add(bytes, Ordering::Relaxed);
            return Ok(());
        }
        let limit = b.limit();
        let overhead = b.overhead();
        let mut current = b.used();
        loop {
            let new_used = current + bytes;
            let with_overhead = (new_used as f64 * overhead) as i64;
            if limit > 0 && with_overhead > limit {
                b.tripped.fetch_add(1, Ordering::Relaxed);
                return Err(circuit_breaking(
                    format!(
                        "[{}] Data too large, data for [{label}] would be [{with_overhead}/{}], which is larger than the limit of [{limit}/{}]",
                        b.name,
                        byte_size_string(with_overhead),
                        byte_size_string(limit)
                    ),
                    with_overhead,
                    limit,
                    b.durability,
                ));
            }
            match b.used.compare_exchange_weak(
                current,
                new_used,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => current = now,
            }
        }
        if let Err(e) = self.check_parent((bytes as f64 * overhead) as i64, label) {
            b.used.fetch_sub(bytes, Ordering::Relaxed);
            return Err(e);
        }
        Ok(())
    }

    /// ES's `checkParentLimit`.
    fn check_parent(&self, new_bytes: i64, label: &str) -> EsResult<()> {
        let limit = self.parent_limit();
        let (total, real) = self.parent_usage(new_bytes);
        if limit < 0 || total <= limit {
            return Ok(());
        }
        self.parent_tripped.fetch_add(1, Ordering::Relaxed);
        let mut msg = format!(
            "[parent] Data too large, data for [{label}] would be [{total}/{}], which is larger than the limit of [{limit}/{}]",
            byte_size_string(total),
            byte_size_string(limit)
        );
        if self.use_real_memory.load(Ordering::Relaxed) {
            msg += &format!(
                ", real usage: [{real}/{}], new bytes reserved: [{new_bytes}/{}]",
                byte_size_string(real),
                byte_size_string(new_bytes)
            );
        }
        let usages: Vec<String> = self
            .children()
            .iter()
            .map(|b| {
                let u = b.used_with_overhead();
                format!("{}={u}/{}", b.name, byte_size_string(u))
            })
            .collect();
        msg += &format!(", usages [{}]", usages.join(", "));
        let (transient, permanent) =
            self.children()
                .iter()
                .fold((0, 0), |(t, p), b| match b.durability {
                    Durability::Transient => (t + b.used_with_overhead(), p),
                    Durability::Permanent => (t, p + b.used_with_overhead()),
                });
        let d = if transient >= permanent {
            Durability::Transient
        } else {
            Durability::Permanent
        };
        Err(circuit_breaking(msg, total, limit, d))
    }

    /// Reserves `bytes` on the `kind` breaker until the returned guard is dropped.
    pub fn reserve(&self, kind: Kind, bytes: i64, label: &str) -> EsResult<Reservation<'_>> {
        self.add_estimate(kind, bytes.max(0), label)?;
        Ok(Reservation {
            service: self,
            kind,
            bytes: bytes.max(0),
        })
    }

    /// A guard holding nothing yet, to [`Reservation::grow`].
    pub fn empty(&self, kind: Kind) -> Reservation<'_> {
        Reservation {
            service: self,
            kind,
            bytes: 0,
        }
    }

    /// The `breakers` section of `_nodes/stats` (ES's `CircuitBreakerStats`).
    pub fn stats_json(&self) -> Value {
        let one = |limit: i64, estimated: i64, overhead: f64, tripped: u64| {
            json!({
                "limit_size_in_bytes": limit,
                "limit_size": byte_size_string(limit),
                "estimated_size_in_bytes": estimated,
                "estimated_size": byte_size_string(estimated),
                "overhead": overhead,
                "tripped": tripped,
            })
        };
        let mut out = serde_json::Map::new();
        for b in self.children() {
            out.insert(
                b.name.to_string(),
                one(b.limit(), b.used(), b.overhead(), b.tripped()),
            );
        }
        out.insert(
            "parent".into(),
            one(
                self.parent_limit(),
                self.parent_usage(0).0,
                1.0,
                self.parent_tripped.load(Ordering::Relaxed),
            ),
        );
        Value::Object(out)
    }

    pub fn parent_tripped(&self) -> u64 {
        self.parent_tripped.load(Ordering::Relaxed)
    }
}

/// Bytes reserved on a breaker, given back when dropped.
pub struct Reservation<'a> {
    service: &'a BreakerService,
    kind: Kind,
    bytes: i64,
}

impl Reservation<'_> {
    /// Reserves `bytes` more, or trips (keeping what is already held until the drop).
    pub fn grow(&mut self, bytes: i64, label: &str) -> EsResult<()> {
        if bytes > 0 {
            self.service.add_estimate(self.kind, bytes, label)?;
            self.bytes += bytes;
        }
        Ok(())
    }

    pub fn bytes(&self) -> i64 {
        self.bytes
    }

    /// Gives `bytes` back before the drop (at most what is held): memory freed early, as a
    /// scroll's remaining hits are returned.
    pub fn release(&mut self, bytes: i64) {
        let b = bytes.clamp(0, self.bytes);
        if b > 0 {
            self.service
                .breaker(self.kind)
                .used
                .fetch_sub(b, Ordering::Relaxed);
            self.bytes -= b;
        }
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.service
                .breaker(self.kind)
                .used
                .fetch_sub(self.bytes, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_rss() -> i64 {
        0
    }
    fn big_rss() -> i64 {
        900
    }

    fn svc(settings: &[(&str, &str)], rss: fn() -> i64) -> BreakerService {
        let s = BreakerService::new(rss);
        let map: std::collections::HashMap<String, String> = settings
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        s.apply(&BreakerSettings::from_lookup(|k| map.get(k).cloned(), 1000).unwrap());
        s
    }

    #[test]
    fn defaults_are_es_percentages_of_the_budget() {
        let s = BreakerSettings::from_lookup(|_| None, 1000).unwrap();
        assert_eq!(s.total, 950);
        assert_eq!(s.request, (600, 1.0));
        assert_eq!(s.fielddata, (400, 1.03));
        assert_eq!(s.in_flight, (1000, 2.0));
        let s = BreakerSettings::from_lookup(
            |k| (k == USE_REAL_MEMORY).then(|| "false".to_string()),
            1000,
        )
        .unwrap();
        assert_eq!(s.total, 700);
    }

    #[test]
    fn settings_parse_percentages_sizes_and_budget() {
        let get = |k: &str| match k {
            NODE_MEMORY => Some("2gb".to_string()),
            REQUEST_LIMIT => Some("512mb".to_string()),
            FIELDDATA_LIMIT => Some("10%".to_string()),
            IN_FLIGHT_LIMIT => Some("-1".to_string()),
            REQUEST_OVERHEAD => Some("1.5".to_string()),
            _ => None,
        };
        let s = BreakerSettings::from_lookup(get, 1 << 40).unwrap();
        assert_eq!(s.budget, 2 << 30);
        assert_eq!(s.request, (512 << 20, 1.5));
        assert_eq!(s.fielddata.0, (2i64 << 30) / 10);
        assert_eq!(s.in_flight.0, -1);
        assert_eq!(parse_limit(REQUEST_LIMIT, "0", 1000).unwrap(), 0);
        // ES's memory sizes: a percentage or a byte size with its unit, not a bare ratio
        assert!(parse_limit(REQUEST_LIMIT, "0.6", 1000).is_err());
        let bad = BreakerSettings::from_lookup(
            |k| (k == REQUEST_LIMIT).then(|| "lots".to_string()),
            1000,
        )
        .unwrap_err();
        assert_eq!(bad.status, 400);
        assert!(bad.reason.contains("[indices.breaker.request.limit]"));
        let bad = BreakerSettings::from_lookup(
            |k| (k == REQUEST_OVERHEAD).then(|| "-2".to_string()),
            1000,
        )
        .unwrap_err();
        assert!(bad.reason.contains("must be >= 0.0"), "{}", bad.reason);
    }

    #[test]
    fn a_child_trips_over_its_limit_and_keeps_its_usage() {
        let s = svc(&[(REQUEST_LIMIT, "100b")], no_rss);
        let g = s.reserve(Kind::Request, 60, "<agg [a]>").unwrap();
        let e = s.add_estimate(Kind::Request, 41, "<agg [b]>").unwrap_err();
        assert_eq!(
            (e.status, e.kind.as_str()),
            (429, "circuit_breaking_exception")
        );
        assert_eq!(
            e.reason,
            "[request] Data too large, data for [<agg [b]>] would be [101/101b], which is larger than the limit of [100/100b]"
        );
        assert_eq!(e.extra["bytes_wanted"], 101);
        assert_eq!(e.extra["bytes_limit"], 100);
        assert_eq!(e.extra["durability"], "TRANSIENT");
        assert_eq!(s.request.used(), 60);
        assert_eq!(s.request.tripped(), 1);
        s.add_estimate(Kind::Request, 40, "x").unwrap();
        s.add_estimate(Kind::Request, -40, "x").unwrap();
        drop(g);
        assert_eq!(s.request.used(), 0);
    }

    #[test]
    fn a_reservation_gives_bytes_back_early_and_never_more_than_it_holds() {
        let s = svc(&[(REQUEST_LIMIT, "100b")], no_rss);
        let mut g = s.reserve(Kind::Request, 80, "<scroll_context>").unwrap();
        g.release(30);
        assert_eq!((g.bytes(), s.request.used()), (50, 50));
        s.add_estimate(Kind::Request, 50, "x").unwrap();
        s.add_estimate(Kind::Request, -50, "x").unwrap();
        g.release(500);
        assert_eq!((g.bytes(), s.request.used()), (0, 0));
        drop(g);
        assert_eq!(s.request.used(), 0);
    }

    #[test]
    fn overhead_multiplies_the_checked_usage() {
        let s = svc(&[(IN_FLIGHT_LIMIT, "100b")], no_rss);
        assert!(s
            .reserve(Kind::InFlightRequests, 50, "<http_request>")
            .is_ok());
        let e = s
            .reserve(Kind::InFlightRequests, 51, "<http_request>")
            .err()
            .unwrap();
        assert!(e.reason.contains("would be [102/102b]"), "{}", e.reason);
    }

    #[test]
    fn the_parent_checks_the_sum_of_children_without_real_memory() {
        let s = svc(&[(USE_REAL_MEMORY, "false"), (TOTAL_LIMIT, "100b")], no_rss);
        let _a = s.reserve(Kind::Fielddata, 50, "f").unwrap(); // 51 with overhead
        let e = s.reserve(Kind::Request, 50, "<agg [t]>").err().unwrap();
        assert_eq!(
            e.reason,
            "[parent] Data too large, data for [<agg [t]>] would be [101/101b], which is larger than the limit of [100/100b], usages [request=50/50b, fielddata=51/51b, in_flight_requests=0/0b]"
        );
        assert_eq!(e.extra["durability"], "PERMANENT");
        assert_eq!(
            s.request.used(),
            0,
            "a parent trip releases the child's bytes"
        );
        assert_eq!(s.request.tripped(), 0);
        assert_eq!(s.parent_tripped(), 1);
    }

    #[test]
    fn the_parent_checks_real_memory_plus_the_new_bytes() {
        let s = svc(&[(TOTAL_LIMIT, "950b")], big_rss);
        s.reserve(Kind::Request, 50, "a").unwrap();
        let e = s.reserve(Kind::Request, 51, "<agg [t]>").err().unwrap();
        assert!(
            e.reason.starts_with("[parent] Data too large, data for [<agg [t]>] would be [951/951b], which is larger than the limit of [950/950b], real usage: [900/900b], new bytes reserved: [51/51b], usages [request=51/51b"),
            "{}",
            e.reason
        );
    }

    #[test]
    fn reservations_release_on_drop_and_panic() {
        let s = svc(&[(REQUEST_LIMIT, "1kb"), (TOTAL_LIMIT, "10kb")], no_rss);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut g = s.empty(Kind::Request);
            g.grow(100, "a").unwrap();
            g.grow(200, "b").unwrap();
            assert_eq!(s.request.used(), 300);
            panic!("boom");
        }));
        assert!(r.is_err());
        assert_eq!(s.request.used(), 0);
        let mut g = s.empty(Kind::Request);
        g.grow(1000, "a").unwrap();
        assert!(g.grow(100, "b").is_err());
        assert_eq!(g.bytes(), 1000);
        drop(g);
        assert_eq!(s.request.used(), 0);
    }

    #[test]
    fn the_process_has_resident_memory() {
        assert!(resident_memory() > 0);
        assert!(machine_memory() > 0);
    }

    #[test]
    fn byte_sizes_print_as_es() {
        assert_eq!(byte_size_string(0), "0b");
        assert_eq!(byte_size_string(1023), "1023b");
        assert_eq!(byte_size_string(1536), "1.5kb");
        assert_eq!(byte_size_string(60 << 20), "60mb");
        assert_eq!(byte_size_string(-1), "-1b");
    }

    #[test]
    fn stats_render_every_breaker() {
        let s = svc(&[(REQUEST_LIMIT, "1kb")], no_rss);
        let v = s.stats_json();
        assert_eq!(v["request"]["limit_size_in_bytes"], 1024);
        assert_eq!(v["request"]["limit_size"], "1kb");
        assert_eq!(v["fielddata"]["overhead"], 1.03);
        assert_eq!(v["in_flight_requests"]["overhead"], 2.0);
        assert_eq!(v["parent"]["limit_size_in_bytes"], 950);
    }
}
