#!/usr/bin/env bash
# mt install against a hostile cache, a hostile source directory and a hostile server:
#  - symbolic links planted in the cache (.staging, .staging/<repo>, its new/, parts/, old/, lock,
#    and <cache>/<repo>) are refused naming the path, never followed, written or deleted through —
#    a decoy directory they point to is checksummed before and after;
#  - leftover commit.json.tmp.* of a killed commit are removed (regular files of that exact pattern
#    only, never through a link);
#  - a FIFO, a link out of the package or a directory where a file is listed, in a directory
#    source, is refused at once (no hang); a source listing a merge journal or record is refused;
#  - a server sending one byte a second (body, headers, the manifest's headers) fails within the
#    --timeout deadline naming the URL and the limit, and the lock is free at once afterwards;
#    the low-speed limit; redirects to file:// and ftp:// refused (an ordinary redirect followed);
#    header count and size limits;
#  - --json prints one envelope document on success, refusal and usage error.
# usage: test_install_hostile.sh MODELPKG SHARED_DIR
set -uo pipefail
MPK="$1"
SHARED="$2"
HERE="$(cd "$(dirname "$0")" && pwd)"
TINY="$SHARED/conformance/mobiletransformers/tiny_package"
T="$(mktemp -d)"
SRV_PID=""
cleanup() {
  [ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
. "$HERE/expect.sh"
# Under a cross build's emulator (tests/cross.cmake, MPK_TEST_EMULATOR) the tool's own work is 5-10
# times slower: the "at once" and "within the deadline" bounds are 5 times longer (still far below
# a stalled transfer at one byte a second).
SLOW=1; [ -n "${MPK_TEST_EMULATOR:-}" ] && SLOW=5

cp -r "$TINY" "$T/pkg"
chmod -R u+w "$T/pkg"
REPO=org__tiny
# inst SOURCE CACHE [OPTIONS...]: the installer under a timeout; status in $rc, stdout+stderr in $msg
inst() {
  local src="$1" cache="$2"; shift 2
  msg="$(timeout 20 "$MPK" mt install "$src" --repo-id org/tiny --cache "$cache" --variant cpu-int4 --retry-delay-ms 20 "$@" 2>&1)"
  rc=$?
}
# A decoy directory outside the cache that a planted link points to: its files, names and bytes.
mkdir -p "$T/decoy/inference" "$T/decoy/sub"
echo "precious" > "$T/decoy/precious.txt"
echo "weights" > "$T/decoy/inference/model.onnx"
echo "x" > "$T/decoy/sub/x"
decoy_sum() { (cd "$T/decoy" && find . -print0 | sort -z | xargs -0 stat -c '%n %s %F' && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
DECOY_BEFORE="$(decoy_sum)"
decoy_untouched() { [ "$(decoy_sum)" = "$DECOY_BEFORE" ]; }

# ---- a clean install first (the reference), and the cases that replace it
inst "$T/pkg" "$T/ref"
check "clean install from a directory" test $rc -eq 0 -a -f "$T/ref/$REPO/inference/model.onnx"

# plant NAME LINK_PATH: a fresh cache holding a complete install and staging, with LINK_PATH (relative
# to the cache) a symbolic link to the decoy; then install again and expect a refusal naming it.
planted() {
  local name="$1" rel="$2" target="${3:-$T/decoy}"
  local C="$T/c-$name"
  rm -rf "$C"
  cp -r "$T/ref" "$C"
  mkdir -p "$(dirname "$C/$rel")"
  rm -rf "${C:?}/$rel"
  ln -s "$target" "$C/$rel"
  local t0=$(date +%s%N)
  inst "$T/pkg" "$C"
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  check "link at $rel: refused (exit 1) in ${ms} ms" test $rc -eq 1 -a $ms -lt $((5000 * SLOW))
  check "link at $rel: the message names the path and says it is a link, nothing followed" \
    grep -q "$C/$rel: is a symbolic link: refused, nothing was followed" <<<"$msg"
  check "link at $rel: the decoy it points to is untouched" decoy_untouched
  check "link at $rel: the link itself is left as it was" test -L "$C/$rel"
  [ $rc -eq 1 ] || echo "$msg" | tail -3
}
planted staging-root .staging
planted staging ".staging/$REPO"
planted new ".staging/$REPO/new"
planted parts ".staging/$REPO/parts"
planted old ".staging/$REPO/old"
planted target "$REPO"
planted lock ".staging/$REPO/lock" "$T/decoy/precious.txt"
# a link at the target when there is no install yet, and a fresh cache whose .staging is a link
C="$T/c-fresh"; mkdir -p "$C"; ln -s "$T/decoy" "$C/$REPO"
inst "$T/pkg" "$C"
check "link at the target of a first install: refused" test $rc -eq 1
check "link at the target of a first install: names it" grep -q "$C/$REPO: is a symbolic link" <<<"$msg"
check "link at the target of a first install: decoy untouched" decoy_untouched
# a link inside the staging tree (new/inference -> decoy) is a stray: removed itself, never followed
C="$T/c-inner"; cp -r "$T/ref" "$C"; mkdir -p "$C/.staging/$REPO/new" "$C/.staging/$REPO/parts"
ln -s "$T/decoy/inference" "$C/.staging/$REPO/new/inference"
ln -s "$T/decoy" "$C/.staging/$REPO/parts/inference"
inst "$T/pkg" "$C"
check "links inside new/ and parts/: the install succeeds" test $rc -eq 0
check "links inside new/ and parts/: the decoy is untouched" decoy_untouched
check "links inside new/ and parts/: the install is complete" cmp -s "$C/$REPO/inference/model.onnx" "$T/ref/$REPO/inference/model.onnx"
# the user's own cache path may be a link (it is opened as named)
ln -s "$T/ref" "$T/ref-link"
inst "$T/pkg" "$T/ref-link"
check "the cache directory named through a link (the user's choice): installs" test $rc -eq 0

# ---- leftovers of a commit killed while writing its marker
C="$T/c-tmp"; cp -r "$T/ref" "$C"; S="$C/.staging/$REPO"
echo '{"installId": "0' > "$S/commit.json.tmp.Ab12Cd"
echo '{"installId": "1' > "$S/commit.json.tmp.zz99ZZ"
ln -s "$T/decoy/precious.txt" "$S/commit.json.tmp.LnK000"
echo keep > "$S/commit.json.tmp.toolong7"
echo keep > "$S/commit.json.tmpXAb12Cd"
inst "$T/pkg" "$C"
check "commit temps: the install succeeds" test $rc -eq 0
check "commit temps: the leftovers are removed" test ! -e "$S/commit.json.tmp.Ab12Cd" -a ! -e "$S/commit.json.tmp.zz99ZZ"
check "commit temps: a link of that name is not followed (decoy untouched, link left)" test -L "$S/commit.json.tmp.LnK000"
check "commit temps: ... decoy untouched" decoy_untouched
check "commit temps: names outside the exact pattern are kept" test -f "$S/commit.json.tmp.toolong7" -a -f "$S/commit.json.tmpXAb12Cd"

# ---- hostile source directories: refused at once, nothing installed
src_case() {
  local name="$1" pattern="$2"
  local t0=$(date +%s%N)
  inst "$T/src-$name" "$T/s-$name"
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  check "source $name: refused (exit 1) in ${ms} ms" test $rc -eq 1 -a $ms -lt $((5000 * SLOW))
  check "source $name: says why" grep -q "$pattern" <<<"$msg"
  check "source $name: nothing installed" test ! -e "$T/s-$name/$REPO"
  [ $rc -eq 1 ] || echo "$msg" | tail -3
}
F=variants/cpu-int4/inference/genai_config.json
cp -r "$T/pkg" "$T/src-fifo"; rm "$T/src-fifo/$F"; mkfifo "$T/src-fifo/$F"
src_case fifo "$F: is a FIFO, not a regular file"
cp -r "$T/pkg" "$T/src-linkout"; rm "$T/src-linkout/$F"; ln -s "$T/decoy/precious.txt" "$T/src-linkout/$F"
src_case linkout "$F: resolves outside the package directory"
cp -r "$T/pkg" "$T/src-dir"; rm "$T/src-dir/$F"; mkdir "$T/src-dir/$F"
src_case dir "$F: is a directory, not a regular file"
cp -r "$T/pkg" "$T/src-manififo"; rm "$T/src-manififo/mobiletransformers_manifest.json"; mkfifo "$T/src-manififo/mobiletransformers_manifest.json"
src_case manififo "mobiletransformers_manifest.json: is a FIFO, not a regular file"
# a package listing a merge journal, a merge record or the reference's install record (files only a
# device writes)
for f in .merge.txn-journal .modelpkg-merge-record.json install_record.json; do
  n="journal"; [ "$f" = .modelpkg-merge-record.json ] && n=record; [ "$f" = install_record.json ] && n=instrec
  cp -r "$T/pkg" "$T/src-$n"
  echo '{}' > "$T/src-$n/variants/cpu-int4/inference/$f"
  /usr/bin/python3 - "$T/src-$n" "variants/cpu-int4/inference/$f" <<'PY'
import hashlib, json, os, sys
root, rel = sys.argv[1], sys.argv[2]
p = os.path.join(root, "mobiletransformers_manifest.json"); m = json.load(open(p))
data = open(os.path.join(root, rel), "rb").read()
m["fileSizes"][rel] = len(data); m["sha256"][rel] = hashlib.sha256(data).hexdigest()
open(p, "w").write(json.dumps(m, indent=2, sort_keys=True) + "\n")
PY
  kind="a merge"; [ "$n" = instrec ] && kind="an install record"
  src_case "$n" "fileSizes/variants~1cpu-int4~1inference~1$f: lists variants/cpu-int4/inference/$f, $kind"
done

# ---- the progress line on a terminal: one rate per redraw, redrawn in place (\r), never appended
#      to a line that was not redrawn
/usr/bin/python3 - "$MPK" "$T/pkg" "$T/p-tty" > "$T/tty.out" <<'PY'
import os, pty, sys, select, time
mpk, src, cache = sys.argv[1:4]
pid, fd = pty.fork()
if pid == 0:
    os.execv(mpk, [mpk, "mt", "install", src, "--repo-id", "org/tiny", "--cache", cache, "--variant", "cpu-int4",
                   "--features", "inference,train", "--jobs", "1"])
out, end = b"", time.time() + 20
while time.time() < end:
    r, _, _ = select.select([fd], [], [], 0.5)
    if not r:
        continue
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace"))
PY
segments="$(tr '\r' '\n' < "$T/tty.out" | grep -c 'install \[')"
worst="$(tr '\r' '\n' < "$T/tty.out" | awk '{ n = gsub(/MiB\/s/, "&"); if (n > m) m = n } END { print m + 0 }')"
check "progress: the bar was drawn on a terminal ($segments redraws)" test "$segments" -ge 1
check "progress: at most one rate per redrawn line (worst: $worst)" test "$worst" -le 1
check "progress: the install completed" grep -q "OK: installed cpu-int4" "$T/tty.out"

# ---- --json: one envelope document on success, refusal and usage error
jsondoc() { /usr/bin/python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
keys = ["modelpkg_version", "command", "ok", "repo_dir", "variant", "files", "bytes", "reused_bytes", "retries",
        "restarts", "replaced", "adapters", "seconds", "problems", "notes"]
assert list(d) == keys, list(d)
assert d["command"] == "mt install"
assert d["ok"] == (sys.argv[1] == "ok"), d["ok"]
assert (len(d["problems"]) == 0) == (sys.argv[1] == "ok")
print("ok")' "$1" 2>/dev/null; }
out="$(timeout 20 "$MPK" mt install "$T/pkg" --repo-id org/tiny --cache "$T/j1" --variant cpu-int4 --json 2>/dev/null)"; rc=$?
check "json: success is the envelope (exit 0)" test $rc -eq 0 -a "$(jsondoc ok <<<"$out")" = ok
out="$(timeout 20 "$MPK" mt install "$T/src-fifo" --repo-id org/tiny --cache "$T/j2" --variant cpu-int4 --json 2>/dev/null)"; rc=$?
check "json: a refusal is the envelope with the problem (exit 1)" test $rc -eq 1 -a "$(jsondoc refused <<<"$out")" = ok
check "json: ... naming the FIFO" grep -q '"message": "is a FIFO, not a regular file"' <<<"$out"
out="$(timeout 20 "$MPK" mt install "$T/pkg" --repo-id org/tiny --json --timeout 0 2>/dev/null)"; rc=$?
check "json: a usage error is the envelope too (exit 2)" test $rc -eq 2 -a "$(jsondoc usage <<<"$out")" = ok
out="$(timeout 20 "$MPK" mt install "$T/pkg" --repo-id org/tiny --json 2>/dev/null)"; rc=$?
check "json: a missing option is the envelope too (exit 2)" test $rc -eq 2 -a "$(jsondoc usage <<<"$out")" = ok

# ---- a hostile server
# server MODE: (re)start hostile_http.py in MODE on a fresh port; $BASE is its URL
server() {
  [ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null && wait "$SRV_PID" 2>/dev/null
  PORT="$(free_port)"
  : > "$T/srv.log"
  /usr/bin/python3 "$HERE/hostile_http.py" "$T/pkg" "$PORT" "$1" "$T/srv.log" 60 &
  SRV_PID=$!
  BASE="http://127.0.0.1:$PORT"
  # listening yet? (a connection opened and closed: bash's /dev/tcp, no client program needed)
  for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
}
# slow MODE PATTERN: a 2 s deadline; fails in under 5 s naming the URL and the limit; the lock is
# free right after (an install from the directory source into the same cache takes it and succeeds)
slow() {
  local mode="$1"
  server "$mode"
  local pattern="${2//@BASE@/$BASE}"
  local C="$T/h-$mode"
  local t0=$(date +%s%N)
  inst "$BASE" "$C" --timeout 2 --jobs 2
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  check "slow $mode: fails (exit 1) within the deadline: ${ms} ms < $((5000 * SLOW))" test $rc -eq 1 -a $ms -lt $((5000 * SLOW))
  check "slow $mode: names the URL and the deadline" grep -q "$pattern" <<<"$msg"
  [ $rc -eq 1 ] && grep -q "$pattern" <<<"$msg" || echo "$msg" | tail -3
  inst "$T/pkg" "$C"
  check "slow $mode: the lock is free right after (the next install succeeds)" test $rc -eq 0
  check "slow $mode: nothing written outside the cache (decoy untouched)" decoy_untouched
}
slow body "@BASE@/variants/cpu-int4/.*no complete response within the deadline of 2 s for this file"
slow headers "@BASE@/.*no complete response within the deadline of 2 s for this file"
slow manifest-headers "@BASE@/mobiletransformers_manifest.json: no complete response within the deadline of 2 s"
# the low-speed limit (retried, then failing)
server body
t0=$(date +%s%N)
inst "$BASE" "$T/h-lowspeed" --timeout 60 --low-speed 1000 --low-speed-time 1 --retries 2
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "low speed: fails (exit 1) in ${ms} ms < $((8000 * SLOW))" test $rc -eq 1 -a $ms -lt $((8000 * SLOW))
check "low speed: names the URL and the limit" grep -q "http://127.0.0.1:$PORT/.*slower than the low-speed limit of 1000 bytes/s for 1 s" <<<"$msg"
# redirects
server redirect-file
inst "$BASE" "$T/h-rfile"
check "redirect to file://: refused (exit 1)" test $rc -eq 1
check "redirect to file://: says so" grep -q 'a redirect to the scheme "file" (file:///etc/passwd) is refused: only http and https are followed' <<<"$msg"
server redirect-ftp
inst "$BASE" "$T/h-rftp"
check "redirect to ftp://: refused (exit 1)" test $rc -eq 1
check "redirect to ftp://: says so" grep -q 'a redirect to the scheme "ftp"' <<<"$msg"
server redirect-ok
inst "$BASE" "$T/h-rok"
check "an ordinary redirect (same server, relative Location) is followed" test $rc -eq 0 -a -f "$T/h-rok/$REPO/inference/model.onnx"
# header limits
server many-headers
inst "$BASE" "$T/h-many"
check "150 header lines: refused" test $rc -eq 1
check "150 header lines: names the limit" grep -q "refused: the response has more than 100 header lines" <<<"$msg"
server big-headers
inst "$BASE" "$T/h-big"
check "a 70 KiB header: refused" test $rc -eq 1
check "a 70 KiB header: names the limit" grep -q "refused: the response's headers exceed 65536 bytes" <<<"$msg"

finish
