//! The built-in ES formats (`strict_date_optional_time`, `basic_date`, …),
//! built after ES's `DateFormatters` definitions.

use crate::tokens::build::{frac, lit, num, opt, year, zone};
use crate::tokens::{finish, Field, Sign, Tok};

/// Which epoch a format counts in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EpochUnit {
    Millis,
    Seconds,
}

/// A built-in format: epoch numbers, or parsers tried in order plus one
/// printer.
pub(crate) enum Named {
    Epoch(EpochUnit),
    Tokens {
        parsers: Vec<Vec<Tok>>,
        printer: Vec<Tok>,
        /// `strict_date_optional_time`: try `iso_fast` first.
        fast_iso: bool,
    },
}

use Field::{Day, DayOfYear, Hour, Minute, Month, Second};

fn t() -> Tok {
    lit("T")
}

/// `yyyy` of the strict formats: 4 digits, or a sign and up to 10.
fn y4() -> Tok {
    year(4, 10, Sign::ExceedsPad)
}

fn n2(field: Field) -> Tok {
    num(field, 2, 2)
}

fn n12(field: Field) -> Tok {
    num(field, 1, 2)
}

/// `uuuu[-MM[-dd]]`.
fn strict_year_month_day() -> Vec<Tok> {
    vec![
        y4(),
        opt(vec![lit("-"), n2(Month), opt(vec![lit("-"), n2(Day)])]),
    ]
}

/// ES `DATE_FORMATTER`: `u[-M[-d]]` with a 1-5 digit year.
fn lenient_date() -> Vec<Tok> {
    vec![
        year(1, 5, Sign::Normal),
        opt(vec![lit("-"), n12(Month), opt(vec![lit("-"), n12(Day)])]),
    ]
}

/// `uuuu-MM-dd`.
fn ymd() -> Vec<Tok> {
    vec![y4(), lit("-"), n2(Month), lit("-"), n2(Day)]
}

fn hms() -> Vec<Tok> {
    vec![n2(Hour), lit(":"), n2(Minute), lit(":"), n2(Second)]
}

fn lenient_hms() -> Vec<Tok> {
    vec![n12(Hour), lit(":"), n12(Minute), lit(":"), n12(Second)]
}

fn basic_ymd() -> Vec<Tok> {
    vec![year(4, 4, Sign::Normal), n2(Month), n2(Day)]
}

fn basic_hms() -> Vec<Tok> {
    vec![n2(Hour), n2(Minute), n2(Second)]
}

fn dot_frac(min: u8, max: u8) -> Vec<Tok> {
    vec![lit("."), frac(min, max)]
}

fn millis3() -> Vec<Tok> {
    dot_frac(3, 3)
}

fn cat(parts: Vec<Vec<Tok>>) -> Vec<Tok> {
    parts.into_iter().flatten().collect()
}

fn one(parser: Vec<Tok>, printer: Vec<Tok>) -> Named {
    Named::Tokens {
        parsers: vec![parser],
        printer,
        fast_iso: false,
    }
}

/// The printer of `strict_date_optional_time` and friends:
/// `uuuu-MM-dd'T'HH:mm:ss.SSSXXX`.
fn date_optional_time_printer() -> Vec<Tok> {
    cat(vec![ymd(), vec![t()], hms(), millis3(), vec![zone()]])
}

fn strict_date_optional_time() -> Named {
    let fraction = opt(vec![opt(dot_frac(1, 9)), opt(vec![lit(","), frac(1, 9)])]);
    let time = opt(vec![
        n2(Hour),
        opt(vec![
            lit(":"),
            n2(Minute),
            opt(vec![lit(":"), n2(Second), fraction]),
        ]),
    ]);
    let parser = cat(vec![
        strict_year_month_day(),
        vec![opt(vec![t(), time, opt(vec![zone()])])],
    ]);
    Named::Tokens {
        parsers: vec![parser],
        printer: date_optional_time_printer(),
        fast_iso: true,
    }
}

fn strict_date_optional_time_nanos() -> Named {
    let parser = cat(vec![
        strict_year_month_day(),
        vec![opt(cat(vec![
            vec![t()],
            hms(),
            vec![
                opt(dot_frac(3, 9)),
                opt(vec![lit(","), frac(3, 9)]),
                opt(vec![zone()]),
            ],
        ]))],
    ]);
    one(
        parser,
        cat(vec![
            ymd(),
            vec![t()],
            hms(),
            vec![
                lit("."),
                Tok::Fraction {
                    min: 3,
                    max: 9,
                    width: 0,
                },
            ],
            vec![zone()],
        ]),
    )
}

fn date_optional_time() -> Named {
    let minute_and_more = opt(vec![
        lit(":"),
        n12(Minute),
        opt(vec![lit(":"), n12(Second)]),
        opt(dot_frac(1, 9)),
        opt(vec![lit(","), frac(1, 9)]),
        opt(vec![zone()]),
    ]);
    let parser = cat(vec![
        lenient_date(),
        vec![opt(vec![t(), opt(vec![n12(Hour), minute_and_more])])],
    ]);
    one(parser, date_optional_time_printer())
}

/// Looks up a built-in format by its snake_case or camelCase name.
pub(crate) fn lookup(name: &str) -> Option<Named> {
    let snake;
    let name = if name.bytes().any(|b| b.is_ascii_uppercase()) {
        snake = camel_to_snake(name);
        snake.as_str()
    } else {
        name
    };
    let named = match name {
        "epoch_millis" => Named::Epoch(EpochUnit::Millis),
        "epoch_second" => Named::Epoch(EpochUnit::Seconds),
        "strict_date_optional_time" | "iso8601" => strict_date_optional_time(),
        "strict_date_optional_time_nanos" => strict_date_optional_time_nanos(),
        "date_optional_time" => date_optional_time(),

        "basic_date" => one(basic_ymd(), basic_ymd()),
        "basic_date_time" => one(
            cat(vec![
                basic_ymd(),
                vec![t()],
                basic_hms(),
                dot_frac(1, 9),
                vec![zone()],
            ]),
            cat(vec![
                basic_ymd(),
                vec![t()],
                basic_hms(),
                millis3(),
                vec![zone()],
            ]),
        ),
        "basic_date_time_no_millis" => {
            let toks = cat(vec![basic_ymd(), vec![t()], basic_hms(), vec![zone()]]);
            one(toks.clone(), toks)
        }
        "basic_ordinal_date" => {
            let toks = vec![y4(), num(DayOfYear, 3, 3)];
            one(toks.clone(), toks)
        }
        "basic_time" => one(
            cat(vec![basic_hms(), dot_frac(1, 9), vec![zone()]]),
            cat(vec![basic_hms(), millis3(), vec![zone()]]),
        ),
        "basic_time_no_millis" => {
            let toks = cat(vec![basic_hms(), vec![zone()]]);
            one(toks.clone(), toks)
        }
        "basic_t_time" => one(
            cat(vec![vec![t()], basic_hms(), dot_frac(1, 9), vec![zone()]]),
            cat(vec![vec![t()], basic_hms(), millis3(), vec![zone()]]),
        ),
        "basic_t_time_no_millis" => {
            let toks = cat(vec![vec![t()], basic_hms(), vec![zone()]]);
            one(toks.clone(), toks)
        }

        "date" => one(lenient_date(), ymd()),
        "strict_date" => one(ymd(), ymd()),
        "date_hour" => one(
            cat(vec![lenient_date(), vec![t(), n12(Hour)]]),
            cat(vec![ymd(), vec![t(), n2(Hour)]]),
        ),
        "strict_date_hour" => {
            let toks = cat(vec![ymd(), vec![t(), n2(Hour)]]);
            one(toks.clone(), toks)
        }
        "date_hour_minute" => one(
            cat(vec![
                lenient_date(),
                vec![t(), n12(Hour), lit(":"), n12(Minute)],
            ]),
            cat(vec![ymd(), vec![t(), n2(Hour), lit(":"), n2(Minute)]]),
        ),
        "strict_date_hour_minute" => {
            let toks = cat(vec![ymd(), vec![t(), n2(Hour), lit(":"), n2(Minute)]]);
            one(toks.clone(), toks)
        }
        "date_hour_minute_second" => one(
            cat(vec![lenient_date(), vec![t()], lenient_hms()]),
            cat(vec![ymd(), vec![t()], hms()]),
        ),
        "strict_date_hour_minute_second" => {
            let toks = cat(vec![ymd(), vec![t()], hms()]);
            one(toks.clone(), toks)
        }
        "date_hour_minute_second_millis" => one(
            cat(vec![
                lenient_date(),
                vec![t()],
                lenient_hms(),
                dot_frac(1, 3),
            ]),
            cat(vec![ymd(), vec![t()], hms(), millis3()]),
        ),
        "date_hour_minute_second_fraction" => one(
            cat(vec![
                lenient_date(),
                vec![t()],
                lenient_hms(),
                dot_frac(1, 9),
            ]),
            cat(vec![ymd(), vec![t()], hms(), millis3()]),
        ),
        "strict_date_hour_minute_second_millis" | "strict_date_hour_minute_second_fraction" => one(
            cat(vec![ymd(), vec![t()], hms(), dot_frac(1, 9)]),
            cat(vec![ymd(), vec![t()], hms(), millis3()]),
        ),
        "date_time" => one(
            cat(vec![
                lenient_date(),
                vec![t(), n12(Hour), lit(":"), n12(Minute)],
                vec![opt(cat(vec![vec![lit(":"), n12(Second)], dot_frac(1, 9)]))],
                vec![zone()],
            ]),
            date_optional_time_printer(),
        ),
        "strict_date_time" => one(
            cat(vec![
                ymd(),
                vec![t()],
                hms(),
                vec![opt(dot_frac(1, 9)), zone()],
            ]),
            date_optional_time_printer(),
        ),
        "date_time_no_millis" => one(
            cat(vec![
                lenient_date(),
                vec![t(), n12(Hour), lit(":"), n12(Minute)],
                vec![opt(vec![lit(":"), n12(Second)]), opt(vec![zone()])],
            ]),
            cat(vec![ymd(), vec![t()], hms(), vec![Tok::ZoneId]]),
        ),
        "strict_date_time_no_millis" => {
            let toks = cat(vec![ymd(), vec![t()], hms(), vec![zone()]]);
            one(toks.clone(), toks)
        }

        "ordinal_date" => one(
            vec![y4(), lit("-"), num(DayOfYear, 1, 3)],
            vec![y4(), lit("-"), num(DayOfYear, 3, 3)],
        ),
        "strict_ordinal_date" => {
            let toks = vec![y4(), lit("-"), num(DayOfYear, 3, 3)];
            one(toks.clone(), toks)
        }

        "hour" => one(vec![n12(Hour)], vec![n2(Hour)]),
        "strict_hour" => one(vec![n2(Hour)], vec![n2(Hour)]),
        "hour_minute" => one(
            vec![n12(Hour), lit(":"), n12(Minute)],
            vec![n2(Hour), lit(":"), n2(Minute)],
        ),
        "strict_hour_minute" => {
            let toks = vec![n2(Hour), lit(":"), n2(Minute)];
            one(toks.clone(), toks)
        }
        "hour_minute_second" => one(lenient_hms(), hms()),
        "strict_hour_minute_second" => one(hms(), hms()),
        "hour_minute_second_millis" => one(
            cat(vec![lenient_hms(), dot_frac(1, 3)]),
            cat(vec![hms(), millis3()]),
        ),
        "hour_minute_second_fraction" => one(
            cat(vec![lenient_hms(), dot_frac(1, 9)]),
            cat(vec![hms(), millis3()]),
        ),
        "strict_hour_minute_second_millis" | "strict_hour_minute_second_fraction" => one(
            cat(vec![hms(), dot_frac(1, 9)]),
            cat(vec![hms(), millis3()]),
        ),
        "time" => one(
            cat(vec![lenient_hms(), dot_frac(1, 9), vec![zone()]]),
            cat(vec![hms(), millis3(), vec![zone()]]),
        ),
        "strict_time" => one(
            cat(vec![hms(), dot_frac(1, 9), vec![zone()]]),
            cat(vec![hms(), millis3(), vec![zone()]]),
        ),
        "time_no_millis" => one(
            cat(vec![lenient_hms(), vec![zone()]]),
            cat(vec![hms(), vec![zone()]]),
        ),
        "strict_time_no_millis" => {
            let toks = cat(vec![hms(), vec![zone()]]);
            one(toks.clone(), toks)
        }
        "t_time" => one(
            cat(vec![vec![t()], lenient_hms(), dot_frac(1, 9), vec![zone()]]),
            cat(vec![vec![t()], hms(), millis3(), vec![zone()]]),
        ),
        "strict_t_time" => one(
            cat(vec![vec![t()], hms(), dot_frac(1, 9), vec![zone()]]),
            cat(vec![vec![t()], hms(), millis3(), vec![zone()]]),
        ),
        "t_time_no_millis" => one(
            cat(vec![vec![t()], lenient_hms(), vec![zone()]]),
            cat(vec![vec![t()], hms(), vec![zone()]]),
        ),
        "strict_t_time_no_millis" => {
            let toks = cat(vec![vec![t()], hms(), vec![zone()]]);
            one(toks.clone(), toks)
        }

        "year_month_day" => Named::Tokens {
            parsers: vec![
                strict_year_month_day(),
                vec![
                    year(1, 10, Sign::Normal),
                    lit("-"),
                    n12(Month),
                    lit("-"),
                    n12(Day),
                ],
            ],
            printer: ymd(),
            fast_iso: false,
        },
        "strict_year_month_day" => one(strict_year_month_day(), ymd()),
        "year_month" => Named::Tokens {
            parsers: vec![
                vec![y4(), lit("-"), n2(Month)],
                vec![year(1, 10, Sign::Normal), lit("-"), n12(Month)],
            ],
            printer: vec![y4(), lit("-"), n2(Month)],
            fast_iso: false,
        },
        "strict_year_month" => {
            let toks = vec![y4(), lit("-"), n2(Month)];
            one(toks.clone(), toks)
        }
        "year" => one(vec![year(1, 10, Sign::Normal)], vec![y4()]),
        "strict_year" => one(vec![y4()], vec![y4()]),
        _ => return None,
    };
    Some(match named {
        Named::Tokens {
            mut parsers,
            mut printer,
            fast_iso,
        } => {
            parsers.iter_mut().for_each(|p| finish(p));
            finish(&mut printer);
            Named::Tokens {
                parsers,
                printer,
                fast_iso,
            }
        }
        epoch => epoch,
    })
}

/// `strictDateOptionalTime` → `strict_date_optional_time`.
fn camel_to_snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_aliases() {
        assert_eq!(
            camel_to_snake("strictDateOptionalTime"),
            "strict_date_optional_time"
        );
        assert!(lookup("dateOptionalTime").is_some());
        assert!(lookup("basicDate").is_some());
        assert!(lookup("epoch_millis").is_some());
        assert!(lookup("yyyy-MM-dd").is_none());
        assert!(lookup("no_such_format").is_none());
    }
}
