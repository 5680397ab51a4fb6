//! The hooks file (`HAREL_HOOKS_FILE`): one entry per provider, JSON, TOML or YAML told by
//! the extension. Unknown fields are refused; every mistake names the file, the entry, the
//! field and, where the format knows it, the line and column.
//!
//! ```yaml
//! stripe:
//!   verify: {scheme: stripe, secret: "secretsmanager:stripe-webhook", tolerance: 300}
//!   dedupe: id                                   # JMESPath: the provider's event id
//!   execution: data.object.metadata.harel_order_id
//!   kind_from: type
//!   kinds: {payment_intent.succeeded: PaymentSucceeded, payment_intent.payment_failed:
//! PaymentFailed}
//!   data: data.object
//! ```

use std::path::Path;

use indexmap::IndexMap;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use crate::secret::SecretSource;
use crate::signature::{Algorithm, Encoding, HmacScheme, Scheme, DEFAULT_TOLERANCE};

/// A compiled JMESPath expression, kept with its text.
#[derive(Clone)]
pub struct Expr(pub(crate) jmespath::Expression<'static>);

impl std::fmt::Debug for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`", self.0.as_str())
    }
}

impl PartialEq for Expr {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_str() == other.0.as_str()
    }
}

impl Expr {
    /// Compiles `text`; the error message quotes it.
    pub fn parse(text: &str) -> Result<Expr, String> {
        jmespath::compile(text)
            .map(Expr)
            .map_err(|e| format!("{text:?} is not a JMESPath expression: {}", e.reason))
    }

    /// The expression's text, as written in the file.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl<'de> Deserialize<'de> for Expr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Expr::parse(&text).map_err(de::Error::custom)
    }
}

/// Where a value is read from: a JMESPath expression over the JSON body, or a request
/// header (`header:X-GitHub-Event`).
#[derive(Clone, Debug, PartialEq)]
pub enum Extract {
    /// A JMESPath expression over the JSON body.
    Path(Expr),
    /// A request header, by its lowercased name.
    Header(String),
}

impl<'de> Deserialize<'de> for Extract {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        match text.strip_prefix("header:") {
            Some(name) if http::HeaderName::from_bytes(name.as_bytes()).is_ok() => {
                Ok(Extract::Header(name.to_ascii_lowercase()))
            }
            Some(name) => Err(de::Error::custom(format!(
                "header:{name} does not name an HTTP header"
            ))),
            None => Expr::parse(&text)
                .map(Extract::Path)
                .map_err(de::Error::custom),
        }
    }
}

/// What a provider's event becomes: a harel event kind, and optionally its own `data`
/// expression (else the entry's).
#[derive(Clone, Debug, PartialEq)]
pub struct KindSpec {
    /// The harel event kind (one the machine knows, checked at load when the machine is).
    pub kind: String,
    /// The event's data for this kind, overriding the entry's `data`.
    pub data: Option<Expr>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KindFull {
    kind: String,
    #[serde(default)]
    data: Option<Expr>,
}

impl<'de> Deserialize<'de> for KindSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KindSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an event kind, or {kind, data}")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<KindSpec, E> {
                Ok(KindSpec {
                    kind: s.to_string(),
                    data: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<KindSpec, A::Error> {
                let full = KindFull::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(KindSpec {
                    kind: full.kind,
                    data: full.data,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// `create`: start the execution on a first event (a create for an id that exists is a
/// no-op in the worker, so every routed event may carry one).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateSpec {
    /// The machine to start; the execution's id is the entry's `execution`.
    pub machine: String,
    /// JMESPath over the body: the new execution's context (an object).
    #[serde(default)]
    pub context: Option<Expr>,
    /// Only these harel kinds start one (default: any routed kind).
    #[serde(default)]
    pub on: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VerifyRaw {
    scheme: String,
    secret: String,
    #[serde(default)]
    tolerance: Option<u64>,
    #[serde(default)]
    header: Option<String>,
    #[serde(default)]
    algorithm: Option<Algorithm>,
    #[serde(default)]
    encoding: Option<Encoding>,
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    timestamp_header: Option<String>,
    #[serde(default)]
    payload: Option<String>,
}

/// `verify`: the scheme and the secret.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "VerifyRaw")]
pub struct Verify {
    /// How the provider signs (`stripe`, `github`, `hmac` and its fields).
    pub scheme: Scheme,
    /// The signing secret, as a reference (`env:`, `ssm:`, `secretsmanager:`) or text, read by
    /// `Hooks::resolve`.
    pub secret: SecretSource,
}

impl TryFrom<VerifyRaw> for Verify {
    type Error = String;

    fn try_from(raw: VerifyRaw) -> Result<Verify, String> {
        let secret = SecretSource::parse(&raw.secret).map_err(|e| format!("secret: {e}"))?;
        let only_hmac = [
            ("header", raw.header.is_some()),
            ("algorithm", raw.algorithm.is_some()),
            ("encoding", raw.encoding.is_some()),
            ("prefix", raw.prefix.is_some()),
            ("timestamp_header", raw.timestamp_header.is_some()),
            ("payload", raw.payload.is_some()),
        ];
        let refuse_hmac_fields = |scheme: &str| match only_hmac.iter().find(|(_, given)| *given) {
            Some((field, _)) => Err(format!(
                "`{field}` applies to the hmac scheme only, not {scheme}"
            )),
            None => Ok(()),
        };
        let scheme = match raw.scheme.as_str() {
            "stripe" => {
                refuse_hmac_fields("stripe")?;
                Scheme::Stripe {
                    tolerance: raw.tolerance.unwrap_or(DEFAULT_TOLERANCE),
                }
            }
            "github" => {
                refuse_hmac_fields("github")?;
                if raw.tolerance.is_some() {
                    return Err(
                        "`tolerance` does not apply to github (it signs no timestamp)".into(),
                    );
                }
                Scheme::Github
            }
            "hmac" => {
                let header = raw
                    .header
                    .ok_or("the hmac scheme needs `header` (the signature's header)")?;
                http::HeaderName::from_bytes(header.as_bytes())
                    .map_err(|_| format!("header {header:?} is not an HTTP header name"))?;
                if raw.timestamp_header.is_none()
                    && (raw.tolerance.is_some() || raw.payload.is_some())
                {
                    return Err("`tolerance` and `payload` need `timestamp_header`".into());
                }
                if let Some(p) = &raw.payload {
                    if !p.contains("{body}") || !p.contains("{timestamp}") {
                        return Err(format!(
                            "payload {p:?} must hold {{timestamp}} and {{body}}"
                        ));
                    }
                }
                Scheme::Hmac(HmacScheme {
                    header: header.to_ascii_lowercase(),
                    algorithm: raw.algorithm.unwrap_or(Algorithm::Sha256),
                    encoding: raw.encoding.unwrap_or(Encoding::Hex),
                    prefix: raw.prefix,
                    timestamp_header: raw.timestamp_header.map(|h| h.to_ascii_lowercase()),
                    tolerance: raw.tolerance.unwrap_or(DEFAULT_TOLERANCE),
                    payload: raw.payload,
                })
            }
            other => {
                return Err(format!(
                    "unknown scheme {other:?} (one of stripe, github, hmac)"
                ))
            }
        };
        Ok(Verify { scheme, secret })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryRaw {
    verify: Verify,
    #[serde(default)]
    dedupe: Option<Extract>,
    execution: Extract,
    kind_from: Extract,
    #[serde(deserialize_with = "harel_model::unique::keys")]
    kinds: IndexMap<String, KindSpec>,
    #[serde(default)]
    data: Option<Expr>,
    #[serde(default)]
    create: Option<CreateSpec>,
    #[serde(default)]
    machine: Option<String>,
}

/// One provider's entry.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "EntryRaw")]
pub struct Entry {
    /// How a delivery's signature is checked: nothing else is read before it verifies.
    pub verify: Verify,
    /// The provider's event id (the harel event's id, so a retried delivery is absorbed);
    /// None: the scheme's delivery id (GitHub), else a digest of the body.
    pub dedupe: Option<Extract>,
    /// The target execution's id.
    pub execution: Extract,
    /// The provider's event type.
    pub kind_from: Extract,
    /// Provider event type -> harel kind (and data).
    pub kinds: IndexMap<String, KindSpec>,
    /// The event's data (an object) unless the kind has its own; None: `{}`.
    pub data: Option<Expr>,
    /// Start the execution when a delivery routes to one that may not exist yet (None: deliver
    /// only).
    pub create: Option<CreateSpec>,
    /// The machine the events go to, to check the kinds against when the file is loaded
    /// (default: `create`'s machine).
    pub machine: Option<String>,
}

impl TryFrom<EntryRaw> for Entry {
    type Error = String;

    fn try_from(raw: EntryRaw) -> Result<Entry, String> {
        if raw.kinds.is_empty() {
            return Err("`kinds` maps no provider event to a harel kind".into());
        }
        if let Some((from, _)) = raw.kinds.iter().find(|(_, k)| k.kind.trim().is_empty()) {
            return Err(format!("kinds: {from:?} maps to an empty kind"));
        }
        if let Some(create) = &raw.create {
            for on in create.on.iter().flatten() {
                if !raw.kinds.values().any(|k| &k.kind == on) {
                    return Err(format!(
                        "create.on: {on:?} is no kind of `kinds` (so it would never start one)"
                    ));
                }
            }
            if let Some(m) = &raw.machine {
                if m != &create.machine {
                    return Err(format!(
                        "machine {m:?} and create.machine {:?} differ",
                        create.machine
                    ));
                }
            }
        }
        let machine = raw
            .machine
            .or_else(|| raw.create.as_ref().map(|c| c.machine.clone()));
        Ok(Entry {
            verify: raw.verify,
            dedupe: raw.dedupe,
            execution: raw.execution,
            kind_from: raw.kind_from,
            kinds: raw.kinds,
            data: raw.data,
            create: raw.create,
            machine,
        })
    }
}

/// The file's formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// JSON (`.json`).
    Json,
    /// TOML (`.toml`).
    Toml,
    /// YAML (`.yaml`, `.yml`).
    Yaml,
}

/// A mistake in the hooks file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct FileError {
    /// The file's path (or the origin given to the parser).
    pub file: String,
    /// The entry at fault, when the mistake is inside one.
    pub entry: Option<String>,
    /// The field's path inside the entry (`verify.tolerance`).
    pub field: Option<String>,
    /// 1-based line and column.
    pub position: Option<(usize, usize)>,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "hooks file {}", self.file)?;
        if let Some(entry) = &self.entry {
            write!(f, ", entry {entry:?}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ", field {field}")?;
        }
        if let Some((line, col)) = self.position {
            write!(f, ", at {line}:{col}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// The parsed file, secrets not yet read.
#[derive(Clone, Debug, PartialEq)]
pub struct HooksFile {
    /// Where the file was read from (for errors and logs).
    pub origin: String,
    /// The entries by hook name (the `/hooks/{name}` route), in the file's order.
    pub entries: IndexMap<String, Entry>,
}

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

    /// Check every entry whose machine is known (`machine` or `create.machine`) against
    /// it: the machine exists (`lookup`), and each harel kind is one it declares or listens
    /// for. Run when the file is loaded beside the machines.
    pub fn check(
        &self,
        lookup: &dyn Fn(&str) -> Option<std::sync::Arc<harel_model::Definition>>,
    ) -> Result<(), FileError> {
        for (name, entry) in &self.entries {
            let Some(machine) = &entry.machine else {
                continue;
            };
            let err = |field: &str, message: String| FileError {
                file: self.origin.clone(),
                entry: Some(name.clone()),
                field: Some(field.to_string()),
                position: None,
                message,
            };
            let field = if entry.create.is_some() {
                "create.machine"
            } else {
                "machine"
            };
            let definition =
                lookup(machine).ok_or_else(|| err(field, format!("no machine {machine:?}")))?;
            let known = crate::kinds::known_kinds(&definition);
            for (from, spec) in &entry.kinds {
                if !known.contains(spec.kind.as_str()) {
                    return Err(err(
                        &format!("kinds.{from}"),
                        format!(
                            "machine {machine:?} neither declares nor listens for {:?} (it knows {})",
                            spec.kind,
                            known.iter().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}
