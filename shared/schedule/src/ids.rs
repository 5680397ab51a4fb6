//! Deterministic execution ids: a fire's id is a function of the schedule and the fire time
//! alone, so every tick that sees the fire (a retried one, two at once) sends the same create,
//! and the worker creates it once.
//!
//! A template is text with placeholders: `{schedule}` (the entry's name), `{machine}`,
//! `{date}` and `{time}` (the fire's wall-clock date `2026-12-06` and time `0300` in the
//! entry's zone), `{utc}` (the fire's UTC time, `20261206T0200Z`). The default is
//! `{schedule}-{utc}`.

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;

use crate::file::Schedule;

/// The template of an entry that gives no `id`.
pub(crate) const DEFAULT_TEMPLATE: &str = "{schedule}-{utc}";

const PLACEHOLDERS: &str = "{schedule}, {machine}, {date}, {time}, {utc}";

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Text(String),
    Schedule,
    Machine,
    Date,
    Time,
    Utc,
}

/// A parsed id template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdTemplate {
    text: String,
    parts: Vec<Part>,
}

impl IdTemplate {
    /// Read a template (the entry's `id`). The error, for the file's report, names an unknown
    /// placeholder, an unmatched brace, or a template with no time placeholder (every fire would
    /// get the same id, so only the first would ever start).
    pub fn parse(text: &str) -> Result<IdTemplate, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            match rest.find(['{', '}']) {
                None => {
                    parts.push(Part::Text(rest.to_string()));
                    break;
                }
                Some(i) if rest.as_bytes()[i] == b'}' => {
                    return Err(format!(
                        "id template {text:?}: a '}}' with no '{{' before it"
                    ));
                }
                Some(i) => {
                    if i > 0 {
                        parts.push(Part::Text(rest[..i].to_string()));
                    }
                    let Some(close) = rest[i..].find('}') else {
                        return Err(format!("id template {text:?}: a '{{' is never closed"));
                    };
                    let name = &rest[i + 1..i + close];
                    parts.push(match name {
                        "schedule" => Part::Schedule,
                        "machine" => Part::Machine,
                        "date" => Part::Date,
                        "time" => Part::Time,
                        "utc" => Part::Utc,
                        other => {
                            return Err(format!(
                                "id template {text:?}: unknown placeholder {{{other}}} (known: {PLACEHOLDERS})"
                            ))
                        }
                    });
                    rest = &rest[i + close + 1..];
                }
            }
        }
        if !parts
            .iter()
            .any(|p| matches!(p, Part::Date | Part::Time | Part::Utc))
        {
            return Err(format!(
                "id template {text:?} has no time placeholder: every fire would get the same id, and only the first would start (use {{utc}}, or {{date}} and {{time}})"
            ));
        }
        Ok(IdTemplate {
            text: text.to_string(),
            parts,
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The execution id of the fire at `fire` of schedule `schedule` (starting `machine`), its
    /// `{date}` and `{time}` read in `zone`.
    pub fn render(&self, schedule: &str, machine: &str, fire: DateTime<Utc>, zone: Tz) -> String {
        let local = zone.from_utc_datetime(&fire.naive_utc());
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Schedule => out.push_str(schedule),
                Part::Machine => out.push_str(machine),
                Part::Date => out.push_str(&local.format("%Y-%m-%d").to_string()),
                Part::Time => out.push_str(&local.format("%H%M").to_string()),
                Part::Utc => out.push_str(&fire.format("%Y%m%dT%H%MZ").to_string()),
            }
        }
        out
    }
}

/// The fires a template is tried on: the next ones after a fixed instant (so a file is
/// judged the same at every cold start).
const SAMPLE_FROM: i64 = 1_767_225_600; // 2026-01-01T00:00:00Z
const SAMPLE_FIRES: usize = 4;

/// Refuse a template whose ids SQS would refuse, or that gives two nearby fires the same id
/// (`{date}` on an hourly schedule: only the first fire of each day would start).
pub fn check_distinct(schedule: &Schedule) -> Result<(), String> {
    let from = Utc.timestamp_opt(SAMPLE_FROM, 0).unwrap();
    let fires = schedule.when.upcoming(from, schedule.zone, SAMPLE_FIRES);
    let mut seen: Vec<(String, DateTime<Utc>)> = Vec::new();
    for fire in fires {
        let id = schedule.execution_id(fire);
        harel_queue::check_group_id(&id).map_err(|_| {
            format!(
                "id template {:?} gives {id:?}: an execution id is 1 to 128 printable ASCII characters without spaces",
                schedule.id.as_str()
            )
        })?;
        if let Some((_, earlier)) = seen.iter().find(|(seen_id, _)| *seen_id == id) {
            return Err(format!(
                "id template {:?} gives the fires at {earlier} and {fire} the same id {id:?}: add {{time}} or use {{utc}}",
                schedule.id.as_str()
            ));
        }
        seen.push((id, fire));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_render_in_the_zone_and_in_utc() {
        let t = IdTemplate::parse("{schedule}/{machine}-{date}-{time}-{utc}").unwrap();
        let fire = Utc.with_ymd_and_hms(2026, 12, 6, 2, 0, 0).unwrap();
        let madrid: Tz = "Europe/Madrid".parse().unwrap();
        assert_eq!(
            t.render("nightly", "Report", fire, madrid),
            "nightly/Report-2026-12-06-0300-20261206T0200Z"
        );
    }

    #[test]
    fn bad_templates_say_why() {
        for (bad, why) in [
            ("x-{when}", "unknown placeholder {when}"),
            ("x-{utc", "never closed"),
            ("x-}{utc}", "no '{' before"),
            ("nightly", "no time placeholder"),
        ] {
            let e = IdTemplate::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }
}
