//! The `_cat` APIs: Elasticsearch's text tables (`v`, `h`, `s`, `help`, `bytes`, `time`, `ts`,
//! `format=json|yaml`) over indices, health, count, shards, segments, nodes and aliases.

#![allow(clippy::result_large_err)] // EsError is the project-wide error type (engine).

use crate::cluster::{self, Expand, Health, NodeInfo};
use crate::rest::{RestRequest, RestResponse};
use crate::stats::{self, ms, Numbers, StatsOptions};
use lode_engine::index::now_millis;
use lode_engine::mapping::wildcard_match;
use lode_engine::{EsError, EsResult, Node};
use serde_json::{Map, Value};
use std::cmp::Ordering;

// ---------------------------------------------------------------------------------------------
// Tables
// ---------------------------------------------------------------------------------------------

/// A column: its name, aliases, description, alignment and whether it shows without `h=`.
#[derive(Debug, Clone)]
struct Column {
    name: &'static str,
    aliases: &'static str,
    desc: &'static str,
    right: bool,
    default: bool,
}

/// A shown column, default or right-aligned (`r`) and hidden unless asked for (`h`).
fn col(name: &'static str, aliases: &'static str, flags: &str, desc: &'static str) -> Column {
    Column {
        name,
        aliases,
        desc,
        right: flags.contains('r'),
        default: !flags.contains('h'),
    }
}

/// A typed cell: numbers sort as numbers, sizes render per `bytes=`, times per `time=`.
#[derive(Debug, Clone)]
enum Cell {
    Null,
    Str(String),
    Int(i64),
    Bytes(u64),
    /// Milliseconds.
    Time(u64),
    /// A float rendered as given but sorted by value.
    Num(f64, String),
}

impl Cell {
    fn s(v: impl Into<String>) -> Cell {
        Cell::Str(v.into())
    }

    fn i(v: impl TryInto<i64>) -> Cell {
        Cell::Int(v.try_into().unwrap_or(i64::MAX))
    }

    fn render(&self, p: &RenderParams) -> Option<String> {
        Some(match self {
            Cell::Null => return None,
            Cell::Str(s) => s.clone(),
            Cell::Int(i) => i.to_string(),
            Cell::Num(_, s) => s.clone(),
            Cell::Bytes(b) => match p.bytes.as_deref() {
                Some("b") => b.to_string(),
                Some("k") | Some("kb") => (b >> 10).to_string(),
                Some("m") | Some("mb") => (b >> 20).to_string(),
                Some("g") | Some("gb") => (b >> 30).to_string(),
                Some("t") | Some("tb") => (b >> 40).to_string(),
                Some("p") | Some("pb") => (b >> 50).to_string(),
                _ => human_bytes(*b),
            },
            Cell::Time(t) => match p.time.as_deref() {
                Some("nanos") => (t * 1_000_000).to_string(),
                Some("micros") => (t * 1_000).to_string(),
                Some("ms") => t.to_string(),
                Some("s") => (t / 1_000).to_string(),
                Some("m") => (t / 60_000).to_string(),
                Some("h") => (t / 3_600_000).to_string(),
                Some("d") => (t / 86_400_000).to_string(),
                _ => human_time(*t),
            },
        })
    }

    fn sort_key(&self) -> Option<f64> {
        match self {
            Cell::Int(i) => Some(*i as f64),
            Cell::Bytes(b) => Some(*b as f64),
            Cell::Time(t) => Some(*t as f64),
            Cell::Num(f, _) => Some(*f),
            _ => None,
        }
    }

    fn compare(&self, other: &Cell) -> Ordering {
        match (self, other) {
            (Cell::Null, Cell::Null) => Ordering::Equal,
            (Cell::Null, _) => Ordering::Greater,
            (_, Cell::Null) => Ordering::Less,
            (Cell::Str(a), Cell::Str(b)) => a.cmp(b),
            _ => match (self.sort_key(), other.sort_key()) {
                (Some(a), Some(b)) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
                _ => {
                    let p = RenderParams::default();
                    self.render(&p).cmp(&other.render(&p))
                }
            },
        }
    }
}

/// Java's one-decimal formatting of `ByteSizeValue`/`TimeValue`: truncated, `.0` dropped.
fn one_decimal(v: f64) -> String {
    let s = format!("{v}");
    match s.split_once('.') {
        Some((int, frac)) => match frac.chars().next() {
            Some(d) if d != '0' => format!("{int}.{d}"),
            _ => int.to_string(),
        },
        None => s,
    }
}

/// `ByteSizeValue#toString`: `225b`, `4.5kb`, `1.2gb`.
fn human_bytes(b: u64) -> String {
    const UNITS: [(u64, &str); 5] = [
        (1 << 50, "pb"),
        (1 << 40, "tb"),
        (1 << 30, "gb"),
        (1 << 20, "mb"),
        (1 << 10, "kb"),
    ];
    for (size, suffix) in UNITS {
        if b >= size {
            return format!("{}{suffix}", one_decimal(b as f64 / size as f64));
        }
    }
    format!("{b}b")
}

/// `TimeValue#toString` of a millisecond value: `0s`, `17ms`, `1.2s`, `3.5m`.
fn human_time(t: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1_000, "s"),
    ];
    if t == 0 {
        return "0s".into();
    }
    for (size, suffix) in UNITS {
        if t >= size {
            return format!("{}{suffix}", one_decimal(t as f64 / size as f64));
        }
    }
    format!("{t}ms")
}

#[derive(Debug, Default)]
struct RenderParams {
    bytes: Option<String>,
    time: Option<String>,
}

struct Table {
    cols: Vec<Column>,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    fn new(cols: Vec<Column>) -> Table {
        Table {
            cols,
            rows: Vec::new(),
        }
    }

    fn push(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(row.len(), self.cols.len(), "row width");
        self.rows.push(row);
    }

    /// Finds a column by name, then by alias.
    fn find(&self, key: &str) -> Option<usize> {
        self.cols.iter().position(|c| c.name == key).or_else(|| {
            self.cols
                .iter()
                .position(|c| c.aliases.split(',').any(|a| a == key))
        })
    }
}

/// A column to print and the header it prints under (the alias when asked by alias).
struct Display {
    col: usize,
    header: String,
}

fn display_columns(t: &Table, req: &RestRequest) -> EsResult<Vec<Display>> {
    let mut out: Vec<Display> = Vec::new();
    match req.param("h").filter(|h| !h.trim().is_empty()) {
        Some(h) => {
            for want in h.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                if want.contains('*') {
                    for (i, c) in t.cols.iter().enumerate() {
                        let hit = wildcard_match(want, c.name)
                            || c.aliases.split(',').any(|a| wildcard_match(want, a));
                        if hit && !out.iter().any(|d| d.col == i) {
                            out.push(Display {
                                col: i,
                                header: c.name.to_string(),
                            });
                        }
                    }
                } else if let Some(i) = t.find(want) {
                    out.push(Display {
                        col: i,
                        header: want.to_string(),
                    });
                }
            }
        }
        None => {
            let ts = req.bool_param("ts", true)?;
            for (i, c) in t.cols.iter().enumerate() {
                if c.default && (ts || !matches!(c.name, "epoch" | "timestamp")) {
                    out.push(Display {
                        col: i,
                        header: c.name.to_string(),
                    });
                }
            }
        }
    }
    Ok(out)
}

fn row_order(t: &Table, req: &RestRequest) -> EsResult<Vec<usize>> {
    let mut order: Vec<usize> = (0..t.rows.len()).collect();
    let Some(s) = req.param("s").filter(|s| !s.trim().is_empty()) else {
        return Ok(order);
    };
    let mut keys: Vec<(usize, bool)> = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, desc) = match part.rsplit_once(':') {
            Some((n, "desc")) => (n, true),
            Some((n, "asc")) => (n, false),
            _ => (part, false),
        };
        let Some(i) = t.find(name) else {
            return Err(EsError::new(
                400,
                "unsupported_operation_exception",
                format!("Unable to sort by unknown sort key `{name}`"),
            ));
        };
        keys.push((i, desc));
    }
    order.sort_by(|&a, &b| {
        for &(c, desc) in &keys {
            let o = t.rows[a][c].compare(&t.rows[b][c]);
            if o != Ordering::Equal {
                return if desc { o.reverse() } else { o };
            }
        }
        Ordering::Equal
    });
    Ok(order)
}

fn help_text(t: &Table) -> String {
    let w0 = t.cols.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let w1 = t.cols.iter().map(|c| c.aliases.len()).max().unwrap_or(0);
    let mut out = String::new();
    for c in &t.cols {
        out.push_str(&format!(
            "{:<w0$} | {:<w1$} | {}\n",
            c.name, c.aliases, c.desc
        ));
    }
    out
}

fn pad(out: &mut String, value: &str, width: usize, right: bool, last: bool) {
    let fill = width.saturating_sub(value.chars().count());
    if right {
        out.extend(std::iter::repeat_n(' ', fill));
        out.push_str(value);
    } else {
        out.push_str(value);
        if !last {
            out.extend(std::iter::repeat_n(' ', fill));
        }
    }
}

/// Renders a table the way the request asks.
fn respond(t: Table, req: &RestRequest) -> EsResult<RestResponse> {
    if req.bool_param("help", false)? {
        return Ok(RestResponse::text(200, help_text(&t)));
    }
    let params = RenderParams {
        bytes: req.param("bytes").map(str::to_ascii_lowercase),
        time: req.param("time").map(str::to_ascii_lowercase),
    };
    let shown = display_columns(&t, req)?;
    let order = row_order(&t, req)?;
    let rendered: Vec<Vec<Option<String>>> = order
        .iter()
        .map(|&r| {
            shown
                .iter()
                .map(|d| t.rows[r][d.col].render(&params))
                .collect()
        })
        .collect();
    match req.param("format").map(str::to_ascii_lowercase).as_deref() {
        Some("json") => {
            let arr: Vec<Value> = rendered
                .iter()
                .map(|row| {
                    let mut m = Map::new();
                    for (d, v) in shown.iter().zip(row) {
                        m.insert(
                            d.header.clone(),
                            v.clone().map(Value::String).unwrap_or(Value::Null),
                        );
                    }
                    Value::Object(m)
                })
                .collect();
            Ok(RestResponse::ok(Value::Array(arr)))
        }
        Some("yaml") => {
            let mut out = String::from("---\n");
            if rendered.is_empty() {
                out = "--- []\n".into();
            }
            for row in &rendered {
                for (n, (d, v)) in shown.iter().zip(row).enumerate() {
                    out.push_str(if n == 0 { "- " } else { "  " });
                    let v = match v {
                        Some(s) => serde_json::to_string(s).unwrap_or_default(),
                        None => "null".into(),
                    };
                    out.push_str(&format!(
                        "{}: {v}\n",
                        serde_json::to_string(&d.header).unwrap_or_default()
                    ));
                }
            }
            Ok(RestResponse::text(200, out))
        }
        None | Some("text") | Some("txt") => {
            let verbose = req.bool_param("v", false)?;
            let mut widths: Vec<usize> = shown
                .iter()
                .map(|d| if verbose { d.header.chars().count() } else { 0 })
                .collect();
            for row in &rendered {
                for (w, v) in widths.iter_mut().zip(row) {
                    *w = (*w).max(v.as_deref().map(|s| s.chars().count()).unwrap_or(0));
                }
            }
            let mut out = String::new();
            let last = shown.len().saturating_sub(1);
            let mut line = |cells: Vec<Option<&str>>| {
                for (i, (d, v)) in shown.iter().zip(cells).enumerate() {
                    pad(
                        &mut out,
                        v.unwrap_or(""),
                        widths[i],
                        t.cols[d.col].right,
                        i == last,
                    );
                    if i != last {
                        out.push(' ');
                    }
                }
                out.push('\n');
            };
            if verbose {
                line(shown.iter().map(|d| Some(d.header.as_str())).collect());
            }
            for row in &rendered {
                line(row.iter().map(|v| v.as_deref()).collect());
            }
            Ok(RestResponse::text(200, out))
        }
        Some(other) => Err(EsError::illegal_argument(format!(
            "Unsupported format [{other}]"
        ))),
    }
}

// ---------------------------------------------------------------------------------------------
// Shared column sets
// ---------------------------------------------------------------------------------------------

enum Kind {
    Count,
    Bytes,
    Time,
}

type Extract = fn(&Numbers) -> u64;

/// The statistics columns `_cat/indices` and `_cat/shards` share (hidden by default).
const STAT_COLUMNS: &[(&str, &str, Kind, Extract, &str)] = &[
    ("completion.size", "cs,completionSize", Kind::Bytes, |_| 0, "size of completion"),
    ("fielddata.memory_size", "fm,fielddataMemory", Kind::Bytes, |_| 0, "used fielddata cache"),
    ("fielddata.evictions", "fe,fielddataEvictions", Kind::Count, |_| 0, "fielddata evictions"),
    ("query_cache.memory_size", "qcm,queryCacheMemory", Kind::Bytes, |_| 0, "used query cache"),
    ("query_cache.evictions", "qce,queryCacheEvictions", Kind::Count, |_| 0, "query cache evictions"),
    ("flush.total", "ft,flushTotal", Kind::Count, |n| n.flush_total, "number of flushes"),
    ("flush.total_time", "ftt,flushTotalTime", Kind::Time, |n| ms(n.flush_time_ns), "time spent in flush"),
    ("get.current", "gc,getCurrent", Kind::Count, |_| 0, "number of current get ops"),
    ("get.time", "gti,getTime", Kind::Time, |n| ms(n.get_time_ns), "time spent in get"),
    ("get.total", "gto,getTotal", Kind::Count, |n| n.get_total, "number of get ops"),
    ("get.exists_time", "geti,getExistsTime", Kind::Time, |n| exists_ms(n), "time spent in successful gets"),
    ("get.exists_total", "geto,getExistsTotal", Kind::Count, |n| n.get_exists, "number of successful gets"),
    ("get.missing_time", "gmti,getMissingTime", Kind::Time, |n| ms(n.get_time_ns) - exists_ms(n), "time spent in failed gets"),
    ("get.missing_total", "gmto,getMissingTotal", Kind::Count, |n| n.get_missing, "number of failed gets"),
    ("indexing.delete_current", "idc,indexingDeleteCurrent", Kind::Count, |_| 0, "number of current deletions"),
    ("indexing.delete_time", "idti,indexingDeleteTime", Kind::Time, |n| ms(n.delete_time_ns), "time spent in deletions"),
    ("indexing.delete_total", "idto,indexingDeleteTotal", Kind::Count, |n| n.delete_total, "number of delete ops"),
    ("indexing.index_current", "iic,indexingIndexCurrent", Kind::Count, |_| 0, "number of current indexing ops"),
    ("indexing.index_time", "iiti,indexingIndexTime", Kind::Time, |n| ms(n.index_time_ns), "time spent in indexing"),
    ("indexing.index_total", "iito,indexingIndexTotal", Kind::Count, |n| n.index_total, "number of indexing ops"),
    ("indexing.index_failed", "iif,indexingIndexFailed", Kind::Count, |n| n.index_failed, "number of failed indexing ops"),
    ("merges.current", "mc,mergesCurrent", Kind::Count, |_| 0, "number of current merges"),
    ("merges.current_docs", "mcd,mergesCurrentDocs", Kind::Count, |_| 0, "number of current merging docs"),
    ("merges.current_size", "mcs,mergesCurrentSize", Kind::Bytes, |_| 0, "size of current merges"),
    ("merges.total", "mt,mergesTotal", Kind::Count, |n| n.merge_total, "number of completed merge ops"),
    ("merges.total_docs", "mtd,mergesTotalDocs", Kind::Count, |n| n.merge_docs, "docs merged"),
    ("merges.total_size", "mts,mergesTotalSize", Kind::Bytes, |_| 0, "size merged"),
    ("merges.total_time", "mtt,mergesTotalTime", Kind::Time, |n| ms(n.merge_time_ns), "time spent in merges"),
    ("refresh.total", "rto,refreshTotal", Kind::Count, |n| n.refresh_total, "total refreshes"),
    ("refresh.time", "rti,refreshTime", Kind::Time, |n| ms(n.refresh_time_ns), "time spent in refreshes"),
    ("refresh.external_total", "reto", Kind::Count, |n| n.external_refresh_total, "total external refreshes"),
    ("refresh.external_time", "reti", Kind::Time, |n| n.external_refresh_ms(), "time spent in external refreshes"),
    ("refresh.listeners", "rli,refreshListeners", Kind::Count, |_| 0, "number of pending refresh listeners"),
    ("search.fetch_current", "sfc,searchFetchCurrent", Kind::Count, |_| 0, "current fetch phase ops"),
    ("search.fetch_time", "sfti,searchFetchTime", Kind::Time, |n| ms(n.fetch_time_ns), "time spent in fetch phase"),
    ("search.fetch_total", "sfto,searchFetchTotal", Kind::Count, |n| n.fetch_total, "total fetch ops"),
    ("search.open_contexts", "so,searchOpenContexts", Kind::Count, |n| n.scroll_current, "open search contexts"),
    ("search.query_current", "sqc,searchQueryCurrent", Kind::Count, |_| 0, "current query phase ops"),
    ("search.query_time", "sqti,searchQueryTime", Kind::Time, |n| ms(n.query_time_ns), "time spent in query phase"),
    ("search.query_total", "sqto,searchQueryTotal", Kind::Count, |n| n.query_total, "total query phase ops"),
    ("search.scroll_current", "scc,searchScrollCurrent", Kind::Count, |n| n.scroll_current, "open scroll contexts"),
    ("search.scroll_time", "scti,searchScrollTime", Kind::Time, |_| 0, "time scroll contexts held open"),
    ("search.scroll_total", "scto,searchScrollTotal", Kind::Count, |n| n.scroll_total, "completed scroll contexts"),
    ("segments.count", "sc,segmentsCount", Kind::Count, |n| n.segments, "number of segments"),
    ("segments.memory", "sm,segmentsMemory", Kind::Bytes, |_| 0, "memory used by segments"),
    ("segments.index_writer_memory", "siwm,segmentsIndexWriterMemory", Kind::Bytes, |_| 0, "memory used by index writer"),
    ("segments.version_map_memory", "svmm,segmentsVersionMapMemory", Kind::Bytes, |_| 0, "memory used by version map"),
    ("segments.fixed_bitset_memory", "sfbm,fixedBitsetMemory", Kind::Bytes, |_| 0, "memory used by fixed bit sets for nested object field types and type filters for types referred in _parent fields"),
    ("warmer.current", "wc,warmerCurrent", Kind::Count, |_| 0, "current warmer ops"),
    ("warmer.total", "wto,warmerTotal", Kind::Count, |_| 0, "total warmer ops"),
    ("warmer.total_time", "wtt,warmerTotalTime", Kind::Time, |_| 0, "time spent in warmers"),
];

fn exists_ms(n: &Numbers) -> u64 {
    (ms(n.get_time_ns) * n.get_exists)
        .checked_div(n.get_total)
        .unwrap_or(0)
}

fn stat_columns() -> Vec<Column> {
    STAT_COLUMNS
        .iter()
        .map(|(name, aliases, _, _, desc)| col(name, aliases, "rh", desc))
        .collect()
}

fn stat_cells(n: Option<&Numbers>) -> Vec<Cell> {
    STAT_COLUMNS
        .iter()
        .map(|(_, _, kind, f, _)| match n {
            None => Cell::Null,
            Some(n) => match kind {
                Kind::Count => Cell::i(f(n)),
                Kind::Bytes => Cell::Bytes(f(n)),
                Kind::Time => Cell::Time(f(n)),
            },
        })
        .collect()
}

fn epoch_columns() -> Vec<Column> {
    vec![
        col("epoch", "t,time", "", "seconds since 1970-01-01 00:00:00"),
        col("timestamp", "ts,hms,hhmmss", "", "time in HH:MM:SS"),
    ]
}

fn epoch_cells() -> Vec<Cell> {
    let now = now_millis();
    let secs = now / 1000;
    let day = secs.rem_euclid(86_400);
    vec![
        Cell::i(secs),
        Cell::s(format!(
            "{:02}:{:02}:{:02}",
            day / 3600,
            day / 60 % 60,
            day % 60
        )),
    ]
}

/// `yyyy-MM-ddTHH:mm:ss.SSSZ` of epoch milliseconds (UTC).
pub(crate) fn iso_date(millis: i64) -> String {
    let secs = millis.div_euclid(1000);
    let ms = millis.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        tod / 3600,
        tod / 60 % 60,
        tod % 60
    )
}

// ---------------------------------------------------------------------------------------------
// Endpoints
// ---------------------------------------------------------------------------------------------

const ENDPOINTS: &[&str] = &[
    "aliases",
    "count",
    "health",
    "indices",
    "nodes",
    "segments",
    "shards",
    "thread_pool",
];

/// `GET /_cat/{what}[/{target}]`.
pub fn cat(
    node: &Node,
    info: &NodeInfo,
    what: &str,
    target: Option<&str>,
    req: &RestRequest,
) -> EsResult<RestResponse> {
    let target = target.filter(|t| !t.trim().is_empty());
    let table = match what {
        "" => {
            let mut s = String::from("=^.^=\n");
            for e in ENDPOINTS {
                s.push_str(&format!("/_cat/{e}\n"));
                if !matches!(*e, "health" | "nodes") {
                    s.push_str(&format!(
                        "/_cat/{e}/{{{}}}\n",
                        match *e {
                            "aliases" => "alias",
                            "thread_pool" => "thread_pools",
                            _ => "index",
                        }
                    ));
                }
            }
            return Ok(RestResponse::text(200, s));
        }
        "indices" => indices(node, target, req)?,
        "health" => health(node, info, req)?,
        "count" => count(node, target, req)?,
        "shards" => shards(node, info, target, req)?,
        "segments" => segments(node, info, target, req)?,
        "nodes" => nodes(node, info, req)?,
        "aliases" => aliases(node, target, req)?,
        "thread_pool" => thread_pool(node, info, target),
        _ => {
            return Err(EsError::bad_request(
                "illegal_argument_exception",
                format!("no handler found for uri [{}] and method [GET]", req.path),
            ))
        }
    };
    respond(table, req)
}

fn indices(node: &Node, target: Option<&str>, req: &RestRequest) -> EsResult<Table> {
    let health_filter = req.param("health").map(Health::parse).transpose()?;
    let expand = Expand::from_request(req, Expand::OPEN_CLOSED)?;
    let (ignore_unavailable, allow_no_indices) = cluster::lenience(req, false, true)?;
    let mut list =
        cluster::resolve_indices(node, target, expand, ignore_unavailable, allow_no_indices)?;
    list.sort_by(|a, b| a.name.cmp(&b.name));
    let mut cols = vec![
        col("health", "h", "", "current health status"),
        col("status", "s", "", "open/close status"),
        col("index", "i,idx", "", "index name"),
        col("uuid", "id,uuid", "", "index uuid"),
        col(
            "pri",
            "p,shards.primary,shardsPrimary",
            "r",
            "number of primary shards",
        ),
        col(
            "rep",
            "r,shards.replica,shardsReplica",
            "r",
            "number of replica shards",
        ),
        col("docs.count", "dc,docsCount", "r", "available docs"),
        col("docs.deleted", "dd,docsDeleted", "r", "deleted docs"),
        col(
            "creation.date",
            "cd",
            "h",
            "index creation date (millisecond value)",
        ),
        col(
            "creation.date.string",
            "cds",
            "h",
            "index creation date (as string)",
        ),
        col(
            "store.size",
            "ss,storeSize",
            "r",
            "store size of primaries & replicas",
        ),
        col("pri.store.size", "", "r", "store size of primaries"),
        col("dataset.size", "", "rh", "total size of dataset"),
    ];
    cols.extend(stat_columns());
    cols.push(col(
        "memory.total",
        "tm,memoryTotal",
        "rh",
        "total used memory",
    ));
    let mut t = Table::new(cols);
    let opts = StatsOptions::default();
    for idx in list {
        let h = cluster::index_health(&idx);
        if health_filter.is_some_and(|f| f != h.status) {
            continue;
        }
        let closed = idx.is_closed();
        // The started shards' numbers; with none started, ES has no stats and leaves them empty.
        let numbers = (!closed && h.active_primary > 0).then(|| {
            let mut n = Numbers::default();
            for s in stats::index_shard_numbers(&idx, &opts) {
                n.add(&s);
            }
            n
        });
        let n = numbers.as_ref();
        let mut row = vec![
            Cell::s(h.status.as_str()),
            Cell::s(if closed { "close" } else { "open" }),
            Cell::s(idx.name.clone()),
            Cell::s(idx.uuid.clone()),
            Cell::i(h.shards),
            Cell::i(h.replicas),
            n.map(|n| Cell::i(n.docs_count)).unwrap_or(Cell::Null),
            n.map(|n| Cell::i(n.docs_deleted)).unwrap_or(Cell::Null),
            Cell::i(idx.creation_date),
            Cell::s(iso_date(idx.creation_date)),
            n.map(|n| Cell::Bytes(n.store_bytes)).unwrap_or(Cell::Null),
            n.map(|n| Cell::Bytes(n.store_bytes)).unwrap_or(Cell::Null),
            n.map(|n| Cell::Bytes(n.store_bytes)).unwrap_or(Cell::Null),
        ];
        row.extend(stat_cells(n));
        row.push(n.map(|_| Cell::Bytes(0)).unwrap_or(Cell::Null));
        t.push(row);
    }
    Ok(t)
}

fn health(node: &Node, info: &NodeInfo, _req: &RestRequest) -> EsResult<Table> {
    let h = cluster::cluster_health(node, None, Expand::ALL)?;
    let mut cols = epoch_columns();
    cols.extend([
        col("cluster", "cl", "", "cluster name"),
        col("status", "st", "", "health status"),
        col("node.total", "nt,nodeTotal", "r", "total number of nodes"),
        col(
            "node.data",
            "nd,nodeData",
            "r",
            "number of nodes that can store data",
        ),
        col(
            "shards",
            "t,sh,shards.total,shardsTotal",
            "r",
            "total number of shards",
        ),
        col(
            "pri",
            "p,shards.primary,shardsPrimary",
            "r",
            "number of primary shards",
        ),
        col(
            "relo",
            "r,shards.relocating,shardsRelocating",
            "r",
            "number of relocating nodes",
        ),
        col(
            "init",
            "i,shards.initializing,shardsInitializing",
            "r",
            "number of initializing nodes",
        ),
        col(
            "unassign",
            "u,shards.unassigned,shardsUnassigned",
            "r",
            "number of unassigned shards",
        ),
        col(
            "unassign.pri",
            "up,shards.unassigned.primary,shardsUnassignedPrimary",
            "r",
            "number of unassigned primary shards",
        ),
        col(
            "pending_tasks",
            "pt,pendingTasks",
            "r",
            "number of pending tasks",
        ),
        col(
            "max_task_wait_time",
            "mtwt,maxTaskWaitTime",
            "r",
            "wait time of longest task pending",
        ),
        col(
            "active_shards_percent",
            "asp,activeShardsPercent",
            "r",
            "active number of shards in percent",
        ),
    ]);
    let mut t = Table::new(cols);
    let mut row = epoch_cells();
    let pct = h.active_percent();
    row.extend([
        Cell::s(info.cluster_name.clone()),
        Cell::s(h.status.as_str()),
        Cell::i(1),
        Cell::i(1),
        Cell::i(h.active),
        Cell::i(h.active_primary),
        Cell::i(0),
        Cell::i(0),
        Cell::i(h.unassigned),
        Cell::i(0),
        Cell::i(0),
        Cell::s("-"),
        Cell::Num(pct, format!("{pct:.1}%")),
    ]);
    t.push(row);
    Ok(t)
}

fn count(node: &Node, target: Option<&str>, req: &RestRequest) -> EsResult<Table> {
    let expand = Expand::from_request(req, Expand::OPEN)?;
    let (ignore_unavailable, allow_no_indices) = cluster::lenience(req, false, true)?;
    let mut list =
        cluster::resolve_indices(node, target, expand, ignore_unavailable, allow_no_indices)?;
    // As the count search under it: red indices are left out (their shards fail), and when
    // nothing else is left it is the search's 503.
    let red: Vec<(String, Vec<usize>)> = list
        .iter()
        .filter(|i| !i.is_closed())
        .map(|i| {
            (
                i.name.clone(),
                i.allocation_failures().into_keys().collect(),
            )
        })
        .filter(|(_, failed): &(String, Vec<usize>)| !failed.is_empty())
        .collect();
    if !red.is_empty() {
        list.retain(|i| i.is_closed() || i.allocation_failures().len() < i.num_shards());
        if list.is_empty() {
            return Err(crate::search::all_shards_unavailable(&red));
        }
    }
    let mut total = 0u64;
    for idx in &list {
        // document-level security: only the documents the role query lets the subject see
        let dls = req
            .doc_security
            .as_ref()
            .and_then(|d| d.filter(&idx.name, &[]));
        if let Some(filter) = dls {
            let seen =
                crate::search::matching_ids(idx, Some(&filter), None, &Default::default(), None)?;
            total += seen.len() as u64;
            continue;
        }
        for s in idx.started_shards()? {
            total += s.root_doc_count()?;
        }
    }
    let mut cols = epoch_columns();
    cols.push(col(
        "count",
        "dc,docs.count,docsCount",
        "",
        "the document count",
    ));
    let mut t = Table::new(cols);
    let mut row = epoch_cells();
    row.push(Cell::i(total));
    t.push(row);
    Ok(t)
}

fn shards(
    node: &Node,
    info: &NodeInfo,
    target: Option<&str>,
    _req: &RestRequest,
) -> EsResult<Table> {
    let mut list = cluster::resolve_indices(node, target, Expand::ALL, false, true)?;
    list.sort_by(|a, b| a.name.cmp(&b.name));
    let mut cols = vec![
        col("index", "i,idx", "", "index name"),
        col("shard", "s,sh", "r", "shard name"),
        col("prirep", "p,pr,primaryOrReplica", "r", "primary or replica"),
        col("state", "st", "", "shard state"),
        col("docs", "d,dc", "r", "number of docs in shard"),
        col(
            "store",
            "sto",
            "r",
            "store size of shard (how much disk it uses)",
        ),
        col("dataset", "", "rh", "total size of dataset"),
        col("ip", "", "", "ip of node where it lives"),
        col("id", "", "h", "unique id of node where it lives"),
        col("node", "n", "", "name of node where it lives"),
        col("sync_id", "", "h", "sync id"),
        col(
            "unassigned.reason",
            "ur",
            "h",
            "reason shard became unassigned",
        ),
        col(
            "unassigned.at",
            "ua",
            "h",
            "time shard became unassigned (UTC)",
        ),
        col("unassigned.for", "uf", "h", "time has been unassigned"),
        col(
            "unassigned.details",
            "ud",
            "h",
            "additional details as to why the shard became unassigned",
        ),
        col("recoverysource.type", "rs", "h", "recovery source type"),
    ];
    cols.extend(stat_columns());
    cols.extend([
        col("seq_no.max", "sqm,maxSeqNo", "rh", "max sequence number"),
        col(
            "seq_no.local_checkpoint",
            "sql,localCheckpoint",
            "rh",
            "local checkpoint",
        ),
        col(
            "seq_no.global_checkpoint",
            "sqg,globalCheckpoint",
            "rh",
            "global checkpoint",
        ),
        col("path.data", "pd,dataPath", "h", "shard data path"),
        col("path.state", "ps,statsPath", "h", "shard state path"),
    ]);
    let mut t = Table::new(cols);
    let id = cluster::node_id(node);
    let ip = info.publish_host();
    let opts = StatsOptions::default();
    for idx in list {
        let h = cluster::index_health(&idx);
        let mut numbers: Vec<Option<Numbers>> = vec![None; h.shards];
        if !idx.is_closed() {
            for (s, n) in stats::shard_numbers_by_id(&idx, &opts) {
                if let Some(slot) = numbers.get_mut(s) {
                    *slot = Some(n);
                }
            }
        }
        for (s, n) in numbers.iter().enumerate().take(h.shards) {
            let n = n.as_ref();
            let path = idx.path().join(s.to_string()).display().to_string();
            let failure = idx.shard_failure(s).filter(|_| !idx.is_closed());
            if let Some(f) = &failure {
                // The primary failed to open: unassigned, as ES's `ALLOCATION_FAILED`.
                let mut row = vec![
                    Cell::s(idx.name.clone()),
                    Cell::i(s),
                    Cell::s("p"),
                    Cell::s("UNASSIGNED"),
                    Cell::Null,
                    Cell::Null,
                    Cell::Null,
                    Cell::Null,
                    Cell::Null,
                    Cell::Null,
                    Cell::Null,
                    Cell::s("ALLOCATION_FAILED"),
                    Cell::s(iso_date(f.at)),
                    Cell::Time((now_millis() - f.at).max(0) as u64),
                    Cell::s(f.details(&idx.name, &idx.uuid)),
                    Cell::s("EXISTING_STORE"),
                ];
                row.extend(stat_cells(None));
                row.extend(std::iter::repeat_n(Cell::Null, 5));
                t.push(row);
            } else {
                let mut row = vec![
                    Cell::s(idx.name.clone()),
                    Cell::i(s),
                    Cell::s("p"),
                    Cell::s("STARTED"),
                    n.map(|n| Cell::i(n.docs_count)).unwrap_or(Cell::Null),
                    n.map(|n| Cell::Bytes(n.store_bytes)).unwrap_or(Cell::Null),
                    n.map(|n| Cell::Bytes(n.store_bytes)).unwrap_or(Cell::Null),
                    Cell::s(ip.clone()),
                    Cell::s(id.clone()),
                    Cell::s(info.node_name.clone()),
                    Cell::Null,
                    Cell::Null,
                    Cell::Null,
                    Cell::Null,
                    Cell::Null,
                    Cell::s("EXISTING_STORE"),
                ];
                row.extend(stat_cells(n));
                let seq = n.map(|n| Cell::i(n.max_seq_no)).unwrap_or(Cell::Null);
                row.extend([
                    seq.clone(),
                    seq.clone(),
                    seq,
                    Cell::s(path.clone()),
                    Cell::s(path),
                ]);
                t.push(row);
            }
            let unassigned_for = (now_millis() - idx.creation_date).max(0) as u64;
            for _ in 0..h.replicas {
                let mut row = vec![
                    Cell::s(idx.name.clone()),
                    Cell::i(s),
                    Cell::s("r"),
                    Cell::s("UNASSIGNED"),
                    Cell::Null,
                    Cell::Null,
                    Cell::Null,
                    Cell::Null,
                    Cell::Null,
                    Cell::Null,
                    Cell::Null,
                    Cell::s("INDEX_CREATED"),
                    Cell::s(iso_date(idx.creation_date)),
                    Cell::Time(unassigned_for),
                    Cell::Null,
                    Cell::s("PEER"),
                ];
                row.extend(stat_cells(None));
                row.extend(std::iter::repeat_n(Cell::Null, 5));
                t.push(row);
            }
        }
    }
    Ok(t)
}

fn segments(
    node: &Node,
    info: &NodeInfo,
    target: Option<&str>,
    req: &RestRequest,
) -> EsResult<Table> {
    let (ignore_unavailable, allow_no_indices) = cluster::lenience(req, false, true)?;
    let mut list = cluster::resolve_indices(
        node,
        target,
        Expand::OPEN,
        ignore_unavailable,
        allow_no_indices,
    )?;
    if let Some(c) = list.iter().find(|i| i.is_closed()) {
        if !ignore_unavailable {
            return Err(EsError::index_closed(&c.name, &c.uuid));
        }
    }
    list.retain(|i| !i.is_closed());
    list.sort_by(|a, b| a.name.cmp(&b.name));
    let mut t = Table::new(vec![
        col("index", "i,idx", "", "index name"),
        col("shard", "s,sh", "r", "shard name"),
        col("prirep", "p,pr,primaryOrReplica", "r", "primary or replica"),
        col("ip", "", "", "ip of node where it lives"),
        col("id", "", "h", "unique id of node where it lives"),
        col("segment", "seg", "", "segment name"),
        col("generation", "g,gen", "r", "segment generation"),
        col(
            "docs.count",
            "dc,docsCount",
            "r",
            "number of docs in segment",
        ),
        col(
            "docs.deleted",
            "dd,docsDeleted",
            "r",
            "number of deleted docs in segment",
        ),
        col("size", "si", "r", "segment size in bytes"),
        col("size.memory", "sm", "r", "segment memory in bytes"),
        col("committed", "ic,isCommitted", "r", "is segment committed"),
        col("searchable", "is,isSearchable", "r", "is segment searched"),
        col("version", "v,ver", "r", "version"),
        col("compound", "ico,isCompound", "r", "is segment compound"),
    ]);
    let id = cluster::node_id(node);
    let ip = info.publish_host();
    // An unassigned shard has no segment to list.
    for idx in list.iter() {
        for s in idx.started_shards()? {
            for g in s.segments()? {
                t.push(vec![
                    Cell::s(idx.name.clone()),
                    Cell::i(s.id),
                    Cell::s("p"),
                    Cell::s(ip.clone()),
                    Cell::s(id.clone()),
                    Cell::s(g.name.clone()),
                    Cell::i(g.generation),
                    Cell::i(g.num_docs),
                    Cell::i(g.deleted_docs),
                    Cell::Bytes(g.size_in_bytes),
                    Cell::i(0),
                    Cell::s(g.committed.to_string()),
                    Cell::s(g.search.to_string()),
                    Cell::s(cluster::LUCENE_VERSION),
                    Cell::s("false"),
                ]);
            }
        }
    }
    Ok(t)
}

fn nodes(node: &Node, info: &NodeInfo, req: &RestRequest) -> EsResult<Table> {
    let full_id = req.bool_param("full_id", false)?;
    let mut t = Table::new(vec![
        col("id", "nodeId", "h", "unique node id"),
        col("pid", "p", "h", "process id"),
        col("ip", "i", "", "ip address"),
        col("port", "po", "h", "bound transport port"),
        col("http_address", "http", "h", "bound http address"),
        col("version", "v", "h", "es version"),
        col("type", "t", "h", "es distribution type"),
        col("build", "b", "h", "es build hash"),
        col("disk.total", "dt,diskTotal", "rh", "total disk space"),
        col("disk.used", "du,diskUsed", "rh", "used disk space"),
        col(
            "disk.avail",
            "d,da,disk,diskAvail",
            "rh",
            "available disk space",
        ),
        col(
            "disk.used_percent",
            "dup,diskUsedPercent",
            "rh",
            "used disk space percentage",
        ),
        col(
            "heap.current",
            "hc,heapCurrent",
            "rh",
            "used heap (process resident memory)",
        ),
        col(
            "heap.percent",
            "hp,heapPercent",
            "r",
            "used heap ratio (resident memory of total memory)",
        ),
        col("heap.max", "hm,heapMax", "rh", "max heap (total memory)"),
        col("ram.current", "rc,ramCurrent", "rh", "used machine memory"),
        col(
            "ram.percent",
            "rp,ramPercent",
            "r",
            "used machine memory ratio",
        ),
        col("ram.max", "rm,ramMax", "rh", "total machine memory"),
        col(
            "file_desc.current",
            "fdc,fileDescriptorCurrent",
            "rh",
            "used file descriptors",
        ),
        col(
            "file_desc.percent",
            "fdp,fileDescriptorPercent",
            "rh",
            "used file descriptor ratio",
        ),
        col(
            "file_desc.max",
            "fdm,fileDescriptorMax",
            "rh",
            "max file descriptors",
        ),
        col("cpu", "", "r", "recent cpu usage"),
        col("load_1m", "l", "r", "1m load avg"),
        col("load_5m", "", "r", "5m load avg"),
        col("load_15m", "", "r", "15m load avg"),
        col("uptime", "u", "rh", "node uptime"),
        col(
            "node.role",
            "r,role,nodeRole",
            "",
            "m:master eligible node, d:data node, i:ingest node, -:coordinating node only",
        ),
        col("master", "m", "", "*:current master"),
        col("name", "n", "", "node name"),
    ]);
    let id = cluster::node_id(node);
    let p = cluster::probe_process(info.started);
    let os = cluster::probe_os();
    let fs = cluster::probe_fs(&node.data);
    let pct = |part: u64, whole: u64| (part * 100 + whole / 2).checked_div(whole).unwrap_or(0);
    let ram_used = os.mem_total.saturating_sub(os.mem_free);
    let disk_used = fs.total.saturating_sub(fs.available);
    let load = |i: usize| match os.load {
        Some(l) => Cell::Num(l[i], format!("{:.2}", l[i])),
        None => Cell::Null,
    };
    t.push(vec![
        Cell::s(if full_id {
            id.clone()
        } else {
            id.chars().take(4).collect()
        }),
        Cell::i(p.pid),
        Cell::s(info.publish_host()),
        Cell::i(9300),
        Cell::s(info.publish_address()),
        Cell::s(cluster::ES_VERSION),
        Cell::s("tar"),
        Cell::s(env!("CARGO_PKG_VERSION")),
        Cell::Bytes(fs.total),
        Cell::Bytes(disk_used),
        Cell::Bytes(fs.available),
        Cell::Num(
            if fs.total == 0 {
                0.0
            } else {
                disk_used as f64 * 100.0 / fs.total as f64
            },
            format!(
                "{:.2}",
                if fs.total == 0 {
                    0.0
                } else {
                    disk_used as f64 * 100.0 / fs.total as f64
                }
            ),
        ),
        Cell::Bytes(p.resident_bytes),
        Cell::i(pct(p.resident_bytes, os.mem_total)),
        Cell::Bytes(os.mem_total),
        Cell::Bytes(ram_used),
        Cell::i(pct(ram_used, os.mem_total)),
        Cell::Bytes(os.mem_total),
        Cell::i(p.open_fds),
        Cell::i(pct(p.open_fds, p.max_fds)),
        Cell::i(p.max_fds),
        Cell::i(p.cpu_percent),
        load(0),
        load(1),
        load(2),
        Cell::Time(info.started.elapsed().as_millis() as u64),
        Cell::s(cluster::ROLE_LETTERS),
        Cell::s("*"),
        Cell::s(info.node_name.clone()),
    ]);
    Ok(t)
}

/// `GET /_cat/aliases[/{name}]`. With security, as ES's get aliases request: only the
/// aliases whose index and name the subject holds `indices:admin/aliases/get` on.
fn aliases(node: &Node, target: Option<&str>, req: &RestRequest) -> EsResult<Table> {
    const ACTION: &str = "indices:admin/aliases/get";
    let patterns = crate::rest::list_param(target);
    let mut t = Table::new(vec![
        col("alias", "a", "", "alias name"),
        col("index", "i,idx", "", "index alias points to"),
        col("filter", "f,fi", "", "filter"),
        col("routing.index", "ri,routingIndex", "", "index routing"),
        col("routing.search", "rs,routingSearch", "", "search routing"),
        col("is_write_index", "w,isWriteIndex", "", "write index"),
    ]);
    let mut rows = Vec::new();
    for idx in node.all() {
        if req
            .authorized
            .as_ref()
            .is_some_and(|a| !a.allows(ACTION, &idx.name))
        {
            continue;
        }
        for (name, meta) in idx.aliases() {
            if req
                .authorized
                .as_ref()
                .is_some_and(|a| !a.allows(ACTION, &name))
            {
                continue;
            }
            if !patterns.is_empty()
                && !patterns
                    .iter()
                    .any(|p| lode_engine::mapping::wildcard_match(p, &name))
            {
                continue;
            }
            let s = |v: Option<&String>| Cell::Str(v.cloned().unwrap_or_else(|| "-".into()));
            rows.push((
                name.clone(),
                idx.name.clone(),
                vec![
                    Cell::Str(name.clone()),
                    Cell::Str(idx.name.clone()),
                    Cell::Str(if meta.filter.is_some() { "*" } else { "-" }.into()),
                    s(meta.index_routing.as_ref()),
                    s(meta.search_routing.as_ref()),
                    Cell::Str(meta.is_write_index.map_or("-".into(), |w| w.to_string())),
                ],
            ));
        }
    }
    rows.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    for (_, _, r) in rows {
        t.push(r);
    }
    Ok(t)
}

/// `GET /_cat/thread_pool[/{thread_pool_patterns}]`: one row per pool, by name.
fn thread_pool(node: &Node, info: &NodeInfo, target: Option<&str>) -> Table {
    let patterns = crate::rest::list_param(target);
    let mut t = Table::new(vec![
        col("node_name", "nn", "", "node name"),
        col("node_id", "id", "h", "persistent node id"),
        col("ephemeral_node_id", "eid", "h", "ephemeral node id"),
        col("pid", "p", "h", "process id"),
        col("host", "h", "h", "host name"),
        col("ip", "i", "h", "ip address"),
        col("port", "po", "h", "bound transport port"),
        col("name", "n", "", "thread pool name"),
        col("type", "t", "h", "thread pool type"),
        col("active", "a", "r", "number of active threads"),
        col("pool_size", "psz", "rh", "number of threads"),
        col("queue", "q", "r", "number of tasks currently in queue"),
        col(
            "queue_size",
            "qs",
            "rh",
            "maximum number of tasks permitted in queue",
        ),
        col("rejected", "r", "r", "number of rejected tasks"),
        col(
            "largest",
            "l",
            "rh",
            "highest number of seen active threads",
        ),
        col("completed", "c", "rh", "number of completed tasks"),
        col(
            "core",
            "cr",
            "rh",
            "core number of threads in a scaling thread pool",
        ),
        col(
            "max",
            "mx",
            "rh",
            "maximum number of threads in a scaling thread pool",
        ),
        col(
            "size",
            "sz",
            "rh",
            "number of threads in a fixed thread pool",
        ),
        col("keep_alive", "ka", "h", "thread keep alive time"),
    ]);
    let id = cluster::node_id(node);
    for pool in info.pools.iter() {
        if !patterns.is_empty() && !patterns.iter().any(|p| wildcard_match(p, pool.name)) {
            continue;
        }
        let s = pool.stats();
        let scaling = pool.kind == crate::thread_pool::Kind::Scaling;
        let opt = |v: usize, show: bool| if show { Cell::i(v) } else { Cell::Null };
        t.push(vec![
            Cell::s(info.node_name.clone()),
            Cell::s(id.clone()),
            Cell::s(id.clone()),
            Cell::i(std::process::id()),
            Cell::s(info.publish_host()),
            Cell::s(info.publish_host()),
            Cell::i(9300),
            Cell::s(pool.name),
            Cell::s(pool.kind.as_str()),
            Cell::i(s.active),
            Cell::i(s.threads),
            Cell::i(s.queue),
            Cell::i(pool.queue_size),
            Cell::i(s.rejected),
            Cell::i(s.largest),
            Cell::i(s.completed),
            opt(pool.core, scaling),
            opt(pool.max, scaling),
            opt(pool.max, !scaling),
            pool.keep_alive.clone().map_or(Cell::Null, Cell::Str),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest::{Method, RestBody};
    use lode_engine::index::IndexService;
    use lode_engine::shard::VersionReq;
    use serde_json::json;
    use std::sync::Arc;
    use std::time::Instant;

    fn request(path: &str, params: &[(&str, &str)]) -> RestRequest {
        RestRequest {
            doc_security: None,
            field_security: None,
            authorized: None,
            method: Method::Get,
            path: path.to_string(),
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: Vec::new(),
        }
    }

    fn info() -> NodeInfo {
        NodeInfo {
            node_name: "lode-1".into(),
            cluster_name: "lode".into(),
            http_address: "127.0.0.1:9200".into(),
            started: Instant::now(),
            pools: std::sync::Arc::new(crate::thread_pool::ThreadPools::with_defaults("lode-1")),
        }
    }

    fn text(r: RestResponse) -> String {
        match r.body {
            RestBody::Text(t) => t,
            other => panic!("not text: {other:?}"),
        }
    }

    fn json_body(r: RestResponse) -> Value {
        match r.body {
            RestBody::Json(v) => v,
            other => panic!("not json: {other:?}"),
        }
    }

    fn run(node: &Node, what: &str, target: Option<&str>, params: &[(&str, &str)]) -> String {
        text(
            cat(
                node,
                &info(),
                what,
                target,
                &request(&format!("/_cat/{what}"), params),
            )
            .unwrap(),
        )
    }

    fn add_docs(idx: &IndexService, n: usize) {
        for i in 0..n {
            let src = json!({"test": i});
            let raw: Arc<[u8]> = serde_json::to_vec(&src).unwrap().into();
            idx.index_doc(
                Some(&i.to_string()),
                &src,
                raw,
                None,
                VersionReq::Internal,
                false,
            )
            .unwrap();
        }
        idx.refresh().unwrap();
    }

    fn three_indices() -> (tempfile::TempDir, Arc<Node>) {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(dir.path()).unwrap();
        let zero = json!({"number_of_shards": 1, "number_of_replicas": 0});
        add_docs(&node.create_index("foo", &zero, &Value::Null).unwrap(), 0);
        add_docs(&node.create_index("bar", &zero, &Value::Null).unwrap(), 1);
        add_docs(&node.create_index("baz", &zero, &Value::Null).unwrap(), 12);
        (dir, node)
    }

    #[test]
    fn formatting_helpers() {
        assert_eq!(human_bytes(225), "225b");
        assert_eq!(human_bytes(1024), "1kb");
        assert_eq!(human_bytes(1536), "1.5kb");
        assert_eq!(human_bytes(2047), "1.9kb");
        assert_eq!(human_bytes(5 << 30), "5gb");
        assert_eq!(human_time(0), "0s");
        assert_eq!(human_time(17), "17ms");
        assert_eq!(human_time(1250), "1.2s");
        assert_eq!(human_time(90_000), "1.5m");
        assert_eq!(iso_date(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_date(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
    }

    #[test]
    fn table_alignment_headers_and_sorting() {
        let mut t = Table::new(vec![
            col("name", "n", "", "d"),
            col("num", "x", "r", "d"),
            col("size", "", "r", "d"),
        ]);
        t.push(vec![Cell::s("a"), Cell::i(5), Cell::Bytes(2048)]);
        t.push(vec![Cell::s("bbb"), Cell::i(10), Cell::Bytes(7)]);
        let render =
            |t: Table, p: &[(&str, &str)]| text(respond(t, &request("/_cat/x", p)).unwrap());
        let clone = |t: &Table| Table {
            cols: t.cols.clone(),
            rows: t.rows.clone(),
        };
        assert_eq!(render(clone(&t), &[]), "a    5 2kb\nbbb 10  7b\n");
        assert_eq!(
            render(clone(&t), &[("v", "true")]),
            "name num size\na      5  2kb\nbbb   10   7b\n"
        );
        assert_eq!(
            render(clone(&t), &[("h", "x,name"), ("v", "")]),
            " x name\n 5 a\n10 bbb\n"
        );
        assert_eq!(
            render(clone(&t), &[("s", "size"), ("h", "name")]),
            "bbb\na\n"
        );
        assert_eq!(
            render(clone(&t), &[("s", "num:desc"), ("h", "name")]),
            "bbb\na\n"
        );
        assert_eq!(
            render(clone(&t), &[("bytes", "b"), ("h", "size")]),
            "2048\n   7\n"
        );
        assert_eq!(render(clone(&t), &[("h", "n*")]), "a    5\nbbb 10\n");
        let err = respond(clone(&t), &request("/_cat/x", &[("s", "nope")]))
            .err()
            .unwrap();
        assert_eq!(err.reason, "Unable to sort by unknown sort key `nope`");
        let help = render(clone(&t), &[("help", "true")]);
        assert_eq!(help, "name | n | d\nnum  | x | d\nsize |   | d\n");
        let j = json_body(
            respond(
                clone(&t),
                &request("/_cat/x", &[("format", "json"), ("bytes", "kb")]),
            )
            .unwrap(),
        );
        assert_eq!(
            j,
            json!([{"name": "a", "num": "5", "size": "2"}, {"name": "bbb", "num": "10", "size": "0"}])
        );
        let y = render(t, &[("format", "yaml"), ("h", "name")]);
        assert_eq!(y, "---\n- \"name\": \"a\"\n- \"name\": \"bbb\"\n");
    }

    #[test]
    fn cat_indices() {
        let (_d, node) = three_indices();
        let out = run(&node, "indices", None, &[]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3);
        let f: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(&f[..3], &["green", "open", "foo"]);
        assert_eq!(f[3].len(), 22);
        assert_eq!(&f[4..8], &["1", "0", "0", "0"]);
        assert!(f[8].ends_with('b') && f[9].ends_with('b'));
        assert_eq!(f.len(), 10);
        assert_eq!(
            run(&node, "indices", Some("ba*"), &[("h", "i")]),
            "bar\nbaz\n"
        );
        assert_eq!(
            run(
                &node,
                "indices",
                None,
                &[("h", "index,docs.count"), ("s", "docs.count:desc")]
            ),
            "baz 12\nbar  1\nfoo  0\n"
        );
        node.index("bar").unwrap().close().unwrap();
        assert_eq!(
            run(
                &node,
                "indices",
                None,
                &[("h", "status,index"), ("s", "status,index:desc")]
            ),
            "close bar\nopen  foo\nopen  baz\n"
        );
        let closed = run(&node, "indices", Some("bar"), &[]);
        assert!(closed.starts_with("green close bar "), "{closed}");
        let cd = run(&node, "indices", Some("foo"), &[("h", "i,cd,cds")]);
        assert!(cd.trim_end().ends_with('Z'), "{cd}");
        node.create_index("rep", &json!({"number_of_replicas": 1}), &Value::Null)
            .unwrap();
        assert_eq!(
            run(
                &node,
                "indices",
                None,
                &[("health", "yellow"), ("h", "index")]
            ),
            "rep\n"
        );
        assert!(cat(
            &node,
            &info(),
            "indices",
            None,
            &request("/_cat/indices", &[("health", "bad")])
        )
        .is_err());
        assert_eq!(
            cat(
                &node,
                &info(),
                "indices",
                Some("nope"),
                &request("/_cat/indices/nope", &[])
            )
            .unwrap_err()
            .status,
            404
        );
        node.create_index(
            "hid",
            &json!({"index": {"hidden": true}, "number_of_replicas": 0}),
            &Value::Null,
        )
        .unwrap();
        assert!(!run(&node, "indices", None, &[("h", "i")]).contains("hid"));
        assert!(run(
            &node,
            "indices",
            None,
            &[("h", "i"), ("expand_wildcards", "all")]
        )
        .contains("hid"));
    }

    #[test]
    fn cat_count_health_shards_segments() {
        let (_d, node) = three_indices();
        let count = run(&node, "count", None, &[]);
        let f: Vec<&str> = count.split_whitespace().collect();
        assert_eq!(f.len(), 3);
        assert_eq!(f[2], "13");
        assert_eq!(f[1].len(), 8);
        assert_eq!(run(&node, "count", Some("bar"), &[("h", "count")]), "1\n");
        let count_json = json_body(
            cat(
                &node,
                &info(),
                "count",
                Some("baz"),
                &request("/_cat/count/baz", &[("format", "json")]),
            )
            .unwrap(),
        );
        assert_eq!(count_json[0]["count"], "12");

        let health = run(&node, "health", None, &[("ts", "false")]);
        let f: Vec<&str> = health.split_whitespace().collect();
        assert_eq!(
            f,
            vec!["lode", "green", "1", "1", "3", "3", "0", "0", "0", "0", "0", "-", "100.0%"]
        );

        node.create_index(
            "rep",
            &json!({"number_of_shards": 2, "number_of_replicas": 1}),
            &Value::Null,
        )
        .unwrap();
        let shards = run(&node, "shards", Some("rep"), &[]);
        let lines: Vec<&str> = shards.lines().collect();
        assert_eq!(lines.len(), 4);
        let f: Vec<&str> = lines[0].split_whitespace().collect();
        assert_eq!(f.len(), 8, "{shards}");
        assert_eq!(
            (f[..5].to_vec(), f[6], f[7]),
            (vec!["rep", "0", "p", "STARTED", "0"], "127.0.0.1", "lode-1")
        );
        assert_eq!(lines[1].trim_end(), "rep 0 r UNASSIGNED");
        assert!(
            lines[1].len() > lines[1].trim_end().len(),
            "null cells are still padded"
        );
        assert_eq!(
            run(
                &node,
                "shards",
                Some("ba*,foo"),
                &[("h", "index,docs"), ("s", "docs")]
            ),
            "foo  0\nbar  1\nbaz 12\n"
        );
        // Unassigned replicas have no docs: nulls sort last (first when descending).
        assert_eq!(
            run(&node, "shards", None, &[("h", "p,d"), ("s", "docs")])
                .lines()
                .last()
                .map(str::trim_end),
            Some("r")
        );
        assert_eq!(
            run(&node, "shards", None, &[("h", "p,d"), ("s", "docs:desc")])
                .lines()
                .next()
                .map(str::trim_end),
            Some("r")
        );

        let segs = run(&node, "segments", Some("bar"), &[]);
        let f: Vec<&str> = segs.split_whitespace().collect();
        assert_eq!(&f[..3], &["bar", "0", "p"]);
        assert_eq!(&f[4..8], &["_0", "0", "1", "0"]);
        assert_eq!(&f[9..], &["0", "false", "true", "9.11.1", "false"]);
        let help = run(&node, "segments", None, &[("help", "")]);
        let names: Vec<&str> = help
            .lines()
            .map(|l| l.split_whitespace().next().unwrap())
            .collect();
        assert_eq!(names[..5], ["index", "shard", "prirep", "ip", "id"]);
        node.index("bar").unwrap().close().unwrap();
        assert_eq!(
            cat(
                &node,
                &info(),
                "segments",
                Some("bar"),
                &request("/_cat/segments/bar", &[])
            )
            .unwrap_err()
            .status,
            400
        );
        // One line per segment (the writer may have produced several), none for closed `bar`.
        let segs = run(&node, "segments", Some("ba*"), &[("h", "i")]);
        assert!(
            !segs.is_empty() && segs.lines().all(|l| l == "baz"),
            "{segs}"
        );
    }

    #[test]
    fn cat_nodes_and_aliases() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(dir.path()).unwrap();
        let out = run(&node, "nodes", None, &[("v", "true")]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2);
        let head: Vec<&str> = lines[0].split_whitespace().collect();
        assert_eq!(
            head,
            vec![
                "ip",
                "heap.percent",
                "ram.percent",
                "cpu",
                "load_1m",
                "load_5m",
                "load_15m",
                "node.role",
                "master",
                "name"
            ]
        );
        let f: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(f.len(), 10, "{out}");
        assert_eq!(
            (f[0], f[7], f[8], f[9]),
            ("127.0.0.1", "cdfhimrsw", "*", "lode-1")
        );
        assert_eq!(run(&node, "aliases", None, &[]), "");
        assert_eq!(
            run(&node, "aliases", None, &[("v", "true")]),
            "alias index filter routing.index routing.search is_write_index\n"
        );
        assert_eq!(run(&node, "indices", None, &[]), "");
        assert!(cat(&node, &info(), "nope", None, &request("/_cat/nope", &[])).is_err());
    }

    #[test]
    fn cat_thread_pool_lists_pools_by_name_with_patterns() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(dir.path()).unwrap();
        let all = run(&node, "thread_pool", None, &[("v", "true")]);
        let lines: Vec<&str> = all.lines().collect();
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>(),
            ["node_name", "name", "active", "queue", "rejected"]
        );
        let names: Vec<&str> = lines[1..]
            .iter()
            .map(|l| l.split_whitespace().nth(1).unwrap())
            .collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert!(names.contains(&"search") && names.contains(&"write"));
        let some = run(
            &node,
            "thread_pool",
            Some("sea*,write"),
            &[("h", "name,type,size,core,queue_size")],
        );
        let rows: Vec<Vec<&str>> = some
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows.len(), 2);
        let size = (crate::thread_pool::processors() * 3 / 2 + 1).to_string();
        assert_eq!(&rows[0][..3], ["search", "fixed", size.as_str()]);
        assert_eq!(rows[0][3], "1000");
        assert_eq!(
            (rows[1][0], rows[1][1], rows[1][3]),
            ("write", "fixed", "10000")
        );
        let m = run(
            &node,
            "thread_pool",
            Some("management"),
            &[("h", "type,core,max,size,keep_alive")],
        );
        assert_eq!(m.split_whitespace().next(), Some("scaling"));
        assert!(m.trim_end().ends_with("5m"));
    }
}
