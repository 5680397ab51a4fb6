#!/usr/bin/env bash
# Builds the book (docs/src/, mdBook) into docs/book/: open docs/book/index.html.
# mdBook comes from the Rust registry: the pinned version is installed once into the
# repository's .tools/ (ignored by git) unless that version is already on PATH. The build
# itself needs no network. Not part of .ci/run; the book's code blocks and links are checked
# by plain `cargo test` (shared/lang/tests/book.rs, cli/tests/book_commands.rs).
#
#   scripts/book.sh            # mdbook build docs
#   scripts/book.sh serve      # mdbook serve docs: rebuilt and reloaded on each change
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=0.5.4

mdbook=""
for candidate in "$root/.tools/bin/mdbook" "$(command -v mdbook || true)"; do
  if [ -n "$candidate" ] && [ -x "$candidate" ] \
    && [ "$("$candidate" --version 2>/dev/null)" = "mdbook v$version" ]; then
    mdbook=$candidate
    break
  fi
done
if [ -z "$mdbook" ]; then
  start=$SECONDS
  echo "installing mdbook $version into .tools/ (once)" >&2
  cargo install mdbook --version "$version" --locked --root "$root/.tools" >&2
  echo "installed mdbook $version in $((SECONDS - start)) s" >&2
  mdbook="$root/.tools/bin/mdbook"
fi

command=${1:-build}
"$mdbook" "$command" "$root/docs" "${@:2}"
if [ "$command" = build ]; then
  # mdBook turns every relative link to a .md file into .html; the README files outside the
  # book (../../functions/README.md) are no pages of it: point those back to the Markdown
  find "$root/docs/book" -name '*.html' -exec \
    sed -i -E 's#href="((\.\./)+[^"]*)\.html(\#[^"]*)?"#href="\1.md\3"#g' {} +
  echo "the book: $root/docs/book/index.html"
fi
