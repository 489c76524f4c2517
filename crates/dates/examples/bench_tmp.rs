use lode_dates::*;
use std::time::Instant;
fn main() {
    let f = DateFormat::default_es();
    let p = DateFormat::parse("yyyy-MM-dd'T'HH:mm:ss.SSSZ").unwrap();
    let tz = Tz::utc();
    let ny = Tz::parse("America/New_York").unwrap();
    let inputs = ["2021-10-12T13:40:21.659+08:00", "2021-10-12", "1640534400000", "2021-10-12T13:40:21Z"];
    for input in inputs {
        let n = 2_000_000;
        let t = Instant::now();
        let mut acc = 0i64;
        for i in 0..n { acc = acc.wrapping_add(f.parse_millis(std::hint::black_box(input), &tz).unwrap() + i); }
        println!("{input}: {:.1} ns/op ({acc})", t.elapsed().as_nanos() as f64 / n as f64);
    }
    let n = 2_000_000;
    let t = Instant::now();
    let mut acc = 0i64;
    for _ in 0..n { acc = acc.wrapping_add(p.parse_millis(std::hint::black_box("2021-10-12T13:40:21.659+0800"), &tz).unwrap()); }
    println!("pattern: {:.1} ns/op ({acc})", t.elapsed().as_nanos() as f64 / n as f64);
    let t = Instant::now();
    for _ in 0..n { acc = acc.wrapping_add(f.parse_millis(std::hint::black_box("2021-10-12T13:40:21"), &ny).unwrap()); }
    println!("NY local: {:.1} ns/op ({acc})", t.elapsed().as_nanos() as f64 / n as f64);
    let t = Instant::now();
    let v = serde_json::json!(1640534400000i64);
    for _ in 0..n { acc = acc.wrapping_add(f.parse_json(std::hint::black_box(&v), &tz).unwrap()); }
    println!("json num: {:.1} ns/op ({acc})", t.elapsed().as_nanos() as f64 / n as f64);
    let t = Instant::now();
    let mut l = 0;
    for i in 0..n { l += f.format_millis(1640534400000 + i, &tz).len(); }
    println!("format: {:.1} ns/op ({l})", t.elapsed().as_nanos() as f64 / n as f64);
    let t = Instant::now();
    let mut x = 0;
    for i in 0..n { x += calendar_floor(1640534400000 + i * 1000, CalendarUnit::Day, &ny); }
    println!("floor NY day: {:.1} ns/op ({x})", t.elapsed().as_nanos() as f64 / n as f64);
}
