//! Machine versions: a machine's version is a content hash of what it was built from (its
//! normalized machine dict, imports and fragments already resolved, and the machines it
//! carries), so the same source gives the same version on every host and any change gives a
//! new one. An execution records the version it started on (`definition_version` in its JSON)
//! and keeps running on it after a deploy that changed or dropped the machine: the version's
//! bundle is kept in the store the first time an execution uses it.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use harel_model::{build_definition, Definition, Execution};
use harel_store::DefinitionDoc;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// The bundle format, in the document itself: a reader meeting another format refuses it
/// instead of building something else.
pub const BUNDLE_FORMAT: &str = "harel-rs.bundle/1";

/// One version's machines: its root and every submachine it carries, by id (a submachine by
/// its FQN), as the driver registers them.
#[derive(Debug)]
pub struct Bundle {
    /// The version (a content hash, see [`version_of`]).
    pub version: String,
    /// The id of the machine the version is of (its top-level machine).
    pub root: String,
    /// The root and every submachine it carries, by the id the driver registers each under.
    pub definitions: HashMap<String, Arc<Definition>>,
}

impl Bundle {
    /// The machine registered as `id` in this version.
    pub fn get(&self, id: &str) -> Option<&Arc<Definition>> {
        self.definitions.get(id)
    }

    /// harel `_defn_for` in this version: by the execution's `definition_id`, else (a
    /// submachine child registered under its FQN only) by its `definition_fqn`.
    pub fn machine_for(&self, exe: &Execution) -> Option<&Arc<Definition>> {
        self.get(&exe.definition_id)
            .or_else(|| exe.definition_fqn.as_ref().and_then(|f| self.get(f)))
    }
}

/// Why a machine has no version, or a stored version cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    /// The machine (its id given) was built by hand, not from a machine dict: there is nothing
    /// to hash or keep, and its executions run unpinned.
    #[error("machine {0:?} was not built from a machine dict: it has no version")]
    NoSource(String),
    /// A stored version's document is not a bundle this build can run (another format, a
    /// hash that does not match, a machine that does not build): refused, never run as
    /// something else.
    #[error("version {version}: {message}")]
    Corrupt {
        /// The version asked for.
        version: String,
        /// What is wrong with its document.
        message: String,
    },
}

fn machine_name(defn: &Definition) -> String {
    defn.node(defn.root).name.to_string()
}

fn entry(defn: &Definition) -> Result<Value, VersionError> {
    let source = defn
        .source
        .as_ref()
        .ok_or_else(|| VersionError::NoSource(defn.id.clone()))?;
    Ok(json!({"id": defn.id, "name": machine_name(defn), "config": source.as_ref()}))
}

/// The document a version is hashed from and rebuilt from: the machine's dict and, for the
/// submachines it carries, theirs (inline ones are rebuilt with their parent; imported ones
/// are not in the parent's dict, so each is kept whole).
pub fn bundle_document(defn: &Definition) -> Result<Value, VersionError> {
    let mut subs = Vec::new();
    for sub in defn.submachines.values() {
        subs.push(entry(sub)?);
    }
    let mut doc = entry(defn)?;
    let obj = doc.as_object_mut().expect("an entry is an object");
    obj.insert("format".into(), BUNDLE_FORMAT.into());
    obj.insert("submachines".into(), Value::Array(subs));
    Ok(doc)
}

/// Positions say where a state was written, not what it does: moving a comment must not make
/// a new version.
fn without_positions(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "__pos__")
                .map(|(k, v)| (k.clone(), without_positions(v)))
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_positions).collect()),
        other => other.clone(),
    }
}

/// The first 16 hex digits of SHA-256 over the bundle's JSON without positions. Key order is
/// the declaration order the loader produced (serde_json keeps it), which is the same for the
/// same source on every host.
pub fn version_of(document: &Value) -> String {
    let canonical = serde_json::to_string(&without_positions(document))
        .expect("a JSON value always serializes");
    let digest = Sha256::digest(canonical.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The version of a built definition.
pub fn version_of_definition(defn: &Definition) -> Result<String, VersionError> {
    Ok(version_of(&bundle_document(defn)?))
}

fn corrupt(version: &str, message: impl Into<String>) -> VersionError {
    VersionError::Corrupt {
        version: version.to_string(),
        message: message.into(),
    }
}

fn build_entry(version: &str, entry: &Value) -> Result<Definition, VersionError> {
    let field = |k: &str| {
        entry
            .get(k)
            .ok_or_else(|| corrupt(version, format!("a bundle entry has no {k:?}")))
    };
    let id = field("id")?
        .as_str()
        .ok_or_else(|| corrupt(version, "a bundle entry's id is not a string"))?;
    let name = field("name")?
        .as_str()
        .ok_or_else(|| corrupt(version, "a bundle entry's name is not a string"))?;
    build_definition(field("config")?, name, Some(id))
        .map_err(|e| corrupt(version, format!("machine {id:?} does not build: {e}")))
}

/// Rebuild a version's machines from its document. The document must hash to `version`:
/// a store row that does not is refused rather than run as something else.
pub fn rebuild(version: &str, document: &Value) -> Result<Bundle, VersionError> {
    if document.get("format").and_then(Value::as_str) != Some(BUNDLE_FORMAT) {
        return Err(corrupt(version, format!("not a {BUNDLE_FORMAT} document")));
    }
    let actual = version_of(document);
    if actual != version {
        return Err(corrupt(
            version,
            format!("the stored document hashes to {actual}"),
        ));
    }
    let mut root = build_entry(version, document)?;
    let subs = document
        .get("submachines")
        .and_then(Value::as_array)
        .ok_or_else(|| corrupt(version, "no submachines list"))?;
    for sub in subs {
        let id = sub.get("id").and_then(Value::as_str).unwrap_or_default();
        if root.submachines.contains_key(id) {
            continue;
        }
        let built = build_entry(version, sub)?;
        let nested: Vec<_> = built
            .submachines
            .iter()
            .map(|(k, v)| (k.clone(), Arc::clone(v)))
            .collect();
        root.submachines.insert(id.to_string(), Arc::new(built));
        for (k, v) in nested {
            root.submachines.entry(k).or_insert(v);
        }
    }
    Ok(bundle_of(version.to_string(), root))
}

/// A bundle registered the way [`crate::register`] registers a deployed machine.
pub fn bundle_of(version: String, root: Definition) -> Bundle {
    let id = root.id.clone();
    Bundle {
        version,
        root: id,
        definitions: crate::register([root]),
    }
}

/// The versions a driver knows: those deployed with it (computed once, at construction), and
/// those it read from the store since (each read once per process).
#[derive(Default)]
pub(crate) struct Versions {
    /// Registered id -> the version of its own bundle (what a new execution of it pins).
    pub current: HashMap<String, String>,
    pub deployed: HashMap<String, Arc<Bundle>>,
    pub cache: Mutex<HashMap<String, Arc<Bundle>>>,
    /// Versions this process has made sure the store keeps.
    pub kept: Mutex<HashSet<String>>,
    /// Versions a read (a create's existence check) just found not kept: the create's commit
    /// keeps them without reading again.
    pub absent: Mutex<HashSet<String>>,
    /// Deployed bundle documents by version (what a put stores).
    pub documents: HashMap<String, Value>,
}

impl Versions {
    pub(crate) fn of(definitions: &HashMap<String, Arc<Definition>>) -> Self {
        let mut v = Versions::default();
        for (id, defn) in definitions {
            let Ok(document) = bundle_document(defn) else {
                // built by hand, not from a dict: runs unpinned, as before versions
                continue;
            };
            let version = version_of(&document);
            v.current.insert(id.clone(), version.clone());
            if !v.deployed.contains_key(&version) {
                let bundle = Bundle {
                    version: version.clone(),
                    root: defn.id.clone(),
                    definitions: crate::register([defn.as_ref().clone()]),
                };
                v.deployed.insert(version.clone(), Arc::new(bundle));
                v.documents.insert(version, document);
            }
        }
        v
    }

    pub(crate) fn doc(&self, version: &str, now: f64) -> Option<DefinitionDoc> {
        let bundle = self.deployed.get(version)?;
        Some(DefinitionDoc {
            version: version.to_string(),
            machine: bundle.root.clone(),
            created_at: now,
            document: self.documents.get(version)?.clone(),
        })
    }
}
