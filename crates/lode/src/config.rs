//! Node settings with Elasticsearch's names, from `lode.yml` and `-E name=value` flags
//! (flags win).

use anyhow::{bail, Context};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The shard request cache's bound (ES's static node setting).
const REQUEST_CACHE_SIZE: &str = "indices.requests.cache.size";

pub struct Settings {
    pub network_host: String,
    pub http_port: u16,
    pub path_data: PathBuf,
    pub cluster_name: String,
    pub node_name: String,
    pub max_content_length: usize,
    /// `http.max_initial_line_length` and `http.max_header_size`.
    pub head_limits: lode_http::connections::HeadLimits,
    pub log_level: String,
    /// `indices.query.bool.max_clause_count` (ES 8 deprecates it but still applies it).
    pub max_clause_count: Option<usize>,
    /// `indices.requests.cache.size`, in bytes (the shard request cache's bound).
    pub request_cache_bytes: Option<usize>,
    /// `http.shutdown_grace_period`: how long in-flight requests may run after SIGTERM/SIGINT;
    /// `None` (the value `0`) waits for them indefinitely, as in Elasticsearch.
    pub shutdown_grace_period: Option<std::time::Duration>,
    /// The thread pools, sized by `thread_pool.{name}.*` (ES's defaults for this machine's
    /// processors otherwise).
    pub thread_pools: std::sync::Arc<lode_api::thread_pool::ThreadPools>,
    /// Disk threshold settings given as node settings: defaults under the cluster settings
    /// (`PUT _cluster/settings` overrides them), as in ES's `elasticsearch.yml`.
    pub disk: BTreeMap<String, String>,
    /// Circuit breaker settings (`indices.breaker.*`, `network.breaker.*`, `node.memory`):
    /// defaults under the cluster settings, as the disk thresholds.
    pub breakers: BTreeMap<String, String>,
    /// `xpack.security.*` and `lode.security.allow_insecure_network`.
    pub security: SecuritySettings,
}

/// The security settings, with Elasticsearch's names.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SecuritySettings {
    /// `xpack.security.enabled` (default false).
    pub enabled: bool,
    /// `xpack.security.http.ssl.enabled` with its `certificate`, `key` (PEM) and optional
    /// `certificate_authorities`.
    pub http_ssl: Option<HttpSsl>,
    /// `lode.security.allow_insecure_network`: serve a non-loopback `network.host` without
    /// security (refused otherwise).
    pub allow_insecure_network: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HttpSsl {
    pub certificate: PathBuf,
    pub key: PathBuf,
    pub certificate_authorities: Vec<PathBuf>,
}

fn parse_bool(map: &BTreeMap<String, String>, key: &str) -> anyhow::Result<bool> {
    match map.get(key).map(String::as_str) {
        None => Ok(false),
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(v) => bail!(
            "Failed to parse value [{v}] as only [true] or [false] are allowed. (setting [{key}])"
        ),
    }
}

impl SecuritySettings {
    fn from_map(map: &BTreeMap<String, String>) -> anyhow::Result<SecuritySettings> {
        let enabled = parse_bool(map, "xpack.security.enabled")?;
        let ssl = parse_bool(map, "xpack.security.http.ssl.enabled")?;
        let allow_insecure_network = parse_bool(map, "lode.security.allow_insecure_network")?;
        let http_ssl = if ssl {
            if !enabled {
                bail!("[xpack.security.http.ssl.enabled] is true but [xpack.security.enabled] is false: HTTP TLS is part of the security layer, enable it too");
            }
            let path = |k: &str| -> anyhow::Result<PathBuf> {
                map.get(k)
                    .map(PathBuf::from)
                    .ok_or_else(|| anyhow::anyhow!("[xpack.security.http.ssl.enabled] is true but [{k}] is not set (a PEM file)"))
            };
            Some(HttpSsl {
                certificate: path("xpack.security.http.ssl.certificate")?,
                key: path("xpack.security.http.ssl.key")?,
                certificate_authorities: map
                    .get("xpack.security.http.ssl.certificate_authorities")
                    .map(|v| {
                        v.split(',')
                            .map(str::trim)
                            .filter(|s| !s.is_empty())
                            .map(PathBuf::from)
                            .collect()
                    })
                    .unwrap_or_default(),
            })
        } else {
            None
        };
        Ok(SecuritySettings {
            enabled,
            http_ssl,
            allow_insecure_network,
        })
    }
}

/// Whether `network.host` binds loopback only.
pub fn is_loopback(host: &str) -> bool {
    host.parse::<std::net::IpAddr>()
        .map(|ip| ip.is_loopback())
        .unwrap_or(false)
}

impl Settings {
    /// A node bound beyond loopback must run with security unless explicitly allowed, so an
    /// open port is never an open door.
    pub fn check_network_security(&self) -> anyhow::Result<()> {
        if !is_loopback(&self.network_host)
            && !self.security.enabled
            && !self.security.allow_insecure_network
        {
            bail!(
                "refusing to start: [network.host] is [{}], which is not a loopback address, and security is disabled ([xpack.security.enabled] is false); enable security (-E xpack.security.enabled=true) or, to serve an insecure node on the network anyway, set [lode.security.allow_insecure_network] to true",
                self.network_host
            );
        }
        Ok(())
    }
}

fn flatten_yaml(prefix: &str, v: &serde_yaml::Value, out: &mut BTreeMap<String, String>) {
    match v {
        serde_yaml::Value::Mapping(m) => {
            for (k, val) in m {
                let k = k
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("{k:?}"));
                let key = if prefix.is_empty() {
                    k
                } else {
                    format!("{prefix}.{k}")
                };
                flatten_yaml(&key, val, out);
            }
        }
        serde_yaml::Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        serde_yaml::Value::Number(n) => {
            out.insert(prefix.to_string(), n.to_string());
        }
        serde_yaml::Value::Bool(b) => {
            out.insert(prefix.to_string(), b.to_string());
        }
        // a list (`certificate_authorities: [a.pem, b.pem]`): comma-separated, as with -E
        serde_yaml::Value::Sequence(items) => {
            let parts: Vec<String> = items
                .iter()
                .filter_map(|i| match i {
                    serde_yaml::Value::String(s) => Some(s.clone()),
                    serde_yaml::Value::Number(n) => Some(n.to_string()),
                    serde_yaml::Value::Bool(b) => Some(b.to_string()),
                    _ => None,
                })
                .collect();
            out.insert(prefix.to_string(), parts.join(","));
        }
        _ => {}
    }
}

fn parse_size(s: &str) -> anyhow::Result<usize> {
    let t = s.trim().to_ascii_lowercase();
    for (suffix, m) in [
        ("gb", 1usize << 30),
        ("mb", 1 << 20),
        ("kb", 1 << 10),
        ("b", 1),
    ] {
        if let Some(n) = t.strip_suffix(suffix) {
            return Ok((n.trim().parse::<f64>().context("size")? * m as f64) as usize);
        }
    }
    Ok(t.parse()?)
}

/// `http.max_initial_line_length` (default 4kb) and `http.max_header_size` (16kb), as ES's
/// byte size settings; Netty refuses values that are not positive, and together they must fit
/// hyper's read buffer (a larger head would be refused by hyper with an empty answer).
fn head_limits(
    map: &BTreeMap<String, String>,
) -> anyhow::Result<lode_http::connections::HeadLimits> {
    use lode_http::connections::{HeadLimits, HYPER_MAX_HEAD};
    let mut limits = HeadLimits::default();
    for (key, slot) in [
        (
            "http.max_initial_line_length",
            &mut limits.max_initial_line_length,
        ),
        ("http.max_header_size", &mut limits.max_header_size),
    ] {
        if let Some(v) = map.get(key) {
            let n = parse_size(v).map_err(|_| {
                anyhow::anyhow!("failed to parse setting [{key}] with value [{v}] as a size in bytes: unit is missing or unrecognized")
            })?;
            if n == 0 {
                bail!("setting [{key}] must be positive, got [{v}]");
            }
            *slot = n;
        }
    }
    if limits.max_initial_line_length + limits.max_header_size > HYPER_MAX_HEAD {
        bail!(
            "[http.max_initial_line_length] and [http.max_header_size] together may be at most [{HYPER_MAX_HEAD}] bytes in Lode, got [{}] and [{}]",
            limits.max_initial_line_length,
            limits.max_header_size
        );
    }
    Ok(limits)
}

fn breaker_key(k: &str) -> bool {
    lode_engine::breaker::DYNAMIC.contains(&k) || lode_engine::breaker::STATIC.contains(&k)
}

impl Settings {
    pub fn load(file: Option<&Path>, overrides: &[String]) -> anyhow::Result<Settings> {
        let mut map = BTreeMap::new();
        let default_file = PathBuf::from("lode.yml");
        let file = file
            .map(Path::to_path_buf)
            .or_else(|| default_file.exists().then_some(default_file));
        if let Some(f) = file {
            let text =
                std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
            let y: serde_yaml::Value =
                serde_yaml::from_str(&text).with_context(|| format!("parsing {}", f.display()))?;
            flatten_yaml("", &y, &mut map);
        }
        for o in overrides {
            let Some((k, v)) = o.split_once('=') else {
                bail!("setting [{o}] must be of the form name=value");
            };
            map.insert(k.trim().to_string(), v.trim().to_string());
        }
        let known = [
            "network.host",
            "http.port",
            "path.data",
            "cluster.name",
            "node.name",
            "http.max_content_length",
            "http.max_initial_line_length",
            "http.max_header_size",
            "indices.query.bool.max_clause_count",
            "indices.requests.cache.size",
            "logger.level",
            "log.level",
            "logger.root",
            "http.shutdown_grace_period",
            "xpack.security.enabled",
            "xpack.security.http.ssl.enabled",
            "xpack.security.http.ssl.certificate",
            "xpack.security.http.ssl.key",
            "xpack.security.http.ssl.certificate_authorities",
            "lode.security.allow_insecure_network",
        ];
        let disk_keys = [
            lode_engine::disk::ENABLED,
            lode_engine::disk::LOW,
            lode_engine::disk::HIGH,
            lode_engine::disk::FLOOD,
            lode_engine::disk::INTERVAL,
        ];
        for k in map.keys() {
            if !known.contains(&k.as_str())
                && !k.starts_with("thread_pool.")
                && !disk_keys.contains(&k.as_str())
                && !breaker_key(k)
            {
                bail!("unknown setting [{k}]");
            }
        }
        let disk: BTreeMap<String, String> = map
            .iter()
            .filter(|(k, _)| disk_keys.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Err(e) = lode_engine::disk::DiskSettings::from_lookup(|k| disk.get(k).cloned()) {
            bail!("{}", e.reason);
        }
        let breakers: BTreeMap<String, String> = map
            .iter()
            .filter(|(k, _)| breaker_key(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let breaker_settings = match lode_engine::breaker::BreakerSettings::from_lookup(
            |k| breakers.get(k).cloned(),
            lode_engine::breaker::machine_memory(),
        ) {
            Ok(s) => s,
            Err(e) => bail!("{}", e.reason),
        };
        // ES's static `indices.requests.cache.size`: a byte size, or a percentage of the memory
        // budget (`node.memory`, what Lode has in place of the JVM heap).
        let request_cache_bytes = match map.get(REQUEST_CACHE_SIZE) {
            None => None,
            Some(v) => match lode_engine::breaker::parse_limit(
                REQUEST_CACHE_SIZE,
                v,
                breaker_settings.budget,
            ) {
                Ok(b) if b >= 0 => Some(b as usize),
                Ok(_) => bail!(
                    "failed to parse value [{v}] for setting [{REQUEST_CACHE_SIZE}], must be >= [0b]"
                ),
                Err(e) => bail!("{}", e.reason),
            },
        };
        let host = map
            .get("network.host")
            .cloned()
            .unwrap_or_else(|| "127.0.0.1".into());
        let host = match host.as_str() {
            "_local_" | "localhost" => "127.0.0.1".to_string(),
            h => h.to_string(),
        };
        let max_clause_count = match map.get("indices.query.bool.max_clause_count") {
            None => None,
            Some(v) => match v.parse::<i32>() {
                Ok(n) if n >= 1 => Some(n as usize),
                Ok(_) => bail!(
                    "Failed to parse value [{v}] for setting [indices.query.bool.max_clause_count] must be >= 1"
                ),
                Err(_) => bail!(
                    "Failed to parse value [{v}] for setting [indices.query.bool.max_clause_count]"
                ),
            },
        };
        // A positive time setting, as ES's `http.shutdown_grace_period`; Lode's default is 5 s
        // where ES's is 0 (wait indefinitely), so SIGTERM always ends in bounded time.
        let shutdown_grace_period = match map.get("http.shutdown_grace_period") {
            None => Some(crate::shutdown::DEFAULT_GRACE),
            Some(v) => match lode_engine::settings::parse_time(v, "http.shutdown_grace_period") {
                Ok(0) => None,
                Ok(ms) if ms > 0 => Some(std::time::Duration::from_millis(ms as u64)),
                Ok(_) => bail!(
                    "failed to parse value [{v}] for setting [http.shutdown_grace_period], must be >= [0ms]"
                ),
                Err(e) => bail!("{}", e.reason),
            },
        };
        let node_name = map
            .get("node.name")
            .cloned()
            .unwrap_or_else(|| "lode-node".into());
        let thread_pools = lode_api::thread_pool::ThreadPools::from_settings(
            &node_name,
            lode_api::thread_pool::processors(),
            &map,
        )
        .map_err(|e| anyhow::anyhow!(e))?;
        let security = SecuritySettings::from_map(&map)?;
        let head_limits = head_limits(&map)?;
        Ok(Settings {
            request_cache_bytes,
            head_limits,
            security,
            thread_pools: std::sync::Arc::new(thread_pools),
            disk,
            breakers,
            max_clause_count,
            shutdown_grace_period,
            network_host: host,
            http_port: map
                .get("http.port")
                .map(|p| p.parse())
                .transpose()
                .context("http.port")?
                .unwrap_or(9200),
            path_data: PathBuf::from(
                map.get("path.data")
                    .cloned()
                    .unwrap_or_else(|| "./data".into()),
            ),
            cluster_name: map
                .get("cluster.name")
                .cloned()
                .unwrap_or_else(|| "lode".into()),
            node_name,
            max_content_length: map
                .get("http.max_content_length")
                .map(|s| parse_size(s))
                .transpose()?
                .unwrap_or(100 << 20),
            log_level: map
                .get("logger.level")
                .or(map.get("log.level"))
                .or(map.get("logger.root"))
                .cloned()
                .unwrap_or_else(|| "warn".into())
                .to_lowercase(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_limit_settings() {
        let s = Settings::load(None, &[]).unwrap();
        assert_eq!(s.head_limits.max_initial_line_length, 4096);
        assert_eq!(s.head_limits.max_header_size, 16384);
        let s = Settings::load(
            None,
            &[
                "http.max_initial_line_length=8kb".into(),
                "http.max_header_size=1000b".into(),
            ],
        )
        .unwrap();
        assert_eq!(s.head_limits.max_initial_line_length, 8192);
        assert_eq!(s.head_limits.max_header_size, 1000);
        assert!(Settings::load(None, &["http.max_header_size=0".into()]).is_err());
        assert!(Settings::load(None, &["http.max_header_size=abc".into()]).is_err());
        assert!(Settings::load(None, &["http.max_header_size=10mb".into()]).is_err());
    }

    #[test]
    fn security_settings() {
        let s = Settings::load(None, &[]).unwrap();
        assert!(!s.security.enabled);
        assert!(s.check_network_security().is_ok());
        let open = Settings::load(None, &["network.host=0.0.0.0".into()]).unwrap();
        let e = open.check_network_security().unwrap_err().to_string();
        assert!(e.contains("lode.security.allow_insecure_network"), "{e}");
        let allowed = Settings::load(
            None,
            &[
                "network.host=0.0.0.0".into(),
                "lode.security.allow_insecure_network=true".into(),
            ],
        )
        .unwrap();
        assert!(allowed.check_network_security().is_ok());
        let secured = Settings::load(
            None,
            &[
                "network.host=0.0.0.0".into(),
                "xpack.security.enabled=true".into(),
                "xpack.security.http.ssl.enabled=true".into(),
                "xpack.security.http.ssl.certificate=c.pem".into(),
                "xpack.security.http.ssl.key=k.pem".into(),
            ],
        )
        .unwrap();
        assert!(secured.check_network_security().is_ok());
        assert_eq!(
            secured.security.http_ssl.unwrap().certificate,
            PathBuf::from("c.pem")
        );
        assert!(Settings::load(None, &["xpack.security.http.ssl.enabled=true".into()]).is_err());
        assert!(Settings::load(
            None,
            &[
                "xpack.security.enabled=true".into(),
                "xpack.security.http.ssl.enabled=true".into()
            ]
        )
        .is_err());
        assert!(Settings::load(None, &["xpack.security.enabled=yes".into()]).is_err());
        assert!(is_loopback("127.0.0.1") && is_loopback("::1") && !is_loopback("0.0.0.0"));
    }

    #[test]
    fn disk_thresholds_are_node_settings() {
        let s = Settings::load(
            None,
            &[
                "cluster.routing.allocation.disk.threshold_enabled=false".into(),
                "cluster.info.update.interval=15s".into(),
            ],
        )
        .unwrap();
        assert_eq!(
            s.disk
                .get("cluster.routing.allocation.disk.threshold_enabled"),
            Some(&"false".to_string())
        );
        let bad = Settings::load(
            None,
            &["cluster.routing.allocation.disk.watermark.high=80%".into()],
        );
        assert_eq!(
            bad.err().unwrap().to_string(),
            "low disk watermark [85%] more than high disk watermark [80%]"
        );
        assert!(Settings::load(None, &["cluster.routing.allocation.disk.other=1".into()]).is_err());
    }

    #[test]
    fn max_clause_count_is_a_positive_int() {
        let s =
            |v: &str| Settings::load(None, &[format!("indices.query.bool.max_clause_count={v}")]);
        assert_eq!(s("10").unwrap().max_clause_count, Some(10));
        assert!(Settings::load(None, &[])
            .unwrap()
            .max_clause_count
            .is_none());
        assert_eq!(
            s("0").err().unwrap().to_string(),
            "Failed to parse value [0] for setting [indices.query.bool.max_clause_count] must be >= 1"
        );
        assert!(s("x").is_err());
    }

    #[test]
    fn thread_pool_settings_size_the_pools() {
        let s = Settings::load(
            None,
            &[
                "thread_pool.search.size=1".into(),
                "thread_pool.search.queue_size=3".into(),
            ],
        )
        .unwrap();
        let search = s.thread_pools.get("search");
        assert_eq!((search.max, search.queue_size), (1, 3));
        let e = Settings::load(None, &["thread_pool.search.sise=1".into()]);
        assert_eq!(
            e.err().unwrap().to_string(),
            "unknown setting [thread_pool.search.sise]"
        );
    }

    #[test]
    fn request_cache_size_is_a_byte_size_or_a_share_of_the_memory_budget() {
        let s = Settings::load(None, &["indices.requests.cache.size=10mb".into()]).unwrap();
        assert_eq!(s.request_cache_bytes, Some(10 << 20));
        let s = Settings::load(
            None,
            &[
                "indices.requests.cache.size=1%".into(),
                "node.memory=4gb".into(),
            ],
        )
        .unwrap();
        assert_eq!(s.request_cache_bytes, Some((4u64 << 30) as usize / 100));
        assert_eq!(Settings::load(None, &[]).unwrap().request_cache_bytes, None);
        for bad in ["lots", "200%", "-1"] {
            let e = Settings::load(None, &[format!("indices.requests.cache.size={bad}")]);
            assert!(
                e.err()
                    .unwrap()
                    .to_string()
                    .contains("[indices.requests.cache.size]"),
                "{bad}"
            );
        }
    }

    #[test]
    fn breaker_settings_are_node_settings() {
        let s = Settings::load(
            None,
            &[
                "indices.breaker.request.limit=1mb".into(),
                "network.breaker.inflight_requests.overhead=1.5".into(),
                "indices.breaker.total.use_real_memory=false".into(),
                "node.memory=4gb".into(),
            ],
        )
        .unwrap();
        assert_eq!(s.breakers["indices.breaker.request.limit"], "1mb");
        assert_eq!(s.breakers.len(), 4);
        let e = Settings::load(None, &["indices.breaker.request.limit=lots".into()]);
        assert!(e
            .err()
            .unwrap()
            .to_string()
            .contains("[indices.breaker.request.limit]"),);
        let e = Settings::load(None, &["indices.breaker.request.limt=1mb".into()]);
        assert_eq!(
            e.err().unwrap().to_string(),
            "unknown setting [indices.breaker.request.limt]"
        );
    }

    #[test]
    fn shutdown_grace_period_is_a_non_negative_time_value() {
        let s = |v: &str| Settings::load(None, &[format!("http.shutdown_grace_period={v}")]);
        assert_eq!(
            Settings::load(None, &[]).unwrap().shutdown_grace_period,
            Some(crate::shutdown::DEFAULT_GRACE)
        );
        assert_eq!(
            s("250ms").unwrap().shutdown_grace_period,
            Some(std::time::Duration::from_millis(250))
        );
        assert_eq!(
            s("1m").unwrap().shutdown_grace_period,
            Some(std::time::Duration::from_secs(60))
        );
        assert_eq!(s("0").unwrap().shutdown_grace_period, None);
        assert_eq!(s("0s").unwrap().shutdown_grace_period, None);
        assert_eq!(
            s("-1").err().unwrap().to_string(),
            "failed to parse value [-1] for setting [http.shutdown_grace_period], must be >= [0ms]"
        );
        assert!(s("5 parsecs").is_err());
    }
}
