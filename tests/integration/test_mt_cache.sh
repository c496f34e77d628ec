#!/usr/bin/env bash
# mt list, mt remove, mt gc on a real cache (docs/mt-cache.md):
#  - the install record the reference runtime reads (install_record.json, Gson's bytes) and mt list;
#  - a reader holding a tree (a shared flock on its inference directory, as the load gate takes)
#    during mt remove and during a reinstall: the tree is retired, never deleted under the reader,
#    and mt gc removes it once the reader has exited;
#  - mt gc never touches a stage whose lock an installer holds; gc with nothing to do; --dry-run;
#  - hostile: links planted in .staging, in a stage, as a tree, and .staging itself a link: removed
#    as links or refused, never followed (a decoy directory checksummed before and after);
#  - SIGKILL at random instants of mt gc and mt remove, 50 times each;
#  - --json envelopes on success, refusal and usage error.
# usage: test_mt_cache.sh MODELPKG SHARED_DIR
set -uo pipefail
MPK="$1"
SHARED="$2"
HERE="$(cd "$(dirname "$0")" && pwd)"
TINY="$SHARED/conformance/mobiletransformers/tiny_package"
T="$(mktemp -d)"
READER=""
cleanup() {
  [ -n "$READER" ] && kill "$READER" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
. "$HERE/expect.sh"
need_tool flock
need_tool /usr/bin/python3

C="$T/cache"
TREE="$C/org__tiny"
ST="$C/.staging/org__tiny"
inst() { timeout 30 "$MPK" mt install "$TINY" --repo-id org/tiny --cache "$C" --variant "$1" --jobs 2 >/dev/null 2>&1; }
# reader DIR: a process holding a shared flock on DIR (as the load gate does) until killed; its pid
# in READER. The lock is on the subshell's own descriptor, so killing it releases the lock.
reader() {
  ( exec 9<"$1" && flock -s 9 && exec sleep 60 ) &
  READER=$!
  local i
  for i in $(seq 50); do flock -n -x "$1" true 2>/dev/null || return 0; sleep 0.1; done
  bad "the reader did not take its lock on $1"
}
stop_reader() { kill "$READER" 2>/dev/null; wait "$READER" 2>/dev/null; READER=""; }
# exclusive holder of a stage's lock file (an installer), likewise
holder() {
  ( exec 9<>"$1" && flock -x 9 && exec sleep 60 ) &
  READER=$!
  local i
  for i in $(seq 50); do flock -n -x "$1" true 2>/dev/null || return 0; sleep 0.1; done
  bad "the holder did not take $1"
}
decoy_sum() { (cd "$T/decoy" && find . -type f -exec sha256sum {} + | sort); }
mkdir -p "$T/decoy/inference"
echo precious > "$T/decoy/inference/model.onnx"
DECOY="$(decoy_sum)"

# ---- the record and the list
inst cpu-int4
check "install: done" test -f "$TREE/install_record.json"
check "install_record.json: Gson's compact bytes" grep -Eq \
  '^\{"repoId":"org/tiny","variantId":"cpu-int4","features":\["inference"\],"installedAtEpochMs":[0-9]{13}\}$' \
  "$TREE/install_record.json"
check "install_record.json: what the reference's reader reads (same fields, same meaning)" /usr/bin/python3 - \
  "$TREE/install_record.json" "$TREE/modelpkg_install.json" <<'PY'
import json, sys, calendar, time
r = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2]))
assert list(r) == ["repoId", "variantId", "features", "installedAtEpochMs"], list(r)
assert r["repoId"] == m["repoId"] and r["variantId"] == m["variant"] and r["features"] == sorted(m["features"])
assert r["installedAtEpochMs"] // 1000 == calendar.timegm(time.strptime(m["installedAt"], "%Y-%m-%dT%H:%M:%SZ"))
PY
expect "mt list: the row" 0 'org/tiny +cpu-int4 +[0-9]+ +20[0-9-]+T' -- "$MPK" mt list --cache "$C"
out="$("$MPK" mt list --cache "$C" --json)"
check "mt list --json: the envelope and the model" /usr/bin/python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["command"] == "mt list" and d["ok"] is True and d["problems"] == []
[m] = d["models"]
assert m["repo_id"] == "org/tiny" and m["variant"] == "cpu-int4" and m["bytes"] > 10000 and m["installed_at_ms"] > 0
assert m["record"] == "modelpkg_install.json" and m["features"] == ["inference"]' "$out"
expect "mt list: a missing cache" 1 'not found' -- "$MPK" mt list --cache "$T/nope"
expect "mt list: usage" 2 'cache is required' -- "$MPK" mt list

# ---- gc: the orphaned lock of the install, then nothing to do
expect "gc --dry-run: would remove the orphaned lock" 0 'would remove .staging/org__tiny/lock' -- "$MPK" mt gc --cache "$C" --dry-run
check "gc --dry-run: changed nothing" test -f "$ST/lock"
expect "gc: the orphaned lock" 0 'removed .staging/org__tiny/lock' -- "$MPK" mt gc --cache "$C"
check "gc: nothing left in .staging" test ! -e "$C/.staging"
expect "gc: nothing to do" 0 'nothing to collect' -- "$MPK" mt gc --cache "$C"
# An empty .staging (a gc killed after the last stage went, before .staging did): removed, and no
# sort of an empty list of names (the sanitizer build caught that as a NULL qsort base).
mkdir "$C/.staging"
expect "gc: an empty staging area" 0 'the staging area, empty: removed' -- "$MPK" mt gc --cache "$C"
check "gc: the empty staging area is gone" test ! -e "$C/.staging"
check "gc: the installed tree untouched" test -f "$TREE/inference/model.onnx"

# ---- a reader holds the tree during mt remove: retired, not deleted; gc after it exits removes it
reader "$TREE/inference"
expect "remove under a reader: kept retired" 0 'a reader holds it: kept retired at .*/.staging/org__tiny/retired/' \
  -- "$MPK" mt remove --cache "$C" --repo-id org/tiny
check "remove: the tree is out of place" test ! -e "$TREE"
check "remove: the reader's tree is whole (retired)" test -f "$(echo "$ST"/retired/*/inference/model.onnx)"
expect "gc while the reader lives: kept" 0 'kept .staging/org__tiny/retired/[0-9a-f]+ .*a reader holds' -- "$MPK" mt gc --cache "$C"
check "gc while the reader lives: still there" test -f "$(echo "$ST"/retired/*/inference/model.onnx)"
stop_reader
expect "gc after the reader exited: removed" 0 'removed .staging/org__tiny/retired/[0-9a-f]+' -- "$MPK" mt gc --cache "$C"
check "gc: the cache is empty" test -z "$(ls -A "$C")"
expect "remove: not installed" 1 'org/tiny is not installed' -- "$MPK" mt remove --cache "$C" --repo-id org/tiny
check "remove: not installed created nothing" test -z "$(ls -A "$C")"

# ---- a reader holds the old tree during a reinstall: swapped, the old tree retired, gc'd after
inst cpu-fp16
reader "$TREE/inference"
inst cpu-int4
check "reinstall under a reader: the new tree is in place" grep -q '"variantId":"cpu-int4"' "$TREE/install_record.json"
check "reinstall under a reader: the old tree retired, whole" grep -q '"variantId":"cpu-fp16"' "$(echo "$ST"/retired/*/install_record.json)"
stop_reader
expect "gc after the reader exited: the old tree removed" 0 'removed .staging/org__tiny/retired/' -- "$MPK" mt gc --cache "$C"
check "gc: only the install is left" test "$(ls -A "$C")" = org__tiny

# ---- gc never touches a stage an installer holds
mkdir -p "$ST/new/inference" "$ST/parts"
echo partial > "$ST/new/inference/model.onnx"
holder "$ST/lock"
expect "gc: a locked stage is kept" 0 'kept .staging/org__tiny .*an installer holds its lock' -- "$MPK" mt gc --cache "$C"
check "gc: the locked stage's partial is still there" test -f "$ST/new/inference/model.onnx"
expect "remove: the installer's lock" 1 'another installer of this repo id is running' -- "$MPK" mt remove --cache "$C" --repo-id org/tiny
check "remove: refused, the tree is there" test -f "$TREE/inference/model.onnx"
stop_reader
expect "gc: the free stage's partial download removed" 0 'removed .staging/org__tiny/new .*partial download' -- "$MPK" mt gc --cache "$C"
check "gc: the partial is gone" test ! -e "$ST"

# ---- hostile: links, never followed
mkdir -p "$C/.staging/org__x"
ln -s "$T/decoy" "$C/.staging/evil"
ln -s "$T/decoy" "$C/.staging/org__x/retired"
ln -s "$T/decoy" "$C/.staging/org__x/new"
ln -s "$T/decoy/inference/model.onnx" "$C/.staging/org__x/lock"
expect "gc: a link in .staging removed itself" 0 'removed .staging/evil .*symbolic link' -- "$MPK" mt gc --cache "$C"
check "gc: links in a stage removed, the stage with them" test ! -e "$C/.staging/org__x" -a ! -L "$C/.staging/org__x/retired"
check "gc: the decoy untouched" test "$(decoy_sum)" = "$DECOY"
ln -s "$T/decoy" "$C/org__link"
expect "remove: a tree that is a link is refused" 1 'symbolic link: refused' -- "$MPK" mt remove --cache "$C" --repo-id org/link
check "remove: the link left, the decoy untouched" test -L "$C/org__link" -a "$(decoy_sum)" = "$DECOY"
expect "list: a link is a note, not a model" 0 'note: org__link: is a symbolic link' -- "$MPK" mt list --cache "$C"
rm "$C/org__link"
rm -rf "$C/.staging"
ln -s "$T/decoy" "$C/.staging"
expect "gc: .staging a link is refused" 1 '\.staging: is a symbolic link: refused' -- "$MPK" mt gc --cache "$C"
check "gc: the decoy untouched" test "$(decoy_sum)" = "$DECOY"
rm "$C/.staging"

# ---- SIGKILL at random instants of mt gc and mt remove (50 each): the installed tree is always
#      whole (gc) or whole-or-absent (remove), never half a tree at its place, and the next gc
#      completes and leaves nothing but the installed tree(s)
tree_sum() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
rm -rf "$C"; inst cpu-int4
WHOLE="$(tree_sum "$TREE")"
# the garbage: a partial download, a retired tree of many files, an old/ of a crashed swap
mkdir -p "$ST/new/inference" "$ST/parts" "$ST/retired/aaaa" "$ST/old"
for i in $(seq 300); do echo "$i" > "$ST/retired/aaaa/f$i"; echo "$i" > "$ST/old/g$i"; done
cp -r "$TREE/inference" "$ST/retired/aaaa/inference"
echo partial > "$ST/new/inference/model.onnx"
cp -r "$C" "$T/garbage"
for what in gc remove; do
  bad_state=0; stuck=0
  for i in $(seq 50); do
    rm -rf "$C"; cp -r "$T/garbage" "$C"
    if [ $what = gc ]; then "$MPK" mt gc --cache "$C" >/dev/null 2>&1 &
    else "$MPK" mt remove --cache "$C" --repo-id org/tiny >/dev/null 2>&1 & fi
    pid=$!
    sleep "0.00$((RANDOM % 10))"; kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    if [ -e "$TREE" ] && [ "$(tree_sum "$TREE")" != "$WHOLE" ]; then bad_state=$((bad_state + 1)); fi
    [ $what = remove ] || [ -e "$TREE" ] || bad_state=$((bad_state + 1))
    timeout 30 "$MPK" mt gc --cache "$C" >/dev/null 2>&1 || stuck=$((stuck + 1))
    [ -e "$C/.staging" ] && stuck=$((stuck + 1))
  done
  check "SIGKILL x50 during mt $what: the installed tree is never half there" test $bad_state -eq 0
  check "SIGKILL x50 during mt $what: the next gc completes and leaves no garbage" test $stuck -eq 0
done

# ---- --json envelopes
rm -rf "$C"; inst cpu-int4
out="$("$MPK" mt remove --cache "$C" --repo-id org/tiny --json)"; rc=$?
check "remove --json: removed" /usr/bin/python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["command"] == "mt remove" and d["ok"] is True and d["removed"] is True and d["retired"] is False and d["bytes"] > 0' "$out"
out="$("$MPK" mt remove --cache "$C" --repo-id org/tiny --json 2>/dev/null)"; rc=$?
check "remove --json: a refusal is the envelope (exit 1)" /usr/bin/python3 -c '
import json, sys
d = json.loads(sys.argv[1]); assert sys.argv[2] == "1"
assert d["ok"] is False and d["removed"] is None and d["problems"][0]["code"] == "not-found"' "$out" "$rc"
out="$("$MPK" mt gc --cache "$C" --json)"
check "gc --json: the envelope" /usr/bin/python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["command"] == "mt gc" and d["ok"] is True and isinstance(d["removed"], list) and isinstance(d["kept"], list)' "$out"
out="$("$MPK" mt remove --cache "$C" --json 2>/dev/null)"; rc=$?
check "remove --json: a usage error is the envelope (exit 2)" /usr/bin/python3 -c '
import json, sys
d = json.loads(sys.argv[1]); assert sys.argv[2] == "2" and d["ok"] is False' "$out" "$rc"

finish
