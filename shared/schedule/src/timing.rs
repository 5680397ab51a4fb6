//! When a schedule fires: a cron expression read in the entry's time zone, or a fixed rate.
//! Every function takes the time it is asked about (no clock is read here), so the tick and
//! its tests agree on what is due.
//!
//! Daylight saving follows croner (Vixie cron's rules), in the entry's zone: a fixed time that
//! a spring-forward skips (02:30 in Europe/Madrid on the last Sunday of March) fires at the
//! first minute after the gap (03:00 CEST, 01:00 UTC); a fixed time a fall-back repeats
//! (02:30 on the last Sunday of October) fires once, at its first pass (02:30 CEST, 00:30
//! UTC). Wildcard and step fields (`*/15`) fire on every wall-clock match, so twice in a
//! repeated hour.
//!
//! A rate is aligned to the Unix epoch, not to the zone: `15 minutes` fires at :00, :15, :30
//! and :45 UTC, `1 days` at 00:00 UTC. A local time of day is a cron's job.

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;

/// A schedule's fire times.
#[derive(Clone, Debug)]
pub enum When {
    /// A cron expression, read in the entry's zone (see [`When::cron`]).
    Cron {
        /// The expression as written.
        text: String,
        /// The parsed expression.
        cron: Box<Cron>,
    },
    /// A fixed rate, aligned to the Unix epoch (see [`When::rate`]).
    Rate {
        /// The rate as written (`15 minutes`).
        text: String,
        /// The period, in seconds (at least 60).
        every_seconds: i64,
    },
}

/// The most fire times one look walks through (a long outage of a minutely cron is a week of
/// minutes); past it the latest fire is asked of croner directly.
const MAX_WALK: usize = 20_000;

impl When {
    /// Five fields (minute hour day-of-month month day-of-week), as cron and EventBridge
    /// write them, with names (`MON`, `JAN`), ranges, lists, steps and `@daily`-style
    /// nicknames; seconds and years are refused (the sweeper ticks once a minute).
    pub fn cron(text: &str) -> Result<When, String> {
        let parser = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .year(Year::Disallowed)
            .build();
        let cron = parser
            .parse(text)
            .map_err(|e| format!("invalid cron expression {text:?}: {e}"))?;
        // an expression with no date at all (`0 0 30 2 *`) is refused now, not at a tick
        cron.find_next_occurrence(&Utc.timestamp_opt(0, 0).unwrap(), false)
            .map_err(|e| format!("cron expression {text:?} never fires: {e}"))?;
        Ok(When::Cron {
            text: text.to_string(),
            cron: Box::new(cron),
        })
    }

    /// `N minutes`, `N hours` or `N days` (`1 minute`, `1 hour`, `1 day` too), N ≥ 1.
    pub fn rate(text: &str) -> Result<When, String> {
        let bad = || {
            format!(
                "invalid rate {text:?}: expected \"N minutes\", \"N hours\" or \"N days\" with N a whole number of at least 1"
            )
        };
        let mut words = text.split_whitespace();
        let (Some(n), Some(unit), None) = (words.next(), words.next(), words.next()) else {
            return Err(bad());
        };
        let n: i64 = n.parse().map_err(|_| bad())?;
        let unit_seconds = match unit {
            "minute" | "minutes" => 60,
            "hour" | "hours" => 3600,
            "day" | "days" => 86_400,
            _ => return Err(bad()),
        };
        if !(1..=36_500 * 86_400 / unit_seconds).contains(&n) {
            return Err(bad());
        }
        Ok(When::Rate {
            text: text.to_string(),
            every_seconds: n * unit_seconds,
        })
    }

    /// How the entry wrote it (`cron 0 3 * * *`, `rate 15 minutes`).
    pub fn describe(&self) -> String {
        match self {
            When::Cron { text, .. } => format!("cron {text}"),
            When::Rate { text, .. } => format!("rate {text}"),
        }
    }

    /// The first fire strictly after `after`.
    pub fn next_after(&self, after: DateTime<Utc>, zone: Tz) -> Option<DateTime<Utc>> {
        match self {
            When::Cron { cron, .. } => cron
                .find_next_occurrence(&after.with_timezone(&zone), false)
                .ok()
                .map(|t| t.with_timezone(&Utc)),
            When::Rate { every_seconds, .. } => {
                let next = (after.timestamp().div_euclid(*every_seconds) + 1) * every_seconds;
                Utc.timestamp_opt(next, 0).single()
            }
        }
    }

    /// The fires in (`after`, `upto`]: how many and the latest.
    pub fn fires_between(
        &self,
        after: DateTime<Utc>,
        upto: DateTime<Utc>,
        zone: Tz,
    ) -> Option<Fires> {
        match self {
            When::Rate { every_seconds, .. } => {
                let e = *every_seconds;
                let first = after.timestamp().div_euclid(e) + 1;
                let last = upto.timestamp().div_euclid(e);
                (last >= first).then(|| Fires {
                    count: (last - first + 1) as u64,
                    latest: Utc.timestamp_opt(last * e, 0).unwrap(),
                })
            }
            When::Cron { cron, .. } => {
                // forward from `after`, as the fires happened: croner's forward search is the
                // one its daylight-saving rules are written for
                let mut count = 0u64;
                let mut latest = None;
                let mut at = after;
                while let Some(next) = self.next_after(at, zone) {
                    if next > upto {
                        break;
                    }
                    count += 1;
                    latest = Some(next);
                    at = next;
                    if count as usize >= MAX_WALK {
                        // a very long outage: the latest fire, found backwards
                        let prev = cron
                            .find_previous_occurrence(&upto.with_timezone(&zone), true)
                            .ok()
                            .map(|t| t.with_timezone(&Utc));
                        latest = prev.or(latest);
                        break;
                    }
                }
                latest.map(|latest| Fires { count, latest })
            }
        }
    }

    /// The next `n` fires after `after`.
    pub fn upcoming(&self, after: DateTime<Utc>, zone: Tz, n: usize) -> Vec<DateTime<Utc>> {
        let mut out = Vec::with_capacity(n);
        let mut at = after;
        while out.len() < n {
            let Some(next) = self.next_after(at, zone) else {
                break;
            };
            out.push(next);
            at = next;
        }
        out
    }
}

/// The fires due in a span (at least one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fires {
    /// How many (capped for a very long outage of a frequent cron).
    pub count: u64,
    /// The latest fire of the span (the one a start is made for).
    pub latest: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn madrid() -> Tz {
        "Europe/Madrid".parse().unwrap()
    }

    #[test]
    fn a_daily_cron_fires_at_its_minute_in_its_zone() {
        let when = When::cron("0 3 * * *").unwrap();
        // 03:00 in Madrid in December is 02:00 UTC
        let next = when.next_after(utc("2026-12-06T00:00:00Z"), madrid());
        assert_eq!(next, Some(utc("2026-12-06T02:00:00Z")));
        assert_eq!(
            when.next_after(utc("2026-12-06T00:00:00Z"), Tz::UTC),
            Some(utc("2026-12-06T03:00:00Z"))
        );
    }

    #[test]
    fn spring_forward_fires_a_skipped_time_right_after_the_gap() {
        // 2026-03-29: Madrid goes from 02:00 CET straight to 03:00 CEST; 02:30 never exists
        let when = When::cron("30 2 * * *").unwrap();
        let fires = when.upcoming(utc("2026-03-27T12:00:00Z"), madrid(), 3);
        assert_eq!(
            fires,
            vec![
                utc("2026-03-28T01:30:00Z"), // 02:30 CET
                utc("2026-03-29T01:00:00Z"), // the gap: 03:00 CEST, once
                utc("2026-03-30T00:30:00Z"), // 02:30 CEST
            ]
        );
    }

    #[test]
    fn fall_back_fires_a_repeated_time_once_at_its_first_pass() {
        // 2026-10-25: Madrid goes from 03:00 CEST back to 02:00 CET; 02:30 happens twice
        let when = When::cron("30 2 * * *").unwrap();
        let fires = when.upcoming(utc("2026-10-24T12:00:00Z"), madrid(), 3);
        assert_eq!(
            fires,
            vec![
                utc("2026-10-25T00:30:00Z"), // 02:30 CEST, the first pass; not 01:30 UTC
                utc("2026-10-26T01:30:00Z"), // 02:30 CET
                utc("2026-10-27T01:30:00Z"),
            ]
        );
        // a tick over the whole repeated hour sees that one fire only
        let span = when.fires_between(
            utc("2026-10-25T00:00:00Z"),
            utc("2026-10-25T02:00:00Z"),
            madrid(),
        );
        assert_eq!(
            span,
            Some(Fires {
                count: 1,
                latest: utc("2026-10-25T00:30:00Z")
            })
        );
    }

    #[test]
    fn rates_are_aligned_to_the_epoch() {
        let when = When::rate("15 minutes").unwrap();
        let span = when.fires_between(
            utc("2026-12-06T10:00:00Z"),
            utc("2026-12-06T11:00:00Z"),
            madrid(),
        );
        assert_eq!(
            span,
            Some(Fires {
                count: 4,
                latest: utc("2026-12-06T11:00:00Z")
            }),
            "10:15, 10:30, 10:45, 11:00: the span's start is not its own"
        );
        assert_eq!(
            When::rate("1 day")
                .unwrap()
                .next_after(utc("2026-12-06T10:00:00Z"), madrid()),
            Some(utc("2026-12-07T00:00:00Z"))
        );
        for bad in [
            "0 minutes",
            "15",
            "15 weeks",
            "x minutes",
            "1 minutes 2",
            "-1 hours",
        ] {
            assert!(When::rate(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn bad_crons_say_why() {
        for bad in [
            "",
            "0 3 * *",
            "0 0 3 * * *",
            "61 * * * *",
            "0 0 30 2 *",
            "nope",
        ] {
            let e = When::cron(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{bad:?}: {e}");
        }
        assert!(When::cron("@daily").is_ok());
        assert!(When::cron("*/5 9-17 * * MON-FRI").is_ok());
    }
}
