//! The machines an operator command knows: the ones compiled into the functions (harel-app,
//! so the CLI sees what the deployed worker runs) plus any `--machines FILE.stm` given.
//! `create` checks a machine name and its context against them, `send` an event's data,
//! `cancel` reads whether the machine models `Cancel`, `redrive` checks its target.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{anyhow, Context};
use harel_model::Definition;

#[derive(Clone, Debug, Default, clap::Args)]
pub struct MachineArgs {
    /// A .stm file whose machines the stack runs besides the ones compiled into the functions
    /// (repeatable; a machine of the same name replaces the compiled-in one)
    #[arg(long = "machines", value_name = "FILE.stm")]
    pub files: Vec<PathBuf>,
}

pub struct Machines(BTreeMap<String, Definition>);

impl MachineArgs {
    pub fn load(&self) -> anyhow::Result<Machines> {
        let mut all = BTreeMap::new();
        let compiled = harel_app::machines::definitions()
            .map_err(|e| anyhow!("the machines compiled into the functions: {e}"))?;
        for defn in compiled {
            all.insert(defn.id.clone(), defn);
        }
        for file in &self.files {
            let program = harel_lang::parse_file(file)?;
            for name in program.machines.keys() {
                let defn = harel_lang::load_file(file, Some(name))
                    .with_context(|| format!("machine {name} of {}", file.display()))?;
                all.insert(defn.id.clone(), defn);
            }
        }
        Ok(Machines(all))
    }
}

impl Machines {
    pub fn get(&self, id: &str) -> anyhow::Result<&Definition> {
        self.0.get(id).ok_or_else(|| {
            super::exit::not_found(format_args!(
                "unknown machine {id:?}: the functions run {}; pass --machines FILE.stm for a machine of your own",
                self.0.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
            ))
        })
    }

    pub fn find(&self, id: &str) -> Option<&Definition> {
        self.0.get(id)
    }
}
