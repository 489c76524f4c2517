//! `minimum_should_match`: how many of a query's optional clauses must match, in every form
//! Elasticsearch accepts (`"2"`, `"-1"`, `"75%"`, `"-25%"`, `"3<90%"`, `"2<-25% 9<-3"`).

/// Resolves `spec` against `optional_clauses` as Elasticsearch's
/// `Queries.calculateMinShouldMatch` does. The error text is the offending number, as in a
/// Java `NumberFormatException` (`For input string: "x"`).
pub fn min_should_match(optional_clauses: usize, spec: &str) -> Result<usize, String> {
    let count = optional_clauses as i64;
    let spec = spec.trim();
    if spec.contains('<') {
        // Conditional specs: "N<spec" applies `spec` once there are more than N clauses.
        let mut result = count;
        let normalized = normalize_conditions(spec);
        for part in normalized.split_whitespace() {
            let (bound, inner) = part.split_once('<').ok_or_else(|| number_error(part))?;
            let upper: i64 = bound.parse().map_err(|_| number_error(bound))?;
            if count <= upper {
                return Ok(result.max(0) as usize);
            }
            result = simple(count, inner)?;
        }
        return Ok(result.max(0) as usize);
    }
    Ok(simple(count, spec)?.max(0) as usize)
}

fn normalize_conditions(spec: &str) -> String {
    let mut out = String::with_capacity(spec.len());
    let mut chars = spec.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '<' {
            while out.ends_with(char::is_whitespace) {
                out.pop();
            }
            out.push('<');
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn simple(count: i64, spec: &str) -> Result<i64, String> {
    let result = if let Some(pct) = spec.strip_suffix('%') {
        let percent: i64 = pct.parse().map_err(|_| number_error(pct))?;
        // Java: (result * percent) * (1 / 100f), then an int cast (truncation toward zero).
        let calc = (count * percent) as f32 * (1.0f32 / 100.0);
        if calc < 0.0 {
            count + calc as i64
        } else {
            calc as i64
        }
    } else {
        let n: i64 = spec.parse().map_err(|_| number_error(spec))?;
        if n < 0 {
            count + n
        } else {
            n
        }
    };
    Ok(result.max(0))
}

fn number_error(s: &str) -> String {
    format!("For input string: \"{s}\"")
}

#[cfg(test)]
mod tests {
    use super::min_should_match as msm;

    #[test]
    fn integers_and_negatives() {
        assert_eq!(msm(5, "2"), Ok(2));
        assert_eq!(msm(5, "-1"), Ok(4));
        assert_eq!(msm(2, "-5"), Ok(0));
        assert_eq!(msm(3, "7"), Ok(7));
    }

    #[test]
    fn percentages_truncate() {
        assert_eq!(msm(4, "75%"), Ok(3));
        assert_eq!(msm(3, "75%"), Ok(2));
        assert_eq!(msm(4, "-25%"), Ok(3));
        assert_eq!(msm(3, "-25%"), Ok(3));
        assert_eq!(msm(10, "100%"), Ok(10));
    }

    #[test]
    fn conditionals() {
        assert_eq!(msm(3, "3<90%"), Ok(3));
        assert_eq!(msm(10, "3<90%"), Ok(9));
        assert_eq!(msm(2, "2<-25% 9<-3"), Ok(2));
        assert_eq!(msm(8, "2<-25% 9<-3"), Ok(6));
        assert_eq!(msm(12, "2<-25% 9<-3"), Ok(9));
        assert_eq!(msm(10, " 3 < 90% "), Ok(9));
    }

    #[test]
    fn garbage_is_a_number_format_error() {
        assert_eq!(msm(3, "abc"), Err("For input string: \"abc\"".to_string()));
        assert!(msm(3, "x%").is_err());
    }
}
