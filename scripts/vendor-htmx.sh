#!/usr/bin/env bash
# Vendors htmx and its SSE extension from the npm registry into the embedded
# static files of the web UI. The UI loads nothing from another origin, so the
# exact release files are kept in the repository with their checksums and
# licences. Run from anywhere; requires npm, tar and sha256sum.
set -euo pipefail

HTMX_VERSION=2.0.11
SSE_VERSION=2.2.4

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest="$root/internal/ui/static/vendor"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# fetch_package NAME VERSION extracts the package tarball into $work/NAME.
fetch_package() {
	local name=$1 version=$2 tarball
	tarball=$(cd "$work" && npm pack --silent "$name@$version")
	mkdir -p "$work/$name"
	tar -xzf "$work/$tarball" -C "$work/$name" --strip-components=1
}

fetch_package htmx.org "$HTMX_VERSION"
fetch_package htmx-ext-sse "$SSE_VERSION"

htmx_src="$work/htmx.org/dist/htmx.min.js"
# The SSE extension's browser build (a plain script registering itself with the
# global htmx) is dist/sse.js; dist/sse.esm.js is the module build.
sse_src="$work/htmx-ext-sse/dist/sse.js"
for f in "$htmx_src" "$sse_src" "$work/htmx.org/LICENSE" "$work/htmx-ext-sse/LICENSE"; do
	if [[ ! -f $f ]]; then
		echo "vendor-htmx: missing ${f#"$work"/} in the npm package" >&2
		exit 1
	fi
done

htmx_file="htmx-$HTMX_VERSION.min.js"
sse_file="htmx-ext-sse-$SSE_VERSION.js"

rm -rf "$dest"
mkdir -p "$dest"
cp "$htmx_src" "$dest/$htmx_file"
cp "$sse_src" "$dest/$sse_file"
cp "$work/htmx.org/LICENSE" "$dest/LICENSE.htmx.org"
cp "$work/htmx-ext-sse/LICENSE" "$dest/LICENSE.htmx-ext-sse"

# licence prints the package.json "license" field or, when the package does
# not declare one, the first line of its LICENSE file.
licence() {
	local id
	id=$(sed -n 's/.*"license"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$1/package.json" | head -n 1)
	if [[ -z $id ]]; then
		id=$(grep -m 1 -v '^[[:space:]]*$' "$1/LICENSE")
	fi
	printf '%s\n' "$id"
}

cat >"$dest/README" <<README
Vendored front-end libraries of the Wharf web UI.

Fetched from the npm registry with scripts/vendor-htmx.sh; do not edit by hand.
SHA256SUMS lists the checksum of every file here except itself and this README.

$htmx_file
  package: htmx.org $HTMX_VERSION (npm), file dist/htmx.min.js
  licence: $(licence "$work/htmx.org"), see LICENSE.htmx.org

$sse_file
  package: htmx-ext-sse $SSE_VERSION (npm), file dist/sse.js
  licence: $(licence "$work/htmx-ext-sse"), see LICENSE.htmx-ext-sse
README

(cd "$dest" && sha256sum "$htmx_file" "$sse_file" LICENSE.htmx.org LICENSE.htmx-ext-sse >SHA256SUMS)
echo "vendored htmx.org $HTMX_VERSION and htmx-ext-sse $SSE_VERSION into ${dest#"$root"/}"
