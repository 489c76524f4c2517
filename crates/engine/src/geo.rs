//! `geo_point` fields: ES's input formats (`GeoUtils#parseGeoPoint`), Lucene's
//! `LatLonDocValuesField` encoding (latitude and longitude quantized to 32 bits each, packed
//! in one `u64` column value per point, as ES's doc values hold them) and ES's distances.

use serde_json::Value;

/// ES's `GeoUtils.EARTH_MEAN_RADIUS` (and Lucene's `GeoUtils.EARTH_MEAN_RADIUS`), in meters.
pub const EARTH_MEAN_RADIUS: f64 = 6371008.7714;

const LAT_SCALE: f64 = (1u64 << 32) as f64 / 180.0;
const LAT_DECODE: f64 = 1.0 / LAT_SCALE;
const LON_SCALE: f64 = (1u64 << 32) as f64 / 360.0;
const LON_DECODE: f64 = 1.0 / LON_SCALE;

/// Lucene's `GeoEncodingUtils#encodeLatitude` (the latitude must be in range).
pub fn encode_lat(lat: f64) -> i32 {
    let lat = if lat == 90.0 { next_down(lat) } else { lat };
    (lat / LAT_DECODE).floor() as i32
}

/// Lucene's `GeoEncodingUtils#encodeLongitude` (the longitude must be in range).
pub fn encode_lon(lon: f64) -> i32 {
    let lon = if lon == 180.0 { next_down(lon) } else { lon };
    (lon / LON_DECODE).floor() as i32
}

pub fn decode_lat(e: i32) -> f64 {
    e as f64 * LAT_DECODE
}

pub fn decode_lon(e: i32) -> f64 {
    e as f64 * LON_DECODE
}

fn next_down(x: f64) -> f64 {
    f64::from_bits(x.to_bits() - 1)
}

/// The column value of a point: Lucene's `LatLonDocValuesField` packing (latitude in the
/// high 32 bits).
pub fn encode(lat: f64, lon: f64) -> u64 {
    ((encode_lat(lat) as u32 as u64) << 32) | (encode_lon(lon) as u32 as u64)
}

/// `(lat, lon)` of a column value: the quantized point ES reads from doc values.
pub fn decode(v: u64) -> (f64, f64) {
    (
        decode_lat((v >> 32) as u32 as i32),
        decode_lon(v as u32 as i32),
    )
}

/// ES's `GeoUtils#arcDistance` (haversine), in meters.
pub fn arc_distance(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let x1 = lat1.to_radians();
    let x2 = lat2.to_radians();
    let h1 = 1.0 - (x1 - x2).cos();
    let h2 = 1.0 - (lon1 - lon2).to_radians().cos();
    let h = h1 + x1.cos() * x2.cos() * h2;
    EARTH_MEAN_RADIUS * 2.0 * (h * 0.5).sqrt().min(1.0).asin()
}

/// ES's `GeoUtils#planeDistance`, in meters.
pub fn plane_distance(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let x = (lon2 - lon1).to_radians() * ((lat2 + lat1) / 2.0).to_radians().cos();
    let y = (lat2 - lat1).to_radians();
    (x * x + y * y).sqrt() * EARTH_MEAN_RADIUS
}

/// ES's `GeoDistance` (`distance_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DistanceType {
    Arc,
    Plane,
}

impl DistanceType {
    pub fn parse(s: &str) -> Option<DistanceType> {
        match s.to_ascii_lowercase().as_str() {
            "arc" => Some(DistanceType::Arc),
            "plane" => Some(DistanceType::Plane),
            _ => None,
        }
    }

    pub fn meters(self, lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
        match self {
            DistanceType::Arc => arc_distance(lat1, lon1, lat2, lon2),
            DistanceType::Plane => plane_distance(lat1, lon1, lat2, lon2),
        }
    }
}

/// ES's `DistanceUnit`: meters per unit, by any of the unit's names.
pub fn unit_meters(name: &str) -> Option<f64> {
    Some(match name {
        "in" | "inch" => 0.0254,
        "yd" | "yards" => 0.9144,
        "ft" | "feet" => 0.3048,
        "km" | "kilometers" => 1000.0,
        "NM" | "nmi" | "nauticalmiles" => 1852.0,
        "mm" | "millimeters" => 0.001,
        "cm" | "centimeters" => 0.01,
        "mi" | "miles" => 1609.344,
        "m" | "meters" => 1.0,
        _ => return None,
    })
}

/// ES's `DistanceUnit#parse`-style reading of a distance (`"12km"`, `"3.5 mi"`, `12`) in
/// meters; a number without a unit is in `default_unit` meters.
pub fn parse_distance(v: &Value, default_unit: f64) -> Result<f64, String> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .map(|f| f * default_unit)
            .ok_or_else(|| format!("failed to parse distance [{n}]")),
        Value::String(s) => {
            let s = s.trim();
            let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
            let (num, unit) = s.split_at(split);
            let num: f64 = num
                .trim()
                .parse()
                .map_err(|_| format!("For input string: \"{s}\""))?;
            let unit = unit.trim();
            if unit.is_empty() {
                return Ok(num * default_unit);
            }
            let m = unit_meters(unit).ok_or_else(|| format!("No distance unit match [{unit}]"))?;
            Ok(num * m)
        }
        other => Err(format!("failed to parse distance [{other}]")),
    }
}

const BASE32: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";

/// The cell of a geohash: `(min_lat, max_lat, min_lon, max_lon)`.
pub fn geohash_cell(hash: &str) -> Result<(f64, f64, f64, f64), String> {
    if hash.is_empty() || hash.len() > 12 {
        return Err(format!("unsupported symbol [{hash}] in geohash [{hash}]"));
    }
    let (mut lat0, mut lat1, mut lon0, mut lon1) = (-90.0, 90.0, -180.0, 180.0);
    let mut even = true;
    for c in hash.chars() {
        let d = BASE32
            .iter()
            .position(|b| *b as char == c.to_ascii_lowercase())
            .ok_or_else(|| format!("unsupported symbol [{c}] in geohash [{hash}]"))?;
        for bit in (0..5).rev() {
            let on = d >> bit & 1 == 1;
            if even {
                let mid = (lon0 + lon1) / 2.0;
                if on {
                    lon0 = mid
                } else {
                    lon1 = mid
                }
            } else {
                let mid = (lat0 + lat1) / 2.0;
                if on {
                    lat0 = mid
                } else {
                    lat1 = mid
                }
            }
            even = !even;
        }
    }
    Ok((lat0, lat1, lon0, lon1))
}

/// The geohash of `precision` characters holding a point.
pub fn geohash(lat: f64, lon: f64, precision: usize) -> String {
    let (mut lat0, mut lat1, mut lon0, mut lon1) = (-90.0, 90.0, -180.0, 180.0);
    let mut out = String::with_capacity(precision);
    let mut even = true;
    for _ in 0..precision {
        let mut d = 0usize;
        for _ in 0..5 {
            d <<= 1;
            if even {
                let mid = (lon0 + lon1) / 2.0;
                if lon >= mid {
                    d |= 1;
                    lon0 = mid
                } else {
                    lon1 = mid
                }
            } else {
                let mid = (lat0 + lat1) / 2.0;
                if lat >= mid {
                    d |= 1;
                    lat0 = mid
                } else {
                    lat1 = mid
                }
            }
            even = !even;
        }
        out.push(BASE32[d] as char);
    }
    out
}

/// A point of a geohash: its cell's south-west corner, as ES (which pads the hash with
/// zeros to full precision).
fn geohash_point(hash: &str) -> Result<(f64, f64), String> {
    let (lat0, _, lon0, _) = geohash_cell(hash)?;
    Ok((lat0, lon0))
}

fn number(v: &Value, what: &str) -> Result<f64, String> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .ok_or_else(|| format!("[{what}] must be a number")),
        Value::String(s) => s
            .trim()
            .parse()
            .map_err(|_| format!("[{what}] must be a valid double value")),
        _ => Err(format!("[{what}] must be a valid double value")),
    }
}

fn z_check(z: f64, ignore_z_value: bool) -> Result<(), String> {
    if ignore_z_value {
        Ok(())
    } else {
        Err(format!(
            "Exception parsing coordinates: found Z value [{z}] but [ignore_z_value] parameter is [false]"
        ))
    }
}

/// Whether a value is a single point given as an array of coordinates (`[lon, lat]`), rather
/// than an array of points.
pub fn is_coordinate_array(v: &Value) -> bool {
    matches!(v, Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_number))
}

/// ES's `GeoUtils#parseGeoPoint`: `(lat, lon)` of one point in any of ES's formats, not yet
/// checked for range.
pub fn parse_point(v: &Value, ignore_z_value: bool) -> Result<(f64, f64), String> {
    match v {
        Value::Object(o) => {
            if let Some(t) = o.get("type") {
                // GeoJSON.
                if !t.as_str().is_some_and(|t| t.eq_ignore_ascii_case("point")) {
                    return Err(format!(
                        "[type] for geo_point can only be 'Point' but found '{}'",
                        t.as_str().unwrap_or_default()
                    ));
                }
                let coords = o
                    .get("coordinates")
                    .ok_or("[coordinates] field is missing")?;
                let Value::Array(c) = coords else {
                    return Err("[coordinates] must be an array".into());
                };
                return parse_lon_lat_array(c, ignore_z_value);
            }
            if let Some(h) = o.get("geohash") {
                if o.len() > 1 {
                    return Err("field must be either lat/lon or geohash".into());
                }
                let h = h.as_str().ok_or("[geohash] must be a string")?;
                return geohash_point(h);
            }
            for k in o.keys() {
                if !matches!(k.as_str(), "lat" | "lon" | "z") {
                    return Err("field must be either [lat], [lon] or [geohash]".into());
                }
            }
            let lat = o.get("lat").ok_or("field [lat] missing")?;
            let lon = o.get("lon").ok_or("field [lon] missing")?;
            if let Some(z) = o.get("z") {
                z_check(number(z, "z")?, ignore_z_value)?;
            }
            Ok((number(lat, "lat")?, number(lon, "lon")?))
        }
        Value::Array(items) => parse_lon_lat_array(items, ignore_z_value),
        Value::String(s) => parse_point_str(s, ignore_z_value),
        Value::Number(_) => Err("geo_point expected".into()),
        _ => Err("geo_point expected".into()),
    }
}

fn parse_lon_lat_array(items: &[Value], ignore_z_value: bool) -> Result<(f64, f64), String> {
    let nums: Vec<f64> = items
        .iter()
        .map(|v| match v {
            Value::Number(n) => n
                .as_f64()
                .ok_or_else(|| "numeric value expected".to_string()),
            _ => Err("numeric value expected".to_string()),
        })
        .collect::<Result<_, _>>()?;
    match nums.len() {
        2 => Ok((nums[1], nums[0])),
        3 => {
            z_check(nums[2], ignore_z_value)?;
            Ok((nums[1], nums[0]))
        }
        n if n > 3 => Err("[geo_point] field type does not accept more than 3 values".into()),
        _ => Err("[geo_point] field type should be an array of two or three numbers".into()),
    }
}

/// A point string: `"lat,lon"` (`"lat,lon,z"`), WKT `POINT (lon lat)`, or a geohash.
pub fn parse_point_str(s: &str, ignore_z_value: bool) -> Result<(f64, f64), String> {
    let t = s.trim();
    if t.len() >= 5 && t[..5].eq_ignore_ascii_case("point") {
        let inner = t[5..].trim();
        let inner = inner
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(')'))
            .ok_or_else(|| format!("expected '(' but found: {inner}"))?;
        let parts: Vec<&str> = inner.split_whitespace().collect();
        let num = |p: &str| {
            p.parse::<f64>()
                .map_err(|_| format!("expected number but found: '{p}'"))
        };
        return match parts.len() {
            2 => Ok((num(parts[1])?, num(parts[0])?)),
            3 => {
                z_check(num(parts[2])?, ignore_z_value)?;
                Ok((num(parts[1])?, num(parts[0])?))
            }
            _ => Err(format!("expected number but found: '{inner}'")),
        };
    }
    if t.contains(',') {
        let parts: Vec<&str> = t.split(',').collect();
        if parts.len() > 3 {
            return Err(format!(
                "failed to parse [{s}], expected 2 or 3 coordinates but found: [{}]",
                parts.len()
            ));
        }
        if parts.len() < 2 {
            return Err(format!(
                "failed to parse [{s}], expected 2 or 3 coordinates but found: [{}]",
                parts.len()
            ));
        }
        let num = |p: &str| {
            p.trim()
                .parse::<f64>()
                .map_err(|_| format!("For input string: \"{}\"", p.trim()))
        };
        let lat = num(parts[0])?;
        let lon = num(parts[1])?;
        if parts.len() == 3 {
            z_check(num(parts[2])?, ignore_z_value)?;
        }
        return Ok((lat, lon));
    }
    geohash_point(t)
}

/// ES's `GeoPointFieldMapper` check of a parsed point without `ignore_malformed`.
pub fn check_range(lat: f64, lon: f64, field: &str) -> Result<(), String> {
    if !(-90.0..=90.0).contains(&lat) {
        return Err(format!("illegal latitude value [{lat:?}] for {field}"));
    }
    if !(-180.0..=180.0).contains(&lon) {
        return Err(format!("illegal longitude value [{lon:?}] for {field}"));
    }
    Ok(())
}

fn centered_modulus(dividend: f64, divisor: f64) -> f64 {
    let mut rem = dividend % divisor;
    if rem < 0.0 {
        rem += divisor;
    }
    if rem > divisor / 2.0 {
        rem -= divisor;
    }
    rem
}

/// ES's `GeoUtils#normalizePoint`: a point out of range wrapped onto the globe (what
/// `ignore_malformed` and `validation_method: coerce` do).
pub fn normalize(lat: f64, lon: f64) -> (f64, f64) {
    let norm_lat = !(-90.0..=90.0).contains(&lat);
    let norm_lon = norm_lat || !(-180.0..=180.0).contains(&lon);
    let (mut lat, mut lon) = (lat, lon);
    if norm_lat {
        let mut l = centered_modulus(lat, 360.0);
        let mut shift = true;
        if l < -90.0 {
            l = -180.0 - l;
        } else if l > 90.0 {
            l = 180.0 - l;
        } else {
            shift = false;
        }
        if shift {
            lon += 180.0;
        }
        lat = l;
    }
    if norm_lon {
        lon = centered_modulus(lon, 360.0);
    }
    (lat + 0.0, lon + 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_every_format() {
        let want = (41.12, -71.34);
        for v in [
            json!({"lat": 41.12, "lon": -71.34}),
            json!({"lat": "41.12", "lon": "-71.34"}),
            json!("41.12,-71.34"),
            json!(" 41.12 , -71.34 "),
            json!([-71.34, 41.12]),
            json!("POINT (-71.34 41.12)"),
            json!({"type": "Point", "coordinates": [-71.34, 41.12]}),
        ] {
            assert_eq!(parse_point(&v, true).unwrap(), want, "{v}");
        }
        let (lat, lon) = parse_point(&json!("drm3btev3e86"), true).unwrap();
        assert!((lat - 41.12).abs() < 1e-5 && (lon + 71.34).abs() < 1e-5);
        assert!(parse_point(&json!([1.0, 2.0, 3.0]), false)
            .unwrap_err()
            .contains("found Z value [3]"));
        assert_eq!(
            parse_point(&json!([1.0, 2.0, 3.0]), true).unwrap(),
            (2.0, 1.0)
        );
        assert!(parse_point(&json!({"lat": 1}), true)
            .unwrap_err()
            .contains("[lon] missing"));
        assert!(parse_point(&json!("a,b"), true).is_err());
        assert!(parse_point(&json!("not a hash!"), true).is_err());
    }

    #[test]
    fn quantizes_as_lucene() {
        // Lucene's TestGeoEncodingUtils: decode(encode(x)) <= x < decode(encode(x) + 1).
        for &(lat, lon) in &[(0.0, 0.0), (41.12, -71.34), (90.0, 180.0), (-90.0, -180.0)] {
            let (qlat, qlon) = decode(encode(lat, lon));
            assert!(qlat <= lat && lat - qlat < LAT_DECODE + 1e-12);
            assert!(qlon <= lon && lon - qlon < LON_DECODE + 1e-12);
        }
        assert_eq!(encode_lat(-90.0), i32::MIN);
        assert_eq!(encode_lon(-180.0), i32::MIN);
        assert_eq!(encode_lat(90.0), i32::MAX);
        assert_eq!(encode_lon(180.0), i32::MAX);
    }

    #[test]
    fn distances() {
        // One degree of longitude on the equator.
        let d = arc_distance(0.0, 0.0, 0.0, 1.0);
        assert!((d - EARTH_MEAN_RADIUS * std::f64::consts::PI / 180.0).abs() < 1e-6);
        assert!((plane_distance(0.0, 0.0, 0.0, 1.0) - d).abs() < 1e-6);
        assert_eq!(parse_distance(&json!("12km"), 1.0).unwrap(), 12000.0);
        assert_eq!(
            parse_distance(&json!("1.5 mi"), 1.0).unwrap(),
            1.5 * 1609.344
        );
        assert_eq!(parse_distance(&json!(200), 1.0).unwrap(), 200.0);
        assert!(parse_distance(&json!("5parsecs"), 1.0).is_err());
    }

    #[test]
    fn normalizes_and_hashes() {
        assert_eq!(normalize(0.0, 190.0), (0.0, -170.0));
        assert_eq!(normalize(100.0, 0.0), (80.0, 180.0));
        assert_eq!(geohash(41.12, -71.34, 5), "drm3b");
        let (a, b, c, d) = geohash_cell("drm3b").unwrap();
        assert!(a <= 41.12 && 41.12 < b && c <= -71.34 && -71.34 < d);
        assert!(check_range(91.0, 0.0, "loc")
            .unwrap_err()
            .contains("illegal latitude value [91.0] for loc"));
    }
}
