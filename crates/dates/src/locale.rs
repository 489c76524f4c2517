//! A date field's `locale` (ES's `LocaleUtils#parse`): which locales Lode's formats follow.
//! Lode prints and reads month and day names, and AM/PM, in English and has no week-based
//! fields, so the root locale and the English ones (`en`, `en_US`, `en-GB`, ...) format alike;
//! any other language would change the names and is refused rather than ignored.

use serde_json::Value;

/// Checks a `locale` value; the error is the reason, for the caller's wording.
pub fn check_locale(v: &Value) -> Result<(), String> {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(_) | Value::Bool(_) => v.to_string(),
        _ => return Err(format!("[{v}] is not a locale")),
    };
    if text.is_empty() || text.eq_ignore_ascii_case("root") {
        return Ok(());
    }
    let language = text.split(['_', '-']).next().unwrap_or_default();
    if language.eq_ignore_ascii_case("en") {
        Ok(())
    } else {
        Err(format!(
            "locale [{text}] is not supported by Lode (dates follow the ROOT and English locales only)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn root_and_english_locales_only() {
        for ok in ["ROOT", "root", "", "en", "en_US", "en-GB", "EN_us"] {
            assert!(check_locale(&json!(ok)).is_ok(), "{ok}");
        }
        for bad in ["fr", "de_DE", "ja-JP", "english"] {
            let e = check_locale(&json!(bad)).unwrap_err();
            assert!(e.contains("not supported by Lode"), "{e}");
        }
        assert!(check_locale(&json!({"a": 1})).is_err());
    }
}
