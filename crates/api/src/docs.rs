//! Document APIs: index, create, get, `_source`, exists, delete, update, `_mget`, `_bulk`.

use crate::rest::{parse_json, RestBody, RestRequest, RestResponse};
use crate::search::raw_source::{respond, RawSources};
use crate::search::HitSources;
use lode_engine::field_security::FieldPermissions;
use lode_engine::index::{DocWrite, IndexService};
use lode_engine::object_parser::{ignore, At, Field, ObjectParser, Style};
use lode_engine::shard::{VersionReq, WriteOutcome, PRIMARY_TERM};
use lode_engine::{EsError, EsResult, Node};
use lode_hits::source::SourceFilter;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What `refresh=` asks for after a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshPolicy {
    None,
    Immediate,
    WaitFor,
}

impl RefreshPolicy {
    pub fn from_request(req: &RestRequest) -> EsResult<RefreshPolicy> {
        match req.param("refresh") {
            None | Some("false") => Ok(RefreshPolicy::None),
            Some("") | Some("true") => Ok(RefreshPolicy::Immediate),
            Some("wait_for") => Ok(RefreshPolicy::WaitFor),
            Some(v) => Err(EsError::illegal_argument(format!(
                "Unknown value for refresh: [{v}]."
            ))),
        }
    }
}

/// Parses `version`/`version_type`/`if_seq_no`/`if_primary_term` from params or a bulk action.
fn version_req(
    version: Option<i64>,
    version_type: Option<&str>,
    if_seq_no: Option<i64>,
    if_primary_term: Option<i64>,
) -> EsResult<VersionReq> {
    let validation = |msg: &str| {
        EsError::bad_request(
            "action_request_validation_exception",
            format!("Validation Failed: 1: {msg};"),
        )
    };
    match (if_seq_no, if_primary_term) {
        (Some(s), Some(t)) => {
            if s < 0 {
                return Err(validation("ifSeqNo is unsupported"));
            }
            if version.is_some() {
                return Err(validation(
                    "compare and write operations can not use versioning",
                ));
            }
            return Ok(VersionReq::IfSeqNo {
                seq_no: s as u64,
                primary_term: t.max(0) as u64,
            });
        }
        (Some(_), None) => return Err(validation("ifSeqNo is set, but primary term is [0]")),
        (None, Some(_)) => {
            return Err(validation("ifSeqNo is unassigned, but primary term is [1]"))
        }
        (None, None) => {}
    }
    match (version, version_type.unwrap_or("internal")) {
        (None, "internal") => Ok(VersionReq::Internal),
        (Some(_), "internal") => Err(validation(
            "internal versioning can not be used for optimistic concurrency control. Please use `if_seq_no` and `if_primary_term` instead",
        )),
        (Some(v), "external") if v >= 0 => Ok(VersionReq::External(v as u64)),
        (Some(v), "external_gte") if v >= 0 => Ok(VersionReq::ExternalGte(v as u64)),
        (None, "external") | (None, "external_gte") => Err(validation("an external version is required")),
        (_, "force") => Err(validation("version type [force] may no longer be used")),
        (Some(_), "external") | (Some(_), "external_gte") => Err(validation("illegal version value [-1] for version type [EXTERNAL]")),
        (_, other) => Err(EsError::illegal_argument(format!("No version type match [{other}]"))),
    }
}

/// `create` writes only with internal versioning, as ES validates it.
fn check_create_versioning(create: bool, vreq: &VersionReq) -> EsResult<()> {
    if create && matches!(vreq, VersionReq::External(_) | VersionReq::ExternalGte(_)) {
        return Err(EsError::bad_request(
            "action_request_validation_exception",
            "Validation Failed: 1: create operations only support internal versioning. use index instead;",
        ));
    }
    Ok(())
}

/// The `_shards` header of a write: the primary and its replicas (none of which exist yet).
#[derive(Serialize)]
struct WriteShards {
    total: u64,
    successful: u64,
    failed: u64,
}

/// A write's response body, as the document APIs and each `_bulk` item answer it.
#[derive(Serialize)]
struct WriteResponse<'a> {
    _index: &'a str,
    _id: &'a str,
    _version: u64,
    result: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    forced_refresh: Option<bool>,
    _shards: WriteShards,
    _seq_no: u64,
    _primary_term: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
}

impl<'a> WriteResponse<'a> {
    fn new(index: &'a IndexService, w: &'a DocWrite) -> WriteResponse<'a> {
        WriteResponse {
            _index: &index.name,
            _id: &w.id,
            _version: w.result.version,
            result: w.result.outcome.as_str(),
            forced_refresh: None,
            _shards: WriteShards {
                total: 1 + index.config().number_of_replicas as u64,
                successful: 1,
                failed: 0,
            },
            _seq_no: w.result.seq_no,
            _primary_term: PRIMARY_TERM,
            status: None,
        }
    }
}

/// The per-document response body of a write.
pub fn write_body(index: &IndexService, w: &DocWrite) -> Value {
    serde_json::to_value(WriteResponse::new(index, w)).unwrap_or_default()
}

fn status_of(outcome: WriteOutcome) -> u16 {
    match outcome {
        WriteOutcome::Created => 201,
        WriteOutcome::NotFound => 404,
        _ => 200,
    }
}

/// Waits for durability and applies the refresh policy for one write.
fn finish_write(index: &IndexService, w: &DocWrite, refresh: RefreshPolicy) -> EsResult<bool> {
    index.ensure_durable(w.shard, w.result.location)?;
    match refresh {
        RefreshPolicy::None => Ok(false),
        RefreshPolicy::Immediate => {
            index.shard(w.shard)?.refresh(false)?;
            index
                .data_version
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(true)
        }
        RefreshPolicy::WaitFor => {
            index.wait_for_refresh(w.shard, w.result.seq_no)?;
            Ok(false)
        }
    }
}

fn routing(req: &RestRequest) -> Option<&str> {
    req.param("routing").filter(|r| !r.is_empty())
}

/// `PUT|POST /{index}/_doc/{id}`, `POST /{index}/_doc`, `PUT|POST /{index}/_create/{id}`.
pub fn index(
    node: &Node,
    index_name: &str,
    id: Option<&str>,
    create_path: bool,
    req: &RestRequest,
) -> EsResult<RestResponse> {
    let source = req.required_body()?;
    if !source.is_object() {
        return Err(EsError::bad_request(
            "mapper_parsing_exception",
            "failed to parse, document is empty",
        ));
    }
    let create_only = create_path
        || match req.param("op_type") {
            None | Some("index") => false,
            Some("create") => true,
            Some(o) => {
                return Err(EsError::illegal_argument(format!(
                    "opType must be 'create' or 'index', found: [{o}]"
                )))
            }
        };
    if create_only && id.is_none() && create_path {
        return Err(EsError::illegal_argument(
            "an id must be provided if version type or value are set",
        ));
    }
    let vreq = version_req(
        req.i64_param("version")?,
        req.param("version_type"),
        req.i64_param("if_seq_no")?,
        req.i64_param("if_primary_term")?,
    )?;
    check_create_versioning(create_only, &vreq)?;
    let refresh = RefreshPolicy::from_request(req)?;
    if req.bool_param("require_alias", false)? && node.alias_indices(index_name).is_empty() {
        return Err(require_alias_error(index_name));
    }
    let index = node.index_for_write(index_name)?;
    crate::by_query::wait_for_primary(
        &index,
        id.map(|id| index.shard_for(id, routing(req))),
        req.param("timeout"),
        None,
        || item_description("index", &index.name, id, Some(&req.body)),
    )?;
    wait_for_active_shards(&index, req)?;
    let raw: Arc<[u8]> = Arc::from(req.body.as_slice());
    let w = index.index_doc(id, &source, raw, routing(req), vreq, create_only)?;
    let forced = finish_write(&index, &w, refresh)?;
    let mut body = write_body(&index, &w);
    if forced {
        body["forced_refresh"] = json!(true);
    }
    Ok(RestResponse::json(status_of(w.result.outcome), body))
}

/// ES's `BulkRequestParser` for an action line's metadata; parsed under the line's number
/// (`At::parser`), which its errors name. The target: whether the action is an `update`.
static BULK_METADATA: ObjectParser<bool> = ObjectParser {
    name: "bulk",
    style: Style::Custom {
        unknown: |at, _, _| {
            EsError::illegal_argument(format!(
                "Action/metadata line [{}] contains an unknown parameter [{}]",
                at.parser, at.key
            ))
        },
        // It takes simple values only (`_source` and `dynamic_templates` aside).
        wrong_token: |at, token| {
            EsError::illegal_argument(format!(
                "Malformed action/metadata line [{}], expected a simple value for field [{}] but found [{}]",
                at.parser,
                at.key,
                token.es_name()
            ))
        },
    },
    fields: &[&[
        Field::new("_index", "vn", ignore),
        Field::new("_id", "vn", ignore),
        Field::new("routing", "vn", ignore),
        Field::new("_routing", "vn", ignore),
        Field::new("version", "vn", long_value),
        Field::new("version_type", "vn", ignore),
        Field::new("if_seq_no", "vn", long_value),
        Field::new("if_primary_term", "vn", long_value),
        Field::new("op_type", "vn", ignore),
        Field::new("retry_on_conflict", "vn", |update, at, v| {
            long_value(update, at, v)?;
            if *update {
                Ok(())
            } else {
                metadata_not_supported(update, at, v)
            }
        }),
        // What an update returns in `get` (ES parses it for every action, and only updates
        // use it).
        Field::new("_source", "*", ignore),
        Field::new("require_alias", "vn", ignore),
        Field::new("pipeline", "vn", metadata_not_supported),
        Field::new("require_data_stream", "vn", metadata_not_supported),
        Field::new("dynamic_templates", "*", metadata_not_supported),
        Field::new("list_executed_pipelines", "vn", metadata_not_supported),
    ]],
};

/// A numeric parameter, read with `longValue()`: a string must hold a number.
fn long_value(_: &mut bool, _: &At<'_>, v: &Value) -> EsResult<()> {
    if let Value::String(s) = v {
        if s.trim().parse::<i64>().is_err() {
            return Err(EsError::bad_request(
                "number_format_exception",
                format!("For input string: \"{s}\""),
            ));
        }
    }
    Ok(())
}

fn metadata_not_supported(_: &mut bool, at: &At<'_>, _: &Value) -> EsResult<()> {
    Err(EsError::illegal_argument(format!(
        "Action/metadata line [{}] parameter [{}] is not supported by Lode",
        at.parser, at.key
    )))
}

/// The keys of a bulk action line: what Lode implements, ES's error for unknown ones, and a
/// refusal for ES's keys Lode does not implement (never silently ignored).
fn check_bulk_metadata(meta: &Map<String, Value>, action: &str, line: usize) -> EsResult<()> {
    BULK_METADATA.parse_named(&line.to_string(), &mut (action == "update"), meta)
}

/// `wait_for_active_shards`: a write waits for that many copies of its shard.
fn wait_for_active_shards(index: &IndexService, req: &RestRequest) -> EsResult<()> {
    crate::by_query::check_active_shards(
        index,
        req.param("wait_for_active_shards"),
        req.param("timeout"),
    )
}

/// `require_alias=true` names something that is not an alias.
fn require_alias_error(name: &str) -> EsError {
    EsError::index_not_found(name).with_reason(format!(
        "no such index [{name}] and [require_alias] request flag is [true] and [{name}] is not an alias"
    ))
}

/// `DELETE /{index}/_doc/{id}`.
pub fn delete(
    node: &Node,
    index_name: &str,
    id: &str,
    req: &RestRequest,
) -> EsResult<RestResponse> {
    let vreq = version_req(
        req.i64_param("version")?,
        req.param("version_type"),
        req.i64_param("if_seq_no")?,
        req.i64_param("if_primary_term")?,
    )?;
    let refresh = RefreshPolicy::from_request(req)?;
    let index = node.existing_write_target(index_name)?;
    crate::by_query::wait_for_primary(
        &index,
        Some(index.shard_for(id, routing(req))),
        req.param("timeout"),
        None,
        || item_description("delete", &index.name, Some(id), None),
    )?;
    wait_for_active_shards(&index, req)?;
    let w = index.delete_doc(id, routing(req), vreq)?;
    let forced = finish_write(&index, &w, refresh)?;
    let mut body = write_body(&index, &w);
    if forced {
        body["forced_refresh"] = json!(true);
    }
    Ok(RestResponse::json(status_of(w.result.outcome), body))
}

fn source_filter(req: &RestRequest) -> SourceFilter {
    SourceFilter::from_params(
        req.param("_source"),
        req.param("_source_includes")
            .or(req.param("_source_include")),
        req.param("_source_excludes")
            .or(req.param("_source_exclude")),
    )
}

/// A read's `version`: every version type reads as "the current version must equal it".
fn check_read_version(
    index: &IndexService,
    id: &str,
    routing: Option<&str>,
    current: u64,
    wanted: Option<i64>,
) -> EsResult<()> {
    match wanted {
        Some(v) if current as i64 != v => Err(EsError::version_conflict(
            &index.name,
            &index.uuid,
            index.shard_for(id, routing),
            id,
            format!(
                "version conflict, current version [{current}] is different than the one provided [{v}]"
            ),
        )),
        _ => Ok(()),
    }
}

/// A read's `version` and `version_type` parameters.
fn read_version(req: &RestRequest) -> EsResult<Option<i64>> {
    match req.param("version_type") {
        None | Some("internal" | "external" | "external_gte") => {}
        Some(other) => {
            return Err(EsError::illegal_argument(format!(
                "No version type match [{other}]"
            )))
        }
    }
    req.i64_param("version")
}

/// The GET body of one document (`found` true or false).
fn get_body(
    index: &IndexService,
    id: &str,
    routing: Option<&str>,
    realtime: bool,
    filter: &SourceFilter,
    version: Option<i64>,
) -> EsResult<(bool, Value)> {
    let Some(doc) = read_doc(index, id, routing, realtime, version)? else {
        return Ok((false, not_found_body(index, id)));
    };
    let mut body = Value::Object(found_header(index, id, &doc));
    if filter.fetch && !doc.source.is_empty() {
        let src = parse_json(&doc.source)?;
        if let Some(s) = filter.apply(&src) {
            body["_source"] = s;
        }
    }
    Ok((true, body))
}

/// A live document by id, checked against the read's `version`.
fn read_doc(
    index: &IndexService,
    id: &str,
    routing: Option<&str>,
    realtime: bool,
    version: Option<i64>,
) -> EsResult<Option<lode_engine::shard::StoredDoc>> {
    let doc = index.get_doc(id, routing, realtime)?;
    if let Some(d) = &doc {
        check_read_version(index, id, routing, d.version, version)?;
    }
    Ok(doc)
}

fn not_found_body(index: &IndexService, id: &str) -> Value {
    json!({"_index": index.name, "_id": id, "found": false})
}

/// A found document's metadata, in ES's order, up to `found`.
fn found_header(
    index: &IndexService,
    id: &str,
    doc: &lode_engine::shard::StoredDoc,
) -> serde_json::Map<String, Value> {
    let mut o = serde_json::Map::new();
    o.insert("_index".into(), json!(index.name));
    o.insert("_id".into(), json!(id));
    o.insert("_version".into(), json!(doc.version));
    o.insert("_seq_no".into(), json!(doc.seq_no));
    o.insert("_primary_term".into(), json!(PRIMARY_TERM));
    if let Some(r) = &doc.routing {
        o.insert("_routing".into(), json!(r));
    }
    o.insert("found".into(), json!(true));
    o
}

/// A GET of the whole `_source` (the common case): the stored bytes go into the response as
/// they are, as ES returns them, instead of being parsed into a tree and printed again.
fn get_whole_source(
    index: &IndexService,
    id: &str,
    routing: Option<&str>,
    realtime: bool,
    version: Option<i64>,
) -> EsResult<RestResponse> {
    let Some(doc) = read_doc(index, id, routing, realtime, version)? else {
        return Ok(RestResponse::json(404, not_found_body(index, id)));
    };
    let header = Value::Object(found_header(index, id, &doc));
    let mut out = serde_json::to_vec(&header).map_err(|e| EsError::internal(e.to_string()))?;
    if !doc.source.is_empty() {
        out.pop(); // the header's closing brace
        out.extend_from_slice(b",\"_source\":");
        out.extend_from_slice(doc.source.trim_ascii());
        out.push(b'}');
    }
    Ok(RestResponse {
        status: 200,
        body: RestBody::JsonBytes(out),
    })
}

/// Whether document-level security hides document `id` of `index` (reached as `named`) from
/// the request's subject: the role query is run with the id against the index's searcher, so
/// a document not yet refreshed is hidden too.
pub(crate) fn dls_hidden(
    req: &RestRequest,
    index: &IndexService,
    named: &str,
    id: &str,
) -> EsResult<bool> {
    let Some(ds) = &req.doc_security else {
        return Ok(false);
    };
    let aliases: Vec<String> = if named != index.name {
        vec![named.to_string()]
    } else {
        Vec::new()
    };
    let Some(filter) = ds.filter(&index.name, &aliases) else {
        return Ok(false);
    };
    let q = json!({"bool": {"filter": [{"ids": {"values": [id]}}, filter]}});
    let found = crate::search::matching_ids(index, Some(&q), None, &Default::default(), None)?;
    Ok(!found.iter().any(|(i, _, _)| i == id))
}

/// Field-level security on `index` (reached as `named`) for the request's subject: the
/// fields it may read, `None` when it may read every field.
pub(crate) fn fls_of(
    req: &RestRequest,
    index: &IndexService,
    named: &str,
) -> Option<FieldPermissions> {
    let fs = req.field_security.as_ref()?;
    let aliases: Vec<String> = if named != index.name {
        vec![named.to_string()]
    } else {
        Vec::new()
    };
    fs.permissions(&index.name, &aliases)
}

/// `GET|HEAD /{index}/_doc/{id}`.
pub fn get(node: &Node, index_name: &str, id: &str, req: &RestRequest) -> EsResult<RestResponse> {
    let index = node.read_target(index_name)?;
    let realtime = req.bool_param("realtime", true)?;
    if req.bool_param("refresh", false)? {
        index.refresh()?;
    }
    if dls_hidden(req, &index, index_name, id)? {
        return Ok(RestResponse::json(404, not_found_body(&index, id)));
    }
    let stored = req
        .param("stored_fields")
        .map(|p| crate::rest::list_param(Some(p)));
    let filter = stored_fields_filter(source_filter(req), req.has("_source"), stored.as_deref());
    let fls = fls_of(req, &index, index_name);
    if stored.is_none() && filter.is_identity() && fls.is_none() {
        return get_whole_source(&index, id, routing(req), realtime, read_version(req)?);
    }
    let (found, body) = get_with_stored(
        &index,
        id,
        routing(req),
        realtime,
        &filter,
        stored.as_deref().unwrap_or_default(),
        read_version(req)?,
        fls.as_ref(),
    )?;
    Ok(RestResponse::json(if found { 200 } else { 404 }, body))
}

/// Stored fields replace `_source` unless it is named among them or asked for explicitly.
fn stored_fields_filter(
    mut filter: SourceFilter,
    explicit_source: bool,
    stored: Option<&[String]>,
) -> SourceFilter {
    if let (Some(list), false) = (stored, explicit_source) {
        filter.fetch = list.iter().any(|f| f == "_source");
    }
    filter
}

/// A GET body with the requested stored fields under `fields`; under field-level security
/// (`fls`) the hidden fields are neither in `_source` nor among the stored fields.
#[allow(clippy::too_many_arguments)]
fn get_with_stored(
    index: &IndexService,
    id: &str,
    routing: Option<&str>,
    realtime: bool,
    filter: &SourceFilter,
    stored: &[String],
    version: Option<i64>,
    fls: Option<&FieldPermissions>,
) -> EsResult<(bool, Value)> {
    let wants_stored = wants_stored(stored);
    let whole = wants_stored || fls.is_some();
    // Stored fields are read from the whole `_source` of the same read.
    let all = SourceFilter::from_json(None);
    let (found, mut body) = get_body(
        index,
        id,
        routing,
        realtime,
        if whole { &all } else { filter },
        version,
    )?;
    if let (true, Some(src)) = (whole, body.get("_source").cloned()) {
        let src = match fls {
            Some(p) => p.filter_source(&src),
            None => src,
        };
        let mut fields = serde_json::Map::new();
        let mapping = match fls {
            Some(p) => Arc::new(p.filter_mapping(&index.mapping())),
            None => index.mapping(),
        };
        let stored = if wants_stored { stored } else { &[] };
        for pattern in stored {
            for def in mapping.matching_fields(pattern) {
                if def.store && !fields.contains_key(&def.path) {
                    let vals = lode_hits::docvalues::from_source(&src, &def, None)?;
                    if !vals.is_empty() {
                        fields.insert(def.path.clone(), Value::Array(vals));
                    }
                }
            }
        }
        let shown = filter.fetch.then(|| filter.apply(&src)).flatten();
        let o = body.as_object_mut().expect("a get body is an object");
        o.remove("_source");
        if let Some(s) = shown {
            o.insert("_source".into(), s);
        }
        if !fields.is_empty() {
            o.insert("fields".into(), Value::Object(fields));
        }
    }
    Ok((found, body))
}

/// `GET /{index}/_source/{id}`.
pub fn get_source(
    node: &Node,
    index_name: &str,
    id: &str,
    req: &RestRequest,
) -> EsResult<RestResponse> {
    let index = node.read_target(index_name)?;
    let realtime = req.bool_param("realtime", true)?;
    if req.bool_param("refresh", false)? {
        index.refresh()?;
    }
    let filter = source_filter(req);
    let version = read_version(req)?;
    let doc = if dls_hidden(req, &index, index_name, id)? {
        None
    } else {
        index.get_doc(id, routing(req), realtime)?
    };
    if let Some(d) = &doc {
        check_read_version(&index, id, routing(req), d.version, version)?;
    }
    match doc {
        Some(doc) if doc.source.is_empty() => Err(EsError::new(
            404,
            "resource_not_found_exception",
            format!("Source not found [{index_name}]/[{id}]"),
        )),
        Some(doc) => {
            let fls = fls_of(req, &index, index_name);
            if fls.is_none() && filter.is_identity() {
                // The stored bytes, as ES answers: a tree would turn integers beyond 64
                // bits into doubles.
                return Ok(RestResponse::json_bytes(
                    200,
                    doc.source.trim_ascii().to_vec(),
                ));
            }
            let src = parse_json(&doc.source)?;
            let src = match fls {
                Some(p) => p.filter_source(&src),
                None => src,
            };
            Ok(RestResponse::ok(filter.apply(&src).unwrap_or(json!({}))))
        }
        None => Err(EsError::new(
            404,
            "resource_not_found_exception",
            format!("Document not found [{index_name}]/[{id}]"),
        )),
    }
}

/// `POST /_mget`, `POST /{index}/_mget`. With [`HitSources::Raw`], a document returned with
/// its whole `_source` carries the stored bytes (spliced into the serialized response).
pub fn mget(
    node: &Node,
    default_index: Option<&str>,
    req: &RestRequest,
    sources: HitSources,
) -> EsResult<RestResponse> {
    let body = req.required_body()?;
    let realtime = req.bool_param("realtime", true)?;
    if req.bool_param("refresh", false)? {
        if let Some(i) = default_index {
            node.index(i)?.refresh()?;
        }
    }
    let url_stored = req
        .param("stored_fields")
        .map(|p| crate::rest::list_param(Some(p)));
    let url_source = req.has("_source");
    let default_filter = source_filter(req);
    let mut specs: Vec<MgetDoc> = Vec::new();
    if let Some(docs) = body.get("docs") {
        let docs = docs
            .as_array()
            .ok_or_else(|| EsError::parsing("docs array element should include an object"))?;
        for (n, d) in docs.iter().enumerate() {
            specs.push(MgetDoc::parse(d, n, req, default_index)?);
        }
    } else if let Some(ids) = body.get("ids") {
        let ids = ids
            .as_array()
            .ok_or_else(|| EsError::parsing("ids must be an array"))?;
        for id in ids {
            let id = match id {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            specs.push(MgetDoc {
                index: default_index.map(str::to_string),
                id,
                routing: routing(req).map(str::to_string),
                filter: None,
                stored: None,
                version: None,
            });
        }
    } else {
        return Err(EsError::bad_request(
            "action_request_validation_exception",
            "Validation Failed: 1: no documents to get;",
        ));
    }
    if specs.is_empty() {
        return Err(EsError::bad_request(
            "action_request_validation_exception",
            "Validation Failed: 1: no documents to get;",
        ));
    }
    let mut raw = (sources == HitSources::Raw).then(RawSources::fresh);
    let mut out = Vec::new();
    for (n, doc) in specs.into_iter().enumerate() {
        let Some(index_name) = doc.index else {
            return Err(EsError::bad_request(
                "action_request_validation_exception",
                format!("Validation Failed: 1: index is missing for doc {n};"),
            ));
        };
        let stored = doc.stored.or_else(|| url_stored.clone());
        let filter = match doc.filter {
            Some(f) => stored_fields_filter(f, true, stored.as_deref()),
            None => stored_fields_filter(default_filter.clone(), url_source, stored.as_deref()),
        };
        let item = node.read_target(&index_name).and_then(|i| {
            if dls_hidden(req, &i, &index_name, &doc.id)? {
                return Ok((false, not_found_body(&i, &doc.id)));
            }
            let fls = fls_of(req, &i, &index_name);
            let stored_list = stored.as_deref().unwrap_or_default();
            if let Some(raw) = raw
                .as_mut()
                .filter(|_| filter.is_identity() && fls.is_none() && !wants_stored(stored_list))
            {
                return get_whole_source_marked(
                    &i,
                    &doc.id,
                    doc.routing.as_deref(),
                    realtime,
                    doc.version,
                    raw,
                );
            }
            get_with_stored(
                &i,
                &doc.id,
                doc.routing.as_deref(),
                realtime,
                &filter,
                stored.as_deref().unwrap_or_default(),
                doc.version,
                fls.as_ref(),
            )
        });
        out.push(match item {
            Ok((_, b)) => b,
            Err(e) => json!({"_index": index_name, "_id": doc.id, "error": e.to_error_json()}),
        });
    }
    respond(json!({ "docs": out }), raw)
}

/// An `_mget` document with its whole `_source`: the stored bytes are kept in `raw` and a
/// marker stands for them (a source that is not a JSON object is parsed, as before).
fn get_whole_source_marked(
    index: &IndexService,
    id: &str,
    routing: Option<&str>,
    realtime: bool,
    version: Option<i64>,
    raw: &mut RawSources,
) -> EsResult<(bool, Value)> {
    let Some(doc) = read_doc(index, id, routing, realtime, version)? else {
        return Ok((false, not_found_body(index, id)));
    };
    let mut body = found_header(index, id, &doc);
    // No stored bytes means `_source.enabled: false`: ES then omits `_source`.
    if !doc.source.is_empty() {
        let source = if RawSources::can_splice(&doc.source) {
            raw.keep(doc.source.to_vec())
        } else {
            parse_json(&doc.source)?
        };
        body.insert("_source".into(), source);
    }
    Ok((true, Value::Object(body)))
}

/// Whether a `stored_fields` list names a field besides `_source` and `_none_` (whose
/// values are read from the whole `_source`).
fn wants_stored(stored: &[String]) -> bool {
    stored.iter().any(|f| f != "_source" && f != "_none_")
}

/// One entry of an `_mget` `docs` array.
struct MgetDoc {
    index: Option<String>,
    id: String,
    routing: Option<String>,
    /// Its own `_source`, when it has one.
    filter: Option<SourceFilter>,
    stored: Option<Vec<String>>,
    version: Option<i64>,
}

/// One `docs` entry of `_mget` under construction: the document, whether `_id` was given,
/// and `version_type`.
type MgetB = (MgetDoc, bool, Option<String>);
type MgetField = Field<MgetB>;

fn mget_unknown(at: &At<'_>) -> EsError {
    EsError::bad_request(
        "parse_exception",
        format!(
            "failed to parse multi get request. unknown field [{}]",
            at.key
        ),
    )
}

/// A string or a number, as text.
fn mget_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// ES's `MultiGetRequest` keys of a `docs` entry; any other key, or a value of a type the
/// key does not take, fails the request.
static MGET_DOC: ObjectParser<MgetB> = ObjectParser {
    name: "docs",
    style: Style::Custom {
        unknown: |at, _, _| mget_unknown(at),
        wrong_token: |at, _| mget_unknown(at),
    },
    fields: &[&[
        MgetField::new("_index", "sd", |(d, ..), _, v| {
            d.index = Some(mget_text(v));
            Ok(())
        }),
        MgetField::new("_id", "sd", |(d, has_id, _), _, v| {
            d.id = mget_text(v);
            *has_id = true;
            Ok(())
        }),
        MgetField::new("routing", "sd", |(d, ..), _, v| {
            d.routing = Some(mget_text(v));
            Ok(())
        }),
        MgetField::new("_source", "*", |(d, ..), _, v| {
            d.filter = Some(SourceFilter::from_json(Some(v)));
            Ok(())
        }),
        MgetField::new("stored_fields", "sda", |(d, ..), _, v| {
            d.stored = Some(match v {
                Value::Array(a) => a
                    .iter()
                    .filter(|x| x.is_string() || x.is_number())
                    .map(mget_text)
                    .collect(),
                other => vec![mget_text(other)],
            });
            Ok(())
        }),
        MgetField::new("version", "sd", |(d, ..), at, v| {
            d.version = Some(
                v.as_i64()
                    .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                    .ok_or_else(|| mget_unknown(at))?,
            );
            Ok(())
        }),
        MgetField::new("version_type", "sd", |(_, _, vt), _, v| {
            *vt = Some(mget_text(v));
            Ok(())
        }),
        MgetField::new("fields", "*", |_, _, _| {
            Err(EsError::parsing(
                "Unsupported field [fields] used, expected [stored_fields] instead",
            ))
        }),
    ]],
};

impl MgetDoc {
    /// One `docs` entry (see [`MGET_DOC`]).
    fn parse(
        d: &Value,
        n: usize,
        req: &RestRequest,
        default_index: Option<&str>,
    ) -> EsResult<MgetDoc> {
        let Some(obj) = d.as_object() else {
            return Err(EsError::parsing(
                "docs array element should include an object",
            ));
        };
        let mut b: MgetB = (
            MgetDoc {
                index: default_index.map(str::to_string),
                id: String::new(),
                routing: routing(req).map(str::to_string),
                filter: None,
                stored: None,
                version: None,
            },
            false,
            None,
        );
        MGET_DOC.parse_into(&mut b, obj)?;
        let (doc, has_id, version_type) = b;
        if let Some(vt) = version_type.as_deref() {
            if !matches!(vt, "internal" | "external" | "external_gte") {
                return Err(EsError::illegal_argument(format!(
                    "No version type match [{vt}]"
                )));
            }
        }
        if !has_id {
            return Err(EsError::bad_request(
                "action_request_validation_exception",
                format!("Validation Failed: 1: id is missing for doc {n};"),
            ));
        }
        Ok(doc)
    }
}

/// Whether an update body asks for its `upsert` to go through the script.
fn scripted_upsert(obj: &Map<String, Value>) -> bool {
    obj.get("scripted_upsert").and_then(|v| v.as_bool()) == Some(true)
}

/// The body's `part` (`doc` or `upsert`) as bytes keeping its integers beyond 64 bits;
/// `None` when the body has none.
fn protected_part(raw_body: &[u8], part: &str) -> EsResult<Option<Vec<u8>>> {
    let Some(body) = crate::big_integers::protect(raw_body)? else {
        return Ok(None);
    };
    Ok(Some(crate::big_integers::restore(
        body.get(part).unwrap_or(&json!({})),
    )))
}

/// The stored source with the body's `doc` merged in, as bytes keeping both sides' integers
/// beyond 64 bits; `None` when neither has any.
fn merged_preserving(stored: &[u8], raw_body: &[u8]) -> EsResult<Option<Vec<u8>>> {
    let old = crate::big_integers::protect(stored)?;
    let body = crate::big_integers::protect(raw_body)?;
    if old.is_none() && body.is_none() {
        return Ok(None);
    }
    let mut merged = match old {
        Some(v) => v,
        None => parse_json(stored)?,
    };
    let body = match body {
        Some(v) => v,
        None => parse_json(raw_body)?,
    };
    if let Some(doc) = body.get("doc") {
        merge_doc(&mut merged, doc);
    }
    Ok(Some(crate::big_integers::restore(&merged)))
}

/// Deep-merges `patch` into `target` as a partial update does.
pub fn merge_doc(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                match t.get_mut(k) {
                    Some(existing) if existing.is_object() && v.is_object() => {
                        merge_doc(existing, v)
                    }
                    _ => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

/// ES's `UpdateRequest` body parser: the keys it declares (its did-you-mean candidates);
/// the values are read where the update uses them.
static UPDATE_REQUEST: ObjectParser<()> = ObjectParser {
    name: "UpdateRequest",
    style: Style::Custom {
        unknown: |at, _, declared| {
            EsError::x_content_parse(format!(
                "[1:2] [UpdateRequest] unknown field [{}]{}",
                at.key,
                lode_engine::error::did_you_mean(at.key, declared)
            ))
        },
        wrong_token: |at, token| {
            EsError::x_content_parse(format!(
                "[1:2] [UpdateRequest] {} doesn't support values of type: {}",
                at.key,
                token.es_name()
            ))
        },
    },
    fields: &[&[
        Field::new("script", "*", ignore),
        Field::new("scripted_upsert", "*", ignore),
        Field::new("upsert", "*", ignore),
        Field::new("doc", "*", ignore),
        Field::new("doc_as_upsert", "*", ignore),
        Field::new("detect_noop", "*", ignore),
        Field::new("_source", "*", ignore),
        // The conditional update is built from the URL parameters only.
        Field::new("if_seq_no", "*", body_condition),
        Field::new("if_primary_term", "*", body_condition),
    ]],
};

fn body_condition(_: &mut (), at: &At<'_>, _: &Value) -> EsResult<()> {
    Err(EsError::illegal_argument(format!(
        "[UpdateRequest] [{}] in the body is not supported by Lode: use the URL parameter",
        at.key
    )))
}

/// Outcome of an update: the write (if one happened) and the resulting source.
struct UpdateOutcome {
    write: Option<DocWrite>,
    noop: Option<(u64, u64)>,
    source: Value,
}

#[allow(clippy::too_many_arguments)]
fn apply_update(
    node: &Node,
    index: &IndexService,
    id: &str,
    routing: Option<&str>,
    body: &Value,
    raw_body: &[u8],
    retry_on_conflict: usize,
    required: Option<(i64, i64)>,
) -> EsResult<UpdateOutcome> {
    let obj = body
        .as_object()
        .ok_or_else(|| EsError::parsing("request body must be an object"))?;
    UPDATE_REQUEST.parse_into(&mut (), obj)?;
    let doc = obj.get("doc");
    let stored = |sid: &str| crate::stored_scripts::lookup(node, sid);
    let script = obj
        .get("script")
        .map(|s| lode_painless::Script::compile(s, Some(&stored)))
        .transpose()?;
    if doc.is_none() && script.is_none() {
        return Err(EsError::bad_request(
            "action_request_validation_exception",
            "Validation Failed: 1: script or doc is missing;",
        ));
    }
    if doc.is_some() && script.is_some() {
        return Err(EsError::bad_request(
            "action_request_validation_exception",
            "Validation Failed: 1: can't provide both script and doc;",
        ));
    }
    let detect_noop = obj
        .get("detect_noop")
        .and_then(|v| v.as_bool())
        .unwrap_or(true);
    let doc_as_upsert = obj
        .get("doc_as_upsert")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    let mut attempt = 0;
    loop {
        let current = index.get_doc(id, routing, true)?;
        // `if_seq_no`/`if_primary_term`: the update applies only to that exact version, and
        // the write below is conditional on the same seq_no, so the check is atomic.
        if let Some((s, t)) = required {
            match &current {
                Some(c) if c.seq_no as i64 == s && t as u64 == PRIMARY_TERM => {}
                Some(c) => {
                    return Err(EsError::version_conflict(&index.name, &index.uuid, index.shard_for(id, routing), id, format!(
                        "version conflict, required seqNo [{s}], primary term [{t}]. current document has seqNo [{}] and primary term [{PRIMARY_TERM}]", c.seq_no)))
                }
                None => {
                    return Err(EsError::new(404, "document_missing_exception", format!("[{id}]: document missing"))
                        .with("index_uuid", index.uuid.clone()).with("shard", "0").with("index", index.name.clone()))
                }
            }
        }
        let result = match current {
            None => {
                let mut scripted: Option<Vec<u8>> = None;
                let new_source = if let Some(up) = obj.get("upsert") {
                    if let (Some(s), true) = (
                        &script,
                        obj.get("scripted_upsert")
                            .and_then(|v| v.as_bool())
                            .unwrap_or(false),
                    ) {
                        let mut src = match crate::big_integers::protect(raw_body)? {
                            Some(body) => body.get("upsert").cloned().unwrap_or(json!({})),
                            None => up.clone(),
                        };
                        let uctx = lode_painless::UpdateContext {
                            index: Some(&index.name),
                            id: Some(id),
                            routing,
                            upsert: true,
                            ..Default::default()
                        };
                        s.run_update(&mut src, &uctx)?;
                        let (bytes, tree) = crate::big_integers::script_result(src)?;
                        scripted = Some(bytes);
                        tree
                    } else {
                        up.clone()
                    }
                } else if doc_as_upsert {
                    doc.cloned().unwrap_or(json!({}))
                } else {
                    return Err(EsError::new(
                        404,
                        "document_missing_exception",
                        format!("[{id}]: document missing"),
                    )
                    .with("index_uuid", index.uuid.clone())
                    .with("shard", index.shard_for(id, routing).to_string())
                    .with("index", index.name.clone()));
                };
                // A document taken whole from the body keeps its integers beyond 64 bits.
                let part = match obj.get("upsert") {
                    Some(_) if script.is_some() && scripted_upsert(obj) => None,
                    Some(_) => Some("upsert"),
                    None => Some("doc"),
                };
                let raw: Arc<[u8]> = match part.map(|p| protected_part(raw_body, p)).transpose()? {
                    Some(Some(bytes)) => bytes.into(),
                    _ => match scripted {
                        Some(bytes) => bytes.into(),
                        None => serde_json::to_vec(&new_source).unwrap().into(),
                    },
                };
                index
                    .index_doc(
                        Some(id),
                        &new_source,
                        raw,
                        routing,
                        VersionReq::Internal,
                        true,
                    )
                    .map(|w| UpdateOutcome {
                        write: Some(w),
                        noop: None,
                        source: new_source,
                    })
            }
            Some(cur) if cur.source.is_empty() => Err(EsError::bad_request(
                "document_source_missing_exception",
                format!("[{id}]: document source missing"),
            )),
            Some(cur) => {
                let old: Value = parse_json(&cur.source)?;
                let mut new_source = old.clone();
                // What a script stored: its bytes keep the integers beyond 64 bits it passed
                // along (`new_source`, to index, holds them as doubles as indexing does).
                let mut scripted: Option<Vec<u8>> = None;
                if let Some(d) = doc {
                    merge_doc(&mut new_source, d);
                } else if let Some(s) = &script {
                    new_source = crate::big_integers::script_source(&cur.source)?;
                    let uctx = lode_painless::UpdateContext {
                        index: Some(&index.name),
                        id: Some(id),
                        routing,
                        version: Some(cur.version as i64),
                        ..Default::default()
                    };
                    match s.run_update(&mut new_source, &uctx)? {
                        lode_painless::ScriptOp::Noop => {
                            return Ok(UpdateOutcome {
                                write: None,
                                noop: Some((cur.seq_no, cur.version)),
                                source: old,
                            });
                        }
                        lode_painless::ScriptOp::Delete => {
                            let w = index.delete_doc(
                                id,
                                routing,
                                VersionReq::IfSeqNo {
                                    seq_no: cur.seq_no,
                                    primary_term: PRIMARY_TERM,
                                },
                            )?;
                            return Ok(UpdateOutcome {
                                write: Some(w),
                                noop: None,
                                source: old,
                            });
                        }
                        lode_painless::ScriptOp::Index => {}
                    }
                    let (bytes, tree) = crate::big_integers::script_result(new_source)?;
                    new_source = tree;
                    scripted = Some(bytes);
                }
                // Only a partial document is compared with the stored one (ES's
                // `UpdateHelper`): a script that leaves `ctx.op` at `index` always updates.
                if detect_noop && doc.is_some() && new_source == old {
                    return Ok(UpdateOutcome {
                        write: None,
                        noop: Some((cur.seq_no, cur.version)),
                        source: old,
                    });
                }
                // A partial document merged into the stored one keeps both sides' integers
                // beyond 64 bits (the tree above holds them as doubles, for indexing).
                let preserved = match doc {
                    Some(_) => merged_preserving(&cur.source, raw_body)?,
                    None => None,
                };
                let raw: Arc<[u8]> = match preserved.or(scripted) {
                    Some(bytes) => bytes.into(),
                    None => serde_json::to_vec(&new_source).unwrap().into(),
                };
                index
                    .index_doc(
                        Some(id),
                        &new_source,
                        raw,
                        routing.or(cur.routing.as_deref()),
                        VersionReq::IfSeqNo {
                            seq_no: cur.seq_no,
                            primary_term: PRIMARY_TERM,
                        },
                        false,
                    )
                    .map(|w| UpdateOutcome {
                        write: Some(w),
                        noop: None,
                        source: new_source,
                    })
            }
        };
        match result {
            Err(e) if e.status == 409 && attempt < retry_on_conflict => attempt += 1,
            other => return other,
        }
    }
}

fn update_body(
    index: &IndexService,
    id: &str,
    out: &UpdateOutcome,
    req_source: Option<&SourceFilter>,
) -> (u16, Value) {
    let (status, mut body) = match (&out.write, out.noop) {
        (Some(w), _) => {
            let mut b = write_body(index, w);
            if w.result.outcome == WriteOutcome::Created {
                (201, b)
            } else {
                if w.result.outcome == WriteOutcome::Deleted {
                    b["result"] = json!("deleted");
                }
                (200, b)
            }
        }
        (None, Some((seq_no, version))) => (
            200,
            json!({
                "_index": index.name, "_id": id, "_version": version, "result": "noop",
                "_shards": {"total": 0, "successful": 0, "failed": 0},
                "_seq_no": seq_no, "_primary_term": PRIMARY_TERM,
            }),
        ),
        _ => (200, json!({})),
    };
    if let Some(f) = req_source {
        if f.fetch {
            let mut get = json!({"found": true});
            if let Some(s) = f.apply(&out.source) {
                get["_source"] = s;
            }
            if let Some(w) = &out.write {
                get["_seq_no"] = json!(w.result.seq_no);
                get["_primary_term"] = json!(PRIMARY_TERM);
            }
            body["get"] = get;
        }
    }
    (status, body)
}

/// `POST /{index}/_update/{id}`.
pub fn update(
    node: &Node,
    index_name: &str,
    id: &str,
    req: &RestRequest,
) -> EsResult<RestResponse> {
    let mut body = req.required_body()?;
    crate::big_integers::exact_script_params(&req.body, &mut body)?;
    let refresh = RefreshPolicy::from_request(req)?;
    let retry = req.usize_param("retry_on_conflict")?.unwrap_or(0);
    if req.bool_param("require_alias", false)? && node.alias_indices(index_name).is_empty() {
        return Err(require_alias_error(index_name));
    }
    let index = if body.get("upsert").is_some()
        || body.get("doc_as_upsert").and_then(|v| v.as_bool()) == Some(true)
    {
        node.index_for_write(index_name)?
    } else {
        node.existing_write_target(index_name)?
    };
    crate::by_query::wait_for_primary(
        &index,
        Some(index.shard_for(id, routing(req))),
        req.param("timeout"),
        None,
        || item_description("update", &index.name, Some(id), None),
    )?;
    wait_for_active_shards(&index, req)?;
    let required = match (
        req.i64_param("if_seq_no")?,
        req.i64_param("if_primary_term")?,
    ) {
        (Some(s), Some(t)) => Some((s, t)),
        _ => None,
    };
    let out = apply_update(
        node,
        &index,
        id,
        routing(req),
        &body,
        &req.body,
        retry,
        required,
    )?;
    let mut forced = false;
    if let Some(w) = &out.write {
        forced = finish_write(&index, w, refresh)?;
    }
    let filter = match body.get("_source") {
        Some(spec) => Some(SourceFilter::from_json(Some(spec))),
        None if req.has("_source")
            || req.has("_source_includes")
            || req.has("_source_excludes") =>
        {
            Some(source_filter(req))
        }
        None => None,
    };
    let (status, mut resp) = update_body(&index, id, &out, filter.as_ref());
    if forced {
        resp["forced_refresh"] = json!(true);
    }
    Ok(RestResponse::json(status, resp))
}

/// One line pair of a `_bulk` body.
/// What a `_bulk` request's URL sets for every item.
struct BulkDefaults {
    require_alias: bool,
    /// The URL's `_source`, `_source_includes`, `_source_excludes`: what updates return.
    source: Option<SourceFilter>,
    active_shards: Option<String>,
    timeout: Option<String>,
    /// Until when items to an index whose primary is not active wait for it, all together.
    deadline: Instant,
}

/// An item as ES's `toString` prints it inside a `BulkShardRequest` (`IndexRequest`:
/// `index {[idx][id], source[..]}`, the source cut at 2 KB as ES cuts it).
fn item_description(action: &str, index: &str, id: Option<&str>, source: Option<&[u8]>) -> String {
    let id = id.unwrap_or("null");
    match (action, source) {
        ("index" | "create", Some(raw)) => {
            let text = if raw.len() > 2048 {
                format!(
                    "n/a, actual length: [{}], max length: 2kb",
                    human_kb(raw.len())
                )
            } else {
                String::from_utf8_lossy(raw).trim().to_string()
            };
            format!("index {{[{index}][{id}], source[{text}]}}")
        }
        _ => format!("{action} {{[{index}][{id}]}}"),
    }
}

/// ES's `ByteSizeValue` text for a source length (`2.1kb`).
fn human_kb(n: usize) -> String {
    let kb = n as f64 / 1024.0;
    let s = format!("{kb:.1}");
    format!("{}kb", s.trim_end_matches(".0"))
}

struct BulkItem {
    action: String,
    index: Option<String>,
    id: Option<String>,
    routing: Option<String>,
    meta: Map<String, Value>,
    source: Option<(usize, usize)>,
}

/// The NDJSON body of `_bulk` as items (action, metadata, source line), before any is
/// executed: a malformed line fails the whole request, as in Elasticsearch.
fn parse_bulk_body(
    body: &[u8],
    default_index: Option<&str>,
    default_routing: Option<&str>,
) -> EsResult<Vec<BulkItem>> {
    // Split lines without copying.
    let mut lines: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for (i, b) in body.iter().enumerate() {
        if *b == b'\n' {
            lines.push((start, i));
            start = i + 1;
        }
    }
    // ES 8 requires the last line to end with a newline too (BulkRequestParser#findNextMarker).
    if start < body.len() {
        return Err(EsError::illegal_argument(
            "The bulk request must be terminated by a newline [\\n]",
        ));
    }
    let lines: Vec<(usize, usize)> = lines
        .into_iter()
        .filter(|(s, e)| body[*s..*e].iter().any(|c| !c.is_ascii_whitespace()))
        .collect();
    let mut items = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let (s, e) = lines[i];
        let (action, meta) = match parse_json(&body[s..e])? {
            Value::Object(o) if o.len() == 1 => o.into_iter().next().expect("one entry"),
            _ => return Err(EsError::illegal_argument(format!("Malformed action/metadata line [{}], expected START_OBJECT or END_OBJECT but found [VALUE_STRING]", i + 1))),
        };
        let Value::Object(meta) = meta else {
            return Err(EsError::illegal_argument(format!("Malformed action/metadata line [{}], expected START_OBJECT but found [VALUE_STRING]", i + 1)));
        };
        if !matches!(action.as_str(), "index" | "create" | "update" | "delete") {
            return Err(EsError::illegal_argument(format!(
                "Malformed action/metadata line [{}], expected field [create], [delete], [index] or [update] but found [{action}]",
                i + 1
            )));
        }
        check_bulk_metadata(&meta, &action, i + 1)?;
        let id = meta.get("_id").and_then(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        });
        let idx = meta
            .get("_index")
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .or(default_index.map(str::to_string));
        let routing = meta
            .get("routing")
            .or(meta.get("_routing"))
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .or(default_routing.map(str::to_string));
        let source = if action == "delete" {
            None
        } else {
            i += 1;
            if i >= lines.len() {
                return Err(EsError::illegal_argument(
                    "The bulk request must be terminated by a newline [\\n]",
                ));
            }
            Some(lines[i])
        };
        items.push(BulkItem {
            action,
            index: idx,
            id,
            routing,
            meta,
            source,
        });
        i += 1;
    }
    Ok(items)
}

/// `POST /_bulk`, `POST /{index}/_bulk`.
pub fn bulk(node: &Node, default_index: Option<&str>, req: &RestRequest) -> EsResult<RestResponse> {
    let started = Instant::now();
    let refresh = RefreshPolicy::from_request(req)?;
    let default_routing = routing(req).map(str::to_string);
    let defaults = BulkDefaults {
        require_alias: req.bool_param("require_alias", false)?,
        source: (req.has("_source") || req.has("_source_includes") || req.has("_source_excludes"))
            .then(|| source_filter(req)),
        active_shards: req.param("wait_for_active_shards").map(str::to_string),
        timeout: req.param("timeout").map(str::to_string),
        deadline: Instant::now()
            + req
                .param("timeout")
                .map(crate::by_query::parse_write_timeout)
                .transpose()?
                .unwrap_or(Duration::from_secs(60)),
    };
    let body = &req.body;
    if !req.has_body() {
        return Err(EsError::bad_request(
            "parse_exception",
            "request body is required",
        ));
    }
    let items = parse_bulk_body(body, default_index, default_routing.as_deref())?;
    let mut results = Vec::with_capacity(items.len());
    // (index name, shard) → furthest translog location, and the highest seq_no, to sync once per shard.
    let mut touched: HashMap<(String, usize), (u64, u64)> = HashMap::new();
    let mut services: HashMap<String, Arc<IndexService>> = HashMap::new();
    for item in &items {
        let r = bulk_item(node, item, body, &defaults, &mut services);
        if let Ok(outcome) = &r {
            if let Some((index, w)) = outcome.write() {
                let key = (index.name.clone(), w.shard);
                let e = touched.entry(key).or_insert((0, 0));
                e.0 = e.0.max(w.result.location);
                e.1 = e.1.max(w.result.seq_no);
            }
        }
        results.push(r);
    }
    for ((name, shard), (loc, seq_no)) in &touched {
        if let Some(idx) = services.get(name) {
            idx.ensure_durable(*shard, *loc)?;
            match refresh {
                RefreshPolicy::None => {}
                RefreshPolicy::Immediate => {
                    idx.shard(*shard)?.refresh(false)?;
                    idx.data_version
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                RefreshPolicy::WaitFor => idx.wait_for_refresh(*shard, *seq_no)?,
            }
        }
    }
    let forced_refresh = refresh == RefreshPolicy::Immediate;
    let errors = results.iter().any(|r| r.is_err());
    // Serialized item by item: a 5,000-document bulk would otherwise build (and drop) a tree of
    // 50,000 JSON nodes only to print it.
    let mut out = Vec::with_capacity(64 + 220 * results.len());
    let took = started.elapsed().as_millis() as u64;
    out.extend_from_slice(format!("{{\"errors\":{errors},\"took\":{took},\"items\":[").as_bytes());
    for (n, (item, r)) in items.iter().zip(&results).enumerate() {
        if n > 0 {
            out.push(b',');
        }
        out.push(b'{');
        serde_json::to_writer(&mut out, &item.action)
            .map_err(|e| EsError::internal(e.to_string()))?;
        out.push(b':');
        match r {
            Ok(BulkOutcome::Written(index, w)) => {
                let mut resp = WriteResponse::new(index, w);
                resp.status = Some(status_of(w.result.outcome));
                resp.forced_refresh = forced_refresh.then_some(true);
                serde_json::to_writer(&mut out, &resp)
            }
            Ok(BulkOutcome::Updated(status, body, _)) => {
                let mut body = body.clone();
                if forced_refresh && body.get("result").is_some() {
                    body["forced_refresh"] = json!(true);
                }
                body["status"] = json!(status);
                serde_json::to_writer(&mut out, &body)
            }
            Err(e) => {
                let body = json!({
                    "_index": item.index.clone().unwrap_or_default(),
                    "_id": item.id.clone(),
                    "status": e.status,
                    "error": e.to_cause_json(),
                });
                serde_json::to_writer(&mut out, &body)
            }
        }
        .map_err(|e| EsError::internal(e.to_string()))?;
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
    Ok(RestResponse::json_bytes(200, out))
}

/// What one `_bulk` item did.
enum BulkOutcome {
    /// `index`, `create`, `delete`: answered from the write itself.
    Written(Arc<IndexService>, DocWrite),
    /// `update`: the update API's body and status, and its write if it wrote.
    Updated(u16, Value, Option<(Arc<IndexService>, DocWrite)>),
}

impl BulkOutcome {
    fn write(&self) -> Option<(&IndexService, &DocWrite)> {
        match self {
            BulkOutcome::Written(index, w) | BulkOutcome::Updated(_, _, Some((index, w))) => {
                Some((index, w))
            }
            BulkOutcome::Updated(_, _, None) => None,
        }
    }
}

fn bulk_item(
    node: &Node,
    item: &BulkItem,
    body: &[u8],
    defaults: &BulkDefaults,
    services: &mut HashMap<String, Arc<IndexService>>,
) -> EsResult<BulkOutcome> {
    let index_name = item.index.as_deref().ok_or_else(|| {
        EsError::bad_request(
            "action_request_validation_exception",
            "Validation Failed: 1: index is missing;",
        )
    })?;
    let require_alias = match item.meta.get("require_alias") {
        None => defaults.require_alias,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) if s == "true" || s == "false" => s == "true",
        Some(v) => {
            return Err(EsError::illegal_argument(format!(
                "Failed to parse value [{v}] as only [true] or [false] are allowed."
            )))
        }
    };
    if require_alias && node.alias_indices(index_name).is_empty() {
        return Err(require_alias_error(index_name));
    }
    let index = match services.get(index_name) {
        Some(i) => i.clone(),
        None => {
            let i = if item.action == "delete" || item.action == "update" {
                match node.write_target(index_name)? {
                    Some(i) => i,
                    None if item.action == "update" => node.index_for_write(index_name)?,
                    None => return Err(EsError::index_not_found(index_name)),
                }
            } else {
                node.index_for_write(index_name)?
            };
            services.insert(index_name.to_string(), i.clone());
            i
        }
    };
    let source = match (item.action.as_str(), item.source) {
        ("index" | "create", Some((s, e))) => Some(&body[s..e]),
        _ => None,
    };
    crate::by_query::wait_for_primary(
        &index,
        item.id
            .as_deref()
            .map(|id| index.shard_for(id, item.routing.as_deref())),
        defaults.timeout.as_deref(),
        Some(defaults.deadline),
        || item_description(&item.action, &index.name, item.id.as_deref(), source),
    )?;
    crate::by_query::check_active_shards(
        &index,
        defaults.active_shards.as_deref(),
        defaults.timeout.as_deref(),
    )?;
    let num = |k: &str| {
        item.meta.get(k).and_then(|v| {
            v.as_i64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
    };
    let vreq = version_req(
        num("version"),
        item.meta.get("version_type").and_then(|v| v.as_str()),
        num("if_seq_no"),
        num("if_primary_term"),
    )?;
    check_create_versioning(item.action == "create", &vreq)?;
    let routing = item.routing.as_deref();
    match item.action.as_str() {
        "index" | "create" => {
            let (s, e) = item.source.unwrap();
            let raw = &body[s..e];
            let source = parse_json(raw).map_err(|err| {
                EsError::bad_request("document_parsing_exception", "failed to parse").caused_by(err)
            })?;
            if !source.is_object() {
                return Err(EsError::bad_request(
                    "mapper_parsing_exception",
                    "failed to parse, document is empty",
                ));
            }
            let create_only = item.action == "create"
                || item.meta.get("op_type").and_then(|v| v.as_str()) == Some("create");
            let w = index.index_doc(
                item.id.as_deref(),
                &source,
                Arc::from(raw),
                routing,
                vreq,
                create_only,
            )?;
            Ok(BulkOutcome::Written(index, w))
        }
        "delete" => {
            let id = item.id.as_deref().ok_or_else(|| {
                EsError::bad_request(
                    "action_request_validation_exception",
                    "Validation Failed: 1: id is missing;",
                )
            })?;
            let w = index.delete_doc(id, routing, vreq)?;
            Ok(BulkOutcome::Written(index, w))
        }
        _ => {
            let id = item.id.as_deref().ok_or_else(|| {
                EsError::bad_request(
                    "action_request_validation_exception",
                    "Validation Failed: 1: id is missing;",
                )
            })?;
            let (s, e) = item.source.unwrap();
            let mut upd = parse_json(&body[s..e])?;
            crate::big_integers::exact_script_params(&body[s..e], &mut upd)?;
            let retry = item
                .meta
                .get("retry_on_conflict")
                .and_then(|v| v.as_u64())
                .unwrap_or(0) as usize;
            let required = match (num("if_seq_no"), num("if_primary_term")) {
                (Some(s), Some(t)) => Some((s, t)),
                _ => None,
            };
            let out = apply_update(
                node,
                &index,
                id,
                routing,
                &upd,
                &body[s..e],
                retry,
                required,
            )?;
            // The body's `_source` over the action line's, over the URL's (ES's order).
            let filter = upd
                .get("_source")
                .or(item.meta.get("_source"))
                .map(|spec| SourceFilter::from_json(Some(spec)))
                .or_else(|| defaults.source.clone());
            let (status, b) = update_body(&index, id, &out, filter.as_ref());
            Ok(BulkOutcome::Updated(
                status,
                b,
                out.write.map(|w| (index, w)),
            ))
        }
    }
}

/// Generative tests: random and mutated NDJSON into the bulk body parser gives items or a
/// 4xx, never a panic or a 5xx.
#[cfg(test)]
mod bulk_proptests {
    use super::parse_bulk_body;
    use crate::arb_json::*;
    use proptest::prelude::*;
    use serde_json::Value;

    const SEED: &str = concat!(
        "{\"index\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{\"n\":1,\"t\":\"x\"}\n",
        "{\"create\":{\"_id\":\"2\",\"routing\":\"r\"}}\n{\"n\":2}\n",
        "{\"update\":{\"_id\":\"1\",\"retry_on_conflict\":3}}\n{\"doc\":{\"n\":3}}\n",
        "{\"delete\":{\"_index\":\"a\",\"_id\":\"2\",\"if_seq_no\":1,\"if_primary_term\":1}}\n",
    );

    fn check(body: &[u8]) -> Result<(), TestCaseError> {
        client_error_or_ok(
            parse_bulk_body(body, Some("dflt"), None)
                .err()
                .map(|e| (e.status, format!("{} {}", e.kind, e.reason))),
        )
    }

    /// An action line: mostly `{action: {meta}}`, sometimes any JSON.
    fn action_line() -> impl Strategy<Value = String> {
        let action =
            proptest::sample::select(&["index", "create", "update", "delete", "upsert"][..]);
        let meta = proptest::collection::vec((word(), json()), 0..3)
            .prop_map(|kv| Value::Object(kv.into_iter().collect()));
        prop_oneof![
            3 => (action, prop_oneof![3 => meta, 1 => json()])
                .prop_map(|(a, m)| serde_json::json!({ a: m }).to_string()),
            1 => json().prop_map(|v| v.to_string()),
            1 => "[^\n]{0,20}",
        ]
    }

    fn err(body: &str) -> lode_engine::EsError {
        match parse_bulk_body(body.as_bytes(), Some("dflt"), None) {
            Ok(items) => panic!("{} items from {body:?}", items.len()),
            Err(e) => e,
        }
    }

    #[test]
    fn malformed_bodies_fail_as_in_elasticsearch() {
        assert_eq!(
            parse_bulk_body(SEED.as_bytes(), None, None).unwrap().len(),
            4
        );
        let e = err("{\"index\":{\"_id\":\"1\"}}\n{\"n\":1}");
        assert_eq!(
            e.reason,
            "The bulk request must be terminated by a newline [\\n]"
        );
        let e = err("{\"index\":{\"_id\":{\"a\":1}}}\n{}\n");
        assert_eq!(
            (e.status, e.reason.as_str()),
            (400, "Malformed action/metadata line [1], expected a simple value for field [_id] but found [START_OBJECT]")
        );
        let e = err("{\"index\":{\"routing\":[1]}}\n{}\n");
        assert!(
            e.reason.ends_with("but found [START_ARRAY]"),
            "{}",
            e.reason
        );
        let e = err("{\"index\":{\"version\":\"abc\"}}\n{}\n");
        assert_eq!(
            (e.status, e.kind.as_str()),
            (400, "number_format_exception")
        );
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn random_lines(lines in proptest::collection::vec(prop_oneof![action_line(), json().prop_map(|v| v.to_string())], 0..8),
                        newline_at_end in any::<bool>()) {
            let mut body = lines.join("\n");
            if newline_at_end {
                body.push('\n');
            }
            check(body.as_bytes())?;
        }

        #[test]
        fn byte_mutated_seed(edits in edits()) {
            check(&mutate_bytes(SEED.as_bytes(), &edits))?;
        }

        #[test]
        fn random_bytes(body in proptest::collection::vec(any::<u8>(), 0..64)) {
            check(&body)?;
        }
    }
}

#[cfg(test)]
mod mget_sources_tests {
    use super::*;

    fn request(path: &str, body: &str) -> RestRequest {
        RestRequest::test_post(path, body)
    }

    /// With raw sources, a whole `_source` is the stored bytes, from the live version map
    /// (before a refresh) and from the index alike; filtered ones, stored fields and missing
    /// documents are as in the tree answer.
    #[test]
    fn whole_sources_are_the_stored_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let node = Node::open(dir.path()).unwrap();
        let idx = node
            .create_index(
                "t",
                &json!({"number_of_shards": 2}),
                &json!({"dynamic": false, "properties": {"k": {"type": "keyword", "store": true}}}),
            )
            .unwrap();
        let sent = [
            "{ \"k\" : \"x\", \"big\": 18446744073709551616, \"f\": 1.0 }\n",
            "{\"k\":\"y\",\"s\":\"\\u00e9\\n\",\"e\":1e300}",
        ];
        for (id, src) in ["1", "2"].iter().zip(sent) {
            let v = parse_json(src.as_bytes()).unwrap();
            idx.index_doc(
                Some(id),
                &v,
                Arc::from(src.as_bytes()),
                None,
                VersionReq::Internal,
                false,
            )
            .unwrap();
        }
        let body = r#"{"docs":[{"_id":"1"},{"_id":"2"},{"_id":"3"},
            {"_id":"1","_source":["k"]},{"_id":"2","stored_fields":["k"]},
            {"_id":"1","_source":false},{"_id":"2","stored_fields":["_source"]}]}"#;
        let req = request("/t/_mget", body);
        for refreshed in [false, true] {
            let RestBody::Json(tree) = mget(&node, Some("t"), &req, HitSources::Tree).unwrap().body
            else {
                panic!("a tree by default");
            };
            let RestBody::JsonBytes(b) =
                mget(&node, Some("t"), &req, HitSources::Raw).unwrap().body
            else {
                panic!("bytes");
            };
            let text = String::from_utf8(b).unwrap();
            for src in sent {
                assert!(
                    text.contains(&format!("\"_source\":{}}}", src.trim())),
                    "{text}"
                );
            }
            let raw: Value = serde_json::from_str(&text).unwrap();
            // Equal once both are trees (the big integer read as a double by both).
            assert_eq!(raw, tree, "refreshed: {refreshed}");
            assert_eq!(tree["docs"][2]["found"], json!(false));
            assert_eq!(tree["docs"][3]["_source"], json!({"k": "x"}));
            assert_eq!(tree["docs"][4]["fields"], json!({"k": ["y"]}));
            assert!(tree["docs"][4].get("_source").is_none());
            assert!(tree["docs"][5].get("_source").is_none());
            idx.refresh().unwrap();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(v: Value, action: &str) -> EsResult<()> {
        check_bulk_metadata(v.as_object().unwrap(), action, 3)
    }

    #[test]
    fn bulk_metadata_is_declared() {
        meta(
            json!({"_index": "i", "_id": 1, "version": "7", "_source": {}}),
            "index",
        )
        .unwrap();
        meta(json!({"retry_on_conflict": 2}), "update").unwrap();
        let reason = |v, a| meta(v, a).unwrap_err().reason;
        assert_eq!(
            reason(json!({"retry_on_conflict": 2}), "index"),
            "Action/metadata line [3] parameter [retry_on_conflict] is not supported by Lode"
        );
        assert_eq!(
            reason(json!({"_id": {"a": 1}}), "index"),
            "Malformed action/metadata line [3], expected a simple value for field [_id] but found [START_OBJECT]"
        );
        assert_eq!(
            reason(json!({"_idx": "i"}), "index"),
            "Action/metadata line [3] contains an unknown parameter [_idx]"
        );
        let e = meta(json!({"if_seq_no": "x"}), "index").unwrap_err();
        assert_eq!(
            (e.kind.as_str(), e.reason.as_str()),
            ("number_format_exception", "For input string: \"x\"")
        );
    }

    #[test]
    fn mget_doc_keys_are_declared() {
        let parse = |v: Value| {
            let mut b: MgetB = (
                MgetDoc {
                    index: None,
                    id: String::new(),
                    routing: None,
                    filter: None,
                    stored: None,
                    version: None,
                },
                false,
                None,
            );
            MGET_DOC
                .parse_into(&mut b, v.as_object().unwrap())
                .map(|_| b)
        };
        let (d, has_id, _) = parse(json!({"_id": 7, "stored_fields": ["a", 1, {}]})).unwrap();
        assert_eq!((d.id.as_str(), has_id), ("7", true));
        assert_eq!(d.stored, Some(vec!["a".to_string(), "1".to_string()]));
        for bad in [
            json!({"_id": {}}),
            json!({"nope": 1}),
            json!({"version": "x"}),
        ] {
            let e = parse(bad).err().unwrap();
            assert_eq!(e.kind, "parse_exception");
            assert!(e
                .reason
                .starts_with("failed to parse multi get request. unknown field ["));
        }
    }

    #[test]
    fn update_body_keys_are_declared() {
        let e = UPDATE_REQUEST
            .parse_into(&mut (), json!({"docs": {}}).as_object().unwrap())
            .unwrap_err();
        assert_eq!(e.kind, "x_content_parse_exception");
        assert_eq!(
            e.reason,
            "[1:2] [UpdateRequest] unknown field [docs] did you mean [doc]?"
        );
        assert!(UPDATE_REQUEST
            .parse_into(&mut (), json!({"params": {}}).as_object().unwrap())
            .is_err());
    }
}
