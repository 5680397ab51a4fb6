//! The `Execution` and `Event` documents, serialized field for field like harel 0.9.0's
//! pydantic models, so a document written by harel Python loads here and writes back with
//! nothing lost. Fields harel does not know (written by a newer harel, or by a tool) are kept
//! in `extra` and written back unchanged, after the known ones.

use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use smol_str::SmolStr;

/// A JSON object, in insertion order (Python dicts keep theirs).
pub type Object = Map<String, Value>;

/// The hasher of the engine's own hashed string-keyed maps (the Definition's path index):
/// foldhash (seeded per process), several times faster than std's SipHash on short keys.
pub type FastHash = foldhash::fast::RandomState;

/// A string-keyed map in insertion order, backed by a `Vec` (an Execution's `history`,
/// `children` and `invoke_seq`, a schema's fields). These maps hold a handful of entries
/// (one per composite, region or spawn site), where scanning the keys beats hashing one and
/// a map costs one allocation instead of an index's two; a fan-out's children are bounded
/// by the execution's size (a DynamoDB item is at most 400 KB), which keeps a scan cheap.
/// Keyed by [`SmolStr`]: the keys are node paths and child ids that live elsewhere too, so
/// inserting one is a clone, never a copy; looked up with a `&str`. Serialized as a JSON
/// object in insertion order, as the `IndexMap` it replaced was.
pub type KeyMap<V> = vecmap::VecMap<SmolStr, V>;

/// Give the entry at `index` the key `key`, keeping its value and place (`IndexMap::
/// replace_index`); `Err(key)` when another entry has that key already, or there is no
/// entry at `index`, leaving the map unchanged.
pub fn replace_key<V>(map: &mut KeyMap<V>, index: usize, key: SmolStr) -> Result<(), SmolStr> {
    use vecmap::map::MutableKeys;
    if map.get_index_of(key.as_str()).is_some_and(|at| at != index) {
        return Err(key);
    }
    match map.get_index_mut2(index) {
        Some((slot, _)) => {
            *slot = key;
            Ok(())
        }
        None => Err(key),
    }
}

/// A fresh `uuid4().hex`, written straight into its string (one allocation, not two).
fn new_id() -> SmolStr {
    let mut buf = [0u8; uuid::fmt::Simple::LENGTH];
    SmolStr::from(&*uuid::Uuid::new_v4().simple().encode_lower(&mut buf))
}

/// The lifecycle of an execution. The strings are harel's enum values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    /// Created but not started: its `Start` event has not been processed yet.
    #[default]
    Pending,
    /// Started and not finished: it has an active state and takes events.
    Running,
    /// Finished normally: a terminal state was reached (`outcome` says which verdict).
    Done,
    /// Stopped by a `Cancel` (forcefully, or at the end of the machine's cleanup transition),
    /// or by its `ttl` running out unhandled (outcome `expired`).
    Cancelled,
    /// Paused by the control plane: state and queue kept; `resume` makes it RUNNING again.
    Suspended,
    /// A cooperative cancel in flight: the backlog drains until the injected `Cancel`
    /// reaches the machine's own cleanup transition.
    Cancelling,
    /// Aborted on an action error nothing in the model handled; `error` says which.
    Failed,
}

impl Status {
    /// Every status, in harel's declaration order (what `FromStr` accepts and error messages list).
    pub const ALL: [Status; 7] = [
        Status::Pending,
        Status::Running,
        Status::Done,
        Status::Cancelled,
        Status::Suspended,
        Status::Cancelling,
        Status::Failed,
    ];

    /// harel's enum value (`RUNNING`, ...), as the document and the store's status column write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "PENDING",
            Status::Running => "RUNNING",
            Status::Done => "DONE",
            Status::Cancelled => "CANCELLED",
            Status::Suspended => "SUSPENDED",
            Status::Cancelling => "CANCELLING",
            Status::Failed => "FAILED",
        }
    }

    /// DONE or CANCELLED: what `finished_at` stamps.
    pub fn is_finished(self) -> bool {
        matches!(self, Status::Done | Status::Cancelled)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Status {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Status::ALL
            .into_iter()
            .find(|st| st.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!("unknown status {s:?} (one of PENDING RUNNING DONE CANCELLED SUSPENDED CANCELLING FAILED)")
            })
    }
}

/// A stimulus processed by a machine. `id` is the dedupe key under at-least-once delivery.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The dedupe key under at-least-once delivery (a fresh `uuid4().hex` when absent).
    #[serde(default = "new_id")]
    pub id: SmolStr,
    /// What the event is (`Start`, `Cancel`, a domain kind, ...): transitions match on it.
    pub kind: SmolStr,
    /// harel types these as datetimes; kept as the ISO text it wrote so nothing is reformatted.
    #[serde(default)]
    pub created_time: Option<String>,
    /// When a worker received it, as the ISO text harel wrote (None: not recorded).
    #[serde(default)]
    pub received_time: Option<String>,
    /// The payload: guards read it as `event.<field>`, and actions get it.
    #[serde(default)]
    pub data: Object,
    /// Fields harel does not know, kept and written back after the known ones.
    #[serde(flatten)]
    pub extra: Object,
}

impl Event {
    /// A new event of `kind` with a fresh id and no data.
    pub fn new(kind: impl Into<SmolStr>) -> Self {
        Event {
            id: new_id(),
            kind: kind.into(),
            created_time: None,
            received_time: None,
            data: Object::new(),
            extra: Object::new(),
        }
    }

    /// This event carrying `data` in place of what it had.
    pub fn with_data(mut self, data: Object) -> Self {
        self.data = data;
        self
    }

    /// This event under `id` (a deterministic id, so a redelivery dedupes).
    pub fn with_id(mut self, id: impl Into<SmolStr>) -> Self {
        self.id = id.into();
        self
    }

    /// The harel JSON document of this event.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an Event always serializes")
    }
}

/// A region (or submachine child) spawned by a parent: the parent's join counter entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChildState {
    /// The node path the child runs from (its `root_path`).
    pub root_path: SmolStr,
    /// Whether the child's `Finished` has reached the parent.
    #[serde(default)]
    pub finished: bool,
    /// The region's terminal outcome, carried on its `Finished`.
    #[serde(default)]
    pub outcome: Option<SmolStr>,
    /// The region's `carry`-projected context, carried on its `Finished`.
    #[serde(default)]
    pub result: Object,
    /// An `invoke` child (another Definition): never broadcast to.
    #[serde(default)]
    pub submachine: bool,
    /// Stable key in `region_results`, independent of the seq'd child id.
    #[serde(default)]
    pub key: SmolStr,
    /// Fields harel does not know, kept and written back after the known ones.
    #[serde(flatten)]
    pub extra: Object,
}

/// The serializable running instance of a Definition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Execution {
    /// The execution's id: the store's key and the queue's group (a fresh `uuid4().hex` when absent).
    #[serde(default = "new_id")]
    pub id: SmolStr,
    /// The Definition this runs (the machine's name, or an inline submachine's synthetic id).
    pub definition_id: SmolStr,
    /// Set on a submachine child: its fully qualified name, so any worker can resolve it.
    #[serde(default)]
    pub definition_fqn: Option<SmolStr>,
    /// The node this execution runs ("" for a machine; the region node for a region).
    #[serde(default)]
    pub root_path: SmolStr,
    /// Where the execution is in its lifecycle.
    #[serde(default)]
    pub status: Status,
    /// The verdict of the terminal state it finished in (that node's `outcome`), if any.
    #[serde(default)]
    pub outcome: Option<SmolStr>,
    /// With FAILED: the unhandled action error as `Type: message`.
    #[serde(default)]
    pub error: Option<String>,
    /// The full path of the active leaf (None before it starts).
    #[serde(default)]
    pub active_path: Option<SmolStr>,
    /// composite path -> last active child path.
    #[serde(default)]
    pub history: KeyMap<SmolStr>,
    /// The execution's variables: `context.<field>` in guards and `set`, passed to actions.
    #[serde(default)]
    pub context: Object,
    /// How many events the machine has taken (the lifecycle events among them).
    #[serde(default)]
    pub processed_events: u64,
    /// Optimistic-concurrency token: a commit writes version+1 iff the stored row is still here.
    #[serde(default)]
    pub version: u64,
    /// harel's priority, 0 (default) to 4 (reading a document with another value fails); a
    /// spawned child inherits its parent's.
    #[serde(default, deserialize_with = "priority")]
    pub priority: u8,
    /// The execution that spawned this one (a region or submachine child); None for a root.
    #[serde(default)]
    pub parent_id: Option<SmolStr>,
    /// This child's id as its parent knows it (the key of the parent's `children`), carried on
    /// its `Finished`.
    #[serde(default)]
    pub child_id: Option<SmolStr>,
    /// Events held by a `defer`, re-delivered on entering a state that handles them.
    #[serde(default)]
    pub deferred: Vec<Event>,
    /// The children spawned by the states it is in (regions, submachine children, fan-out
    /// instances), by child id: the join counter their `Finished` events tick.
    #[serde(default)]
    pub children: KeyMap<ChildState>,
    /// spawn-site path -> times entered: the per-entry seq in deterministic child ids.
    #[serde(default)]
    pub invoke_seq: KeyMap<u64>,
    /// When the execution was first committed, in Unix seconds (set by [`Execution::stamp`]).
    #[serde(default)]
    pub created_at: Option<f64>,
    /// When it was last committed, in Unix seconds.
    #[serde(default)]
    pub updated_at: Option<f64>,
    /// When it reached DONE or CANCELLED, in Unix seconds (None while not finished).
    #[serde(default)]
    pub finished_at: Option<f64>,
    /// The deadline of the machine's `ttl` as last armed.
    #[serde(default)]
    pub expires_at: Option<f64>,
    /// The machine version this execution runs on (a content hash of its definition; None:
    /// whatever definition is deployed, as before versions). Not harel's: harel Python 0.9.0
    /// reads past it and drops it on its next write (pydantic ignores unknown fields), so an
    /// execution harel Python wrote last runs on the deployed definition again. Absent from
    /// the document when None, so an unpinned execution's JSON stays harel's byte for byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition_version: Option<SmolStr>,
    /// Fields harel does not know, kept and written back after the known ones.
    #[serde(flatten)]
    pub extra: Object,
    /// Where the engine last found `active_path` and `root_path` (not part of the document).
    #[serde(skip)]
    pub hints: NodeHints,
    /// The status of the stored row this copy was read at or last committed as (not part of
    /// the document): how a store tells a commit that changes the status from one that does
    /// not, with no read of its own (see [`StoredStatus`]).
    #[serde(skip)]
    pub stored_status: StoredStatus,
}

/// The status an execution had in the store when this copy was read (or last committed),
/// `None` for a copy never stored. Set by [`Execution::from_json`] (every store reads its
/// rows through it) and by a store's successful commit. Like [`NodeHints`] it is not part of
/// the document, and every value compares equal: two copies of one execution are the same
/// execution whatever each was read at.
#[derive(Clone, Copy, Debug, Default)]
pub struct StoredStatus(pub Option<Status>);

impl PartialEq for StoredStatus {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// The arena indices at which the engine last found an execution's `active_path` and
/// `root_path`, so the next step finds them with one string comparison instead of hashing
/// the path into the Definition's index. A hint is only trusted after checking that the
/// node there has that very path ([`crate::Definition::get_hinted`]): a stale hint, or one
/// left by another Definition, costs the lookup it would have saved, never a wrong node.
/// Not part of the document: serde skips it, every hint compares equal, a clone copies it.
/// Atomics (relaxed: plain loads and stores) so an `&Execution` can still cross threads.
#[derive(Debug)]
pub struct NodeHints {
    /// The arena index of `active_path` when last resolved (`u32::MAX`: none yet).
    pub active: AtomicU32,
    /// The arena index of `root_path` when last resolved (`u32::MAX`: none yet).
    pub root: AtomicU32,
}

impl Default for NodeHints {
    fn default() -> Self {
        NodeHints {
            active: AtomicU32::new(u32::MAX),
            root: AtomicU32::new(u32::MAX),
        }
    }
}

impl Clone for NodeHints {
    fn clone(&self) -> Self {
        NodeHints {
            active: AtomicU32::new(self.active.load(Ordering::Relaxed)),
            root: AtomicU32::new(self.root.load(Ordering::Relaxed)),
        }
    }
}

impl PartialEq for NodeHints {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

fn priority<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
    let p = u8::deserialize(d)?;
    if p > 4 {
        return Err(serde::de::Error::custom(format!(
            "priority must be between 0 and 4, got {p}"
        )));
    }
    Ok(p)
}

impl Execution {
    /// A fresh, never-saved execution of `definition_id` (version 0, PENDING).
    pub fn new(definition_id: impl Into<SmolStr>) -> Self {
        Self::with_ids(new_id(), definition_id.into())
    }

    /// [`Execution::new`] under an id the caller already has (a region's deterministic
    /// child id), without drawing a random one first (harel's `Execution(id=...)`).
    pub fn with_ids(id: SmolStr, definition_id: SmolStr) -> Self {
        Execution {
            id,
            definition_id,
            definition_fqn: None,
            root_path: SmolStr::default(),
            status: Status::Pending,
            outcome: None,
            error: None,
            active_path: None,
            history: KeyMap::default(),
            context: Object::new(),
            processed_events: 0,
            version: 0,
            priority: 0,
            parent_id: None,
            child_id: None,
            deferred: Vec::new(),
            children: KeyMap::default(),
            invoke_seq: KeyMap::default(),
            created_at: None,
            updated_at: None,
            finished_at: None,
            expires_at: None,
            definition_version: None,
            extra: Object::new(),
            hints: NodeHints::default(),
            stored_status: StoredStatus::default(),
        }
    }

    /// This execution under `id` in place of the one it had.
    pub fn with_id(mut self, id: impl Into<SmolStr>) -> Self {
        self.id = id.into();
        self
    }

    /// The machine version this execution is pinned to (None: it runs on whatever
    /// definition is current, as every execution did before versions, and as one harel
    /// Python wrote last does).
    pub fn pinned_version(&self) -> Option<&str> {
        self.definition_version.as_deref()
    }

    /// Pin this execution to the machine version `version` (a content hash of its definition),
    /// which every later step then runs on.
    pub fn pin_version(&mut self, version: &str) {
        self.definition_version = Some(version.into());
    }

    /// A stored document, remembered as stored with its status ([`StoredStatus`]).
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        let mut exe: Execution = serde_json::from_str(text)?;
        exe.stored_status = StoredStatus(Some(exe.status));
        Ok(exe)
    }

    /// The status this copy had in the store, for a commit to compare with: `None` when the
    /// commit creates the execution (version 0), whatever the copy remembers.
    pub fn previous_status(&self) -> Option<Status> {
        if self.version == 0 {
            None
        } else {
            self.stored_status.0
        }
    }

    /// The harel JSON document of this execution, as stored (field order and floats kept).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an Execution always serializes")
    }

    /// Set the bookkeeping timestamps for a commit about to happen at `now` (harel's `stamp`):
    /// every writer calls it just before committing.
    pub fn stamp(&mut self, now: f64) {
        if self.created_at.is_none() {
            self.created_at = Some(now);
        }
        self.updated_at = Some(now);
        if !self.status.is_finished() {
            self.finished_at = None;
        } else if self.finished_at.is_none() {
            self.finished_at = Some(now);
        }
    }
}

/// A lightweight projection of an Execution for list views (harel's `ExecutionSummary`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExecutionSummary {
    /// As [`Execution::id`].
    pub id: String,
    /// As [`Execution::definition_id`].
    pub definition_id: String,
    /// As [`Execution::status`].
    pub status: Status,
    /// As [`Execution::outcome`].
    #[serde(default)]
    pub outcome: Option<String>,
    /// As [`Execution::active_path`].
    #[serde(default)]
    pub active_path: Option<String>,
    /// As [`Execution::version`]: the stored row's.
    #[serde(default)]
    pub version: u64,
    /// As [`Execution::parent_id`].
    #[serde(default)]
    pub parent_id: Option<String>,
    /// As [`Execution::finished_at`].
    #[serde(default)]
    pub finished_at: Option<f64>,
}

impl ExecutionSummary {
    /// The summary of `exe` (the fields are copied; `exe` is left as is).
    pub fn of(exe: &Execution) -> Self {
        ExecutionSummary {
            id: exe.id.to_string(),
            definition_id: exe.definition_id.to_string(),
            status: exe.status,
            outcome: exe.outcome.as_deref().map(str::to_string),
            active_path: exe.active_path.as_deref().map(str::to_string),
            version: exe.version,
            parent_id: exe.parent_id.as_deref().map(str::to_string),
            finished_at: exe.finished_at,
        }
    }
}

/// One page of a listing: up to `limit` summaries and an opaque cursor for the next page.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutionPage {
    /// The summaries of this page, in the store's listing order.
    pub items: Vec<ExecutionSummary>,
    /// The cursor to pass back for the next page; None on the last page.
    pub next_cursor: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    // written by harel 0.9.0 (pydantic `model_dump_json`), with one field harel doesn't know
    const HAREL_DOC: &str = r#"{"id":"6814d91db6d84d4cb539ed68d2b4799b","definition_id":"m","definition_fqn":null,"root_path":"","status":"PENDING","outcome":null,"error":null,"active_path":null,"history":{},"context":{"a":1.0,"b":1e+16,"c":"é","d":[1,2],"e":0.30000000000000004,"f":1e-7},"processed_events":0,"version":0,"priority":0,"parent_id":null,"child_id":null,"deferred":[{"id":"84bc","kind":"K","created_time":"2024-01-02T03:04:05Z","received_time":null,"data":{}}],"children":{"x":{"root_path":"A","finished":false,"outcome":null,"result":{},"submachine":false,"key":""}},"invoke_seq":{},"created_at":1700000000.123,"updated_at":null,"finished_at":null,"expires_at":null,"zzz_future":{"kept":true}}"#;

    /// Timestamps and timer due times are floats of about 1.8e9 with sub-microsecond digits:
    /// each must read back as the float written (a `fire_at` one ulp off is another timer
    /// id). serde_json's default parser is off by one ulp for about one in eight of them.
    #[test]
    fn every_timestamp_reads_back_as_written() {
        let mut exe = Execution::new("m").with_id("t");
        let mut t = 1_796_624_255.0_f64;
        for i in 0..20_000u32 {
            t += 0.000_123_456_7 * f64::from(i % 7);
            exe.updated_at = Some(t);
            let back = Execution::from_json(&exe.to_json()).expect("parse");
            assert_eq!(
                back.updated_at,
                Some(t),
                "{t} read back as {:?}",
                back.updated_at
            );
        }
    }

    #[test]
    fn a_harel_document_round_trips_with_nothing_lost() {
        let exe = Execution::from_json(HAREL_DOC).unwrap();
        assert_eq!(exe.extra["zzz_future"], serde_json::json!({"kept": true}));
        let again: Value = serde_json::from_str(&exe.to_json()).unwrap();
        let original: Value = serde_json::from_str(HAREL_DOC).unwrap();
        assert_eq!(again, original);
        // floats stay floats: 1.0 is written back as 1.0, not 1
        assert!(exe.to_json().contains(r#""a":1.0"#));
    }

    #[test]
    fn defaults_match_pydantic() {
        let exe = Execution::from_json(r#"{"definition_id":"m"}"#).unwrap();
        assert_eq!(exe.status, Status::Pending);
        assert_eq!(exe.id.len(), 32);
        let v: Value = serde_json::from_str(&exe.to_json()).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "id",
                "definition_id",
                "definition_fqn",
                "root_path",
                "status",
                "outcome",
                "error",
                "active_path",
                "history",
                "context",
                "processed_events",
                "version",
                "priority",
                "parent_id",
                "child_id",
                "deferred",
                "children",
                "invoke_seq",
                "created_at",
                "updated_at",
                "finished_at",
                "expires_at"
            ]
        );
    }

    #[test]
    fn wrong_types_are_refused() {
        assert!(Execution::from_json(r#"{"definition_id":"m","status":"NOPE"}"#).is_err());
        assert!(Execution::from_json(r#"{"definition_id":"m","priority":9}"#).is_err());
        assert!(Execution::from_json(r#"{"status":"DONE"}"#).is_err());
        assert!(serde_json::from_str::<Event>(r#"{"kind":"A","data":[1]}"#).is_err());
    }

    #[test]
    fn stamp_sets_and_clears_finished_at() {
        let mut exe = Execution::new("m");
        exe.stamp(1.0);
        assert_eq!(
            (exe.created_at, exe.updated_at, exe.finished_at),
            (Some(1.0), Some(1.0), None)
        );
        exe.status = Status::Done;
        exe.stamp(2.0);
        assert_eq!((exe.created_at, exe.finished_at), (Some(1.0), Some(2.0)));
        exe.stamp(3.0);
        assert_eq!(exe.finished_at, Some(2.0));
        exe.status = Status::Running;
        exe.stamp(4.0);
        assert_eq!(exe.finished_at, None);
    }
}
