//! Char filters rewrite the text before tokenization and record how to map offsets in the
//! rewritten text back to the original (Lucene's `BaseCharFilter` offset corrections).

#[rustfmt::skip]
mod html_entities;
mod html_strip;
mod mapping;

pub(crate) use html_strip::HtmlStrip;
pub(crate) use mapping::MappingTable;

/// Maps byte offsets in a filtered text back to byte offsets in the filter's input.
///
/// Holds `(filtered, original)` anchor points in increasing order; an offset maps to the
/// original position of the last anchor at or before it, plus the distance from that anchor.
#[derive(Debug, Default, Clone)]
pub(crate) struct OffsetMap {
    points: Vec<(usize, usize)>,
}

impl OffsetMap {
    pub(crate) fn clear(&mut self) {
        self.points.clear();
    }

    /// Records that filtered offset `filtered` corresponds to `original`.
    pub(crate) fn add(&mut self, filtered: usize, original: usize) {
        match self.points.last_mut() {
            Some(last) if last.0 == filtered => last.1 = original,
            _ => self.points.push((filtered, original)),
        }
    }

    pub(crate) fn correct(&self, offset: usize) -> usize {
        match self.points.partition_point(|p| p.0 <= offset) {
            0 => offset,
            i => {
                let (filtered, original) = self.points[i - 1];
                original + (offset - filtered)
            }
        }
    }
}

/// A configured char filter.
#[derive(Debug, Clone)]
pub(crate) enum CharFilter {
    HtmlStrip(HtmlStrip),
    Mapping(std::sync::Arc<MappingTable>),
}

impl CharFilter {
    /// Writes the filtered form of `input` to `out` (cleared first) and its offsets to `map`.
    pub(crate) fn apply(&self, input: &str, out: &mut String, map: &mut OffsetMap) {
        out.clear();
        map.clear();
        match self {
            CharFilter::HtmlStrip(h) => h.apply(input, out, map),
            CharFilter::Mapping(m) => m.apply(input, out, map),
        }
    }
}
