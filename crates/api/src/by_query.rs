//! `_delete_by_query` and `_update_by_query`: Elasticsearch's bulk-by-scroll requests.
//!
//! The matching documents are read from the refreshed point in time, in `scroll_size` batches,
//! optionally split into `slices` that run in parallel, paced by `requests_per_second`, and
//! written back with `if_seq_no` so a document changed since the search is a version conflict
//! (counted, and fatal unless `conflicts=proceed`). Each request runs as a task
//! (see `tasks`), so it can be rethrottled, cancelled, or detached with `wait_for_completion=false`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use lode_engine::object_parser::{ignore, At, Field, ObjectParser, Style, Token};
use lode_engine::shard::{VersionReq, PRIMARY_TERM};
use lode_engine::translog::Location;
use lode_engine::{EsError, EsResult, IndexService, Node};
use serde_json::{json, Value};

use crate::rest::{RestRequest, RestResponse};
use crate::search::Searched;
use crate::tasks::Task;

const DEFAULT_SCROLL_SIZE: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Delete,
    Update,
}

impl Kind {
    fn action(self) -> &'static str {
        match self {
            Kind::Delete => "indices:data/write/delete/byquery",
            Kind::Update => "indices:data/write/update/byquery",
        }
    }
}

/// A validated request: everything is checked before any index is touched, as ES does.
struct Plan {
    kind: Kind,
    query: Option<Value>,
    /// The terms of the query's `terms` lookups, read before the documents are matched.
    lookups: lode_query::TermsLookups,
    script: Option<lode_painless::Script>,
    max_docs: Option<usize>,
    proceed_on_conflict: bool,
    scroll_size: usize,
    slices: Slices,
    requests_per_second: f64,
    refresh: bool,
    active_shards: Option<String>,
    timeout: Option<String>,
}

#[derive(Debug, Clone, Copy)]
enum Slices {
    Fixed(usize),
    Auto,
}

/// Parses `requests_per_second` (`-1` means unthrottled, which is infinity here).
pub fn requests_per_second(v: Option<&str>) -> EsResult<Option<f64>> {
    let Some(v) = v else { return Ok(None) };
    let bad = || {
        EsError::illegal_argument(
            "[requests_per_second] must be a float greater than 0. Use -1 to disable throttling.",
        )
    };
    let rps: f64 = v.trim().parse().map_err(|_| bad())?;
    if rps == -1.0 {
        return Ok(Some(f64::INFINITY));
    }
    if rps.is_nan() || rps <= 0.0 {
        return Err(bad());
    }
    Ok(Some(rps))
}

fn slices_param(v: Option<&str>) -> EsResult<Slices> {
    match v {
        None => Ok(Slices::Fixed(1)),
        Some("auto") => Ok(Slices::Auto),
        Some(s) => match s.parse::<usize>() {
            Ok(n) if n > 0 => Ok(Slices::Fixed(n)),
            _ => Err(EsError::illegal_argument(format!(
                "[slices] must be a positive integer or the string \"auto\", but was [{s}]"
            ))),
        },
    }
}

fn set_max_docs(slot: &mut Option<i64>, v: i64) -> EsResult<()> {
    if v < 0 {
        return Err(EsError::illegal_argument(format!(
            "[max_docs] parameter cannot be negative, found [{v}]"
        )));
    }
    match *slot {
        Some(old) if old != v => Err(EsError::illegal_argument(format!(
            "[max_docs] set to two different values [{old}] and [{v}]"
        ))),
        _ => {
            *slot = Some(v);
            Ok(())
        }
    }
}

fn int_value(v: &Value, key: &str) -> EsResult<i64> {
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .ok_or_else(|| EsError::illegal_argument(format!("[{key}] must be an integer, got [{v}]")))
}

fn conflicts_value(v: &str) -> EsResult<bool> {
    match v {
        "proceed" => Ok(true),
        "abort" => Ok(false),
        other => Err(EsError::illegal_argument(format!(
            "conflicts may only be \"proceed\" or \"abort\" but was [{other}]"
        ))),
    }
}

/// A `_delete_by_query` / `_update_by_query` body as read.
#[derive(Default)]
struct ByQueryBody {
    max_docs: Option<i64>,
    proceed: bool,
    query: Option<Value>,
    /// Compiled once the walk is done (stored scripts are the node's).
    script: Option<Value>,
}

/// "Unknown key for a TOKEN in [key].", as ES's search body parser words it.
fn unknown_key(at: &At<'_>, t: Token) -> EsError {
    EsError::parsing(format!(
        "Unknown key for a {} in [{}].",
        t.es_name(),
        at.key
    ))
}

type F = Field<ByQueryBody>;

/// The keys of both bodies (`AbstractBulkByQueryRestHandler`: a search body's `query`, the
/// request's own `max_docs` (or `size`) and `conflicts`); the rest of a search body is
/// accepted as ES does (`sort`, `_source` and friends do not change which documents are
/// processed), but `stored_fields` is refused as ES does.
static BY_QUERY_FIELDS: &[F] = &[
    F::new("query", "*", |b, _, v| {
        b.query = Some(v.clone());
        Ok(())
    }),
    F::new("max_docs", "*", |b, at, v| {
        set_max_docs(&mut b.max_docs, int_value(v, at.key)?)
    })
    .aliases(&["size"]),
    F::new("conflicts", "*", |b, _, v| {
        b.proceed = conflicts_value(v.as_str().unwrap_or_default())?;
        Ok(())
    }),
    F::new("stored_fields", "*", |_, _, _| {
        Err(EsError::illegal_argument(
            "stored_fields is not supported in this context",
        ))
    }),
    F::new("sort", "*", ignore),
    F::new("_source", "*", ignore),
    F::new("slice", "*", ignore),
    F::new("timeout", "*", ignore),
    F::new("terminate_after", "*", ignore),
    F::new("track_total_hits", "*", ignore),
];

const BY_QUERY_STYLE: Style = Style::Custom {
    unknown: |at, t, _| unknown_key(at, t),
    wrong_token: unknown_key,
};

static DELETE_BY_QUERY: ObjectParser<ByQueryBody> = ObjectParser {
    name: "delete_by_query",
    style: BY_QUERY_STYLE,
    fields: &[BY_QUERY_FIELDS],
};

/// `_update_by_query` also takes the `script` applied to each document.
static UPDATE_BY_QUERY: ObjectParser<ByQueryBody> = ObjectParser {
    name: "update_by_query",
    style: BY_QUERY_STYLE,
    fields: &[
        &[F::new("script", "*", |b, _, v| {
            b.script = Some(v.clone());
            Ok(())
        })],
        BY_QUERY_FIELDS,
    ],
};

fn plan(node: &Node, kind: Kind, req: &RestRequest) -> EsResult<Plan> {
    let mut body = match kind {
        Kind::Delete => req.required_body()?,
        Kind::Update => req.json_body()?.unwrap_or_else(|| json!({})),
    };
    crate::big_integers::exact_script_params(&req.body, &mut body)?;
    crate::stored_scripts::inline_all(node, &mut body)?;
    let Some(b) = body.as_object() else {
        return Err(EsError::parsing("request body must be an object"));
    };
    let parser = match kind {
        Kind::Delete => &DELETE_BY_QUERY,
        Kind::Update => &UPDATE_BY_QUERY,
    };
    let ByQueryBody {
        mut max_docs,
        mut proceed,
        mut query,
        script,
    } = parser.parse(b)?;
    let script = match script {
        Some(v) => {
            let stored = |id: &str| crate::stored_scripts::lookup(node, id);
            Some(lode_painless::Script::compile(&v, Some(&stored))?)
        }
        None => None,
    };
    if let Some(c) = req.param("conflicts") {
        proceed = conflicts_value(c)?;
    }
    for key in ["size", "max_docs"] {
        if let Some(v) = req.i64_param(key)? {
            set_max_docs(&mut max_docs, v)?;
        }
    }
    if let Some(qs) = crate::search::q_param_query(req) {
        query = Some(qs);
    }
    let scroll_size = req
        .usize_param("scroll_size")?
        .unwrap_or(DEFAULT_SCROLL_SIZE);
    let slices = slices_param(req.param("slices"))?;
    let requests_per_second =
        requests_per_second(req.param("requests_per_second"))?.unwrap_or(f64::INFINITY);
    if kind == Kind::Delete && query.is_none() {
        return Err(validation("query is missing"));
    }
    if let (Some(m), Slices::Fixed(s)) = (max_docs, slices) {
        if (m as usize) < s {
            return Err(validation("[max_docs] should be >= [slices]"));
        }
    }
    if scroll_size == 0 {
        return Err(validation("[size] parameter cannot be negative or zero"));
    }
    if let Some(q) = &query {
        lode_query::parse_query(q)?;
    }
    Ok(Plan {
        kind,
        lookups: crate::search::terms_lookups(node, query.as_ref(), req)?,
        query,
        script,
        max_docs: max_docs.map(|m| m as usize),
        proceed_on_conflict: proceed,
        scroll_size,
        slices,
        requests_per_second,
        refresh: req.bool_param("refresh", false)?,
        active_shards: req.param("wait_for_active_shards").map(str::to_string),
        timeout: req.param("timeout").map(str::to_string),
    })
}

fn validation(msg: &str) -> EsError {
    EsError::bad_request(
        "action_request_validation_exception",
        format!("Validation Failed: 1: {msg};"),
    )
}

/// `POST /{index}/_delete_by_query` and `POST /{index}/_update_by_query`.
pub fn run(node: &Arc<Node>, kind: Kind, expr: &str, req: &RestRequest) -> EsResult<RestResponse> {
    let plan = plan(node, kind, req)?;
    let targets = crate::search::targets(node, expr, req)?;
    // ES lets an update by query rewrite documents its subject sees only part of, losing the
    // hidden fields (elastic/elasticsearch#92014, a known bug); its update API refuses the
    // same case, and so does Lode here.
    if kind == Kind::Update && targets.iter().any(|t| t.fls.is_some()) {
        return Err(EsError::new(
            400,
            "security_exception",
            "Can't execute an update by query request if field level security is enabled",
        ));
    }
    let names: Vec<String> = targets
        .iter()
        .map(|t| format!("[{}]", t.index.name))
        .collect();
    let verb = match kind {
        Kind::Delete => "delete-by-query",
        Kind::Update => "update-by-query",
    };
    let task = crate::tasks::register(
        kind.action(),
        format!("{verb} {}", names.join(", ")),
        plan.requests_per_second,
    );
    if !req.bool_param("wait_for_completion", true)? {
        let node2 = node.clone();
        let task2 = task.clone();
        std::thread::Builder::new()
            .name(format!("lode-task-{}", task.id))
            .spawn(move || {
                let outcome = execute(&plan, &targets, &task2)
                    .map(|(_, body)| body)
                    .map_err(|e| e.to_error_json());
                crate::tasks::finish(&node2, &task2, outcome, true);
            })
            .map_err(|e| EsError::internal(format!("could not start task: {e}")))?;
        let id = format!("{}:{}", crate::cluster::node_id(node), task.id);
        return Ok(RestResponse::ok(json!({ "task": id })));
    }
    let result = execute(&plan, &targets, &task);
    let outcome = match &result {
        Ok((_, body)) => Ok(body.clone()),
        Err(e) => Err(e.to_error_json()),
    };
    crate::tasks::finish(node, &task, outcome, false);
    let (status, body) = result?;
    Ok(RestResponse::json(status, body))
}

/// What one slice has done so far.
#[derive(Default, Clone)]
struct Counts {
    total: usize,
    updated: usize,
    deleted: usize,
    batches: usize,
    version_conflicts: usize,
    noops: usize,
    throttled_millis: u64,
    failures: Vec<Value>,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.total += o.total;
        self.updated += o.updated;
        self.deleted += o.deleted;
        self.batches += o.batches;
        self.version_conflicts += o.version_conflicts;
        self.noops += o.noops;
        self.throttled_millis += o.throttled_millis;
        self.failures.extend(o.failures.iter().cloned());
    }

    /// ES's `BulkByScrollTask.Status` fields (without `failures`).
    fn status_json(&self, kind: Kind, rps: f64, slice_id: Option<usize>) -> Value {
        let mut v = serde_json::Map::new();
        if let Some(id) = slice_id {
            v.insert("slice_id".into(), json!(id));
        }
        v.insert("total".into(), json!(self.total));
        if kind == Kind::Update {
            v.insert("updated".into(), json!(self.updated));
        }
        v.insert("deleted".into(), json!(self.deleted));
        v.insert("batches".into(), json!(self.batches));
        v.insert("version_conflicts".into(), json!(self.version_conflicts));
        v.insert("noops".into(), json!(self.noops));
        v.insert("retries".into(), json!({"bulk": 0, "search": 0}));
        v.insert("throttled_millis".into(), json!(self.throttled_millis));
        v.insert(
            "requests_per_second".into(),
            json!(if rps.is_finite() { rps } else { -1.0 }),
        );
        v.insert("throttled_until_millis".into(), json!(0));
        Value::Object(v)
    }
}

struct Shared<'a> {
    plan: &'a Plan,
    task: &'a Task,
    slices: Vec<Mutex<Counts>>,
    abort: AtomicBool,
}

impl Shared<'_> {
    fn publish(&self) {
        let rps = self.task.requests_per_second();
        let mut sum = Counts::default();
        let mut per_slice = Vec::new();
        for (i, s) in self.slices.iter().enumerate() {
            let c = s.lock().unwrap();
            sum.add(&c);
            per_slice.push(c.status_json(self.plan.kind, rps / self.slices.len() as f64, Some(i)));
        }
        let mut status = sum.status_json(self.plan.kind, rps, None);
        if self.slices.len() > 1 {
            status["slices"] = json!(per_slice);
        }
        self.task.set_status(status);
    }

    fn stopped(&self) -> bool {
        self.abort.load(Ordering::Relaxed) || self.task.is_cancelled()
    }
}

/// One matching document, as the point-in-time search saw it.
struct Hit {
    index: usize,
    id: String,
    routing: Option<String>,
    seq_no: u64,
}

fn slice_of(id: &str, slices: usize) -> usize {
    // FNV-1a: stable, cheap, and spreads short ids well enough to balance slices.
    let mut h: u64 = 0xcbf29ce484222325;
    for b in id.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x100000001b3);
    }
    (h % slices as u64) as usize
}

fn execute(plan: &Plan, searched: &[Searched], task: &Task) -> EsResult<(u16, Value)> {
    let targets: Vec<Arc<IndexService>> = searched.iter().map(|s| s.index.clone()).collect();
    let targets = &targets[..];
    let started = Instant::now();
    for idx in targets {
        // As in ES, unavailable copies fail the bulk requests, which the response reports.
        if let Err(e) =
            check_active_shards(idx, plan.active_shards.as_deref(), plan.timeout.as_deref())
        {
            if e.status != 503 {
                return Err(e);
            }
            let mut body =
                Counts::default().status_json(plan.kind, task.requests_per_second(), None);
            body["took"] = json!(started.elapsed().as_millis() as u64);
            body["timed_out"] = json!(false);
            body["failures"] =
                json!([{"index": idx.name, "id": null, "cause": e.to_cause_json(), "status": 503}]);
            return Ok((503, body));
        }
    }
    let slices = match plan.slices {
        Slices::Fixed(n) => n,
        Slices::Auto => targets
            .iter()
            .filter_map(|i| i.shards().ok().map(|s| s.len()))
            .min()
            .unwrap_or(1)
            .max(1),
    };
    let mut hits: Vec<Vec<Hit>> = (0..slices).map(|_| Vec::new()).collect();
    for (ti, s) in searched.iter().enumerate() {
        let matches = crate::search::matching_ids(
            &s.index,
            plan.query.as_ref(),
            s.filter.as_ref(),
            &plan.lookups,
            s.fls.as_deref(),
        )?;
        for (id, routing, seq_no) in matches {
            let s = if slices > 1 { slice_of(&id, slices) } else { 0 };
            hits[s].push(Hit {
                index: ti,
                id,
                routing,
                seq_no,
            });
        }
    }
    let shared = Shared {
        plan,
        task,
        slices: (0..slices).map(|_| Mutex::new(Counts::default())).collect(),
        abort: AtomicBool::new(false),
    };
    shared.publish();
    let quota = |slice: usize| {
        plan.max_docs
            .map(|m| m / slices + usize::from(slice < m % slices))
    };
    let fatal: Mutex<Option<EsError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for (i, slice_hits) in hits.iter().enumerate() {
            let (shared, fatal) = (&shared, &fatal);
            let run = move || {
                if let Err(e) = run_slice(targets, shared, i, slice_hits, quota(i), slices) {
                    shared.abort.store(true, Ordering::Relaxed);
                    fatal.lock().unwrap().get_or_insert(e);
                }
            };
            if slices == 1 {
                run();
            } else {
                scope.spawn(run);
            }
        }
    });
    if let Some(e) = fatal.into_inner().unwrap() {
        return Err(e);
    }
    if plan.refresh {
        for idx in targets {
            idx.refresh()?;
        }
    }
    shared.publish();
    let mut sum = Counts::default();
    for s in &shared.slices {
        sum.add(&s.lock().unwrap());
    }
    let rps = task.requests_per_second();
    let mut body = json!({
        "took": started.elapsed().as_millis() as u64,
        "timed_out": false,
    });
    let status = sum.status_json(plan.kind, rps, None);
    for (k, v) in status.as_object().into_iter().flatten() {
        body[k] = v.clone();
    }
    if slices > 1 {
        body["slices"] = json!(shared
            .slices
            .iter()
            .enumerate()
            .map(|(i, s)| s
                .lock()
                .unwrap()
                .status_json(plan.kind, rps / slices as f64, Some(i)))
            .collect::<Vec<_>>());
    }
    if task.is_cancelled() {
        body["canceled"] = json!("by user request");
    }
    let http_status = sum
        .failures
        .iter()
        .filter_map(|f| f["status"].as_u64())
        .max()
        .map(|s| s as u16)
        .unwrap_or(200);
    body["failures"] = json!(sum.failures);
    Ok((http_status, body))
}

/// Processes one slice's hits in `scroll_size` batches; each batch is made durable with one
/// translog sync per shard, as an Elasticsearch bulk shard request is.
fn run_slice(
    targets: &[Arc<IndexService>],
    shared: &Shared,
    slice: usize,
    hits: &[Hit],
    quota: Option<usize>,
    slices: usize,
) -> EsResult<()> {
    let plan = shared.plan;
    let mut done = 0usize;
    let mut cursor = 0usize;
    while cursor < hits.len() && !shared.stopped() {
        if quota.is_some_and(|q| done >= q) {
            break;
        }
        let batch_start = Instant::now();
        let want = quota.map_or(plan.scroll_size, |q| plan.scroll_size.min(q - done));
        let batch = &hits[cursor..(cursor + want).min(hits.len())];
        cursor += batch.len();
        let mut to_sync: Vec<(usize, usize, Location)> = Vec::new();
        let mut counts = Counts {
            batches: 1,
            total: batch.len(),
            ..Counts::default()
        };
        for hit in batch {
            let idx = &targets[hit.index];
            match process(plan, idx, hit)? {
                Ok(Some((op, shard, loc))) => {
                    match op {
                        Done::Deleted => counts.deleted += 1,
                        Done::Updated => counts.updated += 1,
                        Done::Noop => counts.noops += 1,
                    }
                    if let Some(loc) = loc {
                        match to_sync
                            .iter_mut()
                            .find(|(i, s, _)| *i == hit.index && *s == shard)
                        {
                            Some(entry) => entry.2 = entry.2.max(loc),
                            None => to_sync.push((hit.index, shard, loc)),
                        }
                    }
                }
                Ok(None) => counts.noops += 1,
                Err(e) if e.status == 409 => {
                    counts.version_conflicts += 1;
                    if !plan.proceed_on_conflict {
                        counts.failures.push(failure(idx, hit, &e));
                        shared.abort.store(true, Ordering::Relaxed);
                        break;
                    }
                }
                // A block on the index is a bulk item failure too (ES: the failure is listed
                // and its status becomes the response's).
                Err(e) if e.status == 400 || e.kind == "cluster_block_exception" => {
                    counts.failures.push(failure(idx, hit, &e));
                    shared.abort.store(true, Ordering::Relaxed);
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        for (i, shard, loc) in to_sync {
            targets[i].ensure_durable(shard, loc)?;
        }
        if !plan.proceed_on_conflict {
            done += counts.total;
        } else {
            done += counts.total - counts.version_conflicts;
        }
        if !shared.stopped() && cursor < hits.len() {
            // Each of the parallel slices gets an equal share of the request rate.
            let waited = shared.task.throttle(batch.len() * slices, batch_start);
            counts.throttled_millis = waited.as_millis() as u64;
        }
        {
            let mut c = shared.slices[slice].lock().unwrap();
            counts.total = batch.len();
            c.add(&counts);
        }
        shared.publish();
    }
    Ok(())
}

enum Done {
    Deleted,
    Updated,
    Noop,
}

fn failure(idx: &IndexService, hit: &Hit, e: &EsError) -> Value {
    json!({"index": idx.name, "id": hit.id, "cause": e.to_cause_json(), "status": e.status})
}

/// Applies the operation to one hit; `None` when the document is already gone.
/// What processing one hit did to it.
type Processed = Option<(Done, usize, Option<Location>)>;

/// Applies the operation to one hit. The outer error aborts the whole request (a failing
/// script, a missing `_source`), as in ES; the inner one is that document's bulk failure.
fn process(plan: &Plan, idx: &IndexService, hit: &Hit) -> EsResult<EsResult<Processed>> {
    let expected = VersionReq::IfSeqNo {
        seq_no: hit.seq_no,
        primary_term: PRIMARY_TERM,
    };
    let routing = hit.routing.as_deref();
    let deleted =
        |w: lode_engine::index::DocWrite| Some((Done::Deleted, w.shard, Some(w.result.location)));
    if plan.kind == Kind::Delete {
        return Ok(idx.delete_doc(&hit.id, routing, expected).map(deleted));
    }
    let doc = match idx.get_doc(&hit.id, routing, true) {
        Ok(Some(doc)) => doc,
        Ok(None) => {
            return Ok(Err(EsError::new(
                409,
                "version_conflict_engine_exception",
                format!("[{}]: version conflict, document already deleted", hit.id),
            )))
        }
        Err(e) => return Ok(Err(e)),
    };
    if doc.source.is_empty() && !idx.mapping_state().mapping.source_enabled {
        return Err(EsError::illegal_argument(format!(
            "[{}][{}] didn't store _source",
            idx.name, hit.id
        )));
    }
    let Some(script) = &plan.script else {
        // Without a script the document is indexed again as it is stored.
        let src: Value = crate::rest::parse_json(&doc.source)?;
        let raw: Arc<[u8]> = doc.source.to_vec().into();
        return Ok(idx
            .index_doc(Some(&hit.id), &src, raw, routing, expected, false)
            .map(|w| Some((Done::Updated, w.shard, Some(w.result.location)))));
    };
    // The script sees integers beyond 64 bits as `BigInteger`s and stores them as they were.
    let mut src = crate::big_integers::script_source(&doc.source)?;
    let uctx = lode_painless::UpdateContext {
        index: Some(&idx.name),
        id: Some(&hit.id),
        routing,
        version: Some(doc.version as i64),
        ..Default::default()
    };
    match script.run_update(&mut src, &uctx)? {
        lode_painless::ScriptOp::Noop => return Ok(Ok(Some((Done::Noop, 0, None)))),
        lode_painless::ScriptOp::Delete => {
            return Ok(idx.delete_doc(&hit.id, routing, expected).map(deleted))
        }
        lode_painless::ScriptOp::Index => {}
    }
    let (raw, src) = crate::big_integers::script_result(src)?;
    let raw: Arc<[u8]> = raw.into();
    Ok(idx
        .index_doc(Some(&hit.id), &src, raw, routing, expected, false)
        .map(|w| Some((Done::Updated, w.shard, Some(w.result.location)))))
}

/// `wait_for_active_shards`: a single node holds only primaries, so asking for more than one
/// active copy can never be met. Elasticsearch would wait `timeout` and then fail; Lode fails at
/// once with the same error, since no copy can appear.
/// The number of active copies `wait_for_active_shards` asks for (`None`: the default, one).
fn active_shards_wanted(idx: &IndexService, wanted: Option<&str>) -> EsResult<Option<usize>> {
    match wanted {
        None | Some("default") => Ok(None),
        Some("all") => Ok(Some(idx.config().number_of_replicas + 1)),
        Some(n) => n.parse::<usize>().map(Some).map_err(|_| {
            EsError::illegal_argument(format!(
                "failed to parse value [{n}] for [wait_for_active_shards]"
            ))
        }),
    }
}

/// `shards_acknowledged` of an index creation, opening or closing: whether the copies
/// `wait_for_active_shards` asks for started. One node starts only primaries, so more than one
/// copy never does; Elasticsearch would answer `false` after `timeout`, Lode answers at once.
pub fn shards_acknowledged(idx: &IndexService, wanted: Option<&str>) -> EsResult<bool> {
    Ok(active_shards_wanted(idx, wanted)?.unwrap_or(1) <= 1)
}

/// A write to an index whose shards failed to open waits up to the request's `timeout`
/// (default `1m`; until `deadline` when a `_bulk` shares one) for the primary to come back,
/// then fails as ES's replication actions do: 503 `unavailable_shards_exception`. `item`
/// describes the request (ES prints its `BulkShardRequest`).
///
/// `shard` is the shard the write routes to; `None` (an id yet to be generated) waits for
/// every shard of the index.
pub fn wait_for_primary(
    idx: &IndexService,
    shard: Option<usize>,
    timeout: Option<&str>,
    deadline: Option<std::time::Instant>,
    // Only read when the shard is not active: describing a bulk item copies its source.
    item: impl FnOnce() -> String,
) -> EsResult<()> {
    let failure = match shard {
        Some(s) => idx.shard_failure(s),
        None => idx.allocation_failure(),
    };
    if failure.is_none() {
        return Ok(());
    }
    let text = timeout.unwrap_or("1m");
    let wait = match deadline {
        Some(d) => d.saturating_duration_since(std::time::Instant::now()),
        None => parse_write_timeout(text)?,
    };
    match idx.wait_shard_active(shard, wait) {
        Ok(()) => Ok(()),
        Err(f) => Err(EsError::new(
            503,
            "unavailable_shards_exception",
            format!(
                "[{0}][{1}] primary shard is not active Timeout: [{text}], request: [BulkShardRequest [[{0}][{1}]] containing [{2}]]",
                idx.name,
                f.shard,
                item()
            ),
        )),
    }
}

/// A write's `timeout` parameter (a time value, `-1` for none).
pub fn parse_write_timeout(text: &str) -> EsResult<std::time::Duration> {
    if text.trim() == "-1" {
        return Ok(std::time::Duration::from_secs(365 * 24 * 3600));
    }
    lode_dates::parse_time_value(text)
        .map(|ms| std::time::Duration::from_millis(ms.max(0) as u64))
        .map_err(|_| {
            EsError::new(
                400,
                "parse_exception",
                format!("failed to parse setting [timeout] with value [{text}] as a time value: unit is missing or unrecognized"),
            )
        })
}

pub fn check_active_shards(
    idx: &IndexService,
    wanted: Option<&str>,
    timeout: Option<&str>,
) -> EsResult<()> {
    let Some(needed) = active_shards_wanted(idx, wanted)? else {
        return Ok(());
    };
    let replicas = idx.config().number_of_replicas;
    if needed > replicas + 1 {
        return Err(EsError::illegal_argument(format!(
            "[wait_for_active_shards] value [{needed}] exceeds the number of copies of the shard [{}]",
            replicas + 1
        )));
    }
    if needed <= 1 {
        return Ok(());
    }
    Err(EsError::new(
        503,
        "unavailable_shards_exception",
        format!(
            "[{}][0] Not enough active copies to meet shard count of [{needed}] (have 1, needed {needed}). Timeout: [{}], request: [BulkShardRequest [[{}][0]] containing [1] requests]",
            idx.name,
            timeout.unwrap_or("1m"),
            idx.name
        ),
    ))
}
