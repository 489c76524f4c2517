use serde_json::json;

use super::*;

const DEC27_UTC: Millis = 1_640_563_200_000; // 2021-12-27T00:00:00Z
const DEC27_PLUS8: Millis = 1_640_534_400_000; // 2021-12-27T00:00:00+08:00

fn utc() -> Tz {
    Tz::utc()
}

fn fmt(spec: &str) -> DateFormat {
    DateFormat::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

fn parse(spec: &str, input: &str) -> Result<Millis, DateError> {
    fmt(spec).parse_millis(input, &utc())
}

fn ok(spec: &str, input: &str) -> Millis {
    parse(spec, input).unwrap_or_else(|e| panic!("{spec} / {input}: {e}"))
}

fn fails(spec: &str, input: &str) {
    assert!(parse(spec, input).is_err(), "{spec} should reject {input}");
}

// ---- workload expectations ------------------------------------------------

#[test]
fn workload_pattern_with_compact_offset() {
    let f = fmt("yyyy-MM-dd'T'HH:mm:ss.SSSZ");
    assert_eq!(
        f.parse_millis("2021-10-12T13:40:21.659+0800", &utc())
            .unwrap(),
        1_634_017_221_659
    );
    assert_eq!(
        f.parse_millis("2020-01-01T00:00:00.000+0800", &utc())
            .unwrap(),
        1_577_808_000_000
    );
    // The offset in the input wins over the zone argument.
    let shanghai = Tz::parse("Asia/Shanghai").unwrap();
    assert_eq!(
        f.parse_millis("2020-01-01T00:00:00.000+0800", &shanghai)
            .unwrap(),
        1_577_808_000_000
    );
    assert_eq!(
        f.format_millis(1_634_017_221_659, &Tz::parse("+08:00").unwrap()),
        "2021-10-12T13:40:21.659+0800"
    );
    assert_eq!(
        f.format_millis(1_634_017_221_659, &utc()),
        "2021-10-12T05:40:21.659+0000"
    );
}

#[test]
fn default_format_parses_epoch_millis_strings() {
    let f = DateFormat::default_es();
    assert_eq!(f.spec(), "strict_date_optional_time||epoch_millis");
    assert_eq!(
        f.parse_millis("1640534400000", &utc()).unwrap(),
        DEC27_PLUS8
    );
    assert_eq!(f.parse_millis("-1", &utc()).unwrap(), -1);
}

// ---- strict_date_optional_time --------------------------------------------

#[test]
fn strict_date_optional_time_accepts_iso_forms() {
    let f = "strict_date_optional_time";
    assert_eq!(ok(f, "2021"), 1_609_459_200_000);
    assert_eq!(ok(f, "2021-12"), 1_638_316_800_000);
    assert_eq!(ok(f, "2021-12-27"), DEC27_UTC);
    assert_eq!(ok(f, "2021-12-27T"), DEC27_UTC);
    assert_eq!(ok(f, "2021-12-27T10"), 1_640_599_200_000);
    assert_eq!(ok(f, "2021-12-27T10:11"), 1_640_599_860_000);
    assert_eq!(ok(f, "2021-12-27T10:11:12"), 1_640_599_872_000);
    assert_eq!(ok(f, "2021-12-27T10:11:12.345"), 1_640_599_872_345);
    assert_eq!(ok(f, "2021-12-27T10:11:12.3"), 1_640_599_872_300);
    assert_eq!(ok(f, "2021-12-27T10:11:12.345678912"), 1_640_599_872_345);
    assert_eq!(ok(f, "2021-12-27T10:11:12,345"), 1_640_599_872_345);
    assert_eq!(ok(f, "2021-12-27T10:11:12.345Z"), 1_640_599_872_345);
    assert_eq!(ok(f, "2021-12-27T00:00:00+08:00"), DEC27_PLUS8);
    assert_eq!(ok(f, "2021-12-27T00:00:00+0800"), DEC27_PLUS8);
    assert_eq!(ok(f, "2021-12-27T00:00:00+08"), DEC27_PLUS8);
    assert_eq!(ok(f, "2021-12-27T00:00+08:00"), DEC27_PLUS8);
    assert_eq!(ok(f, "2021-12-27T+08:00"), DEC27_PLUS8);
    assert_eq!(ok(f, "2021-12-27T00:00:00Europe/Paris"), 1_640_559_600_000);
    assert_eq!(ok(f, "2021-12-27T00:00:00UTC"), DEC27_UTC);
    assert_eq!(ok(f, "+12021-01-01"), ok(f, "+12021"));
    assert!(ok(f, "-0044-03-15") < 0);
}

#[test]
fn strict_date_optional_time_rejects_loose_input() {
    let f = "strict_date_optional_time";
    for bad in [
        "",
        "abc",
        "21-12-27",
        "2021-1-5",
        "2021-12-5",
        "12021-01-01",
        "2021-02-29",
        "2021-13-01",
        "2021-12-27T25:00",
        "2021-12-27T10:60",
        "2021-12-27 10:11:12",
        "2021-12-27T10:11:12.",
        "2021-12-27T10:11:12.1234567890",
        "2021-12-27T10:11:12+19:00",
        "2021-12-27t10:11:12",
        "2021-12-27T10:11:12Z ",
        "1640534400000",
    ] {
        fails(f, bad);
    }
}

#[test]
fn date_optional_time_is_lenient() {
    let f = "date_optional_time";
    assert_eq!(ok(f, "2021-1-5"), 1_609_804_800_000);
    assert_eq!(ok(f, "2021-1-5T1:2:3"), 1_609_808_523_000);
    assert_eq!(ok(f, "2021-12-27T10:11:12.345Z"), 1_640_599_872_345);
    assert_eq!(ok(f, "2021-12-27T00:00+0800"), DEC27_PLUS8);
    assert_eq!(ok(f, "2021-12-27T00:00:00+08:00"), DEC27_PLUS8);
    fails(f, "2021-12-27X");
    fails(f, "2021-02-30");
}

#[test]
fn strict_date_optional_time_nanos_needs_full_time() {
    let f = "strict_date_optional_time_nanos";
    assert_eq!(ok(f, "2021-12-27"), DEC27_UTC);
    assert_eq!(ok(f, "2021-12-27T10:11:12.345678Z"), 1_640_599_872_345);
    fails(f, "2021-12-27T10:11");
    fails(f, "2021-12-27T10:11:12.3");
}

#[test]
fn missing_zone_uses_tz_argument() {
    let f = DateFormat::default_es();
    let plus8 = Tz::parse("+08:00").unwrap();
    assert_eq!(f.parse_millis("2021-12-27", &plus8).unwrap(), DEC27_PLUS8);
    assert_eq!(
        f.parse_millis("2021-12-27T00:00:00Z", &plus8).unwrap(),
        DEC27_UTC
    );
    let ny = Tz::parse("America/New_York").unwrap();
    assert_eq!(
        f.parse_millis("2021-07-01", &ny).unwrap(),
        1_625_112_000_000
    );
    // Epoch millis are instants: the zone does not apply.
    assert_eq!(f.parse_millis("1640534400000", &ny).unwrap(), DEC27_PLUS8);
}

// ---- epoch formats ---------------------------------------------------------

#[test]
fn epoch_formats() {
    assert_eq!(ok("epoch_millis", "1640534400000"), DEC27_PLUS8);
    assert_eq!(ok("epoch_millis", "1640534400000.9"), DEC27_PLUS8);
    assert_eq!(ok("epoch_millis", "-86400000"), -86_400_000);
    assert_eq!(ok("epoch_second", "1640534400"), DEC27_PLUS8);
    assert_eq!(ok("epoch_second", "1640534400.25"), DEC27_PLUS8 + 250);
    fails("epoch_millis", "2021-12-27");
    fails("epoch_second", "1e9");
    let f = fmt("epoch_second");
    assert_eq!(f.format_millis(DEC27_PLUS8, &utc()), "1640534400");
    let f = fmt("epoch_millis||strict_date_optional_time");
    assert_eq!(f.format_millis(DEC27_PLUS8, &utc()), "1640534400000");
    assert_eq!(f.parse_millis("2021-12-27", &utc()).unwrap(), DEC27_UTC);
}

// ---- JSON values -----------------------------------------------------------

#[test]
fn json_numbers_go_through_their_string_form() {
    let f = DateFormat::default_es();
    assert_eq!(
        f.parse_json(&json!(1_640_534_400_000i64), &utc()).unwrap(),
        DEC27_PLUS8
    );
    assert_eq!(
        f.parse_json(&json!(1_640_534_400_000u64), &utc()).unwrap(),
        DEC27_PLUS8
    );
    assert_eq!(
        f.parse_json(&json!(1.6405344e12), &utc()).unwrap(),
        DEC27_PLUS8
    );
    assert_eq!(
        f.parse_json(&json!(1_640_534_400_000.5), &utc()).unwrap(),
        DEC27_PLUS8
    );
    assert_eq!(f.parse_json(&json!(-5), &utc()).unwrap(), -5);
    // ES reads a four-digit number as a year with the default format.
    assert_eq!(
        f.parse_json(&json!(2021), &utc()).unwrap(),
        1_609_459_200_000
    );
    assert_eq!(
        f.parse_json(&json!("2021-12-27"), &utc()).unwrap(),
        DEC27_UTC
    );
    assert_eq!(
        fmt("epoch_second")
            .parse_json(&json!(1_640_534_400), &utc())
            .unwrap(),
        DEC27_PLUS8
    );
    assert_eq!(
        fmt("epoch_second").parse_json(&json!(1.5), &utc()).unwrap(),
        1500
    );
}

#[test]
fn json_rejections() {
    let pattern_only = fmt("yyyy-MM-dd");
    let err = pattern_only
        .parse_json(&json!(1_640_534_400_000i64), &utc())
        .unwrap_err();
    assert_eq!(
        err.reason,
        "failed to parse date field [1640534400000] with format [yyyy-MM-dd]"
    );
    let f = DateFormat::default_es();
    assert_eq!(
        f.parse_json(&json!(true), &utc()).unwrap_err().reason,
        "failed to parse date field [true] with format [strict_date_optional_time||epoch_millis]"
    );
    assert!(f.parse_json(&json!(null), &utc()).is_err());
    assert!(f.parse_json(&json!([1]), &utc()).is_err());
    assert!(f.parse_json(&json!(1e300), &utc()).is_err());
}

#[test]
fn error_message_names_input_and_format() {
    let err = DateFormat::default_es()
        .parse_millis("abc", &utc())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "failed to parse date field [abc] with format [strict_date_optional_time||epoch_millis]"
    );
}

// ---- Java patterns ---------------------------------------------------------

#[test]
fn common_patterns() {
    assert_eq!(
        ok("yyyy-MM-dd HH:mm:ss", "2022-03-01 12:30:45"),
        1_646_137_845_000
    );
    assert_eq!(ok("yyyy-MM-dd", "2021-12-27"), DEC27_UTC);
    assert_eq!(ok("yyyy/MM/dd", "2021/12/27"), DEC27_UTC);
    assert_eq!(ok("dd/MM/yyyy", "27/12/2021"), DEC27_UTC);
    assert_eq!(ok("yyyyMMdd", "20211227"), DEC27_UTC);
    assert_eq!(ok("yyyyMMddHHmmss", "20220301123045"), 1_646_137_845_000);
    assert_eq!(ok("uuuu-MM-dd", "2021-12-27"), DEC27_UTC);
    assert_eq!(ok("yy-MM-dd", "21-12-27"), DEC27_UTC);
    assert_eq!(ok("d/M/yyyy", "27/12/2021"), DEC27_UTC);
    assert_eq!(ok("d/M/yyyy", "5/1/2021"), 1_609_804_800_000);
    assert_eq!(ok("dd MMM yyyy", "27 Dec 2021"), DEC27_UTC);
    assert_eq!(ok("MMMM d, yyyy", "December 27, 2021"), DEC27_UTC);
    assert_eq!(ok("yyyy-DDD", "2021-361"), DEC27_UTC);
    assert_eq!(ok("HH:mm", "13:45"), 49_500_000);
    assert_eq!(ok("hh:mm a", "01:45 PM"), 49_500_000);
    assert_eq!(ok("hh:mm a", "12:15 AM"), 900_000);
    assert_eq!(
        ok("yyyy-MM-dd'T'HH:mm:ssXXX", "2021-12-27T00:00:00+08:00"),
        DEC27_PLUS8
    );
    assert_eq!(
        ok("yyyy-MM-dd'T'HH:mm:ssXXX", "2021-12-27T00:00:00Z"),
        DEC27_UTC
    );
    assert_eq!(
        ok("yyyy-MM-dd'T'HH:mm:ssX", "2021-12-27T00:00:00+08"),
        DEC27_PLUS8
    );
    assert_eq!(
        ok("yyyy-MM-dd'T'HH:mm:ssZZ", "2021-12-27T00:00:00+08:00"),
        DEC27_PLUS8
    );
    assert_eq!(
        ok(
            "yyyy-MM-dd'T'HH:mm:ss VV",
            "2021-12-27T00:00:00 Europe/Paris"
        ),
        1_640_559_600_000
    );
    assert_eq!(
        ok(
            "EEE, dd MMM yyyy HH:mm:ss Z",
            "Mon, 27 Dec 2021 10:00:00 +0100"
        ),
        1_640_595_600_000
    );
    assert_eq!(ok("yyyy-MM-dd'at'HH", "2021-12-27at00"), DEC27_UTC);
}

#[test]
fn pattern_fractions_accept_any_length() {
    let f = "yyyy-MM-dd'T'HH:mm:ss.SSS";
    assert_eq!(ok(f, "2021-12-27T10:11:12.345"), 1_640_599_872_345);
    assert_eq!(ok(f, "2021-12-27T10:11:12.3"), 1_640_599_872_300);
    assert_eq!(ok(f, "2021-12-27T10:11:12.345678"), 1_640_599_872_345);
    assert_eq!(
        ok("yyyy-MM-dd'T'HH:mm:ss.SSSSSS", "2021-12-27T10:11:12.345"),
        1_640_599_872_345
    );
}

#[test]
fn patterns_are_strict_about_widths_and_validity() {
    fails("yyyy-MM-dd", "2021-1-5");
    fails("yyyy-MM-dd", "21-01-05");
    fails("yyyy-MM-dd", "2021-02-29");
    fails("yyyy-MM-dd", "2021-12-27T00:00:00");
    fails("yyyy-MM-dd", "2021-12-27 ");
    fails("yyyy-MM-dd HH:mm:ss", "2021-12-27");
    fails("EEE dd MMM yyyy", "Tue 27 Dec 2021"); // 2021-12-27 was a Monday
    fails("hh:mm a", "13:00 PM");
}

#[test]
fn optional_sections_in_patterns() {
    let f = "yyyy-MM-dd[ HH:mm[:ss]]";
    assert_eq!(ok(f, "2021-12-27"), DEC27_UTC);
    assert_eq!(ok(f, "2021-12-27 10:11"), 1_640_599_860_000);
    assert_eq!(ok(f, "2021-12-27 10:11:12"), 1_640_599_872_000);
    fails(f, "2021-12-27 10");
    assert_eq!(
        fmt(f).format_millis(1_640_599_872_000, &utc()),
        "2021-12-27 10:11:12"
    );
}

#[test]
fn alternatives_are_tried_in_order() {
    let f = fmt("yyyy-MM-dd HH:mm:ss||yyyy-MM-dd||epoch_millis");
    assert_eq!(
        f.parse_millis("2022-03-01 12:30:45", &utc()).unwrap(),
        1_646_137_845_000
    );
    assert_eq!(f.parse_millis("2021-12-27", &utc()).unwrap(), DEC27_UTC);
    assert_eq!(
        f.parse_millis("1640534400000", &utc()).unwrap(),
        DEC27_PLUS8
    );
    assert_eq!(f.format_millis(DEC27_UTC, &utc()), "2021-12-27 00:00:00");
    assert!(DateFormat::parse(" yyyy-MM-dd || epoch_millis ").is_ok());
}

#[test]
fn pattern_in_named_zone() {
    let sh = Tz::parse("Asia/Shanghai").unwrap();
    let f = fmt("yyyy-MM-dd HH:mm:ss");
    assert_eq!(
        f.parse_millis("2022-03-01 12:30:45", &sh).unwrap(),
        1_646_109_045_000
    );
    assert_eq!(
        f.format_millis(1_646_109_045_000, &sh),
        "2022-03-01 12:30:45"
    );
}

// ---- format compilation ----------------------------------------------------

#[test]
fn invalid_formats() {
    assert_eq!(
        DateFormat::parse("yyyy-MM-dd bb").unwrap_err().reason,
        "Invalid format: [yyyy-MM-dd bb]: Unknown pattern letter: b"
    );
    assert_eq!(
        DateFormat::parse("").unwrap_err().reason,
        "No date pattern provided"
    );
    assert!(DateFormat::parse("||").is_err());
    assert!(DateFormat::parse("epoch_millis||yyyy-MM-ddd").is_err());
}

// ---- named formats ---------------------------------------------------------

#[test]
fn named_formats_parse() {
    assert_eq!(ok("date", "2021-12-27"), DEC27_UTC);
    assert_eq!(ok("date", "2021-1-5"), 1_609_804_800_000);
    assert_eq!(ok("strict_date", "2021-12-27"), DEC27_UTC);
    fails("strict_date", "2021-1-5");
    assert_eq!(ok("basic_date", "20211227"), DEC27_UTC);
    fails("basic_date", "2021-12-27");
    assert_eq!(
        ok("basic_date_time", "20211227T101112.345Z"),
        1_640_599_872_345
    );
    assert_eq!(
        ok("basic_date_time", "20211227T001112.345+0800"),
        DEC27_PLUS8 + 672_345
    );
    assert_eq!(
        ok("basic_date_time_no_millis", "20211227T101112Z"),
        1_640_599_872_000
    );
    assert_eq!(
        ok("date_time", "2021-12-27T10:11:12.345Z"),
        1_640_599_872_345
    );
    assert_eq!(
        ok("date_time", "2021-12-27T00:00:00.000+08:00"),
        DEC27_PLUS8
    );
    fails("date_time", "2021-12-27T10:11:12.345");
    assert_eq!(
        ok("strict_date_time", "2021-12-27T10:11:12.345Z"),
        1_640_599_872_345
    );
    assert_eq!(
        ok("strict_date_time", "2021-12-27T10:11:12Z"),
        1_640_599_872_000
    );
    fails("strict_date_time", "2021-12-27T10:11:12");
    assert_eq!(
        ok("date_time_no_millis", "2021-12-27T10:11:12Z"),
        1_640_599_872_000
    );
    assert_eq!(
        ok("date_time_no_millis", "2021-12-27T10:11:12"),
        1_640_599_872_000
    );
    assert_eq!(
        ok("strict_date_time_no_millis", "2021-12-27T00:00:00+08:00"),
        DEC27_PLUS8
    );
    assert_eq!(
        ok("date_hour_minute_second", "2021-12-27T10:11:12"),
        1_640_599_872_000
    );
    assert_eq!(
        ok("date_hour_minute_second", "2021-12-27T1:1:1"),
        DEC27_UTC + 3_661_000
    );
    assert_eq!(
        ok("strict_date_hour_minute_second", "2021-12-27T10:11:12"),
        1_640_599_872_000
    );
    fails("strict_date_hour_minute_second", "2021-12-27T1:1:1");
    assert_eq!(
        ok("date_hour_minute_second_millis", "2021-12-27T10:11:12.345"),
        1_640_599_872_345
    );
    fails("date_hour_minute_second_millis", "2021-12-27T10:11:12.3456");
    assert_eq!(
        ok(
            "strict_date_hour_minute_second_millis",
            "2021-12-27T10:11:12.345"
        ),
        1_640_599_872_345
    );
    assert_eq!(
        ok(
            "date_hour_minute_second_fraction",
            "2021-12-27T10:11:12.3456"
        ),
        1_640_599_872_345
    );
    assert_eq!(ok("year_month_day", "2021-12-27"), DEC27_UTC);
    assert_eq!(ok("year_month_day", "2021-1-5"), 1_609_804_800_000);
    assert_eq!(ok("year_month", "2021-12"), 1_638_316_800_000);
    assert_eq!(ok("year", "2021"), 1_609_459_200_000);
    assert_eq!(ok("hour_minute_second", "10:11:12"), 36_672_000);
    assert_eq!(ok("hour_minute", "10:11"), 36_660_000);
    assert_eq!(ok("hour", "10"), 36_000_000);
    assert_eq!(ok("time", "10:11:12.345Z"), 36_672_345);
    assert_eq!(ok("t_time_no_millis", "T10:11:12Z"), 36_672_000);
    assert_eq!(ok("ordinal_date", "2021-361"), DEC27_UTC);
    assert_eq!(ok("basic_ordinal_date", "2021361"), DEC27_UTC);
    assert_eq!(ok("iso8601", "2021-12-27T00:00:00+08:00"), DEC27_PLUS8);
    assert_eq!(ok("strictDateOptionalTime", "2021-12-27"), DEC27_UTC);
}

#[test]
fn named_formats_print() {
    let plus8 = Tz::parse("+08:00").unwrap();
    let show = |spec: &str, ms: Millis, tz: &Tz| fmt(spec).format_millis(ms, tz);
    assert_eq!(
        show("strict_date_optional_time", DEC27_UTC, &utc()),
        "2021-12-27T00:00:00.000Z"
    );
    assert_eq!(
        show("strict_date_optional_time", DEC27_PLUS8, &plus8),
        "2021-12-27T00:00:00.000+08:00"
    );
    assert_eq!(
        show(
            "strict_date_optional_time||epoch_millis",
            1_640_599_872_345,
            &utc()
        ),
        "2021-12-27T10:11:12.345Z"
    );
    assert_eq!(
        show("date_optional_time", DEC27_UTC, &utc()),
        "2021-12-27T00:00:00.000Z"
    );
    assert_eq!(
        show("date_time", DEC27_UTC, &utc()),
        "2021-12-27T00:00:00.000Z"
    );
    assert_eq!(
        show("strict_date_time", DEC27_PLUS8, &plus8),
        "2021-12-27T00:00:00.000+08:00"
    );
    assert_eq!(
        show("date_time_no_millis", DEC27_UTC, &utc()),
        "2021-12-27T00:00:00Z"
    );
    assert_eq!(
        show(
            "date_time_no_millis",
            DEC27_UTC,
            &Tz::parse("Europe/Paris").unwrap()
        ),
        "2021-12-27T01:00:00Europe/Paris"
    );
    assert_eq!(show("date", DEC27_PLUS8, &plus8), "2021-12-27");
    assert_eq!(show("strict_date", DEC27_PLUS8, &utc()), "2021-12-26");
    assert_eq!(show("basic_date", DEC27_UTC, &utc()), "20211227");
    assert_eq!(
        show("basic_date_time", 1_640_599_872_345, &utc()),
        "20211227T101112.345Z"
    );
    assert_eq!(
        show("basic_date_time_no_millis", DEC27_PLUS8, &plus8),
        "20211227T000000+08:00"
    );
    assert_eq!(
        show("date_hour_minute_second", 1_640_599_872_345, &utc()),
        "2021-12-27T10:11:12"
    );
    assert_eq!(
        show("date_hour_minute_second_millis", 1_640_599_872_345, &utc()),
        "2021-12-27T10:11:12.345"
    );
    assert_eq!(
        show(
            "strict_date_hour_minute_second_millis",
            1_640_599_872_345,
            &utc()
        ),
        "2021-12-27T10:11:12.345"
    );
    assert_eq!(show("year_month_day", DEC27_UTC, &utc()), "2021-12-27");
    assert_eq!(show("year_month", DEC27_UTC, &utc()), "2021-12");
    assert_eq!(show("year", DEC27_UTC, &utc()), "2021");
    assert_eq!(
        show("hour_minute_second", 1_640_599_872_345, &utc()),
        "10:11:12"
    );
    assert_eq!(
        show("time", 1_640_599_872_345, &plus8),
        "18:11:12.345+08:00"
    );
    assert_eq!(show("ordinal_date", DEC27_UTC, &utc()), "2021-361");
    assert_eq!(show("epoch_millis", -1, &utc()), "-1");
}

#[test]
fn patterns_print() {
    let plus8 = Tz::parse("+08:00").unwrap();
    let ms = 1_640_599_872_345; // 2021-12-27T10:11:12.345Z, a Monday
    let show = |spec: &str, tz: &Tz| fmt(spec).format_millis(ms, tz);
    assert_eq!(show("yyyy-MM-dd HH:mm:ss", &plus8), "2021-12-27 18:11:12");
    assert_eq!(show("yyyy/MM/dd", &utc()), "2021/12/27");
    assert_eq!(show("dd/MM/yyyy", &utc()), "27/12/2021");
    assert_eq!(show("d/M/yy", &utc()), "27/12/21");
    assert_eq!(show("EEE, dd MMM yyyy", &utc()), "Mon, 27 Dec 2021");
    assert_eq!(show("EEEE d MMMM", &utc()), "Monday 27 December");
    assert_eq!(show("hh:mm a", &plus8), "06:11 PM");
    assert_eq!(show("h 'o''clock'", &utc()), "10 o'clock");
    assert_eq!(show("HH:mm:ss.S", &utc()), "10:11:12.3");
    assert_eq!(show("HH:mm:ss.SSSSSS", &utc()), "10:11:12.345000");
    assert_eq!(show("yyyy-MM-dd'T'HH:mmZ", &utc()), "2021-12-27T10:11+0000");
    assert_eq!(
        show("yyyy-MM-dd'T'HH:mmZZ", &plus8),
        "2021-12-27T18:11+08:00"
    );
    assert_eq!(show("yyyy-MM-dd'T'HH:mmZZZZZ", &utc()), "2021-12-27T10:11Z");
    assert_eq!(
        show("yyyy-MM-dd'T'HH:mmXXX", &plus8),
        "2021-12-27T18:11+08:00"
    );
    assert_eq!(
        show("yyyy-MM-dd'T'HH:mmxxx", &utc()),
        "2021-12-27T10:11+00:00"
    );
    assert_eq!(show("yyyy-MM-dd'T'HH:mmX", &plus8), "2021-12-27T18:11+08");
    assert_eq!(show("yyyy-MM-dd'T'HH:mmX", &utc()), "2021-12-27T10:11Z");
    assert_eq!(show("DDD", &utc()), "361");
    let ny = Tz::parse("America/New_York").unwrap();
    assert_eq!(
        show("yyyy-MM-dd HH:mm VV", &ny),
        "2021-12-27 05:11 America/New_York"
    );
    assert_eq!(show("HH:mm z", &ny), "05:11 EST");
    assert_eq!(show("HH:mm ZZZZ", &plus8), "18:11 GMT+08:00");
}

#[test]
fn printing_then_parsing_round_trips() {
    let zones = ["Z", "+08:00", "-05:30", "America/New_York", "Asia/Kolkata"];
    let formats = [
        "strict_date_optional_time",
        "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
        "yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
        "basic_date_time",
        "epoch_millis",
    ];
    for zone in zones {
        let tz = Tz::parse(zone).unwrap();
        for spec in formats {
            let f = fmt(spec);
            for ms in [
                0,
                DEC27_PLUS8,
                1_634_017_221_659,
                -2_208_988_800_123,
                4_102_444_800_999,
            ] {
                let text = f.format_millis(ms, &tz);
                assert_eq!(
                    f.parse_millis(&text, &tz).unwrap(),
                    ms,
                    "{spec} {zone} {text}"
                );
            }
        }
    }
}

#[test]
fn nanos_parse_and_print() {
    let f = DateFormat::parse("yyyy-MM-dd HH:mm:ss.SSSSSS").unwrap();
    let utc = Tz::utc();
    assert_eq!(
        f.parse_nanos("2019-10-21 08:30:04.828733", &utc, false)
            .unwrap(),
        1_571_646_604_828_733_000
    );
    assert_eq!(
        f.format_nanos(1_571_646_604_828_733_000, &utc),
        "2019-10-21 08:30:04.828733"
    );
    let n = DateFormat::parse("strict_date_optional_time_nanos").unwrap();
    let x = n
        .parse_nanos("2019-10-21T08:30:04.828733123Z", &utc, false)
        .unwrap();
    assert_eq!(x, 1_571_646_604_828_733_123);
    assert_eq!(n.format_nanos(x, &utc), "2019-10-21T08:30:04.828733123Z");
    assert_eq!(
        n.format_nanos(1_571_646_604_828_000_000, &utc),
        "2019-10-21T08:30:04.828Z"
    );
    // Round up fills the missing fraction with its maximum.
    assert_eq!(
        n.parse_nanos("2019-10-21", &utc, true).unwrap() % 1_000_000_000,
        999_999_999
    );
    let e = DateFormat::parse("epoch_millis").unwrap();
    assert_eq!(e.parse_nanos("1000", &utc, false).unwrap(), 1_000_000_000);
}
