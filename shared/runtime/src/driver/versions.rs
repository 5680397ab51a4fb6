//! Which machine version an execution runs: the deployed definition, or the bundle of the
//! version it is pinned to (read from the store once, then kept in the process); pinning a new
//! execution to the current version; and keeping a version's definitions item no later than
//! the first execution that references it.

use std::sync::Arc;

use harel_model::{Definition, Execution};
use harel_store::{DefinitionDoc, ExecutionStore};

use super::Driver;
use crate::versions::{rebuild, Bundle};
use crate::RuntimeError;

impl Driver {
    /// harel `_defn_for` among the deployed machines: by the execution's `definition_id`,
    /// else (a submachine child whose definition is registered under its FQN only) by its
    /// `definition_fqn`.
    pub(super) fn current_for(&self, exe: &Execution) -> Result<Arc<Definition>, RuntimeError> {
        self.definitions
            .get(exe.definition_id.as_str())
            .or_else(|| {
                exe.definition_fqn
                    .as_ref()
                    .and_then(|f| self.definitions.get(f.as_str()))
            })
            .cloned()
            .ok_or_else(|| RuntimeError::UnknownDefinition(exe.definition_id.to_string()))
    }

    pub(super) fn in_bundle(
        bundle: &Bundle,
        exe: &Execution,
    ) -> Result<Arc<Definition>, RuntimeError> {
        bundle
            .machine_for(exe)
            .cloned()
            .ok_or_else(|| RuntimeError::VersionMismatch {
                machine: exe.definition_id.to_string(),
                version: bundle.version.clone(),
            })
    }

    /// The version a new execution of machine `id` starts on: the deployed one (None: a
    /// machine built by hand rather than from a machine dict, which runs unpinned).
    pub fn current_version(&self, id: &str) -> Option<&str> {
        self.versions.current.get(id).map(String::as_str)
    }

    /// Every deployed version, by machine id.
    pub fn current_versions(&self) -> impl Iterator<Item = (&str, &str)> {
        self.versions
            .current
            .iter()
            .map(|(id, v)| (id.as_str(), v.as_str()))
    }

    pub(super) fn bundle_at_hand(&self, version: &str) -> Option<Arc<Bundle>> {
        if let Some(b) = self.versions.deployed.get(version) {
            return Some(Arc::clone(b));
        }
        let cache = self
            .versions
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        cache.get(version).cloned()
    }

    /// A version's machines: deployed here, else read before by this process, else read from
    /// the store (once: then cached for the process's life, a version never changes).
    pub async fn bundle<S: ExecutionStore>(
        &self,
        store: &S,
        machine: &str,
        version: &str,
    ) -> Result<Arc<Bundle>, RuntimeError> {
        if let Some(b) = self.bundle_at_hand(version) {
            return Ok(b);
        }
        let doc =
            store
                .get_definition(version)
                .await?
                .ok_or_else(|| RuntimeError::UnknownVersion {
                    machine: machine.to_string(),
                    version: version.to_string(),
                })?;
        let bundle = Arc::new(rebuild(version, &doc.document)?);
        let mut cache = self
            .versions
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        Ok(Arc::clone(
            cache.entry(version.to_string()).or_insert(bundle),
        ))
    }

    /// The definition `exe` runs on: its pinned version's (read from the store when this
    /// process has not got it yet), else the deployed one.
    pub async fn resolve<S: ExecutionStore>(
        &self,
        store: &S,
        exe: &Execution,
    ) -> Result<Arc<Definition>, RuntimeError> {
        match exe.pinned_version() {
            Some(version) => {
                let bundle = self.bundle(store, &exe.definition_id, version).await?;
                Self::in_bundle(&bundle, exe)
            }
            None => self.current_for(exe),
        }
    }

    /// A never-committed root execution without a pin starts on the deployed version of its
    /// machine. One already committed without a pin (created before versions, or last
    /// written by harel Python, which drops the field) stays unpinned and runs on the
    /// deployed definition, as it always did. Returns the version when this process has not
    /// made sure yet that the store keeps it and has its document (a version not deployed
    /// here was read from the store: it is kept already).
    pub(super) fn pin_new(&self, exe: &mut Execution) -> Option<String> {
        if !self.pinning || exe.version != 0 {
            return None;
        }
        // a child has its pin (or none, as its unpinned parent) from its spawn: a region of
        // an unpinned parent must run the machine its parent runs, the deployed one
        if exe.pinned_version().is_none() && exe.parent_id.is_none() {
            let current = self
                .versions
                .current
                .get(exe.definition_id.as_str())
                .or_else(|| {
                    exe.definition_fqn
                        .as_ref()
                        .and_then(|f| self.versions.current.get(f.as_str()))
                });
            if let Some(version) = current.cloned() {
                exe.pin_version(&version);
            }
        }
        let version = exe.pinned_version()?;
        let kept = self.versions.kept.lock().unwrap_or_else(|e| e.into_inner());
        (!kept.contains(version) && self.versions.deployed.contains_key(version))
            .then(|| version.to_string())
    }

    /// This process knows the store keeps `version` (it read it there, or committed it).
    pub(crate) fn known_kept(&self, version: &str) {
        self.versions
            .kept
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(version.to_string());
    }

    /// What the commit of a new execution pinned to `version` must keep with it: nothing
    /// when the store keeps it already, which a process that has not kept it itself (a cold
    /// worker, each `harel run` command) learns by a read, eventually consistent and of the
    /// key alone (half a read unit for a version up to 4 KB), rather than by writing the
    /// whole document again with every create (two write units per KB, in the transaction).
    /// A version is never referenced before it is kept: when the read says "absent" (or is
    /// stale), the document goes into the execution's own transaction, so no crash can leave
    /// an execution whose version cannot be loaded.
    pub(super) async fn to_keep<S: ExecutionStore>(
        &self,
        store: &S,
        version: &str,
    ) -> Result<Option<DefinitionDoc>, RuntimeError> {
        let read_absent = self
            .versions
            .absent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(version);
        if !read_absent && store.has_definition(version).await? {
            self.known_kept(version);
            return Ok(None);
        }
        Ok(self.versions.doc(version, self.clock.now()))
    }

    /// A create's existence check: whether `exe.id` exists, read eventually consistent (a
    /// stale "absent" is caught by the create's insert-if-absent commit, a
    /// `StoreError::Conflict` at version 0, which the host then reports as the execution
    /// existing). Pins `exe` as its first step will, and when this process has not kept that
    /// version yet, learns whether the store keeps it in the same request
    /// ([`harel_store::Definitions::load_with_definition`]), so the step neither reads it
    /// again nor writes it when it is kept.
    pub async fn load_for_create<S: ExecutionStore>(
        &self,
        store: &S,
        exe: &mut Execution,
    ) -> Result<Option<Execution>, RuntimeError> {
        let Some(version) = self.pin_new(exe) else {
            return Ok(store.load_eventually(&exe.id).await?);
        };
        let (found, kept) = store.load_with_definition(&exe.id, &version).await?;
        if kept {
            self.known_kept(&version);
        } else {
            self.versions
                .absent
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(version);
        }
        Ok(found)
    }
}
