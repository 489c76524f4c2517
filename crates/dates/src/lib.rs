//! Elasticsearch-compatible date handling for Lode.
//!
//! * [`DateFormat`] — the mapping `format` of a date field: named formats
//!   (`strict_date_optional_time`, `epoch_millis`, `basic_date`, …), Java-style
//!   patterns (`yyyy-MM-dd'T'HH:mm:ss.SSSZ`) and `||`-separated alternatives.
//!   Formats are compiled once into token lists; parsing a value walks the
//!   tokens over the input bytes without allocating.
//! * [`Tz`] — a fixed offset (`+08:00`) or an IANA zone (`America/New_York`),
//!   with DST-aware conversion between local and UTC time.
//! * [`parse_date_math`] — `now-5d/d`, `2020-01-01||+1M/d`, with the ES
//!   round-up rules used by range bounds.
//! * [`calendar_floor`] / [`calendar_next`] — calendar buckets for
//!   `date_histogram` (`calendar_interval`), in a time zone.
//! * [`parse_time_value`] — ES time values (`30s`, `1d`, `500ms`).
//!
//! All instants are [`Millis`]: milliseconds since the Unix epoch, UTC.
//!
//! ```
//! use lode_dates::{calendar_floor, parse_date_math, CalendarUnit, DateFormat, Tz};
//!
//! let format = DateFormat::default_es();
//! let tz = Tz::parse("+08:00").unwrap();
//! let ms = format.parse_millis("2021-12-27", &tz).unwrap();
//! assert_eq!(ms, 1_640_534_400_000);
//! assert_eq!(format.format_millis(ms, &tz), "2021-12-27T00:00:00.000+08:00");
//! assert_eq!(calendar_floor(ms + 5_000, CalendarUnit::Day, &tz), ms);
//! let end = parse_date_math("2021-12-27||/d", 0, &format, &tz, true).unwrap();
//! assert_eq!(end, ms + 86_400_000 - 1);
//! ```

mod calendar;
mod civil;
mod epoch;
mod error;
mod fields;
mod format;
mod iso_fast;
mod locale;
mod math;
mod named;
mod pattern;
mod time_value;
mod token_parse;
mod token_print;
mod tokens;
mod tz;

pub use calendar::{calendar_floor, calendar_next, CalendarUnit};
pub use error::DateError;
pub use format::DateFormat;
pub use locale::check_locale;
pub use math::parse_date_math;
pub use time_value::{parse_time_value, parse_time_value_setting};
pub use tz::Tz;

/// Milliseconds since 1970-01-01T00:00:00Z.
pub type Millis = i64;
