//! Scores are Java `float`s in Elasticsearch and print with the fewest digits that read back
//! as the same float (`3.233616`); `serde_json` widens an `f32` to `f64` first and prints
//! that (`3.2336161136627197`). Clients compare scores and `min_score` thresholds copied from
//! responses, so Lode prints them as Elasticsearch does.

use serde_json::Value;

/// `v` as Elasticsearch renders a `float`: its shortest round-trip decimal form.
pub fn float_value(v: f32) -> Value {
    if !v.is_finite() {
        return Value::Null;
    }
    // `f32`'s `Display` is the shortest form that reads back as `v`; read as an `f64`, it
    // prints with the same digits.
    let shortest: f64 = v.to_string().parse().unwrap_or(f64::from(v));
    Value::from(shortest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_the_shortest_float_form() {
        assert_eq!(float_value(3.233616).to_string(), "3.233616");
        assert_eq!(float_value(0.8).to_string(), "0.8");
        assert_eq!(float_value(1.0).to_string(), "1.0");
        assert_eq!(float_value(7.113956).to_string(), "7.113956");
        assert_eq!(float_value(1e-7).to_string(), "1e-7");
        assert_eq!(float_value(f32::NAN), Value::Null);
        for x in [0.1f32, 2.2, 1.2345678e-20, 3.4e38, 123456.79] {
            let back = float_value(x).as_f64().unwrap() as f32;
            assert_eq!(back, x);
        }
    }
}
