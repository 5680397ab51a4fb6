//! Remote actions served by harel Python's own `harel.faas.handler(fn)` on a loopback port
//! (`py/action_server.py`): `POST /fn/{name}` as an HTTP function endpoint and
//! `POST /2015-03-31/functions/{name}/invocations` as Lambda's Invoke API; `GET /calls` lists
//! what was received. Needs harel's Python: `HAREL_PYTHON` (set by `scripts/with-moto.sh`),
//! else the workspace's `.venv/bin/python`.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The server's process, killed when dropped.
pub struct ActionServer {
    child: Child,
    pub base: String,
}

/// harel's Python: `HAREL_PYTHON`, else the workspace's venv (`scripts/python-env.sh`).
pub fn python() -> PathBuf {
    match std::env::var_os("HAREL_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../.venv/bin/python"
        )),
    }
}

impl ActionServer {
    pub fn start() -> ActionServer {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/py/action_server.py");
        let python = python();
        let mut child = Command::new(&python)
            .arg(script)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {} (harel's Python: set HAREL_PYTHON or run scripts/python-env.sh): {e}",
                    python.display()
                )
            });
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the server's port");
        let port: u16 = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("action_server.py did not print its port: {line:?}"));
        ActionServer {
            child,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    /// The HTTP endpoint of the function `name`.
    pub fn http(&self, name: &str) -> String {
        format!("{}/fn/{name}", self.base)
    }
}

impl Drop for ActionServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
