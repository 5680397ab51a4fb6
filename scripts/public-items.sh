#!/usr/bin/env bash
# The declared surface of each crate: items declared `pub` and items kept to the crate
# (`pub(crate)`, `pub(super)`), counted from the sources (fn, struct, enum, trait, const,
# static, type, mod, use). A textual count: it does not know whether a `pub` item in a private
# module is reachable, so it bounds the public API from above.
set -euo pipefail
cd "$(dirname "$0")/.."
printf '%-18s %5s %11s\n' crate pub 'pub(crate)'
for dir in shared/* functions/* cli tests; do
  [ -f "$dir/Cargo.toml" ] && [ -d "$dir/src" ] || continue
  name=$(sed -n 's/^name = "\(.*\)"/\1/p' "$dir/Cargo.toml" | head -1)
  public=$(cat $(find "$dir/src" -name '*.rs') | grep -cE '^\s*pub (async fn|fn|struct|enum|trait|const|static|type|mod|use|unsafe fn)' || true)
  private=$(cat $(find "$dir/src" -name '*.rs') | grep -cE '^\s*pub\((crate|super)\) ' || true)
  printf '%-18s %5d %11d\n' "$name" "$public" "$private"
done
