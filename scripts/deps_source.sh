#!/usr/bin/env bash
# Debian's source packages, for what modelpkg compiles from source: `apt-get source` (Debian's
# patches applied by dpkg-source), then ours (scripts/patches/PACKAGE-*.patch), each once.
#   scripts/deps_source.sh [DIR] [PACKAGE...]
# DIR defaults to .deps/src; PACKAGE to libsoxr and musl, which the audio component compiles into
# the library on every target (cmake/soxr.cmake). scripts/wasm_deps.sh fetches its packages here
# too. Prints each package's source directory. Needs dpkg-dev and a deb-src line (scripts/setup.sh
# adds both); no network but Debian's archive, nothing vendored. Idempotent: a package already
# unpacked is not fetched again.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="${1:-$here/../.deps/src}"
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- libsoxr musl
mkdir -p "$src"

# Debian's source for PACKAGE into $src, its directory printed. The candidate's version first; a
# security update's source is not always on the mirror, so the release's own version is next.
fetch_source() {
  local pkg="$1" dir
  dir=$(find "$src" -maxdepth 1 -type d -name "$pkg-[0-9]*" -print -quit)
  if [ -z "$dir" ]; then
    command -v dpkg-source >/dev/null ||
      { echo "deps: apt-get source needs dpkg-dev (scripts/setup.sh installs it)" >&2; exit 1; }
    (cd "$src" && { apt-get source -q "$pkg" >"$src/$pkg.log" 2>&1 ||
                    apt-get source -q "$pkg/bookworm" >>"$src/$pkg.log" 2>&1; }) || {
      echo "deps: apt-get source $pkg failed (a deb-src line is needed: scripts/setup.sh adds one); see $src/$pkg.log" >&2
      exit 1
    }
    dir=$(find "$src" -maxdepth 1 -type d -name "$pkg-[0-9]*" -print -quit)
  fi
  [ -n "$dir" ] || { echo "deps: no source directory for $pkg under $src" >&2; exit 1; }
  printf '%s\n' "$dir"
}

# Our patches for PACKAGE (what Debian's source lacks: for WebAssembly, for one engine on every
# target), each applied once (a patch that reverses cleanly is already in); .mpk-patched marks the
# directory done for cmake/soxr.cmake.
apply_patches() {
  local pkg="$1" dir="$2" p
  for p in "$here/patches/$pkg"-*.patch; do
    [ -e "$p" ] || continue
    patch -d "$dir" -p1 -R -f -s --dry-run <"$p" >/dev/null 2>&1 && continue
    patch -d "$dir" -p1 -f -s <"$p" >>"$src/$pkg.log" 2>&1 ||
      { echo "deps: $p does not apply to $dir; see $src/$pkg.log" >&2; exit 1; }
  done
  (cd "$here/patches" && ls "$pkg"-*.patch 2>/dev/null || true) >"$dir/.mpk-patched"
}

for pkg in "$@"; do
  dir=$(fetch_source "$pkg")
  apply_patches "$pkg" "$dir"
  printf '%s\n' "$dir"
done
