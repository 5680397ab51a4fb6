//! The entries checked against the machines they name, when the file is loaded beside them:
//! the machine exists, and each harel kind is one it declares or listens for.

use super::{FileError, HooksFile};

impl HooksFile {
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
