use lode_dates::*;
fn main() {
    let f = DateFormat::default_es();
    let tz = Tz::utc();
    let mut acc = 0i64;
    for _ in 0..20_000_000 { acc = acc.wrapping_add(f.parse_millis(std::hint::black_box("2021-10-12T13:40:21.659+08:00"), &tz).unwrap()); }
    println!("{acc}");
}
