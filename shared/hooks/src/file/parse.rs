//! Reading the hooks file in its format (JSON, TOML or YAML, told by the extension), every
//! mistake placed: the entry, the field and, where the format knows it, the line and column.

use std::path::Path;

use super::{Entry, FileError, Format, HooksFile};

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    // a byte offset; were it inside a character, the character's start
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// libyaml's `... at position N` (a byte offset), split off the message.
fn yaml_offset(message: String) -> (String, Option<usize>) {
    let Some(at) = message.find(" at position ") else {
        return (message, None);
    };
    let digits: String = message[at + 13..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    match digits.parse() {
        Ok(offset) => {
            let rest = &message[at + 13 + digits.len()..];
            (format!("{}{rest}", &message[..at]), Some(offset))
        }
        Err(_) => (message, None),
    }
}

/// serde_json and serde_yaml_ng append the position to the message: it is reported apart.
fn without_position(message: String) -> String {
    match message.find(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message,
    }
}

impl HooksFile {
    /// Read the file at `path`, its format told by the extension.
    pub fn load(path: &Path) -> Result<HooksFile, FileError> {
        let origin = path.display().to_string();
        let plain = |message: String| FileError {
            file: origin.clone(),
            entry: None,
            field: None,
            position: None,
            message,
        };
        let format = match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("json") => Format::Json,
            Some("toml") => Format::Toml,
            Some("yaml" | "yml") => Format::Yaml,
            _ => {
                return Err(plain(
                    "the extension must tell the format: .json, .toml, .yaml or .yml".into(),
                ))
            }
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| plain(format!("cannot read the file: {e}")))?;
        HooksFile::parse(&text, format, &origin)
    }

    /// Parse `text`; `origin` names it in errors.
    pub fn parse(text: &str, format: Format, origin: &str) -> Result<HooksFile, FileError> {
        // an entry named twice is refused where it is written, not replaced by the second
        type Entries = harel_model::unique::Unique<Entry>;
        let fail = |path: Option<&serde_path_to_error::Path>,
                    position: Option<(usize, usize)>,
                    message: String| {
            let segments: Vec<String> = path
                .map(|p| p.iter().map(|s| s.to_string()).collect())
                .unwrap_or_default();
            let mut segments = segments.into_iter().filter(|s| s != "?");
            let entry = segments.next();
            let rest: Vec<String> = segments.collect();
            FileError {
                file: origin.to_string(),
                entry,
                field: (!rest.is_empty()).then(|| rest.join(".")),
                position,
                message,
            }
        };
        // before any parser: libyaml's scan of deep flow collections is quadratic in their
        // depth, and every format is refused past serde's recursion limit anyway
        if let Err(deep) = harel_model::nesting::check(text) {
            return Err(fail(
                None,
                Some((deep.line, deep.column)),
                format!(
                    "nested more than {} levels deep",
                    harel_model::nesting::MAX_DEPTH
                ),
            ));
        }
        let entries: Entries = match format {
            Format::Json => {
                let mut de = serde_json::Deserializer::from_str(text);
                let entries = serde_path_to_error::deserialize(&mut de).map_err(|e| {
                    let inner = e.inner();
                    // serde_json's column is 0 for an error before the line's first
                    // character (a value of the wrong type that opens the line): column 1
                    let position =
                        (inner.line() > 0).then(|| (inner.line(), inner.column().max(1)));
                    fail(
                        Some(e.path()),
                        position,
                        without_position(inner.to_string()),
                    )
                })?;
                de.end().map_err(|e| {
                    fail(
                        None,
                        Some((e.line(), e.column().max(1))),
                        without_position(e.to_string()),
                    )
                })?;
                entries
            }
            Format::Toml => {
                let de = toml::Deserializer::parse(text).map_err(|e| {
                    fail(
                        None,
                        e.span().map(|s| line_col(text, s.start)),
                        e.message().to_string(),
                    )
                })?;
                serde_path_to_error::deserialize(de).map_err(|e| {
                    let inner = e.inner();
                    fail(
                        Some(e.path()),
                        inner.span().map(|s| line_col(text, s.start)),
                        inner.message().to_string(),
                    )
                })?
            }
            Format::Yaml => {
                // blank: spaces and line breaks only (a tab is YAML's own error, with its place)
                if text.chars().all(|c| matches!(c, ' ' | '\n' | '\r')) {
                    return Err(fail(None, None, "the file is empty".into()));
                }
                // a key written twice, placed at the repeat (serde_yaml_ng's typed reader
                // would place it at the map's start)
                if let Err(e) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text) {
                    let map = e.location().map_or((1, 1), |l| (l.line(), l.column()));
                    let said = e.to_string();
                    if let Some((key, position)) =
                        harel_model::unique::yaml_repeated_key(text, &said, map.0, map.1)
                    {
                        return Err(fail(
                            None,
                            Some(position),
                            format!(
                                "duplicate key \"{key}\" (a second one would replace the first)"
                            ),
                        ));
                    }
                }
                let de = serde_yaml_ng::Deserializer::from_str(text);
                serde_path_to_error::deserialize(de).map_err(|e| {
                    let inner = e.inner();
                    // libyaml's reader reports a bad character by its byte offset, with a
                    // location of 1:1 beside it: the offset is the place
                    let (message, offset) = yaml_offset(inner.to_string());
                    let position = match offset {
                        Some(offset) => Some(line_col(text, offset)),
                        None => inner.location().map(|l| (l.line(), l.column())),
                    };
                    let message = without_position(message);
                    // serde_yaml_ng puts its own path first (`stripe.verify: ...`)
                    let segments: Vec<String> = e.path().iter().map(|s| s.to_string()).collect();
                    let message = (1..=segments.len())
                        .rev()
                        .find_map(|n| {
                            message.strip_prefix(&format!("{}: ", segments[..n].join(".")))
                        })
                        .map_or(message.clone(), str::to_string);
                    fail(Some(e.path()), position, message)
                })?
            }
        };
        let entries = entries.0;
        if entries.is_empty() {
            return Err(fail(None, None, "no hooks: the file has no entries".into()));
        }
        Ok(HooksFile {
            origin: origin.to_string(),
            entries,
        })
    }
}
