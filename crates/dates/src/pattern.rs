//! Compiles Java `DateTimeFormatter` patterns (`yyyy-MM-dd'T'HH:mm:ss.SSSZ`)
//! into tokens.

use crate::tokens::build::{num, year};
use crate::tokens::{finish, Field, OffsetStyle, Sign, Tok};

/// Compiles a pattern; the error is the `java.time` style message.
pub(crate) fn compile(pattern: &str) -> Result<Vec<Tok>, String> {
    // Stack of open sections; the first is the pattern itself.
    let mut stack: Vec<Vec<Tok>> = vec![Vec::new()];
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphabetic() {
            let mut count = 1;
            while i + count < chars.len() && chars[i + count] == c {
                count += 1;
            }
            let tok = letter(c, count)?;
            push(stack.last_mut().expect("stack never empty"), tok);
            i += count;
            continue;
        }
        match c {
            '\'' => {
                let mut text = String::new();
                let mut j = i + 1;
                loop {
                    match chars.get(j) {
                        None => {
                            return Err(format!(
                                "Pattern ends with an incomplete string literal: {pattern}"
                            ))
                        }
                        Some('\'') if chars.get(j + 1) == Some(&'\'') => {
                            text.push('\'');
                            j += 2;
                        }
                        Some('\'') => break,
                        Some(&ch) => {
                            text.push(ch);
                            j += 1;
                        }
                    }
                }
                // `''` outside a literal is a single quote.
                if j == i + 1 {
                    text.push('\'');
                }
                if !text.is_empty() {
                    push(stack.last_mut().expect("stack never empty"), Tok::Lit(text));
                }
                i = j + 1;
            }
            '[' => {
                stack.push(Vec::new());
                i += 1;
            }
            ']' => {
                if stack.len() == 1 {
                    return Err("Pattern invalid as it contains ] without previous [".to_string());
                }
                let inner = stack.pop().expect("checked above");
                push(
                    stack.last_mut().expect("stack never empty"),
                    Tok::Optional(inner),
                );
                i += 1;
            }
            '{' | '}' | '#' => {
                return Err(format!("Pattern includes reserved character: '{c}'"));
            }
            _ => {
                push(
                    stack.last_mut().expect("stack never empty"),
                    Tok::Lit(c.to_string()),
                );
                i += 1;
            }
        }
    }
    // Unclosed sections are closed at the end, as `java.time` does.
    while stack.len() > 1 {
        let inner = stack.pop().expect("len > 1");
        push(
            stack.last_mut().expect("stack never empty"),
            Tok::Optional(inner),
        );
    }
    let mut toks = stack.pop().expect("stack never empty");
    finish(&mut toks);
    Ok(toks)
}

/// Appends a token, merging consecutive literals.
fn push(toks: &mut Vec<Tok>, tok: Tok) {
    if let (Some(Tok::Lit(prev)), Tok::Lit(next)) = (toks.last_mut(), &tok) {
        prev.push_str(next);
        return;
    }
    toks.push(tok);
}

fn too_many(c: char) -> String {
    format!("Too many pattern letters: {c}")
}

/// Token for a run of `count` copies of pattern letter `c`.
fn letter(c: char, count: usize) -> Result<Tok, String> {
    let small = |field: Field| match count {
        1 => Ok(num(field, 1, 2)),
        2 => Ok(num(field, 2, 2)),
        _ => Err(too_many(c)),
    };
    let offset = |colon: bool, minutes_if_nonzero: bool, zero_as_z: bool| Tok::Offset {
        style: OffsetStyle {
            colon,
            minutes_if_nonzero,
            zero_as_z,
            gmt_prefix: false,
        },
        zone_ids: false,
    };
    match c {
        // Year of era, proleptic year, week-based year (read as the year).
        'y' | 'u' | 'Y' => match count {
            1 => Ok(year(1, 10, Sign::Normal)),
            2 => Ok(Tok::YearTwoDigits),
            3 => Ok(year(3, 10, Sign::Normal)),
            4..=10 => Ok(year(count as u8, 10, Sign::ExceedsPad)),
            _ => Err(too_many(c)),
        },
        'M' | 'L' => match count {
            1 => Ok(num(Field::Month, 1, 2)),
            2 => Ok(num(Field::Month, 2, 2)),
            3 => Ok(Tok::MonthName { full: false }),
            4 => Ok(Tok::MonthName { full: true }),
            5 => Err(format!("Unsupported pattern letter count: {c}")),
            _ => Err(too_many(c)),
        },
        'd' => small(Field::Day),
        'D' => match count {
            1 => Ok(num(Field::DayOfYear, 1, 3)),
            2 => Ok(num(Field::DayOfYear, 2, 3)),
            3 => Ok(num(Field::DayOfYear, 3, 3)),
            _ => Err(too_many(c)),
        },
        'H' => small(Field::Hour),
        'k' => small(Field::ClockHour),
        'K' => small(Field::HourOfAmPm),
        'h' => small(Field::ClockHourOfAmPm),
        'm' => small(Field::Minute),
        's' => small(Field::Second),
        // Any number of fraction digits is accepted; `count` sets the output.
        'S' => match count {
            1..=9 => Ok(Tok::Fraction {
                min: 1,
                max: 9,
                width: count as u8,
            }),
            _ => Err(too_many(c)),
        },
        'a' => match count {
            1 => Ok(Tok::AmPm),
            _ => Err(too_many(c)),
        },
        'E' => match count {
            1..=3 => Ok(Tok::DayName { full: false }),
            4 => Ok(Tok::DayName { full: true }),
            _ => Err(too_many(c)),
        },
        'Z' => match count {
            1 | 3 => Ok(offset(false, false, false)),
            // Joda's `ZZ` (`+08:00`), which ES users still write.
            2 => Ok(offset(true, false, false)),
            4 => Ok(Tok::Offset {
                style: OffsetStyle {
                    colon: true,
                    minutes_if_nonzero: false,
                    zero_as_z: false,
                    gmt_prefix: true,
                },
                zone_ids: true,
            }),
            5 => Ok(offset(true, false, true)),
            _ => Err(too_many(c)),
        },
        'X' | 'x' => {
            let zero_as_z = c == 'X';
            match count {
                1 => Ok(offset(false, true, zero_as_z)),
                2 | 4 => Ok(offset(false, false, zero_as_z)),
                3 | 5 => Ok(offset(true, false, zero_as_z)),
                _ => Err(too_many(c)),
            }
        }
        'V' => match count {
            2 => Ok(Tok::ZoneId),
            _ => Err("Pattern letter count must be 2: V".to_string()),
        },
        'z' => match count {
            1..=4 => Ok(Tok::ZoneName),
            _ => Err(too_many(c)),
        },
        'G' | 'Q' | 'q' | 'w' | 'W' | 'e' | 'c' | 'F' | 'A' | 'n' | 'N' | 'O' | 'B' => {
            Err(format!("Unsupported pattern letter: {c}"))
        }
        _ => Err(format!("Unknown pattern letter: {c}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::build::lit;

    #[test]
    fn compiles_literals_and_fields() {
        let toks = compile("yyyy-MM-dd'T'HH:mm").unwrap();
        assert_eq!(toks.len(), 9);
        assert_eq!(toks[1], Tok::Char(b'-'));
        assert_eq!(toks[5], Tok::Char(b'T'));
        assert_eq!(compile("'o''clock'").unwrap(), vec![lit("o'clock")]);
        assert_eq!(compile("HH''mm").unwrap()[1], Tok::Char(b'\''));
        assert_eq!(compile("HH 'h'").unwrap()[1], lit(" h"));
    }

    #[test]
    fn compiles_optional_sections() {
        let toks = compile("yyyy[-MM[-dd]]").unwrap();
        assert_eq!(toks.len(), 2);
        let Tok::Optional(inner) = &toks[1] else {
            panic!("expected an optional section")
        };
        assert!(matches!(inner.last(), Some(Tok::Optional(_))));
        assert_eq!(compile("yyyy[-MM").unwrap().len(), 2);
    }

    #[test]
    fn reports_bad_patterns() {
        assert_eq!(compile("yyyy-bb").unwrap_err(), "Unknown pattern letter: b");
        assert_eq!(compile("ddd").unwrap_err(), "Too many pattern letters: d");
        assert!(compile("HH]").is_err());
        assert!(compile("'open").is_err());
        assert!(compile("yyyy#").is_err());
    }
}
