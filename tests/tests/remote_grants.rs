//! `scripts/remote-grants.py MAP`: the template parameters an action map needs granted
//! (`RemoteActionFunctions`, `RemoteActionParameters`, `RemoteActionSecrets`), and the check
//! that the walkthrough's map in the book (docs/src/actions.md) and its deploy instructions
//! agree, and that a map shipped in `machines-layer/machines/` is granted by `samconfig.toml`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn grants(map: &Path, args: &[&str]) -> Output {
    Command::new(harel_testkit::actions::python())
        .arg(root().join("scripts/remote-grants.py"))
        .arg(map)
        .args(args)
        .env_remove("AWS_REGION")
        .env_remove("AWS_ACCOUNT_ID")
        .output()
        .expect("the script runs")
}

fn printed(out: &Output) -> String {
    assert!(
        out.status.success(),
        "remote-grants.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("harel-grants-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    dir
}

const HERE: &[&str] = &["--region", "eu-west-1", "--account", "123456789012"];

#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn every_grant_a_map_needs_is_printed_in_each_format() {
    let dir = temp_dir("formats");
    let maps = [
        (
            "actions.json",
            r#"{"billing.charge": "lambda:harel-charge",
                "billing": {"full": "lambda:arn:aws:lambda:us-east-2:210987654321:function:other:live",
                            "part": "lambda:123456789012:function:third",
                            "route": {"target": "https://api.example.com/route",
                                      "headers": {"X-Api-Key": "ssm:/billing/route-key",
                                                  "Authorization": "secretsmanager:billing/token",
                                                  "X-Env": "env:TOKEN", "X-Lang": "sv"}}},
                "billing.again": "lambda:harel-charge"}"#,
        ),
        (
            "actions.toml",
            r#"
"billing.charge" = "lambda:harel-charge"
[billing]
full = "lambda:arn:aws:lambda:us-east-2:210987654321:function:other:live"
part = "lambda:123456789012:function:third"
[billing.route]
target = "https://api.example.com/route"
headers = { "X-Api-Key" = "ssm:/billing/route-key", Authorization = "secretsmanager:billing/token", X-Env = "env:TOKEN", X-Lang = "sv" }
"#,
        ),
        (
            "actions.yaml",
            "billing.charge: lambda:harel-charge\nbilling:\n  full: lambda:arn:aws:lambda:us-east-2:210987654321:function:other:live\n  part: lambda:123456789012:function:third\n  route:\n    target: https://api.example.com/route\n    headers: {X-Api-Key: 'ssm:/billing/route-key', Authorization: 'secretsmanager:billing/token', X-Env: 'env:TOKEN', X-Lang: sv}\n",
        ),
    ];
    for (name, text) in maps {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        assert_eq!(
            printed(&grants(&path, HERE)),
            "RemoteActionFunctions=arn:aws:lambda:eu-west-1:123456789012:function:harel-charge,\
             arn:aws:lambda:us-east-2:210987654321:function:other:live,\
             arn:aws:lambda:eu-west-1:123456789012:function:third \
             RemoteActionParameters=arn:aws:ssm:eu-west-1:123456789012:parameter/billing/route-key \
             RemoteActionSecrets=arn:aws:secretsmanager:eu-west-1:123456789012:secret:billing/token-??????",
            "{name}"
        );
    }
    // only HTTP targets without AWS headers: nothing to grant
    let http = dir.join("http.json");
    std::fs::write(&http, r#"{"a.b": "https://x.example/b"}"#).expect("write");
    assert_eq!(printed(&grants(&http, &[])), "");
    // a name needs the region and account to become an ARN: the action is named
    let out = grants(&dir.join("actions.json"), &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("action 'billing.charge': the region is needed"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The text between `start` and the next backtick after it.
fn quoted_after<'a>(text: &'a str, start: &str) -> &'a str {
    let from = text
        .find(start)
        .unwrap_or_else(|| panic!("docs/src/actions.md: {start:?} not found"));
    let rest = &text[from + start.len()..];
    &rest[..rest.find('`').expect("a closing backtick")]
}

/// The walkthrough's `actions.json` and the `RemoteActionFunctions=` its deploy step gives:
/// every `lambda:` target of the map is granted, and nothing else.
#[test]
#[ignore = "needs the Python venv (harel, moto, boto3): scripts/test.sh runs it"]
fn the_walkthrough_map_is_granted_by_its_deploy_step() {
    let chapter =
        std::fs::read_to_string(root().join("docs/src/actions.md")).expect("docs/src/actions.md");
    let map = quoted_after(
        &chapter,
        "and `machines-layer/machines/actions.json`:\n   `",
    );
    assert!(map.contains("lambda:"), "the walkthrough's map: {map}");
    let documented = format!(
        "RemoteActionFunctions={}",
        quoted_after(&chapter, "`RemoteActionFunctions=")
    );
    let dir = temp_dir("walkthrough");
    let path = dir.join("actions.json");
    std::fs::write(&path, map).expect("write");
    let needed = printed(&grants(&path, HERE));
    assert_eq!(needed, documented, "the book's grants for its map");
    std::fs::remove_dir_all(&dir).ok();
}

/// A map shipped in the layer: every grant it needs is in `samconfig.toml`'s
/// `parameter_overrides` (of each environment that deploys), else the functions are denied
/// at the first call.
#[test]
fn a_map_shipped_in_the_layer_is_granted_by_samconfig() {
    let samconfig = std::fs::read_to_string(root().join("samconfig.toml")).expect("samconfig");
    let mut section = "";
    let mut deploys: Vec<&str> = Vec::new();
    for line in samconfig.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section.ends_with(".deploy.parameters]")
            && line.starts_with("parameter_overrides")
        {
            deploys.push(line);
        }
    }
    assert!(
        !deploys.is_empty(),
        "samconfig.toml deploys with parameter_overrides"
    );
    let layer = root().join("machines-layer/machines");
    for name in [
        "actions.json",
        "actions.toml",
        "actions.yaml",
        "actions.yml",
    ] {
        let path = layer.join(name);
        if !path.is_file() {
            continue;
        }
        // the region and account of a name: the samconfig's overrides say them in its ARNs
        let needed = printed(&grants(&path, HERE));
        for grant in needed.split_whitespace() {
            let (parameter, arns) = grant.split_once('=').expect("NAME=ARNS");
            for arn in arns.split(',') {
                assert!(
                    deploys.iter().all(|d| d.contains(parameter) && d.contains(arn)),
                    "{name} needs {parameter} to hold {arn}: add it to samconfig.toml's parameter_overrides ({deploys:?})"
                );
            }
        }
    }
}
