//! Lucene's `ASCIIFoldingFilter`: folds accented Latin letters, ligatures, fullwidth forms,
//! enclosed alphanumerics and typographic punctuation to ASCII ("açaí" → "acai").
//!
//! The mapping table is generated from Lucene itself (see `tools/GenFold.java`), so the
//! output is identical to Elasticsearch's. Like Lucene, characters outside the BMP and
//! characters without a mapping are kept as they are.

#[rustfmt::skip]
mod table {
    include!("ascii_folding_table.rs");
}

use table::{FOLD_KEYS, FOLD_VALUES};

/// The ASCII replacement of `c`, if Lucene folds it.
#[inline]
pub(crate) fn fold_char(c: char) -> Option<&'static str> {
    let cp = u16::try_from(c as u32).ok()?;
    FOLD_KEYS.binary_search(&cp).ok().map(|i| FOLD_VALUES[i])
}

/// Appends the folded form of `src` to `dst`; returns whether anything changed.
pub(crate) fn fold_into(src: &str, dst: &mut String) -> bool {
    if src.is_ascii() {
        dst.push_str(src);
        return false;
    }
    let mut changed = false;
    for c in src.chars() {
        match fold_char(c) {
            Some(folded) => {
                dst.push_str(folded);
                changed = true;
            }
            None => dst.push(c),
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(s: &str) -> String {
        let mut out = String::new();
        fold_into(s, &mut out);
        out
    }

    #[test]
    fn table_is_sorted_and_aligned() {
        assert_eq!(FOLD_KEYS.len(), FOLD_VALUES.len());
        assert!(FOLD_KEYS.windows(2).all(|w| w[0] < w[1]));
        assert!(FOLD_VALUES.iter().all(|v| v.is_ascii() && !v.is_empty()));
    }

    #[test]
    fn folds_latin_accents_and_ligatures() {
        assert_eq!(fold("açaí à la carte"), "acai a la carte");
        assert_eq!(fold("Ærøskøbing"), "AEroskobing");
        assert_eq!(fold("Straße"), "Strasse");
        assert_eq!(fold("Œuvre ﬁn Þór ðð Łódź"), "OEuvre fin THor dd Lodz");
        assert_eq!(fold("Ｆｕｌｌ"), "Full");
        assert_eq!(fold("“quoted” – dash"), "\"quoted\" - dash");
        assert_eq!(fold("Tiếng Việt"), "Tieng Viet");
    }

    #[test]
    fn keeps_unmapped_scripts() {
        assert_eq!(fold("中国 Россия ελληνικά"), "中国 Россия ελληνικά");
        assert_eq!(fold("🍕"), "🍕");
    }
}
