#!/usr/bin/env python3
"""The architecture a build is for, and the checks that keep `sam build` and `sam deploy` on it.

  sam-arch.py config  [--samconfig F] [--config-env E]   prints arm64 or x86_64: the
      Architecture of E's deploy parameters (else the template's default, arm64), after
      checking that E's build parameters say the same; exit 1 with the reason otherwise
  sam-arch.py target ARCH                                the Rust target cargo-lambda builds
      ARCH with (aarch64-unknown-linux-gnu, x86_64-unknown-linux-gnu)
  sam-arch.py binaries ARCH DIR                          checks every DIR/*/bootstrap is an
      ELF executable for ARCH; exit 1 naming the first that is not

Used by scripts/sam-build.sh and scripts/deploy.sh; tested by functions/app/tests/sam.rs.
"""
import argparse
import pathlib
import shlex
import sys
import tomllib

TEMPLATE_DEFAULT = "arm64"
TARGETS = {"arm64": "aarch64-unknown-linux-gnu", "x86_64": "x86_64-unknown-linux-gnu"}
# ELF e_machine values
MACHINES = {183: "arm64", 62: "x86_64"}


def fail(message):
    print(f"sam-arch: {message}", file=sys.stderr)
    sys.exit(1)


def overrides(section):
    """The Architecture in a samconfig section's parameter_overrides, or None."""
    text = (section or {}).get("parameter_overrides")
    if text is None:
        return None
    items = text if isinstance(text, list) else shlex.split(text)
    for item in items:
        key, _, value = item.partition("=")
        if key.strip() in ("Architecture", "ParameterKey=Architecture"):
            return value.strip().strip('"')
        if item.startswith("ParameterKey=Architecture,ParameterValue="):
            return item.split("ParameterValue=", 1)[1]
    return None


def config(samconfig, env):
    path = pathlib.Path(samconfig)
    if not path.is_file():
        fail(f"{path} not found")
    with path.open("rb") as f:
        data = tomllib.load(f)
    if env not in data:
        fail(f"{path} has no [{env}] environment (known: {', '.join(k for k in data if k != 'version')})")
    deploy = overrides(data[env].get("deploy", {}).get("parameters"))
    build = overrides(data[env].get("build", {}).get("parameters"))
    arch = deploy or TEMPLATE_DEFAULT
    if (build or TEMPLATE_DEFAULT) != arch:
        fail(
            f"[{env}] builds for {build or TEMPLATE_DEFAULT} but deploys Architecture={arch}: "
            f"every invocation would fail; make {path}'s build and deploy parameter_overrides agree"
        )
    if arch not in TARGETS:
        fail(f"[{env}] Architecture={arch!r}: the template allows {', '.join(TARGETS)}")
    return arch


def binaries(arch, directory):
    found = sorted(pathlib.Path(directory).glob("*/bootstrap"))
    if not found:
        fail(f"no */bootstrap under {directory}: nothing was built")
    for binary in found:
        head = binary.read_bytes()[:20]
        if head[:4] != b"\x7fELF":
            fail(f"{binary} is not an ELF executable")
        machine = MACHINES.get(int.from_bytes(head[18:20], "little"), "unknown")
        if machine != arch:
            fail(f"{binary} is built for {machine}, the stack deploys {arch}: refusing")
    return found


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("config")
    c.add_argument("--samconfig", default=str(pathlib.Path(__file__).resolve().parent.parent / "samconfig.toml"))
    c.add_argument("--config-env", default="default")
    t = sub.add_parser("target")
    t.add_argument("arch", choices=sorted(TARGETS))
    b = sub.add_parser("binaries")
    b.add_argument("arch", choices=sorted(TARGETS))
    b.add_argument("directory")
    args = parser.parse_args()
    if args.command == "config":
        print(config(args.samconfig, args.config_env))
    elif args.command == "target":
        print(TARGETS[args.arch])
    else:
        for binary in binaries(args.arch, args.directory):
            print(f"{binary}: {args.arch}")


if __name__ == "__main__":
    main()
