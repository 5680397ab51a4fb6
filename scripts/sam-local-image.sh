#!/usr/bin/env bash
# A local stand-in for the Lambda base image `sam local invoke` runs the functions in, for
# machines that cannot pull public.ecr.aws/lambda/provided:al2023: built FROM scratch with
# busybox (SAM's image build runs `mv` and `chmod` in it), the C libraries the given bootstrap
# links (from this host, so the binary must be built here: cargo build -p harel-worker), and
# the host's CA bundle. SAM adds its Runtime Interface Emulator on top.
#   scripts/sam-local-image.sh BOOTSTRAP [TAG]     prints the tag (default harel-local/provided:al2023-ARCH)
# then: sam local invoke ... --invoke-image TAG --skip-pull-image
# Needs a Docker engine and a static busybox (Debian: apt-get install docker.io busybox-static).
set -euo pipefail
bootstrap=${1:?usage: sam-local-image.sh BOOTSTRAP [TAG]}
arch=$(uname -m | sed 's/aarch64/arm64/')
tag=${2:-harel-local/provided:al2023-$arch}
busybox=$(command -v busybox || true)
if [ -z "$busybox" ] || ! file -L "$busybox" | grep -q "statically linked"; then
  echo "sam-local-image: a statically linked busybox is needed (apt-get install busybox-static)" >&2
  exit 1
fi
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
root=$ctx/rootfs
mkdir -p "$root"/{bin,tmp,var/task,var/runtime,etc/ssl/certs,etc/pki/tls/certs}
cp "$busybox" "$root/bin/busybox"
for c in sh mv chmod cp rm ls cat env; do ln -s busybox "$root/bin/$c"; done
# the dynamic loader and every library the bootstrap links, at the paths the host has them
ldd "$bootstrap" | grep -o '/[^ ]*' | while read -r lib; do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/pki/tls/certs/ca-bundle.crt"
echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
cat >"$ctx/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY rootfs/ /
ENV PATH=/bin:/var/task LANG=C.UTF-8 TZ=:UTC SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
WORKDIR /var/task
DOCKERFILE
docker build -q -t "$tag" "$ctx" >&2
# SAM builds its emulator image once per base tag: a stale one would keep the old base
docker rmi "${tag%%:*}:rapid-$arch" >/dev/null 2>&1 || true
echo "$tag"
