//! The schedules file (`HAREL_SCHEDULES_FILE`): one entry per schedule, JSON, TOML or YAML as
//! its extension says. Read and checked once (the sweeper's cold start, `harel schedules`):
//! an unknown field, a bad cron or rate, an unknown zone, a bad id template, an unknown
//! machine or a context the machine's schema refuses is an error naming the file, the entry,
//! the field and the reason (with the parser's line and column where it gives them).

use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use harel_model::schema::{check_context, with_defaults};
use harel_model::{Definition, Object};
use indexmap::IndexMap;
use serde::Deserialize;

use crate::ids::IdTemplate;
use crate::timing::When;

/// What to do with a fire while the execution the previous fire started still runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Overlap {
    /// Drop the fire (the next one looks again).
    #[default]
    Skip,
    /// Start it anyway.
    Allow,
}

/// What to do with the fires missed while no tick ran (the sweeper down, throttled, failing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    /// Start one execution for all of them (the latest fire's).
    #[default]
    Once,
    /// Start none; wait for the next fire.
    Skip,
}

/// One checked entry of the file.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// The entry's key in the file: 1 to [`MAX_NAME_LEN`] letters, digits, `-`, `_` or `.`
    /// (it is part of the default execution ids).
    pub name: String,
    /// The definition id of the machine each fire starts (checked against the deployed machines
    /// when [`load`] was given them).
    pub machine: String,
    /// When it fires: the entry's `cron` or `rate`.
    pub when: When,
    /// The zone its cron and its id's `{date}`/`{time}` are read in (`timezone`; UTC by default).
    pub zone: Tz,
    /// The create's context as written (the worker fills the machine's defaults).
    pub context: Object,
    /// How a fire's execution id is made (`id`; `{schedule}-{utc}` by default).
    pub id: IdTemplate,
    /// What a fire does while the previous start still runs (`overlap`).
    pub overlap: Overlap,
    /// What becomes of fires missed while no tick ran (`catch_up`).
    pub catch_up: CatchUp,
}

impl Schedule {
    /// The execution id of the fire at `fire`.
    pub fn execution_id(&self, fire: DateTime<Utc>) -> String {
        self.id.render(&self.name, &self.machine, fire, self.zone)
    }
}

/// Every entry of a schedules file, in the file's order.
#[derive(Clone, Debug, Default)]
pub struct Schedules {
    /// The file they were read from, as its errors name it.
    pub file: String,
    /// The checked entries, in the file's order.
    pub entries: Vec<Schedule>,
}

impl Schedules {
    /// The entry named `name`, if the file has one.
    pub fn get(&self, name: &str) -> Option<&Schedule> {
        self.entries.iter().find(|s| s.name == name)
    }

    /// The entries' names, in the file's order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|s| s.name.as_str())
    }
}

/// A schedules file that cannot be used, and where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FileError {
    /// The file as a whole: unreadable, an unknown extension, too deeply nested, a syntax
    /// error (with its line and column where the parser gives them).
    #[error("schedules file {file}: {reason}")]
    File {
        /// The file's path, as given.
        file: String,
        /// What is wrong with it.
        reason: String,
    },
    /// One field of one entry is refused.
    #[error("schedules file {file}, entry {entry:?}, {field}: {reason}")]
    Entry {
        /// The file's path, as given.
        file: String,
        /// The entry's name.
        entry: String,
        /// The field (`cron`, `timezone`, `context`, ...; `name` for the entry's key).
        field: String,
        /// Why it is refused.
        reason: String,
    },
}

/// The machines a file's entries may start: a machine's definition by name (None: unknown).
pub type Machines<'a> = &'a dyn Fn(&str) -> Option<Arc<Definition>>;

/// How an entry is written (before its fields are checked).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    machine: String,
    #[serde(default)]
    cron: Option<String>,
    #[serde(default)]
    rate: Option<String>,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    context: Option<Object>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    overlap: Overlap,
    #[serde(default)]
    catch_up: CatchUp,
}

/// The longest entry name: it is part of the default ids (SQS takes 128 characters).
pub const MAX_NAME_LEN: usize = 64;

/// Read and check the file at `path`; `machines` (None: not checked, the CLI without
/// machines) are the ones its entries may start.
pub fn load(path: &Path, machines: Option<Machines<'_>>) -> Result<Schedules, FileError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| FileError::File {
        file: file.clone(),
        reason: format!("cannot read it: {e}"),
    })?;
    parse(&file, &text, machines)
}

/// Check the text of the file named `file` (its extension tells the format).
pub fn parse(
    file: &str,
    text: &str,
    machines: Option<Machines<'_>>,
) -> Result<Schedules, FileError> {
    let raw = deserialize(file, text)?;
    let mut entries = Vec::with_capacity(raw.len());
    for (name, entry) in raw {
        entries.push(check_entry(file, name, entry, machines)?);
    }
    Ok(Schedules {
        file: file.to_string(),
        entries,
    })
}

fn deserialize(file: &str, text: &str) -> Result<IndexMap<String, RawEntry>, FileError> {
    // an entry named twice is refused where it is written, not replaced by the second
    type Entries = harel_model::unique::Unique<RawEntry>;
    let extension = Path::new(file)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let located = |path: String, reason: String| located_error(file, path, reason);
    if extension
        .as_deref()
        .is_some_and(|e| matches!(e, "json" | "toml" | "yaml" | "yml"))
    {
        // before any parser: libyaml's scan of deep flow collections is quadratic in their
        // depth, and every format is refused past serde's recursion limit anyway
        harel_model::nesting::check(text).map_err(|deep| FileError::File {
            file: file.to_string(),
            reason: deep.to_string(),
        })?;
    }
    match extension.as_deref() {
        Some("json") => {
            let mut de = serde_json::Deserializer::from_str(text);
            let read: Entries = serde_path_to_error::deserialize(&mut de)
                .map_err(|e| located(e.path().to_string(), e.inner().to_string()))?;
            // a second document after the first is a broken file, not one to half-read
            de.end().map_err(|e| FileError::File {
                file: file.to_string(),
                reason: e.to_string(),
            })?;
            Ok(read.0)
        }
        Some("toml") => {
            let de = toml::Deserializer::parse(text).map_err(|e| FileError::File {
                file: file.to_string(),
                reason: one_line(&e.to_string()),
            })?;
            serde_path_to_error::deserialize(de)
                .map(|read: Entries| read.0)
                .map_err(|e| located(e.path().to_string(), one_line(&e.inner().to_string())))
        }
        Some("yaml" | "yml") => {
            // a key written twice, placed at the repeat (serde_yaml_ng's readers place it at
            // the map's start)
            if let Err(e) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text) {
                let map = e.location().map_or((1, 1), |l| (l.line(), l.column()));
                if let Some((key, (line, column))) =
                    harel_model::unique::yaml_repeated_key(text, &e.to_string(), map.0, map.1)
                {
                    return Err(FileError::File {
                        file: file.to_string(),
                        reason: format!(
                            "duplicate key \"{key}\" (a second one would replace the first) at line {line} column {column}"
                        ),
                    });
                }
            }
            let de = serde_yaml_ng::Deserializer::from_str(text);
            serde_path_to_error::deserialize(de)
                .map(|read: Entries| read.0)
                .map_err(|e| {
                    let inner = e.inner();
                    located(e.path().to_string(), yaml_reason(text, inner))
                })
        }
        _ => Err(FileError::File {
            file: file.to_string(),
            reason: "the extension must tell the format: .json, .toml, .yaml or .yml".into(),
        }),
    }
}

/// serde_yaml_ng's message with its place: libyaml's syntax errors leave it out of their
/// text (it is added), and its reader reports a bad character by its byte offset (`at
/// position N`, with a location of 1:1 beside it: the offset is the place).
fn yaml_reason(text: &str, error: &serde_yaml_ng::Error) -> String {
    let reason = error.to_string();
    if let Some(at) = reason.find(" at position ") {
        let digits: String = reason[at + 13..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if let Ok(offset) = digits.parse::<usize>() {
            // a byte offset; were it inside a character, the character's start
            let mut end = offset.min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let before = &text[..end];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            let rest = &reason[at + 13 + digits.len()..];
            return format!("{}{rest} at line {line} column {column}", &reason[..at]);
        }
    }
    match error.location() {
        Some(at) if !reason.contains(" at line ") => {
            format!("{reason} at line {} column {}", at.line(), at.column())
        }
        _ => reason,
    }
}

/// A parser's error at `path` (`entry.field`, `entry` or `.` for the top).
fn located_error(file: &str, path: String, reason: String) -> FileError {
    // YAML's errors start with the path again (`nightly.cron: ...`)
    let mut parts = path.splitn(2, '.');
    let entry = parts.clone().next().unwrap_or_default();
    let reason = [format!("{path}: "), format!("{entry}: ")]
        .iter()
        .find_map(|prefix| reason.strip_prefix(prefix.as_str()))
        .map_or(reason.clone(), str::to_string);
    match (parts.next(), parts.next()) {
        (Some(entry), field) if !entry.is_empty() && entry != "." && entry != "?" => {
            FileError::Entry {
                file: file.to_string(),
                entry: entry.to_string(),
                field: field.map_or_else(|| "fields".to_string(), str::to_string),
                reason,
            }
        }
        _ => FileError::File {
            file: file.to_string(),
            reason,
        },
    }
}

/// TOML's errors quote the line with a caret over several lines: one line for a log.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && *l != "|")
        .collect::<Vec<_>>()
        .join(" ")
}

fn check_entry(
    file: &str,
    name: String,
    raw: RawEntry,
    machines: Option<Machines<'_>>,
) -> Result<Schedule, FileError> {
    let err = |field: &str, reason: String| FileError::Entry {
        file: file.to_string(),
        entry: name.clone(),
        field: field.to_string(),
        reason,
    };
    let name_ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    if !name_ok {
        return Err(err(
            "name",
            format!("1 to {MAX_NAME_LEN} letters, digits, '-', '_' or '.' (it is part of the execution ids)"),
        ));
    }
    let zone = match &raw.timezone {
        None => Tz::UTC,
        Some(z) => z.parse::<Tz>().map_err(|_| {
            err(
                "timezone",
                format!("unknown time zone {z:?} (an IANA name such as Europe/Madrid or UTC)"),
            )
        })?,
    };
    let when = match (&raw.cron, &raw.rate) {
        (Some(cron), None) => When::cron(cron).map_err(|e| err("cron", e))?,
        (None, Some(rate)) => When::rate(rate).map_err(|e| err("rate", e))?,
        (Some(_), Some(_)) => {
            return Err(err("cron", "give either cron or rate, not both".into()));
        }
        (None, None) => {
            return Err(err(
                "cron",
                "missing: give cron (\"0 3 * * *\") or rate (\"15 minutes\")".into(),
            ));
        }
    };
    let context = raw.context.unwrap_or_default();
    if let Some(machines) = machines {
        let Some(defn) = machines(&raw.machine) else {
            return Err(err(
                "machine",
                format!(
                    "unknown machine {:?}: the functions do not run it",
                    raw.machine
                ),
            ));
        };
        // the worker's own check of a create's context (it would dead-letter the create)
        let filled = with_defaults(&defn.context_schema, &context);
        check_context(&defn.context_schema, &filled, true).map_err(|e| {
            err(
                "context",
                format!("machine {} refuses it: {e}", raw.machine),
            )
        })?;
    }
    let template = raw.id.as_deref().unwrap_or(crate::ids::DEFAULT_TEMPLATE);
    let id = IdTemplate::parse(template).map_err(|e| err("id", e))?;
    let schedule = Schedule {
        name: name.clone(),
        machine: raw.machine,
        when,
        zone,
        context,
        id,
        overlap: raw.overlap,
        catch_up: raw.catch_up,
    };
    crate::ids::check_distinct(&schedule).map_err(|e| err("id", e))?;
    Ok(schedule)
}
