#!/usr/bin/env bash
# mt install against a real server: this test starts its own nginx (Debian's, scripts/setup.sh
# installs it) on 127.0.0.1 on a free port with a generated config (root = a temp dir, its own
# access log, limit_rate for throttling), and a small python3 stdlib server for what nginx cannot do
# (drop connections mid-transfer the first N times). Both stop when the test ends.
# The same flows run from a directory source. usage: test_install_http.sh MODELPKG SHARED_DIR
set -uo pipefail
MPK="$1"
SHARED="$2"
HERE="$(cd "$(dirname "$0")" && pwd)"
TINY="$SHARED/conformance/mobiletransformers/tiny_package"
. "$HERE/expect.sh"
# A real HTTP server (nginx), polled with curl until it serves.
need_tool nginx
need_tool curl
NGINX="$(tool_path nginx)"
T="$(mktemp -d)"
NGINX_PID=""
FLAKY_PID=""
cleanup() {
  [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null
  [ -n "$FLAKY_PID" ] && kill "$FLAKY_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT


# ---- packages: good (tiny + a 12 MiB file, resealed), corrupted, missing file, larger than declared
mkdir -p "$T/www"
cp -r "$TINY" "$T/www/pkg"
chmod -R u+w "$T/www/pkg" # shared/ may be laid out without write bits
head -c 12582912 /dev/urandom > "$T/www/pkg/variants/cpu-int4/inference/big.bin"
"$MPK" mt reseal "$T/www/pkg" >/dev/null || { echo "FAIL: reseal"; exit 1; }
cp -r "$T/www/pkg" "$T/www/corrupt"
printf 'Z' | dd of="$T/www/corrupt/variants/cpu-int4/inference/model.onnx" bs=1 seek=0 conv=notrunc 2>/dev/null
cp -r "$T/www/pkg" "$T/www/missing"
rm "$T/www/missing/variants/cpu-int4/inference/genai_config.json"
cp -r "$T/www/pkg" "$T/www/larger"
printf 'extra' >> "$T/www/larger/shared/config.json"

# nginx's workers run as an unprivileged user: the served tree must be readable by anyone.
chmod 755 "$T"
chmod -R a+rX "$T/www"
PORT="$(free_port)"
mkdir -p "$T/ngx"
cat > "$T/ngx/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $T/ngx/nginx.pid;
error_log $T/ngx/error.log;
events { worker_connections 128; }
http {
  log_format t '\$status \$request_method \$uri \$http_range';
  access_log $T/ngx/access.log t;
  client_body_temp_path $T/ngx/body; proxy_temp_path $T/ngx/proxy; fastcgi_temp_path $T/ngx/fcgi;
  uwsgi_temp_path $T/ngx/uwsgi; scgi_temp_path $T/ngx/scgi;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:$PORT;
    root $T/www;
    location /slow/ { alias $T/www/pkg/; limit_rate 3m; }
  }
}
EOF
"$NGINX" -c "$T/ngx/nginx.conf" -p "$T/ngx" 2>"$T/ngx/start.log" &
NGINX_PID=$!
BASE="http://127.0.0.1:$PORT"
for _ in $(seq 50); do curl -fsS -o /dev/null "$BASE/pkg/mobiletransformers_manifest.json" 2>/dev/null && break; sleep 0.1; done
curl -fsS -o /dev/null "$BASE/pkg/mobiletransformers_manifest.json" || { tail -5 "$T/ngx/start.log" "$T/ngx/error.log"; echo "FAIL: nginx did not start"; echo "0 passed, 1 failed"; exit 1; }

# inst SOURCE CACHE [VARIANT [OPTIONS...]]
inst() { "$MPK" mt install "$1" --repo-id org/tiny --cache "$2" --variant "${3:-cpu-int4}" --features inference,train --retry-delay-ms 20 "${@:4}"; }
# The same in the background, the installer itself the background job (so $! is its pid, for kill -9).
inst_bg() { "$MPK" mt install "$1" --repo-id org/tiny --cache "$2" --variant "${3:-cpu-int4}" --features inference,train --retry-delay-ms 20 "${@:4}" >/dev/null 2>&1 & }
# The tree without the install record (which holds an id and a time).
# (the two install records differ between installs: their time and install id; `unchanged` compares them)
tree_sum() { (cd "$1" && find . -type f ! -name modelpkg_install.json ! -name install_record.json -print0 | sort -z | xargs -0 sha256sum); }
same_tree() { [ "$(tree_sum "$1")" = "$(tree_sum "$2")" ]; }

# ---- reference trees from the directory source
inst "$T/www/pkg" "$T/ref4" >/dev/null 2>&1
inst "$T/www/pkg" "$T/ref16" cpu-fp16 >/dev/null 2>&1
check "directory source: clean install" test -f "$T/ref4/org__tiny/inference/big.bin" -a -f "$T/ref4/org__tiny/modelpkg_install.json"
check "directory source: installed bytes equal the package's" cmp -s "$T/ref4/org__tiny/inference/big.bin" "$T/www/pkg/variants/cpu-int4/inference/big.bin"
differ() { ! cmp -s "$1" "$2"; }
check "the corrupted copy differs" differ "$T/www/pkg/variants/cpu-int4/inference/model.onnx" "$T/www/corrupt/variants/cpu-int4/inference/model.onnx"
check "directory source: no staging left" test -z "$(ls -A "$T/ref4/.staging/org__tiny" | grep -v '^lock$')"

# ---- clean install over HTTP: byte-identical to the directory install
out="$(inst "$BASE/pkg" "$T/c1" cpu-int4 --json 2>/dev/null)"
check "http: clean install" same_tree "$T/c1/org__tiny" "$T/ref4/org__tiny"
check "http: --json result" grep -q '"ok": true' <<<"$out"

# ---- mt select / mt plan read the manifest from the URL as the installer does
out="$("$MPK" mt select "$BASE/pkg" --abi arm64-v8a --json 2>&1)"
check "http: mt select reads the manifest from the URL" grep -q '"chosen": "cpu-int4"' <<<"$out"
out="$("$MPK" mt plan "$BASE/pkg" --variant cpu-int4 2>&1)"
check "http: mt plan from the URL" grep -q 'big.bin' <<<"$out"
out="$("$MPK" mt select "$BASE/nope" 2>&1)"
check "http: mt select on a URL without a manifest says not found" grep -qi 'not found' <<<"$out"

# ---- SIGKILL midway, then re-run: resumes with Range (206 in nginx's log), ends byte-identical
: > "$T/ngx/access.log"
inst_bg "$BASE/slow" "$T/k1"
pid=$!
part="$T/k1/.staging/org__tiny/new/inference/big.bin"
for _ in $(seq 100); do [ -f "$part" ] && [ "$(stat -c %s "$part")" -gt 1500000 ] && break; sleep 0.05; done
kill -9 "$pid"; wait "$pid" 2>/dev/null
have=$(stat -c %s "$part" 2>/dev/null || echo 0)
check "kill: partial file staged ($have bytes), nothing installed" test "$have" -gt 0 -a ! -e "$T/k1/org__tiny"
out="$(inst "$BASE/slow" "$T/k1" cpu-int4 --json 2>"$T/k1.err")" || tail -3 "$T/k1.err"
check "kill: re-run installs" same_tree "$T/k1/org__tiny" "$T/ref4/org__tiny"
check "kill: nginx served the rest as 206 with a Range" grep -q "^206 GET /slow/variants/cpu-int4/inference/big.bin bytes=[1-9][0-9]*-" "$T/ngx/access.log"
check "kill: reused bytes reported" grep -q '"reused_bytes": [1-9]' <<<"$out"

# ---- a working install, then failing sources: the cache stays as it was. Each case gets its own
#      copy of a working install (a verified file staged by one failed attempt is rightly reused by
#      the next, whatever the source, which would hide the next case's failure).
before="$(tree_sum "$T/ref4/org__tiny"; cat "$T/ref4/org__tiny/modelpkg_install.json" "$T/ref4/org__tiny/install_record.json")"
n=0
fresh() { n=$((n + 1)); W="$T/w$n"; cp -r "$T/ref4" "$W"; }
unchanged() { [ "$(tree_sum "$W/org__tiny"; cat "$W/org__tiny/modelpkg_install.json" "$W/org__tiny/install_record.json")" = "$before" ]; }
for src in "$BASE" "$T/www"; do
  kind=$([ "$src" = "$BASE" ] && echo http || echo directory)
  fresh; msg="$(inst "$src/corrupt" "$W" 2>&1 >/dev/null)"; rc=$?
  check "$kind: corrupted file refused (exit 1)" test $rc -eq 1
  check "$kind: corrupted file: names the file and both digests" grep -q "model.onnx.*SHA-256 of the downloaded bytes is [0-9a-f]\{64\}, the manifest says [0-9a-f]\{64\}" <<<"$msg"
  check "$kind: corrupted file: cache unchanged" unchanged
  fresh; msg="$(inst "$src/missing" "$W" 2>&1 >/dev/null)"; rc=$?
  check "$kind: missing file refused (exit 1)" test $rc -eq 1
  check "$kind: missing file: clear error" grep -q "genai_config.json: not found" <<<"$msg"
  check "$kind: missing file: cache unchanged" unchanged
  fresh; msg="$(inst "$src/larger" "$W" 2>&1 >/dev/null)"; rc=$?
  check "$kind: larger than declared refused (exit 1)" test $rc -eq 1
  check "$kind: larger than declared: says so" grep -q "config.json.*larger than declared" <<<"$msg"
  check "$kind: larger than declared: cache unchanged" unchanged
done

# ---- disk full (RLIMIT_FSIZE: writes beyond 1 MiB fail with EFBIG): clear error, cache unchanged
fresh
msg="$( (trap '' XFSZ; ulimit -f 1024; exec "$MPK" mt install "$BASE/pkg" --repo-id org/tiny --cache "$W" --variant cpu-int4 --features inference,train) 2>&1 >/dev/null)"; rc=$?
check "disk full: refused (exit 1)" test $rc -eq 1
check "disk full: says the disk is full" grep -q "disk is full" <<<"$msg"
check "disk full: cache unchanged" unchanged
# and once there is room again, the same install completes from what was staged
out="$(inst "$BASE/pkg" "$W" cpu-int4 --json 2>/dev/null)"
check "disk full: re-run with room completes" grep -q '"ok": true' <<<"$out"
check "disk full: ... resuming the staged part" grep -q '"reused_bytes": [1-9]' <<<"$out"

# ---- a server that drops connections mid-transfer: retried (with Range), then success
FPORT="$(free_port)"
/usr/bin/python3 "$HERE/flaky_http.py" "$T/www/pkg" "$FPORT" 2 "$T/flaky.log" 120 &
FLAKY_PID=$!
for _ in $(seq 50); do curl -fsS -o /dev/null "http://127.0.0.1:$FPORT/none" 2>/dev/null; [ -s "$T/flaky.log" ] && break; sleep 0.1; done
out="$(inst "http://127.0.0.1:$FPORT" "$T/f1" cpu-int4 --json --retries 5 2>/dev/null)"
check "drops: installed after retries" same_tree "$T/f1/org__tiny" "$T/ref4/org__tiny"
check "drops: retries reported" grep -q '"retries": [1-9]' <<<"$out"
check "drops: the retries continued with Range" grep -q "^206 /variants/cpu-int4/inference/big.bin bytes=[1-9]" "$T/flaky.log"
# a server that drops the connection and then ignores Range (200, whole file): the file starts over
GPORT="$(free_port)"
/usr/bin/python3 "$HERE/flaky_http.py" "$T/www/pkg" "$GPORT" 1 "$T/norange.log" 120 1 &
FLAKY2_PID=$!
for _ in $(seq 50); do curl -fsS -o /dev/null "http://127.0.0.1:$GPORT/none" 2>/dev/null; [ -s "$T/norange.log" ] && break; sleep 0.1; done
out="$(inst "http://127.0.0.1:$GPORT" "$T/f3" cpu-int4 --json 2>/dev/null)"
kill "$FLAKY2_PID" 2>/dev/null
check "range ignored: installed" same_tree "$T/f3/org__tiny" "$T/ref4/org__tiny"
check "range ignored: restarts reported" grep -q '"restarts": [1-9]' <<<"$out"
check "range ignored: the server answered a Range with 200" grep -q "^200 /variants/cpu-int4/inference/big.bin bytes=[1-9]" "$T/norange.log"
msg="$(inst "http://127.0.0.1:$FPORT/../x" "$T/f2" cpu-int4 --retries 2 2>&1 >/dev/null)"
check "drops: a dead path is not retried forever" test $? -eq 1

# ---- reinstall (another variant) over a working install, killed at random moments: the old
#      install is always complete and usable; the last run completes
cp -r "$T/ref4" "$T/r"
for i in 1 2 3 4 5 6; do
  inst_bg "$BASE/slow" "$T/r" cpu-fp16
  pid=$!
  sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
  kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  if same_tree "$T/r/org__tiny" "$T/ref4/org__tiny" || same_tree "$T/r/org__tiny" "$T/ref16/org__tiny"; then ok "reinstall killed #$i: a complete install is in place"
  else bad "reinstall killed #$i: the installed tree is neither the old nor the new install"; fi
done
inst "$BASE/slow" "$T/r" cpu-fp16 >/dev/null 2>&1
check "reinstall: the last run completes with the new variant" same_tree "$T/r/org__tiny" "$T/ref16/org__tiny"
check "reinstall: staging cleaned" test -z "$(ls -A "$T/r/.staging/org__tiny" | grep -v '^lock$')"
# the other way, killed while the old (int4, with the 12 MiB file) is being replaced
for i in 1 2 3; do
  inst_bg "$BASE/slow" "$T/r" cpu-int4
  pid=$!
  sleep "0.$((RANDOM % 10))"
  kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  if same_tree "$T/r/org__tiny" "$T/ref16/org__tiny" || same_tree "$T/r/org__tiny" "$T/ref4/org__tiny"; then ok "reinstall int4 killed #$i: a complete install is in place"
  else bad "reinstall int4 killed #$i: neither the old nor the new install"; fi
done

# ---- two concurrent installers: the second fails clearly, or waits (--wait) and succeeds
inst_bg "$BASE/slow" "$T/cc"
pid=$!
for _ in $(seq 100); do [ -f "$T/cc/.staging/org__tiny/new/inference/big.bin" ] && break; sleep 0.05; done
msg="$(inst "$BASE/pkg" "$T/cc" 2>&1 >/dev/null)"; rc=$?
check "concurrent: the second installer fails (exit 1)" test $rc -eq 1
check "concurrent: ... saying another installer is running" grep -q "another installer" <<<"$msg"
inst "$BASE/pkg" "$T/cc" cpu-int4 --wait >/dev/null 2>&1; rc=$?
wait "$pid"; rc1=$?
check "concurrent: both succeed with --wait" test $rc -eq 0 -a $rc1 -eq 0
check "concurrent: the result is a complete install" same_tree "$T/cc/org__tiny" "$T/ref4/org__tiny"

# ---- a planned file without a digest is refused before anything is fetched
cp -r "$T/www/pkg" "$T/www/nodigest"
/usr/bin/python3 - "$T/www/nodigest/mobiletransformers_manifest.json" <<'PY'
import json, sys
p = sys.argv[1]; m = json.load(open(p)); del m["sha256"]["variants/cpu-int4/inference/model.onnx"]
open(p, "w").write(json.dumps(m, indent=2, sort_keys=True) + "\n")
PY
: > "$T/ngx/access.log"
msg="$(inst "$BASE/nodigest" "$T/nd" 2>&1 >/dev/null)"; rc=$?
check "no digest: refused" test $rc -eq 1
check "no digest: names the file" grep -q "model.onnx.*has a size but no sha256 digest.*nothing was fetched" <<<"$msg"
check "no digest: nothing but the manifest fetched" test "$(grep -vc mobiletransformers_manifest.json "$T/ngx/access.log")" -eq 0

finish
