//! Stored index settings that today's Lode refuses are archived, not fatal.
//!
//! Requests are validated strictly; the settings read back from an index's state were
//! accepted when they were written. ES reads them the same way
//! (`IndexScopedSettings#archiveUnknownOrInvalidSettings`, applied when index metadata is
//! upgraded): an invalid setting is renamed `archived.<key>`, logged, and no longer applied;
//! it stays visible in `GET _settings` and is removed with `PUT _settings` setting it to `null`.
//!
//! Kept fatal: `index.number_of_shards` (the data's layout on disk) and `index.analysis.*`
//! (the analyzers the stored terms were made with): reading the data without them would
//! reinterpret it.

use crate::error::EsResult;
use crate::settings::FlatSettings;

/// The prefix ES gives an archived setting.
pub const ARCHIVED_PREFIX: &str = "archived.";

/// Renames the settings of `flat` that `check` refuses alone to `archived.<key>`, with a
/// warning naming the index. `check` is only asked per setting when the whole set fails.
pub fn archive_invalid(
    index: &str,
    mut flat: FlatSettings,
    check: impl Fn(&FlatSettings) -> EsResult<()>,
) -> FlatSettings {
    if check(&flat).is_ok() {
        return flat;
    }
    let invalid: Vec<(String, String)> = flat
        .iter()
        .filter(|(k, _)| archivable(k))
        .filter_map(|(k, v)| {
            let alone = FlatSettings::from([(k.clone(), v.clone())]);
            check(&alone).err().map(|e| (k.clone(), e.reason))
        })
        .collect();
    for (k, why) in invalid {
        let v = flat.remove(&k).expect("listed from the map");
        tracing::warn!(
            index,
            setting = %k,
            error = %why,
            "stored index setting is invalid: archived as [{ARCHIVED_PREFIX}{k}]"
        );
        flat.insert(format!("{ARCHIVED_PREFIX}{k}"), v);
    }
    flat
}

fn archivable(k: &str) -> bool {
    k != "index.number_of_shards"
        && !k.starts_with("index.analysis.")
        && !k.starts_with(ARCHIVED_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::EsError;
    use serde_json::json;

    fn check(flat: &FlatSettings) -> EsResult<()> {
        crate::settings::IndexConfig::from_flat(flat).map(|_| ())
    }

    fn flat(pairs: &[(&str, &str)]) -> FlatSettings {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect()
    }

    #[test]
    fn invalid_settings_are_archived_and_the_rest_kept() {
        let stored = flat(&[
            ("index.number_of_shards", "2"),
            ("index.codec", "no_such_codec"),
            ("index.translog.durability", "sometimes"),
            ("index.refresh_interval", "5s"),
        ]);
        assert!(check(&stored).is_err());
        let got = archive_invalid("i", stored, check);
        assert_eq!(
            got,
            flat(&[
                ("archived.index.codec", "no_such_codec"),
                ("archived.index.translog.durability", "sometimes"),
                ("index.number_of_shards", "2"),
                ("index.refresh_interval", "5s"),
            ])
        );
        assert!(check(&got).is_ok());
    }

    #[test]
    fn valid_settings_are_untouched_and_layout_settings_never_archived() {
        let stored = flat(&[("index.codec", "best_compression")]);
        assert_eq!(archive_invalid("i", stored.clone(), check), stored);
        let stored = flat(&[("index.number_of_shards", "0")]);
        assert_eq!(archive_invalid("i", stored.clone(), check), stored);
        let refuse_analysis =
            |f: &FlatSettings| match f.keys().any(|k| k.starts_with("index.analysis.")) {
                true => Err(EsError::illegal_argument("bad analyzer")),
                false => Ok(()),
            };
        let stored = flat(&[("index.analysis.analyzer.a.type", "nope")]);
        assert_eq!(
            archive_invalid("i", stored.clone(), refuse_analysis),
            stored
        );
    }
}
