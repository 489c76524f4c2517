//! Line charts as inline SVG (no scripts, no external assets).

use std::fmt::Write as _;

/// Horizontal scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XScale {
    /// Plain linear axis (time).
    Linear,
    /// Percentiles on a log scale of 1 / (1 - p): 0 %, 90 %, 99 %, 99.9 % equally spaced.
    Percentile,
}

/// One line.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// CSS color.
    pub color: String,
    /// (x, y) points; for [`XScale::Percentile`] x is a percentile 0..=100.
    pub points: Vec<(f64, f64)>,
    /// Dashed line.
    pub dashed: bool,
}

/// A chart.
#[derive(Clone, Debug)]
pub struct Chart {
    /// Title above the plot.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// X scale.
    pub x_scale: XScale,
    /// Lines.
    pub series: Vec<Series>,
    /// Vertical markers (x, label), linear scale only.
    pub markers: Vec<(f64, String)>,
    /// Fixed x range (linear scale), e.g. the phase duration, so charts of a phase align.
    pub x_range: Option<(f64, f64)>,
}

/// Colors for series, in order.
pub const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

const W: f64 = 720.0;
const H: f64 = 300.0;
const ML: f64 = 64.0;
const MR: f64 = 150.0;
const MT: f64 = 28.0;
const MB: f64 = 44.0;

/// XML-escapes text.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" step (1, 2 or 5 times a power of ten) for about `target` ticks over `span`.
pub fn nice_step(span: f64, target: f64) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / target;
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let m = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// At most `n` characters, with an ellipsis when cut.
fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

const P_MAX_X: f64 = 6.0;

/// Percentile to its position on the percentile axis (100 maps to `cap`).
fn pct_x(p: f64, cap: f64) -> f64 {
    if p >= 100.0 {
        return cap;
    }
    (-(1.0 - p / 100.0).log10()).min(P_MAX_X)
}

fn fmt_tick(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1000.0 {
        format!("{:.0}", v)
    } else if v.abs() >= 1.0 {
        let s = format!("{v:.1}");
        s.trim_end_matches(".0").to_string()
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').to_string()
    }
}

impl Chart {
    /// Renders the chart as an `<svg>` element.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" font-family="sans-serif" font-size="11">"#
        );
        let _ = write!(
            s,
            r#"<text x="{ML}" y="16" font-size="13" font-weight="bold">{}</text>"#,
            esc(&self.title)
        );
        let pts: Vec<&(f64, f64)> = self.series.iter().flat_map(|x| &x.points).collect();
        if pts.is_empty() {
            let _ = write!(
                s,
                r##"<text x="{}" y="{}" fill="#888">no data</text></svg>"##,
                W / 2.0 - 20.0,
                H / 2.0
            );
            return s;
        }
        // X range.
        let finite_max_pct = pts
            .iter()
            .filter(|p| p.0 < 100.0)
            .map(|p| pct_x(p.0, 0.0))
            .fold(0.0f64, f64::max);
        let cap = (finite_max_pct + 0.5).clamp(2.0, P_MAX_X);
        let tx = |x: f64| match self.x_scale {
            XScale::Linear => x,
            XScale::Percentile => pct_x(x, cap),
        };
        let (mut x0, mut x1) = match self.x_scale {
            XScale::Linear if self.x_range.is_some() => self.x_range.expect("checked"),
            XScale::Linear => {
                let lo = pts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
                let hi = pts.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
                let hi = self.markers.iter().map(|m| m.0).fold(hi, f64::max);
                (lo.min(0.0), hi)
            }
            XScale::Percentile => (0.0, cap),
        };
        if x1 <= x0 {
            x1 = x0 + 1.0;
        }
        if x0 > 0.0 {
            x0 = 0.0;
        }
        let ymax_raw = pts.iter().map(|p| p.1).fold(0.0f64, f64::max);
        let ystep = nice_step(ymax_raw.max(1e-3), 5.0);
        let y1 = (ymax_raw / ystep).ceil().max(1.0) * ystep;
        let pw = W - ML - MR;
        let ph = H - MT - MB;
        let sx = |x: f64| ML + (tx(x) - x0) / (x1 - x0) * pw;
        let sxr = |x: f64| ML + (x - x0) / (x1 - x0) * pw;
        let sy = |y: f64| MT + ph - (y / y1) * ph;

        // Grid and Y ticks.
        let mut y = 0.0;
        while y <= y1 + ystep * 0.01 {
            let py = sy(y);
            let _ = write!(
                s,
                r##"<line x1="{ML}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#e5e5e5"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#444">{}</text>"##,
                W - MR,
                ML - 6.0,
                py + 4.0,
                fmt_tick(y)
            );
            y += ystep;
        }
        // X ticks.
        match self.x_scale {
            XScale::Percentile => {
                let labels = ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"];
                for (i, l) in labels.iter().enumerate() {
                    let xv = i as f64;
                    if xv > cap - 0.25 {
                        break;
                    }
                    let px = sxr(xv);
                    let _ = write!(
                        s,
                        r##"<line x1="{px:.1}" y1="{MT}" x2="{px:.1}" y2="{:.1}" stroke="#e5e5e5"/><text x="{px:.1}" y="{:.1}" text-anchor="middle" fill="#444">{l}</text>"##,
                        MT + ph,
                        MT + ph + 14.0
                    );
                }
                let px = sxr(cap);
                let _ = write!(
                    s,
                    r##"<text x="{px:.1}" y="{:.1}" text-anchor="end" fill="#444">max</text>"##,
                    MT + ph + 14.0
                );
            }
            XScale::Linear => {
                let step = nice_step(x1 - x0, 8.0);
                let mut xv = (x0 / step).ceil() * step;
                while xv <= x1 + step * 0.01 {
                    let px = sxr(xv);
                    let _ = write!(
                        s,
                        r##"<line x1="{px:.1}" y1="{MT}" x2="{px:.1}" y2="{:.1}" stroke="#e5e5e5"/><text x="{px:.1}" y="{:.1}" text-anchor="middle" fill="#444">{}</text>"##,
                        MT + ph,
                        MT + ph + 14.0,
                        fmt_tick(xv)
                    );
                    xv += step;
                }
            }
        }
        // Axes and labels.
        let _ = write!(
            s,
            r##"<rect x="{ML}" y="{MT}" width="{pw:.1}" height="{ph:.1}" fill="none" stroke="#999"/>"##
        );
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#222">{}</text>"##,
            ML + pw / 2.0,
            H - 8.0,
            esc(&self.x_label)
        );
        let _ = write!(
            s,
            r##"<text transform="translate(14,{:.1}) rotate(-90)" text-anchor="middle" fill="#222">{}</text>"##,
            MT + ph / 2.0,
            esc(&self.y_label)
        );
        // Markers.
        if self.x_scale == XScale::Linear {
            for (i, (mx, label)) in self.markers.iter().enumerate() {
                let px = sxr(*mx);
                let ly = MT + 12.0 + 12.0 * (i % 4) as f64;
                let _ = write!(
                    s,
                    r##"<line x1="{px:.1}" y1="{MT}" x2="{px:.1}" y2="{:.1}" stroke="#555" stroke-dasharray="2,3"/><text x="{:.1}" y="{:.1}" fill="#555">{}</text>"##,
                    MT + ph,
                    px + 3.0,
                    ly,
                    esc(label)
                );
            }
        }
        // Lines, clipped to the plot area.
        static CLIP_IDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let clip = CLIP_IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let _ = write!(
            s,
            r#"<clipPath id="plot{clip}"><rect x="{ML}" y="{:.1}" width="{pw:.1}" height="{:.1}"/></clipPath><g clip-path="url(#plot{clip})">"#,
            MT - 2.0,
            ph + 4.0
        );
        for ser in &self.series {
            if ser.points.is_empty() {
                continue;
            }
            let path: Vec<String> = ser
                .points
                .iter()
                .map(|(x, y)| format!("{:.1},{:.1}", sx(*x), sy(*y)))
                .collect();
            let dash = if ser.dashed {
                r#" stroke-dasharray="6,4""#
            } else {
                ""
            };
            let _ = write!(
                s,
                r#"<polyline fill="none" stroke="{}" stroke-width="1.6"{dash} points="{}"><title>{}</title></polyline>"#,
                esc(&ser.color),
                path.join(" "),
                esc(&ser.name)
            );
            if ser.points.len() == 1 {
                let (x, y) = ser.points[0];
                let _ = write!(
                    s,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{}"/>"#,
                    sx(x),
                    sy(y),
                    esc(&ser.color)
                );
            }
        }
        s.push_str("</g>");
        // Legend.
        let mut ly = MT + 8.0;
        for ser in &self.series {
            let lx = W - MR + 8.0;
            let dash = if ser.dashed {
                r#" stroke-dasharray="6,4""#
            } else {
                ""
            };
            let _ = write!(
                s,
                r##"<line x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="2"{dash}/><text x="{:.1}" y="{:.1}" fill="#222">{}<title>{}</title></text>"##,
                ly - 4.0,
                lx + 18.0,
                ly - 4.0,
                esc(&ser.color),
                lx + 22.0,
                ly,
                esc(&shorten(&ser.name, 20)),
                esc(&ser.name)
            );
            ly += 14.0;
        }
        s.push_str("</svg>");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(10.0, 5.0), 2.0);
        assert_eq!(nice_step(1.0, 5.0), 0.2);
        assert_eq!(nice_step(730.0, 5.0), 200.0);
        assert_eq!(nice_step(0.0, 5.0), 1.0);
    }

    #[test]
    fn legend_names_are_shortened() {
        assert_eq!(shorten("ids_range p99", 20), "ids_range p99");
        assert_eq!(shorten("abcdefghij", 5), "abcd…");
    }

    #[test]
    fn percentile_axis() {
        assert!((pct_x(90.0, 9.0) - 1.0).abs() < 1e-9);
        assert!((pct_x(99.9, 9.0) - 3.0).abs() < 1e-9);
        assert_eq!(pct_x(100.0, 4.5), 4.5);
    }

    #[test]
    fn renders_valid_looking_svg() {
        let c = Chart {
            title: "a <b>".into(),
            x_label: "x".into(),
            y_label: "ms".into(),
            x_scale: XScale::Percentile,
            series: vec![Series {
                name: "term".into(),
                color: PALETTE[0].into(),
                points: vec![(0.0, 1.0), (50.0, 2.0), (99.0, 5.0), (100.0, 9.0)],
                dashed: false,
            }],
            markers: vec![],
            x_range: None,
        };
        let s = c.render();
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert!(s.contains("a &lt;b&gt;"));
        assert!(s.contains("<polyline"));
        assert!(s.contains("99%"));
        let empty = Chart {
            series: vec![],
            ..c
        };
        assert!(empty.render().contains("no data"));
    }
}
