//! Disk watermarks, as Elasticsearch's `DiskThresholdSettings` and `DiskThresholdMonitor` on
//! one node: a background thread reads the data path's disk usage every
//! `cluster.info.update.interval` (and right after the settings change); over the flood-stage
//! watermark every index gets `index.blocks.read_only_allow_delete`, and once usage is back
//! under the high watermark the block is removed from every index that has it.
//!
//! A watermark is either a used-space percentage or ratio (`95%`, `0.95`) or an absolute amount
//! of free space (`500mb`), and all three must be of one kind (percentages rising, byte values
//! falling from low to flood stage), as ES validates them.

use crate::blocks::{flag, Block};
use crate::error::{EsError, EsResult};
use parking_lot::{Condvar, Mutex};
use std::path::Path;
use std::time::Duration;

pub const ENABLED: &str = "cluster.routing.allocation.disk.threshold_enabled";
pub const LOW: &str = "cluster.routing.allocation.disk.watermark.low";
pub const HIGH: &str = "cluster.routing.allocation.disk.watermark.high";
pub const FLOOD: &str = "cluster.routing.allocation.disk.watermark.flood_stage";
pub const INTERVAL: &str = "cluster.info.update.interval";

/// How often the flood stage is sampled between full checks (`Monitor::flood_crossed`).
pub const FLOOD_POLL: Duration = Duration::from_secs(1);

/// One watermark: a used-space percentage, or a minimum of free bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Watermark {
    UsedPercent(f64),
    FreeBytes(u64),
}

impl Watermark {
    /// Whether a disk with `free` of `total` bytes is over this watermark (ES: free space as a
    /// percentage below `100 - p`, or free bytes below the amount).
    pub fn exceeded(self, total: u64, free: u64) -> bool {
        match self {
            Watermark::UsedPercent(p) => {
                if total == 0 {
                    return false;
                }
                let free_pct = 100.0 * free as f64 / total as f64;
                free_pct < 100.0 - p
            }
            Watermark::FreeBytes(b) => free < b,
        }
    }
}

/// `RatioValue.parseRatioValue`, as a percentage.
fn parse_ratio(s: &str) -> Result<f64, String> {
    if let Some(p) = s.strip_suffix('%') {
        let v: f64 = p
            .parse()
            .map_err(|_| format!("Invalid ratio or percentage [{s}]"))?;
        if !(0.0..=100.0).contains(&v) {
            return Err(format!("Percentage should be in [0-100], got [{p}]"));
        }
        Ok(v)
    } else {
        let v: f64 = s
            .parse()
            .map_err(|_| format!("Invalid ratio or percentage [{s}]"))?;
        if !(0.0..=1.0).contains(&v) {
            return Err(format!("Ratio should be in [0-1.0], got [{s}]"));
        }
        Ok(v * 100.0)
    }
}

/// `ByteSizeValue.parseBytesSizeValue`: `b`, `k`/`kb` .. `p`/`pb` (case-insensitive,
/// fractions allowed with a unit), `0` and `-1` without one.
pub fn parse_bytes(key: &str, s: &str) -> EsResult<u64> {
    let lower = s.trim().to_ascii_lowercase();
    let units: [(&str, u64); 11] = [
        ("pb", 1 << 50),
        ("tb", 1 << 40),
        ("gb", 1 << 30),
        ("mb", 1 << 20),
        ("kb", 1 << 10),
        ("p", 1 << 50),
        ("t", 1 << 40),
        ("g", 1 << 30),
        ("m", 1 << 20),
        ("k", 1 << 10),
        ("b", 1),
    ];
    let bad = |why: &str| {
        EsError::new(
            400,
            "parse_exception",
            format!("failed to parse setting [{key}] with value [{s}] as a size in bytes{why}"),
        )
    };
    for (unit, mult) in units {
        if let Some(num) = lower.strip_suffix(unit) {
            let num = num.trim();
            if unit == "b" {
                return num.parse::<u64>().map_err(|_| bad(""));
            }
            let v: f64 = num.parse().map_err(|_| bad(""))?;
            if v < 0.0 {
                return Err(bad(""));
            }
            return Ok((v * mult as f64) as u64);
        }
    }
    match lower.as_str() {
        "0" | "-1" => Ok(0),
        _ => Err(bad(": unit is missing or unrecognized")),
    }
}

/// One watermark value: a ratio or percentage first, else a byte size (ES's
/// `validWatermarkSetting`); the byte-size error is the one reported.
pub fn parse_watermark(key: &str, s: &str) -> EsResult<Watermark> {
    match parse_ratio(s) {
        Ok(p) => Ok(Watermark::UsedPercent(p)),
        Err(_) => parse_bytes(key, s).map(Watermark::FreeBytes),
    }
}

/// The effective disk threshold settings.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskSettings {
    pub enabled: bool,
    pub low: Watermark,
    pub high: Watermark,
    pub flood: Watermark,
    pub interval: Duration,
}

impl Default for DiskSettings {
    fn default() -> Self {
        DiskSettings {
            enabled: true,
            low: Watermark::UsedPercent(85.0),
            high: Watermark::UsedPercent(90.0),
            flood: Watermark::UsedPercent(95.0),
            interval: Duration::from_secs(30),
        }
    }
}

/// A watermark that is neither a ratio nor a byte size: ES's `IllegalArgumentException`
/// wrapping the byte-size `ElasticsearchParseException`.
fn illegal(key: &str, v: &str) -> EsError {
    let msg = format!(
        "failed to parse setting [{key}] with value [{v}] as a size in bytes: unit is missing or unrecognized"
    );
    EsError::illegal_argument(msg.clone()).caused_by(EsError::new(400, "parse_exception", msg))
}

impl DiskSettings {
    /// Reads and validates the settings from `get` (effective value of a key, unset = default),
    /// with ES's messages.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> EsResult<DiskSettings> {
        let mut out = DiskSettings::default();
        if let Some(v) = get(ENABLED) {
            out.enabled = match v.as_str() {
                "true" => true,
                "false" => false,
                _ => {
                    return Err(EsError::illegal_argument(format!(
                        "Failed to parse value [{v}] as only [true] or [false] are allowed."
                    )))
                }
            };
        }
        if let Some(v) = get(INTERVAL) {
            let ms = lode_dates::parse_time_value(&v).map_err(|_| {
                EsError::illegal_argument(format!(
                    "failed to parse setting [{INTERVAL}] with value [{v}] as a time value: unit is missing or unrecognized"
                ))
            })?;
            if ms < 10_000 {
                return Err(EsError::illegal_argument(format!(
                    "failed to parse value [{v}] for setting [{INTERVAL}], must be >= [10s]"
                )));
            }
            out.interval = Duration::from_millis(ms as u64);
        }
        let raw = |key: &str, default: &str| get(key).unwrap_or_else(|| default.to_string());
        let (low_s, high_s, flood_s) = (raw(LOW, "85%"), raw(HIGH, "90%"), raw(FLOOD, "95%"));
        let parse = |key: &str, v: &str| parse_watermark(key, v).map_err(|_| illegal(key, v));
        let low = parse(LOW, &low_s)?;
        let high = parse(HIGH, &high_s)?;
        let flood = parse(FLOOD, &flood_s)?;
        match (low, high, flood) {
            (Watermark::UsedPercent(l), Watermark::UsedPercent(h), Watermark::UsedPercent(f)) => {
                if l > h {
                    return Err(EsError::illegal_argument(format!(
                        "low disk watermark [{low_s}] more than high disk watermark [{high_s}]"
                    )));
                }
                if h > f {
                    return Err(EsError::illegal_argument(format!(
                        "high disk watermark [{high_s}] more than flood stage disk watermark [{flood_s}]"
                    )));
                }
            }
            (Watermark::FreeBytes(l), Watermark::FreeBytes(h), Watermark::FreeBytes(f)) => {
                if l < h {
                    return Err(EsError::illegal_argument(format!(
                        "low disk watermark [{low_s}] less than high disk watermark [{high_s}]"
                    )));
                }
                if h < f {
                    return Err(EsError::illegal_argument(format!(
                        "high disk watermark [{high_s}] less than flood stage disk watermark [{flood_s}]"
                    )));
                }
            }
            _ => {
                // Mixed kinds: ES falls back to reading all three as byte sizes, and the
                // first percentage fails that.
                for (key, v, w) in [
                    (LOW, &low_s, low),
                    (HIGH, &high_s, high),
                    (FLOOD, &flood_s, flood),
                ] {
                    if matches!(w, Watermark::UsedPercent(_)) {
                        return Err(illegal(key, v));
                    }
                }
            }
        }
        out.low = low;
        out.high = high;
        out.flood = flood;
        Ok(out)
    }
}

/// Total and available bytes of the file system holding `path` (`statvfs`).
pub fn usage(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `c` is a valid NUL-terminated path and `st` a properly sized out-parameter.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let frsize = st.f_frsize as u64;
    Ok((st.f_blocks as u64 * frsize, st.f_bavail as u64 * frsize))
}

/// What one check decides for the node's indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Over the flood stage: every index gets the block.
    Block,
    /// Under the high watermark (or thresholds disabled): every block is released.
    Release,
    /// Between high and flood stage: blocks stay as they are.
    Keep,
}

pub fn decide(s: &DiskSettings, total: u64, free: u64) -> Decision {
    if !s.enabled {
        Decision::Release
    } else if s.flood.exceeded(total, free) {
        Decision::Block
    } else if s.high.exceeded(total, free) {
        Decision::Keep
    } else {
        Decision::Release
    }
}

/// The monitor's shared state: the current settings and a wake-up for the thread.
#[derive(Default)]
pub struct Monitor {
    state: Mutex<MonitorState>,
    wake: Condvar,
}

#[derive(Default)]
struct MonitorState {
    settings: DiskSettings,
    /// Bumped by `configure`; the thread re-checks when it changes.
    generation: u64,
    /// The last decision logged, so transitions are logged once.
    last: Option<Decision>,
}

impl Monitor {
    /// Installs new settings and wakes the monitor for an immediate check.
    pub fn configure(&self, s: DiskSettings) {
        let mut st = self.state.lock();
        st.settings = s;
        st.generation += 1;
        self.wake.notify_all();
    }

    pub fn settings(&self) -> DiskSettings {
        self.state.lock().settings.clone()
    }

    /// Waits up to `FLOOD_POLL` or until `configure` is called; returns the settings'
    /// generation and the check interval.
    pub(crate) fn wait(&self, seen: u64) -> (u64, Duration) {
        let mut st = self.state.lock();
        if st.generation == seen {
            let poll = st.settings.interval.min(FLOOD_POLL);
            self.wake.wait_for(&mut st, poll);
        }
        (st.generation, st.settings.interval)
    }

    /// Whether the disk crossed the flood stage since the last check. Sampled every
    /// `FLOOD_POLL` between the full checks of `cluster.info.update.interval` (at least 10 s,
    /// as ES requires): a small or fast-filling disk passes from the flood stage to full in
    /// less than that, and a full disk fails writes with I/O errors instead of the block, and
    /// can keep an index from reopening (its translog replay needs to write).
    pub(crate) fn flood_crossed(&self, data: &Path) -> bool {
        let settings = self.settings();
        let Ok((total, free)) = usage(data) else {
            return false;
        };
        decide(&settings, total, free) == Decision::Block
            && self.state.lock().last != Some(Decision::Block)
    }

    /// One check against the data path: applies the decision to `indices`.
    pub(crate) fn check(&self, data: &Path, indices: &[std::sync::Arc<crate::IndexService>]) {
        let settings = self.settings();
        let decision = match usage(data) {
            Ok((total, free)) => {
                let d = decide(&settings, total, free);
                let mut st = self.state.lock();
                if st.last != Some(d) {
                    match d {
                        Decision::Block => tracing::warn!(
                            path = %data.display(), total, free,
                            "flood stage disk watermark exceeded; all indices on this node will be marked read-only"
                        ),
                        Decision::Release
                            if st.last == Some(Decision::Block)
                                || st.last == Some(Decision::Keep) =>
                        {
                            tracing::warn!(
                                path = %data.display(), total, free,
                                "disk usage is below the high disk watermark; releasing the read-only-allow-delete block of every index"
                            )
                        }
                        Decision::Keep => tracing::warn!(
                            path = %data.display(), total, free,
                            "high disk watermark exceeded"
                        ),
                        Decision::Release => {}
                    }
                    st.last = Some(d);
                }
                d
            }
            Err(e) => {
                tracing::warn!(path = %data.display(), error = %e, "cannot read disk usage");
                return;
            }
        };
        match decision {
            Decision::Block => crate::shard::hold_merges_for_disk(true),
            Decision::Release => crate::shard::hold_merges_for_disk(false),
            Decision::Keep => {}
        }
        let key = Block::ReadOnlyAllowDelete.setting();
        for index in indices {
            let has = flag(&index.settings(), key);
            let change = match decision {
                Decision::Block if !has => Some(true),
                Decision::Release if has => Some(false),
                _ => None,
            };
            if let Some(on) = change {
                if let Err(e) = index.set_block(Block::ReadOnlyAllowDelete, on) {
                    tracing::warn!(index = %index.name, error = %e, "cannot change the read-only-allow-delete block");
                } else if decision == Decision::Block {
                    tracing::warn!(index = %index.name, "index marked read-only-allow-delete (flood stage disk watermark)");
                } else {
                    tracing::warn!(index = %index.name, "read-only-allow-delete block removed");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn parses_watermarks() {
        assert_eq!(
            parse_watermark(LOW, "85%").unwrap(),
            Watermark::UsedPercent(85.0)
        );
        assert_eq!(
            parse_watermark(LOW, "0.5").unwrap(),
            Watermark::UsedPercent(50.0)
        );
        assert_eq!(
            parse_watermark(LOW, "500mb").unwrap(),
            Watermark::FreeBytes(500 << 20)
        );
        assert_eq!(
            parse_watermark(LOW, "12345b").unwrap(),
            Watermark::FreeBytes(12345)
        );
        assert_eq!(
            parse_watermark(LOW, "1.5GB").unwrap(),
            Watermark::FreeBytes(3 << 29)
        );
        let e = parse_watermark(LOW, "lots").unwrap_err();
        assert_eq!(e.reason, "failed to parse setting [cluster.routing.allocation.disk.watermark.low] with value [lots] as a size in bytes: unit is missing or unrecognized");
        assert!(parse_watermark(LOW, "150%").is_err());
    }

    #[test]
    fn defaults_and_validation() {
        let d = DiskSettings::from_lookup(lookup(&[])).unwrap();
        assert_eq!(d, DiskSettings::default());
        let e = DiskSettings::from_lookup(lookup(&[(HIGH, "80%")])).unwrap_err();
        assert_eq!(
            e.reason,
            "low disk watermark [85%] more than high disk watermark [80%]"
        );
        let e = DiskSettings::from_lookup(lookup(&[(LOW, "1gb"), (HIGH, "2gb"), (FLOOD, "1mb")]))
            .unwrap_err();
        assert_eq!(
            e.reason,
            "low disk watermark [1gb] less than high disk watermark [2gb]"
        );
        let ok = DiskSettings::from_lookup(lookup(&[(LOW, "3gb"), (HIGH, "2gb"), (FLOOD, "1gb")]))
            .unwrap();
        assert_eq!(ok.flood, Watermark::FreeBytes(1 << 30));
        // Mixed kinds are refused.
        assert!(DiskSettings::from_lookup(lookup(&[(FLOOD, "1gb")])).is_err());
        let e = DiskSettings::from_lookup(lookup(&[(INTERVAL, "1s")])).unwrap_err();
        assert_eq!(
            e.reason,
            "failed to parse value [1s] for setting [cluster.info.update.interval], must be >= [10s]"
        );
        let s =
            DiskSettings::from_lookup(lookup(&[(INTERVAL, "10s"), (ENABLED, "false")])).unwrap();
        assert_eq!(s.interval, Duration::from_secs(10));
        assert!(!s.enabled);
    }

    #[test]
    fn decisions() {
        let s = DiskSettings::default();
        // 96% used: flood stage.
        assert_eq!(decide(&s, 100, 4), Decision::Block);
        // 92% used: between high and flood.
        assert_eq!(decide(&s, 100, 8), Decision::Keep);
        assert_eq!(decide(&s, 100, 50), Decision::Release);
        let bytes = DiskSettings {
            low: Watermark::FreeBytes(300),
            high: Watermark::FreeBytes(200),
            flood: Watermark::FreeBytes(100),
            ..DiskSettings::default()
        };
        assert_eq!(decide(&bytes, 1000, 99), Decision::Block);
        assert_eq!(decide(&bytes, 1000, 150), Decision::Keep);
        assert_eq!(decide(&bytes, 1000, 250), Decision::Release);
        let off = DiskSettings {
            enabled: false,
            ..bytes
        };
        assert_eq!(decide(&off, 1000, 1), Decision::Release);
    }

    #[test]
    fn reads_disk_usage() {
        let (total, free) = usage(Path::new("/")).unwrap();
        assert!(total > 0 && free <= total);
    }
}
