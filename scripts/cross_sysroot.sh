#!/usr/bin/env bash
# A target root for a cross build, unpacked from Debian's own packages (scripts/setup.sh --cross
# calls it; docs/cross.md).   usage: scripts/cross_sysroot.sh DEBARCH DIR
# Multiarch (libfoo-dev:DEBARCH beside the host's) needs every Multi-Arch: same library at the
# same version for both architectures; where the archive serves the host newer (security) builds
# than the target (Debian's security archive here lists no s390x), apt cannot install them. So the
# target's development packages and the run-time libraries they need are fetched with apt-get
# download and unpacked with dpkg -x into DIR, which the toolchain file uses as CMAKE_SYSROOT and
# whose dynamic loader and library directories qemu runs the tests with (cmake/toolchain-s390x.cmake).
# Nothing is installed into the host's system. Idempotent: DIR/.complete.
set -euo pipefail
debarch="$1"
dir="$2"
[ -f "$dir/.complete" ] && exit 0
# apt-get download needs the target's package lists.
foreign=$(dpkg --print-foreign-architectures)
if ! grep -qx "$debarch" <<<"$foreign"; then
  dpkg --add-architecture "$debarch"
  apt-get -o DPkg::Lock::Timeout=900 update -q
fi
DEV=(libc6-dev libjansson-dev libyajl-dev libcurl4-openssl-dev zlib1g-dev libssl-dev
     libjpeg62-turbo-dev libspng-dev libwebp-dev libexif-dev libprotobuf-c-dev libcmocka-dev libgcc-s1)
work="$(mktemp -d)"
chmod 755 "$work" # apt-get download writes as _apt
trap 'rm -rf "$work"' EXIT
# The closure of their dependencies that is of the target's architecture (tools such as
# libc-dev-bin are not needed in a root that is only linked against and loaded from).
apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
  --no-enhances "${DEV[@]/%/:$debarch}" 2>/dev/null | grep -E "^[a-z0-9].*:$debarch\$" | sort -u |
  grep -vE '^(libc-dev-bin|rpcsvc-proto):' > "$work/list"
# Headers that are architecture-independent or only read by the host's tools: DLPack's header, and
# onnx.proto (protoc-c runs on the host; libonnx-dev's copy, unpacked alone, without its libraries).
echo libdlpack-dev >> "$work/list"
echo "libonnx-dev:$debarch" >> "$work/list"
(cd "$work" && apt-get download $(cat list) >/dev/null)
rm -rf "$dir"
mkdir -p "$dir"
for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$dir"; done
# onnx.proto only: the rest of libonnx-dev (its libraries and their dependencies) is not needed.
find "$dir/usr/lib" -maxdepth 2 -name 'libonnx*' -delete 2>/dev/null || true
# Development symlinks that name an absolute path (libz.so -> /lib/s390x-linux-gnu/libz.so.1.2.13)
# would point into the host's root, where the target's file is not: make them relative, inside DIR.
find "$dir" -type l -lname '/*' -print0 | while IFS= read -r -d '' link; do
  ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$dir$(readlink "$link")")" "$link"
done
touch "$dir/.complete"
echo "cross_sysroot: $debarch root in $dir ($(wc -l < "$work/list") packages)" >&2
