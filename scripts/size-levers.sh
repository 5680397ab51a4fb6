#!/usr/bin/env bash
# What each way of shrinking the functions' binary would buy: the arm64 release binary (as
# `sam build` makes it: cargo lambda, zig, the release profile) built once as it ships and once
# per lever, and its size printed beside the shipped one's. Nothing here changes what ships;
# each lever gives something up (functions/README.md, "Not under 10 MB"):
#   nopie        -C relocation-model=static: no position-independent code, so no address
#                randomization of the binary's code
#   abort        panic = "abort": a panicking record takes its batch's other records down with
#                the process (today it fails alone, RecordError::Panicked)
#   abort+nopie  both
#   scripts/size-levers.sh [PACKAGE:BIN]      (default harel-bootstrap:bootstrap; e.g.
#                                              harel-worker:worker for a function's own binary)
# Each build is a fat-LTO link of the whole AWS SDK: about 5 minutes apiece on 2 cores. Builds
# go to their own target directory (SIZE_TARGET_DIR, default <target>/size-levers).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
spec=${1:-harel-bootstrap:bootstrap}
package=${spec%%:*}
bin=${spec#*:}
target=aarch64-unknown-linux-gnu
rustup target list --installed | grep -qx "$target" || rustup target add "$target" >&2
bins=$(scripts/install-lambda-tools.sh | paste -sd:)
export PATH="$bins:$PATH"
export CARGO_TARGET_DIR="${SIZE_TARGET_DIR:-${CARGO_TARGET_DIR:-$root/target}/size-levers}"

# label, then the variables the build runs with
variants=(
  "as shipped|CARGO_PROFILE_RELEASE_PANIC=unwind"
  "nopie|CARGO_PROFILE_RELEASE_PANIC=unwind RUSTFLAGS=-Crelocation-model=static"
  "abort|CARGO_PROFILE_RELEASE_PANIC=abort"
  "abort+nopie|CARGO_PROFILE_RELEASE_PANIC=abort RUSTFLAGS=-Crelocation-model=static"
)
rows=()
shipped=
for variant in "${variants[@]}"; do
  label=${variant%%|*}
  read -r -a vars <<<"${variant#*|}"
  echo "building $package ($bin) for arm64: $label..." >&2
  start=$SECONDS
  env "${vars[@]}" cargo lambda build --release --arm64 -p "$package" --bin "$bin" >&2
  built=$CARGO_TARGET_DIR/lambda/$bin/bootstrap
  size=$(stat -c %s "$built")
  shipped=${shipped:-$size}
  kind=$(file -b "$built" | cut -d, -f1)
  rows+=("$(printf '%-12s %12s %11s  %5.2f MB  %s' "$label" "$size" "$(awk -v s="$size" -v b="$shipped" 'BEGIN { printf "%+.2f", (s - b) / 1e6 }')" "$(awk -v s="$size" 'BEGIN { print s / 1e6 }')" "$kind")")
  echo "  $((SECONDS - start)) s" >&2
done
echo
echo "$package ($bin), aarch64 release, stripped (cargo lambda), $(date -u +%F)"
printf '%-12s %12s %11s  %8s  %s\n' lever bytes "vs shipped" size file
for row in "${rows[@]}"; do echo "$row"; done
