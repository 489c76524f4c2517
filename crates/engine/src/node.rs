//! The node: every index under `path.data`, index name resolution, and the background
//! maintenance loop (scheduled refresh, async translog sync, threshold flush).

use crate::alias::AliasMeta;
use crate::error::{EsError, EsResult};
use crate::index::{new_uuid, IndexService};
use crate::mapping::wildcard_match;
use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub struct Node {
    pub data: PathBuf,
    pub cluster_uuid: String,
    indices: RwLock<BTreeMap<String, Arc<IndexService>>>,
    create_lock: Mutex<()>,
    stopping: AtomicBool,
    /// Disk watermarks: settings and the monitor thread's wake-up.
    pub disk: Arc<crate::disk::Monitor>,
}

/// One index an expression resolved to, and the aliases it was reached through.
#[derive(Clone)]
pub struct Resolved {
    pub index: Arc<IndexService>,
    pub via_aliases: Option<Vec<(String, AliasMeta)>>,
}

/// How index expressions resolve (`expand_wildcards`, `ignore_unavailable`, `allow_no_indices`).
#[derive(Debug, Clone, Copy)]
pub struct ResolveOptions {
    pub ignore_unavailable: bool,
    pub allow_no_indices: bool,
    pub open: bool,
    pub closed: bool,
    /// Whether wildcards also match hidden indices (`index.hidden: true`).
    pub hidden: bool,
    /// Whether alias names resolve (index deletion and alias actions ignore aliases).
    pub aliases: bool,
}

impl Default for ResolveOptions {
    fn default() -> Self {
        ResolveOptions {
            ignore_unavailable: false,
            allow_no_indices: true,
            open: true,
            closed: false,
            hidden: false,
            aliases: true,
        }
    }
}

impl ResolveOptions {
    /// Applies an `expand_wildcards` value (`open`, `closed`, `hidden`, `all`, `none`).
    pub fn expand_wildcards(mut self, v: &str) -> EsResult<ResolveOptions> {
        self.open = false;
        self.closed = false;
        self.hidden = false;
        for part in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match part.to_ascii_lowercase().as_str() {
                "open" => self.open = true,
                "closed" => self.closed = true,
                "hidden" => self.hidden = true,
                "all" => (self.open, self.closed, self.hidden) = (true, true, true),
                "none" => {}
                other => {
                    return Err(EsError::illegal_argument(format!(
                        "No enum constant org.elasticsearch.action.support.IndicesOptions.WildcardStates.{}",
                        other.to_uppercase()
                    )))
                }
            }
        }
        Ok(self)
    }

    /// Whether a wildcard `pattern` may expand to `svc`: hidden indices only with `hidden`, or
    /// when both the pattern and the name start with a dot (ES's "implicitly hidden" rule).
    fn expands_to(&self, pattern: &str, svc: &IndexService) -> bool {
        let closed = svc.is_closed();
        if !((closed && self.closed) || (!closed && self.open)) {
            return false;
        }
        let implicitly_visible = svc.name.starts_with('.') && pattern.starts_with('.');
        !svc.is_hidden() || self.hidden || implicitly_visible
    }
}

impl Node {
    pub fn open(data: &Path) -> EsResult<Arc<Node>> {
        let indices_dir = data.join("indices");
        std::fs::create_dir_all(&indices_dir)?;
        let node_state = data.join("node.json");
        let cluster_uuid = match std::fs::read(&node_state)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v["cluster_uuid"].as_str().map(str::to_string))
        {
            Some(u) => u,
            None => {
                let u = new_uuid();
                std::fs::write(
                    &node_state,
                    serde_json::json!({ "cluster_uuid": u }).to_string(),
                )?;
                u
            }
        };
        let mut indices = BTreeMap::new();
        for entry in std::fs::read_dir(&indices_dir)? {
            let entry = entry?;
            let p = entry.path();
            if !p.join("_state.json").exists() {
                continue;
            }
            match IndexService::open(&p) {
                Ok(svc) => {
                    indices.insert(svc.name.clone(), Arc::new(svc));
                }
                Err(e) => tracing::error!(path = %p.display(), error = %e, "could not open index"),
            }
        }
        Ok(Arc::new(Node {
            data: data.to_path_buf(),
            cluster_uuid,
            indices: RwLock::new(indices),
            create_lock: Mutex::new(()),
            stopping: AtomicBool::new(false),
            disk: Arc::new(crate::disk::Monitor::default()),
        }))
    }

    /// Starts the maintenance thread.
    pub fn start_background(self: &Arc<Self>) {
        let node = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("lode-maintenance".into())
            .spawn(move || {
                let mut merges = crate::merge_priority::MergePriority::default();
                for tick in 0u64.. {
                    std::thread::sleep(Duration::from_millis(50));
                    let Some(n) = node.upgrade() else { return };
                    if n.stopping.load(Ordering::SeqCst) {
                        return;
                    }
                    for idx in n.all() {
                        idx.maintain();
                    }
                    // Merge threads start lazily: look for new ones every half second.
                    if tick % 10 == 0 {
                        merges.apply();
                    }
                }
            })
            .expect("spawn maintenance thread");
        let node = Arc::downgrade(self);
        let monitor = self.disk.clone();
        std::thread::Builder::new()
            .name("lode-disk-monitor".into())
            .spawn(move || {
                let mut seen = 0;
                let mut generation = 0;
                let mut interval = Duration::ZERO;
                let mut checked: Option<std::time::Instant> = None;
                loop {
                    {
                        let Some(n) = node.upgrade() else { return };
                        if n.stopping.load(Ordering::SeqCst) {
                            return;
                        }
                        let due =
                            generation != seen || checked.is_none_or(|t| t.elapsed() >= interval);
                        if due || monitor.flood_crossed(&n.data) {
                            monitor.check(&n.data, &n.all());
                            checked = Some(std::time::Instant::now());
                            seen = generation;
                        }
                    }
                    (generation, interval) = monitor.wait(seen);
                }
            })
            .expect("spawn disk monitor thread");
    }

    pub fn all(&self) -> Vec<Arc<IndexService>> {
        self.indices.read().values().cloned().collect()
    }

    pub fn get(&self, name: &str) -> Option<Arc<IndexService>> {
        self.indices.read().get(name).cloned()
    }

    pub fn index(&self, name: &str) -> EsResult<Arc<IndexService>> {
        let name = &*crate::date_math_name::resolve(name, crate::index::now_millis())?;
        self.get(name).ok_or_else(|| EsError::index_not_found(name))
    }

    pub fn create_index(
        &self,
        name: &str,
        settings: &Value,
        mappings: &Value,
    ) -> EsResult<Arc<IndexService>> {
        let name = &*crate::date_math_name::resolve(name, crate::index::now_millis())?;
        validate_index_name(name)?;
        let _one = self.create_lock.lock();
        if !self.alias_indices(name).is_empty() {
            return Err(EsError::bad_request(
                "invalid_index_name_exception",
                format!("Invalid index name [{name}], already exists as alias"),
            )
            .with("index_uuid", "_na_")
            .with("index", name));
        }
        if let Some(existing) = self.get(name) {
            return Err(EsError::bad_request(
                "resource_already_exists_exception",
                format!("index [{}/{}] already exists", name, existing.uuid),
            )
            .with("index_uuid", existing.uuid.clone())
            .with("index", name));
        }
        let svc = Arc::new(IndexService::create(
            &self.data.join("indices"),
            name,
            settings,
            mappings,
        )?);
        self.indices.write().insert(name.to_string(), svc.clone());
        Ok(svc)
    }

    /// The index a write goes to, created with defaults and dynamic mapping when missing.
    pub fn index_for_write(&self, name: &str) -> EsResult<Arc<IndexService>> {
        let name = &*crate::date_math_name::resolve(name, crate::index::now_millis())?;
        if let Some(i) = self.write_target(name)? {
            return Ok(i);
        }
        match self.create_index(name, &Value::Null, &Value::Null) {
            Ok(i) => Ok(i),
            Err(e) if e.kind == "resource_already_exists_exception" => self.index(name),
            Err(e) => Err(e),
        }
    }

    pub fn delete_index(&self, name: &str) -> EsResult<()> {
        let _one = self.create_lock.lock();
        let svc = self
            .indices
            .write()
            .remove(name)
            .ok_or_else(|| EsError::index_not_found(name))?;
        // An index whose shards failed to open may be retrying: let it finish, then stop it.
        svc.mark_deleted();
        let path = svc.path().to_path_buf();
        drop(svc);
        // Background merges of the dropped shards may still be finishing their files: retry.
        let mut last = Ok(());
        for _ in 0..50 {
            last = std::fs::remove_dir_all(&path);
            if last.is_ok() || !path.exists() {
                return Ok(());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        last?;
        Ok(())
    }

    /// Resolves an index expression: comma lists, `*` wildcards, `_all`, `-exclusions`.
    pub fn resolve(&self, expr: &str, opts: ResolveOptions) -> EsResult<Vec<Arc<IndexService>>> {
        Ok(self
            .resolve_detailed(expr, opts)?
            .into_iter()
            .map(|r| r.index)
            .collect())
    }

    /// Like `resolve`, also telling for each index the aliases it was reached through (`None`
    /// when it was also named directly or by a wildcard), so searches can apply alias filters.
    pub fn resolve_detailed(&self, expr: &str, opts: ResolveOptions) -> EsResult<Vec<Resolved>> {
        let expr = expr.trim();
        let now = crate::index::now_millis();
        let resolved: Vec<std::borrow::Cow<str>> = if expr.is_empty() || expr == "_all" {
            vec!["*".into()]
        } else {
            expr.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|part| match part.strip_prefix('-') {
                    Some(excl) if excl.starts_with('<') => {
                        crate::date_math_name::resolve(excl, now).map(|n| format!("-{n}").into())
                    }
                    _ => crate::date_math_name::resolve(part, now),
                })
                .collect::<EsResult<_>>()?
        };
        let parts: Vec<&str> = resolved.iter().map(|p| &**p).collect();
        let indices = self.indices.read();
        let mut out: Vec<Resolved> = Vec::new();
        fn add(out: &mut Vec<Resolved>, svc: &Arc<IndexService>, via: Option<(String, AliasMeta)>) {
            match out.iter_mut().find(|r| r.index.name == svc.name) {
                Some(r) => match (&mut r.via_aliases, via) {
                    (Some(list), Some(v)) => list.push(v),
                    (slot, None) => *slot = None,
                    (None, Some(_)) => {}
                },
                None => out.push(Resolved {
                    index: svc.clone(),
                    via_aliases: via.map(|v| vec![v]),
                }),
            }
        }
        for (i, part) in parts.iter().enumerate() {
            if let Some(excl) = part.strip_prefix('-').filter(|_| i > 0) {
                out.retain(|r| !wildcard_match(excl, &r.index.name));
                continue;
            }
            if part.contains('*') || *part == "_all" {
                let pattern = if *part == "_all" { "*" } else { part };
                let before = out.len();
                for (name, svc) in indices.iter() {
                    if wildcard_match(pattern, name) && opts.expands_to(pattern, svc) {
                        add(&mut out, svc, None);
                    }
                }
                for svc in indices.values().filter(|_| opts.aliases) {
                    let closed = svc.is_closed();
                    if !((closed && opts.closed) || (!closed && opts.open)) {
                        continue;
                    }
                    for (alias, meta) in svc.aliases() {
                        let hidden = meta.is_hidden == Some(true) || alias.starts_with('.');
                        if wildcard_match(pattern, &alias)
                            && (!hidden
                                || opts.hidden
                                || (alias.starts_with('.') && pattern.starts_with('.')))
                        {
                            add(&mut out, svc, Some((alias, meta)));
                        }
                    }
                }
                // ES checks every wildcard on its own: one that matches nothing is an error
                // when no-index results are not allowed.
                if out.len() == before && !opts.allow_no_indices && *part != "_all" {
                    return Err(EsError::index_not_found(part));
                }
            } else if let Some(svc) = indices.get(*part) {
                if svc.is_closed() && !opts.closed && opts.ignore_unavailable {
                    continue;
                }
                add(&mut out, svc, None);
            } else {
                let mut found = false;
                for svc in indices.values().filter(|_| opts.aliases) {
                    if let Some(meta) = svc.alias(part) {
                        found = true;
                        if svc.is_closed() && !opts.closed {
                            continue;
                        }
                        add(&mut out, svc, Some((part.to_string(), meta)));
                    }
                }
                if !found && !opts.ignore_unavailable {
                    return Err(EsError::index_not_found(part));
                }
            }
        }
        if out.is_empty() && !opts.allow_no_indices {
            return Err(EsError::index_not_found(expr));
        }
        Ok(out)
    }

    /// The indices holding alias `name`.
    pub fn alias_indices(&self, name: &str) -> Vec<Arc<IndexService>> {
        self.indices
            .read()
            .values()
            .filter(|i| i.alias(name).is_some())
            .cloned()
            .collect()
    }

    /// The index a single-document read of `name` uses: the index, or the one index of an alias.
    pub fn read_target(&self, name: &str) -> EsResult<Arc<IndexService>> {
        let i = self.read_target_unchecked(name)?;
        i.check_block(crate::blocks::Level::Read)?;
        Ok(i)
    }

    fn read_target_unchecked(&self, name: &str) -> EsResult<Arc<IndexService>> {
        let name = &*crate::date_math_name::resolve(name, crate::index::now_millis())?;
        if let Some(i) = self.get(name) {
            return Ok(i);
        }
        let holders = self.alias_indices(name);
        match holders.len() {
            0 => Err(EsError::index_not_found(name)),
            1 => Ok(holders[0].clone()),
            _ => Err(EsError::illegal_argument(format!(
                "alias [{name}] has more than one index associated with it [{}], can't execute a single index op",
                holders.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    /// The existing index a write to `name` goes to, without auto-creating it.
    pub fn existing_write_target(&self, name: &str) -> EsResult<Arc<IndexService>> {
        self.write_target(name)?
            .ok_or_else(|| EsError::index_not_found(name))
    }

    /// The index a write to `name` goes to: the index itself, or an alias's write index.
    pub fn write_target(&self, name: &str) -> EsResult<Option<Arc<IndexService>>> {
        let name = &*crate::date_math_name::resolve(name, crate::index::now_millis())?;
        if let Some(i) = self.get(name) {
            return Ok(Some(i));
        }
        let holders = self.alias_indices(name);
        if holders.is_empty() {
            return Ok(None);
        }
        let explicit: Vec<_> = holders
            .iter()
            .filter(|i| i.alias(name).and_then(|m| m.is_write_index) == Some(true))
            .collect();
        let implicit_single = holders.len() == 1
            && holders[0].alias(name).and_then(|m| m.is_write_index) != Some(false);
        match (explicit.first(), implicit_single) {
            (Some(i), _) => Ok(Some((*i).clone())),
            (None, true) => Ok(Some(holders[0].clone())),
            _ => Err(EsError::illegal_argument(format!(
                "no write index is defined for alias [{name}]. The write index may be explicitly disabled using is_write_index=false or the alias points to multiple indices without one being designated as a write index"
            ))),
        }
    }

    /// Retries opening every index whose shards failed to open, resetting their failed
    /// attempts (`POST _cluster/reroute?retry_failed=true`).
    pub fn retry_failed(&self) {
        for idx in self.all() {
            if idx.allocation_failure().is_some() {
                idx.retry_open(true);
            }
        }
    }

    /// Flushes everything (SIGTERM / SIGINT).
    pub fn shutdown(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        for idx in self.all() {
            idx.shutdown();
        }
    }
}

/// Elasticsearch's index name rules.
pub fn validate_index_name(name: &str) -> EsResult<()> {
    let invalid = |why: &str| {
        Err(EsError::bad_request(
            "invalid_index_name_exception",
            format!("Invalid index name [{name}], {why}"),
        )
        .with("index_uuid", "_na_")
        .with("index", name))
    };
    if name.is_empty() {
        return invalid("must not be empty");
    }
    if name.to_lowercase() != name {
        return invalid("must be lowercase");
    }
    if name == "." || name == ".." {
        return invalid("must not be '.' or '..'");
    }
    if name.starts_with('_') || name.starts_with('-') || name.starts_with('+') {
        return invalid("must not start with '_', '-', or '+'");
    }
    for c in ['\\', '/', '*', '?', '"', '<', '>', '|', ' ', ',', '#', ':'] {
        if name.contains(c) {
            return invalid(
                "must not contain the following characters [ , \", *, \\, <, |, ,, >, /, ?]",
            );
        }
    }
    if name.len() > 255 {
        return invalid("index name is too long, (256 > 255)");
    }
    Ok(())
}

#[cfg(test)]
mod failed_open_tests {
    use super::*;
    use crate::shard::VersionReq;
    use serde_json::json;

    /// An index whose shard cannot open (its commit point is corrupt) stays in the node,
    /// unassigned, refuses shard access with ES's 503, opens again once the fault is gone and
    /// can be deleted meanwhile.
    #[test]
    fn an_index_that_cannot_open_stays_and_recovers() {
        let dir = tempfile::tempdir().unwrap();
        let settings = json!({"number_of_shards": 1});
        {
            let node = Node::open(dir.path()).unwrap();
            for name in ["broken", "doomed"] {
                let idx = node.create_index(name, &settings, &Value::Null).unwrap();
                let src = json!({"f": 1});
                let raw: Arc<[u8]> = serde_json::to_vec(&src).unwrap().into();
                idx.index_doc(Some("1"), &src, raw, None, VersionReq::Internal, false)
                    .unwrap();
                idx.flush().unwrap();
            }
            node.shutdown();
        }
        let meta = |name: &str| {
            let node = Node::open(dir.path()).unwrap();
            let p = node.get(name).unwrap().path().join("0/index/meta.json");
            node.shutdown();
            p
        };
        let (broken, doomed) = (meta("broken"), meta("doomed"));
        let good = std::fs::read(&broken).unwrap();
        std::fs::write(&broken, b"{not json").unwrap();
        std::fs::write(&doomed, b"{not json").unwrap();

        let node = Node::open(dir.path()).unwrap();
        let idx = node
            .get("broken")
            .expect("a failed index stays in the node");
        let f = idx.allocation_failure().expect("unassigned");
        assert_eq!((f.shard, f.attempts), (0, 1));
        assert!(f.next_retry.is_some());
        let e = idx.shards().err().unwrap();
        assert_eq!(
            (e.status, e.kind.as_str()),
            (503, "no_shard_available_action_exception")
        );
        assert!(idx.wait_active(Duration::from_millis(60)).is_err());

        // Still broken: the retry counts another failure.
        assert!(!idx.retry_open(false));
        assert_eq!(idx.allocation_failure().unwrap().attempts, 2);
        // A reset retry starts counting again.
        assert!(!idx.retry_open(true));
        assert_eq!(idx.allocation_failure().unwrap().attempts, 1);

        std::fs::write(&broken, &good).unwrap();
        assert!(idx.retry_open(false));
        assert!(idx.allocation_failure().is_none());
        assert!(idx.wait_active(Duration::ZERO).is_ok());
        let doc = idx.get_doc("1", None, true).unwrap();
        assert!(doc.is_some(), "the document survived");

        let path = node.get("doomed").unwrap().path().to_path_buf();
        node.delete_index("doomed").unwrap();
        assert!(node.get("doomed").is_none() && !path.exists());
    }

    /// One shard of three failing leaves the other two started: only the failed one is
    /// unassigned, its documents refused, the others' served; a retry reopens only it.
    #[test]
    fn shards_fail_one_by_one() {
        let dir = tempfile::tempdir().unwrap();
        let ids: Vec<String> = (0..30).map(|i| i.to_string()).collect();
        let path = {
            let node = Node::open(dir.path()).unwrap();
            let idx = node
                .create_index("three", &json!({"number_of_shards": 3}), &Value::Null)
                .unwrap();
            for id in &ids {
                let src = json!({"f": id});
                let raw: Arc<[u8]> = serde_json::to_vec(&src).unwrap().into();
                idx.index_doc(Some(id), &src, raw, None, VersionReq::Internal, false)
                    .unwrap();
            }
            idx.flush().unwrap();
            let path = idx.path().to_path_buf();
            node.shutdown();
            path
        };
        let meta = path.join("1/index/meta.json");
        let good = std::fs::read(&meta).unwrap();
        std::fs::remove_file(&meta).unwrap();

        let node = Node::open(dir.path()).unwrap();
        let idx = node.get("three").unwrap();
        let failures = idx.allocation_failures();
        assert_eq!(failures.keys().copied().collect::<Vec<_>>(), vec![1]);
        assert_eq!(failures[&1].error.kind, "index_shard_recovery_exception");
        let started: Vec<usize> = idx.started_shards().unwrap().iter().map(|s| s.id).collect();
        assert_eq!(started, vec![0, 2]);
        assert!(idx.shards().is_err() && idx.shard(1).is_err() && idx.shard(2).is_ok());
        for id in &ids {
            let got = idx.get_doc(id, None, true);
            if idx.shard_for(id, None) == 1 {
                assert_eq!(got.err().unwrap().status, 503);
            } else {
                assert!(got.unwrap().is_some(), "{id} on a started shard");
            }
        }
        assert!(idx.wait_shard_active(Some(0), Duration::ZERO).is_ok());
        assert!(idx.wait_shard_active(Some(1), Duration::ZERO).is_err());
        idx.refresh().unwrap();

        std::fs::write(&meta, good).unwrap();
        assert!(idx.retry_open(true));
        assert!(idx.allocation_failures().is_empty());
        assert_eq!(idx.shards().unwrap().len(), 3);
        for id in &ids {
            assert!(idx.get_doc(id, None, true).unwrap().is_some());
        }
    }

    #[test]
    fn retries_stop_at_max_retries() {
        let dir = tempfile::tempdir().unwrap();
        {
            let node = Node::open(dir.path()).unwrap();
            let s = json!({"number_of_shards": 1, "index.allocation.max_retries": 2});
            node.create_index("x", &s, &Value::Null)
                .unwrap()
                .flush()
                .unwrap();
            node.shutdown();
        }
        let node = Node::open(dir.path()).unwrap();
        let meta = node.get("x").unwrap().path().join("0/index/meta.json");
        drop(node);
        std::fs::write(&meta, b"[").unwrap();
        let node = Node::open(dir.path()).unwrap();
        let idx = node.get("x").unwrap();
        assert!(idx.allocation_failure().unwrap().next_retry.is_some());
        idx.retry_open(false);
        let f = idx.allocation_failure().unwrap();
        assert_eq!(f.attempts, 2);
        assert!(
            f.next_retry.is_none(),
            "no automatic retry past max_retries"
        );
    }
}
