//! One provider's entry in the hooks file: where its values are read from (JMESPath over the
//! body, or a header), how its events map to harel kinds, what starts an execution, and the
//! rules between those fields, refused when the entry is read.

use indexmap::IndexMap;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::verify::Verify;

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
