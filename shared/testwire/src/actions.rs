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
    /// The server's root URL (`http://127.0.0.1:PORT`): `GET {base}/calls` lists the calls
    /// it received.
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
    /// Start `py/action_server.py` under [`python`] on a free loopback port and wait for it to
    /// print that port; panics when the Python cannot be started or prints no port.
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

    /// The AWS SDK's configuration for this server's Lambda Invoke API (`lambda:NAME`).
    pub async fn lambda_sdk(&self) -> aws_config::SdkConfig {
        loopback_sdk(&self.base).await
    }
}

/// The AWS SDK's configuration for an emulated service at `endpoint` (region us-east-1,
/// throwaway credentials).
pub async fn loopback_sdk(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(aws_credential_types::Credentials::new(
            "testing", "testing", None, None, "loopback",
        ))
        .load()
        .await
}

/// One HTTP/1.1 request read off a loopback test server's socket.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// The method as sent (`POST`, `GET`, ...).
    pub method: String,
    /// The request target as sent: the path, with its query string when there is one.
    pub path: String,
    /// (lower-case name, value)
    pub headers: Vec<(String, String)>,
    /// The body: the `Content-Length` bytes after the headers.
    pub body: Vec<u8>,
}

impl Request {
    /// The value of the first header named `name` (matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Read one request (its head, then `Content-Length` bytes of body); None when the client
/// closed the connection first.
pub async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Request> {
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.lines();
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_string();
    let path = first.next().unwrap_or("").to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    while buf.len() < head_end + 4 + length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(Request {
        method,
        path,
        headers,
        body: buf[head_end + 4..].to_vec(),
    })
}

impl Drop for ActionServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
