#!/usr/bin/env python3
"""Print the template parameters an action map needs granted, for `sam deploy`:

    scripts/remote-grants.py machines-layer/machines/actions.json --region eu-west-1 --account 123456789012
    RemoteActionFunctions=arn:aws:lambda:eu-west-1:123456789012:function:charge RemoteActionParameters=... RemoteActionSecrets=...

- every `lambda:` target -> RemoteActionFunctions (a name, `NAME:ALIAS`, a partial
  `ACCOUNT:function:NAME` or a full ARN, made a full ARN),
- every `ssm:` header value -> RemoteActionParameters (arn:aws:ssm:R:A:parameter/NAME),
- every `secretsmanager:` header value -> RemoteActionSecrets (a name becomes
  arn:aws:secretsmanager:R:A:secret:NAME-?????? : a secret's ARN ends in 6 random characters).

Only the lists that are not empty are printed, space-separated, ready for
`sam deploy --parameter-overrides "$(scripts/remote-grants.py MAP ...)"` (quoted: the shell
would glob `??????`; the template grants nothing for a list left empty). `--region`/`--account` default to AWS_REGION and
AWS_ACCOUNT_ID; they are needed only for what the map names without an ARN. The map is read
as the functions read it (harel-remote's `ActionMap`): JSON, TOML or YAML by its extension,
a table with `target` is one action's settings, any other table a namespace. Values are never
read: only the references.
"""

import argparse
import json
import os
import sys


def load(path):
    ext = os.path.splitext(path)[1].lower()
    with open(path, "rb") as f:
        raw = f.read()
    if ext == ".json":
        return json.loads(raw)
    if ext == ".toml":
        import tomllib

        return tomllib.loads(raw.decode())
    if ext in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            sys.exit(f"{path}: reading YAML needs PyYAML (pip install pyyaml)")
        return yaml.safe_load(raw)
    sys.exit(f"{path}: the extension must tell the format: .json, .toml, .yaml or .yml")


def bindings(table, prefix=""):
    """(action, target, headers) of every binding, in the map's order."""
    if not isinstance(table, dict):
        sys.exit("the top level must map action names to targets")
    for key, value in table.items():
        action = f"{prefix}.{key}" if prefix else key
        if isinstance(value, str):
            yield action, value.strip(), {}
        elif isinstance(value, dict) and "target" in value:
            yield action, str(value["target"]).strip(), value.get("headers") or {}
        elif isinstance(value, dict):
            yield from bindings(value, action)
        else:
            sys.exit(f"action {action!r}: expected a target string or a table with `target`")


def need(value, what, action):
    if not value:
        sys.exit(f"action {action!r}: {what} is needed (--region/--account, or AWS_REGION/AWS_ACCOUNT_ID)")
    return value


def lambda_arn(name, region, account, action):
    if name.startswith("arn:"):
        return name
    parts = name.split(":")
    if len(parts) >= 3 and parts[1] == "function":  # ACCOUNT:function:NAME[:QUALIFIER]
        return f"arn:aws:lambda:{need(region, 'the region', action)}:{name}"
    return (
        f"arn:aws:lambda:{need(region, 'the region', action)}:"
        f"{need(account, 'the account', action)}:function:{name}"
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("map", help="the action map (.json, .toml, .yaml, .yml)")
    ap.add_argument("--region", default=os.environ.get("AWS_REGION"))
    ap.add_argument("--account", default=os.environ.get("AWS_ACCOUNT_ID"))
    args = ap.parse_args()
    functions, parameters, secrets = [], [], []

    def add(out, arn):
        if arn not in out:
            out.append(arn)

    for action, target, headers in bindings(load(args.map)):
        if target.startswith("lambda:"):
            add(functions, lambda_arn(target[len("lambda:"):], args.region, args.account, action))
        for source in headers.values():
            source = str(source)
            if source.startswith("ssm:"):
                name = source[len("ssm:"):]
                add(parameters, name if name.startswith("arn:") else
                    f"arn:aws:ssm:{need(args.region, 'the region', action)}:"
                    f"{need(args.account, 'the account', action)}:parameter/{name.lstrip('/')}")
            elif source.startswith("secretsmanager:"):
                name = source[len("secretsmanager:"):]
                add(secrets, name if name.startswith("arn:") else
                    f"arn:aws:secretsmanager:{need(args.region, 'the region', action)}:"
                    f"{need(args.account, 'the account', action)}:secret:{name}-??????")
    out = [
        f"{param}={','.join(arns)}"
        for param, arns in [
            ("RemoteActionFunctions", functions),
            ("RemoteActionParameters", parameters),
            ("RemoteActionSecrets", secrets),
        ]
        if arns
    ]
    print(" ".join(out))


if __name__ == "__main__":
    main()
