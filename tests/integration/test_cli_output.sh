#!/usr/bin/env bash
# The output contract (docs/CLI.md "Output files") on `mlc build -o`, the third command that writes
# data (image and audio have theirs in test_cli_image.sh / test_cli_audio.sh): -o - is standard
# output, a path that is standard output already is written through (a private link to
# /proc/self/fd/1 stands for /dev/stdout: the system's is never touched), a FIFO is written through,
# a regular file is replaced atomically; the summary goes to stderr.
set -euo pipefail
CLI=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
G="$SRC/examples/gemma4-audio"
GLIB="$G/lib/gemma4-audio-webgpu.wasm"
mkdir -p "$T/b"
cp "$G/mlc-chat-config.json" "$G/tensor-cache.json" "$G/params_shard_0.bin" "$T/b/"
/usr/bin/python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["tasks"]))' \
  "$G/mlc-model-manifest.json" >"$T/tasks.json"
B=(mlc build "$T/b" --tasks "$T/tasks.json" --lib "$GLIB" --required-features shader-f16)

timeout 20 "$CLI" "${B[@]}" -o "$T/art.json" 2>"$T/rep"
grep -q "and $T/art.json" "$T/rep" || fail "summary: $(cat "$T/rep")"
timeout 20 "$CLI" "${B[@]}" -o - 2>"$T/rep" | cmp - "$T/art.json" || fail "-o - | cmp"
[ ! -e "$T/-" ] && [ ! -e ./- ] || fail "a file named - was created"
grep -q "wrote .*mlc-model-manifest.json" "$T/rep" || fail "-o - summary not on stderr"
ln -s /proc/self/fd/1 "$T/stdout-link"
timeout 20 "$CLI" "${B[@]}" -o "$T/stdout-link" >"$T/t.json" 2>/dev/null
[ -L "$T/stdout-link" ] && cmp "$T/t.json" "$T/art.json" || fail "-o link to stdout"
mkfifo "$T/fifo"
timeout 20 cat "$T/fifo" >"$T/from_fifo" &
timeout 20 "$CLI" "${B[@]}" -o "$T/fifo" 2>/dev/null
wait
[ -p "$T/fifo" ] && cmp "$T/from_fifo" "$T/art.json" || fail "FIFO"
ln -s art.json "$T/art-link"
timeout 20 "$CLI" "${B[@]}" -o "$T/art-link" 2>/dev/null
[ -L "$T/art-link" ] && cmp "$T/art-link" "$T/from_fifo" || fail "link to a regular file"
mkdir "$T/d"
set +e
"$CLI" "${B[@]}" -o "$T/d" 2>"$T/err"; rc=$?
set -e
[ $rc = 1 ] && grep -q "is a directory" "$T/err" || fail "directory: exit $rc"
left=$(ls "$T"); grep -q '\.tmp\.' <<<"$left" && fail "temporary file left behind"
echo ok
