//! The application a function runs: its machines and its Rust actions. The deployed functions
//! run the compiled-in one ([`Application::compiled`]); a test adds its own machines and
//! actions to it ([`Application::with`]), so that no test machine is ever compiled into a
//! deployed function.

use harel_model::Definition;
use harel_runtime::ActionRegistry;

use crate::machines::MachineError;

/// Machines and the Rust actions they bind, before the deployment's own (a machines folder,
/// an action map) are added at cold start.
pub struct Application {
    /// Every machine, validated; each is registered under its own name.
    pub machines: Vec<Definition>,
    /// harel's standard library and the Rust actions, by the names the machines `bind`.
    pub actions: ActionRegistry,
}

impl Application {
    /// The machines compiled in ([`crate::machines::SOURCES`]) and the Rust actions
    /// ([`crate::actions::actions`]): what the worker, relay, sweeper and API run.
    pub fn compiled() -> Result<Self, MachineError> {
        Ok(Application {
            machines: crate::machines::definitions()?,
            actions: crate::actions::actions(),
        })
    }

    /// This application plus `machines` and the actions `register` binds (a test's machine
    /// and its actions, such as `harel_testkit::machines`).
    pub fn with(
        mut self,
        machines: Vec<Definition>,
        register: impl FnOnce(&mut ActionRegistry),
    ) -> Self {
        self.machines.extend(machines);
        register(&mut self.actions);
        self
    }
}
