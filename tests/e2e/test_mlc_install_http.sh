#!/usr/bin/env bash
# `modelpkg mlc install` end to end over HTTP (issue 19, docs/mlc-install-e2e.md). The test starts
# its own servers on 127.0.0.1 (free ports), nothing else is assumed:
#  - nginx with a "hub" server block answering /ORG/MODEL/resolve/main/FILE with a 302 to a "CDN"
#    block on another port with a signed query string (the CDN refuses a request without it, 403);
#    the CDN serves the files with nginx's ETags and Range support, /files/slow/ throttled per
#    connection; with openssl, the same two blocks over TLS (a self-signed certificate, --cacert);
#  - mlc_fault_http.py, a hub that misbehaves on one file (truncated, reset, corrupted, short,
#    oversize, endless, slow, 404, 5xx, Retry-After, a file changed between ranges).
# Models made by make_mlc_model.py: real shards (24 shards, one of 34 MiB), with and without the
# sidecar, a bound library, a changed version (an update). Checks: the installed tree passes
# `modelpkg check` and equals the source byte for byte; the logs show the hop; a second install is a
# no-op; --lib binds (a library for other weights is refused before any shard is fetched); a legacy
# model installs; redirect loops, non-http(s) redirects and https->http downgrades are refused; each
# fault ends in a clear error with the previous tree byte-identical, or in a complete install; two
# installers on one cache; >= 30 SIGKILLs at random instants of a first install and of an update,
# each leaving no tree, the old tree or the new one (never a mix), then a resumed install completes.
# usage: test_mlc_install_http.sh MODELPKG SOURCE_DIR   (needs nginx, curl, /usr/bin/python3; openssl for the https cases)
set -uo pipefail
MPK="$1"; SRC="$2"
E2E="$SRC/tests/e2e"
PY=/usr/bin/python3
. "$SRC/tests/integration/expect.sh"
need_tool nginx
need_tool curl
need_tool /usr/bin/python3
KILLS="${MPK_MLC_KILLS:-12}" # per random cycle (two cycles; then MPK_MLC_LATE_KILLS, 8, at the commit)
# On tmpfs when there is one (the caches are copied for every case; a kill is a process's death, not
# a power loss: the file system's durability is not what this tests).
T="$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)"
NGINX_PID=""; FAULT_PID=""
cleanup() {
  [ -z "$NGINX_PID" ] || kill "$NGINX_PID" 2>/dev/null
  [ -z "$FAULT_PID" ] || kill "$FAULT_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
START=$SECONDS
WWW="$T/www"
mkdir -p "$WWW/org" "$WWW/slow" "$WWW/slower" "$T/gen"

# ---- the models
gen() { "$PY" "$E2E/make_mlc_model.py" "$@" >/dev/null || { echo "FAIL: make_mlc_model.py $*"; exit 1; }; }
LIB="$WWW/org/libs/model-webgpu.wasm"
gen "$WWW/org/Model" --lib "$LIB"                                       # v1: 24 shards, shard 0 34 MiB
gen "$WWW/org/F1" --shards 8 --shard-kib 1024 --big-kib 20480 --seed 5  # the faults' model (shard 0: 20 MiB) ...
gen "$WWW/org/F2" --shards 8 --shard-kib 1024 --big-kib 20480 --seed 5 --change 4 --change-big # ... updated
gen "$WWW/org/Legacy" --no-manifest --shards 4 --shard-kib 256 --big-kib 512 --seed 7
gen "$T/gen/other" --shards 3 --shard-kib 64 --big-kib 128 --seed 8 --lib "$WWW/org/libs/other-webgpu.wasm"
gen "$T/gen/K1" --shards 12 --shard-kib 512 --big-kib 4096 --seed 9     # the kill cycles' model ...
gen "$T/gen/K2" --shards 12 --shard-kib 512 --big-kib 4096 --seed 9 --change 11 --change-big # ... updated
V1="$WWW/org/Model"; LEG="$WWW/org/Legacy"; F1="$WWW/org/F1"; F2="$WWW/org/F2"
expect "generator: v1 passes modelpkg check with its library" 0 "OK: all checks hold" -- "$MPK" check "$V1" --lib "$LIB"
expect "generator: the legacy model passes modelpkg check" 0 "OK: all checks hold" -- "$MPK" check "$LEG"
expect "generator: the other library does not bind to v1" 1 "." -- "$MPK" check "$V1" --lib "$WWW/org/libs/other-webgpu.wasm"

# ---- nginx: the hub and the CDN (and both over TLS when openssl is there)
chmod 755 "$T"
chmod -R a+rX "$WWW"
NGX="$T/ngx"; mkdir -p "$NGX"
HUB_PORT="$(free_port)"; CDN_PORT="$(free_port)"; HUBS_PORT="$(free_port)"; CDNS_PORT="$(free_port)"
HUB="http://127.0.0.1:$HUB_PORT"; CDN="http://127.0.0.1:$CDN_PORT"
HUBS="https://127.0.0.1:$HUBS_PORT"; CDNS="https://127.0.0.1:$CDNS_PORT"
SIG="X-Amz-Signature=5f1c0ffee0ddba11&Expires=1999999999"
RATE="${MPK_MLC_RATE:-12m}"
TLS=""
if have_tool openssl && openssl req -x509 -newkey rsa:2048 -nodes -keyout "$NGX/key.pem" -out "$NGX/cert.pem" -days 2 \
    -subj /CN=127.0.0.1 -addext "subjectAltName=IP:127.0.0.1" >/dev/null 2>&1; then
  TLS=1
else
  skip_case "https cases (a certificate for the TLS blocks)" openssl
fi
# The CDN's file locations: the signature is required, as a CDN's signed URL is.
cdn_files() {
  cat <<EOF
    location /files/ { alias $WWW/; if (\$args !~ "(^|&)X-Amz-Signature=[0-9a-f]+(&|\$)") { return 403; } }
    location /files/slow/ { alias $WWW/slow/; limit_rate $RATE; if (\$args !~ "(^|&)X-Amz-Signature=[0-9a-f]+(&|\$)") { return 403; } }
    location /files/slower/ { alias $WWW/slower/; limit_rate 512k; if (\$args !~ "(^|&)X-Amz-Signature=[0-9a-f]+(&|\$)") { return 403; } }
EOF
}
{
  cat <<EOF
daemon off;
worker_processes 1;
pid $NGX/nginx.pid;
error_log $NGX/error.log;
events { worker_connections 512; }
http {
  log_format t '\$status \$request_method \$uri \$http_range \$args \$server_protocol';
  client_body_temp_path $NGX/body; proxy_temp_path $NGX/proxy; fastcgi_temp_path $NGX/fcgi;
  uwsgi_temp_path $NGX/uwsgi; scgi_temp_path $NGX/scgi;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:$HUB_PORT;
    access_log $NGX/hub.log t;
    location / { return 404; }
    location ^~ /loop/ { return 302 $CDN\$request_uri; }
    location ^~ /selfloop/ { return 302 $HUB\$request_uri; }
    location ^~ /evilfile/ { return 302 file:///etc/passwd; }
    location ^~ /evilftp/ { return 302 ftp://127.0.0.1:$CDN_PORT/x; }
    location ~ ^/([^/]+)/([^/]+)/resolve/main/(.*)\$ { return 302 $CDN/files/\$1/\$2/\$3?$SIG; }
  }
  server {
    listen 127.0.0.1:$CDN_PORT;
    access_log $NGX/cdn.log t;
    location / { return 404; }
    location ^~ /loop/ { return 302 $HUB\$request_uri; }
$(cdn_files)
  }
EOF
  [ -z "$TLS" ] || cat <<EOF
  server {
    listen 127.0.0.1:$HUBS_PORT ssl http2;
    ssl_certificate $NGX/cert.pem; ssl_certificate_key $NGX/key.pem;
    access_log $NGX/hubs.log t;
    location / { return 404; }
    location ~ ^/downgrade/([^/]+)/([^/]+)/resolve/main/(.*)\$ { return 302 $CDN/files/\$1/\$2/\$3?$SIG; }
    location ~ ^/([^/]+)/([^/]+)/resolve/main/(.*)\$ { return 302 $CDNS/files/\$1/\$2/\$3?$SIG; }
  }
  server {
    listen 127.0.0.1:$CDNS_PORT ssl http2;
    ssl_certificate $NGX/cert.pem; ssl_certificate_key $NGX/key.pem;
    access_log $NGX/cdns.log t;
    location / { return 404; }
$(cdn_files)
  }
EOF
  echo "}"
} >"$NGX/nginx.conf"
"$(tool_path nginx)" -c "$NGX/nginx.conf" -p "$NGX" 2>"$NGX/start.log" &
NGINX_PID=$!
for _ in $(seq 50); do curl -fsS -o /dev/null "$CDN/files/org/Legacy/tensor-cache.json?$SIG" 2>/dev/null && break; sleep 0.1; done
if ! curl -fsS -o /dev/null "$CDN/files/org/Legacy/tensor-cache.json?$SIG"; then
  cat "$NGX/start.log" "$NGX/error.log" 2>/dev/null; echo "FAIL: nginx did not start"; echo "$pass passed, $((fail + 1)) failed"; exit 1
fi
# The servers themselves, checked with curl: the hop, the signature, ETag and Range.
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
check "servers: the hub answers 302" test "$(code "$HUB/org/Model/resolve/main/tensor-cache.json")" = 302
check "servers: ... to the CDN with a signed query string" test "$(curl -s -o /dev/null -w '%{redirect_url}' "$HUB/org/Model/resolve/main/tensor-cache.json")" = "$CDN/files/org/Model/tensor-cache.json?$SIG"
check "servers: the CDN refuses an unsigned request (403)" test "$(code "$CDN/files/org/Model/tensor-cache.json")" = 403
check "servers: the CDN answers a Range with 206" test "$(code -r 5-9 "$CDN/files/org/Model/params_shard_0.bin?$SIG")" = 206
check "servers: the CDN sends an ETag" grep -qi '^etag: "' <<<"$(curl -s -D - -o /dev/null "$CDN/files/org/Model/params_shard_1.bin?$SIG")"
check "servers: a redirect loop is a loop" test "$(code -L --max-redirs 8 "$HUB/loop/x/resolve/main/a")" = 302
[ -z "$TLS" ] || check "servers: https hub -> https CDN with the certificate" cmp -s <(curl -sfL --cacert "$NGX/cert.pem" "$HUBS/org/Legacy/resolve/main/tensor-cache.json") "$LEG/tensor-cache.json"

# ---- helpers
# inst SRC CACHE [OPTIONS...]: the installer under a timeout (TO seconds, default 120): $rc, stdout
# in $out, stderr in $msg, the time taken in $ms.
inst() {
  local src="$1" cache="$2"; shift 2
  local t0="${EPOCHREALTIME/[.,]/}"
  out="$(timeout "${TO:-120}" "$MPK" mlc install "$src" --cache "$cache" --retry-delay-ms 20 "$@" 2>"$T/err")"
  rc=$?
  ms=$(((${EPOCHREALTIME/[.,]/} - t0) / 1000))
  msg="$(<"$T/err")"
}
# files DIR: "<sha256>  ./<path>" of every regular file below DIR but the install record, sorted.
files() { (cd "$1" 2>/dev/null && find . -type f ! -path ./modelpkg_mlc_install.json -print0 | LC_ALL=C sort -z | xargs -0r sha256sum); }
# all_files DIR: the same with the install record (a no-op leaves it as it was).
all_files() { (cd "$1" 2>/dev/null && find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum); }
# model_files MODEL [LIB]: what an install of MODEL (with LIB) holds besides its record.
model_files() {
  { files "$1"; [ -z "${2:-}" ] || printf '%s  ./%s\n' "$(sha256sum <"$2" | cut -c1-64)" "$(basename "$2")"; } | LC_ALL=C sort -k2
}
# is_model TREE MODEL [LIB]: TREE holds exactly MODEL's files (and LIB), byte for byte, and a record.
is_model() { [ -f "$1/modelpkg_mlc_install.json" ] && [ "$(files "$1" | LC_ALL=C sort -k2)" = "$(model_files "$2" "${3:-}")" ]; }
record_ok() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert isinstance(d,dict) and isinstance(d.get("installId"),str) and d["installId"]' "$1/modelpkg_mlc_install.json" 2>/dev/null; }
# staged_within CACHE NAME MODEL: no file below the cache's staging holds more bytes than the shard
# of its name declares (an oversize or endless response never fills the disk). Prints offenders.
staged_within() {
  "$PY" - "$1/.staging/$2" "$3/tensor-cache.json" <<'PY'
import json, os, sys
d, tc = sys.argv[1], json.load(open(sys.argv[2]))
size = {r["dataPath"]: r["nbytes"] for r in tc["records"]}
bad = []
for dp, dirs, fs in os.walk(d):
    for f in fs:
        p = os.path.join(dp, f)
        if not os.path.islink(p) and f in size and os.path.getsize(p) > size[f]:
            bad.append("%s: %d bytes, %d declared" % (p, os.path.getsize(p), size[f]))
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
}
json_has() { grep -Eq "\"$1\": *$2" <<<"$out"; }
show() { [ "$rc" -eq "${1:-0}" ] || { echo "  (exit $rc, ${ms} ms)"; first_lines 6 "$msg"; }; }
NAME=org__Model
M1="$HUB/org/Model/resolve/main/"

phase() { echo "[$((SECONDS - START)) s] $*"; }
phase "models generated, servers up"
# ---- 1. a clean install through the hub
: >"$NGX/hub.log"; : >"$NGX/cdn.log"
inst "$M1" "$T/c1" --json
check "install: exit 0 (${ms} ms)" test "$rc" -eq 0; show
check "install: --json says ok" json_has ok true
check "install: the tree is <cache>/ORG__MODEL and holds v1's files byte for byte" is_model "$T/c1/$NAME" "$V1"
check "install: the record holds an installId" record_ok "$T/c1/$NAME"
expect "install: the installed tree passes modelpkg check" 0 "OK: all checks hold" -- "$MPK" check "$T/c1/$NAME"
check "install: no staging left but the lock" test -d "$T/c1/$NAME" -a -z "$(ls -A "$T/c1/.staging/$NAME" 2>/dev/null | grep -v '^lock$')"
nshards=$(ls "$V1" | grep -c '^params_shard_')
hop_ok() { # every shard: a 302 at the hub and a 200/206 at the CDN with the signature
  local f
  for f in $(cd "$V1" && ls params_shard_*); do
    grep -q "^302 GET /org/Model/resolve/main/$f " "$NGX/hub.log" || { echo "  no 302 for $f at the hub"; return 1; }
    grep -Eq "^20[06] GET /files/org/Model/$f .*X-Amz-Signature=" "$NGX/cdn.log" || { echo "  no signed 200/206 for $f at the CDN"; return 1; }
  done
}
check "install: the logs show the hop for each of the $nshards shards (hub 302, CDN 200/206 signed)" hop_ok
check "install: the CDN refused nothing (no unsigned request: the query string was kept)" test "$(grep -c '^403 ' "$NGX/cdn.log")" -eq 0
n206=$(grep -c "^206 GET /files/org/Model/params_shard_0.bin bytes=" "$NGX/cdn.log")
check "install: the 34 MiB shard came in ranges ($n206 ranged requests, 206)" test "$n206" -ge 2
# the model URL without resolve/main/: cleanModelUrl adds it
inst "$HUB/org/Model" "$T/c2"
check "install: a URL without /resolve/main/ gains it (WebLLM's cleanModelUrl)" is_model "$T/c2/$NAME" "$V1"; show
# a second install: a no-op, nothing fetched, the tree untouched
before="$(all_files "$T/c1/$NAME")"
: >"$NGX/cdn.log"
inst "$M1" "$T/c1" --json
check "second install: exit 0" test "$rc" -eq 0; show
check "second install: --json says unchanged" json_has unchanged '(1|true)'
check "second install: no shard requested from the CDN" test "$(grep -c params_shard_ "$NGX/cdn.log")" -eq 0
check "second install: the tree, record included, is byte-identical" test -n "$before" -a "$(all_files "$T/c1/$NAME")" = "$before"
rm -rf "$T/c2"
# the directory source makes the same tree
inst "$V1" "$T/cd" --name "$NAME"
check "directory source: the same tree" is_model "$T/cd/$NAME" "$V1"; show
rm -rf "$T/cd"

phase "the library"
# ---- 2. the library
inst "$M1" "$T/cl" --lib "$LIB"
check "--lib FILE: installed, the library in the tree byte for byte" is_model "$T/cl/$NAME" "$V1" "$LIB"; show
expect "--lib FILE: the tree passes modelpkg check bound to its library" 0 "binding: +chat.completions" -- "$MPK" check "$T/cl/$NAME" --lib "$T/cl/$NAME/$(basename "$LIB")"
rm -rf "$T/cl"
inst "$M1" "$T/cl" --lib "$HUB/org/libs/resolve/main/$(basename "$LIB")"
check "--lib URL (through the hub's 302): the library in the tree byte for byte" is_model "$T/cl/$NAME" "$V1" "$LIB"; show
rm -rf "$T/cl"
: >"$NGX/cdn.log"
inst "$M1" "$T/cm" --lib "$WWW/org/libs/other-webgpu.wasm"
check "--lib for other weights: refused (exit 1)" test "$rc" -eq 1; show 1
check "--lib for other weights: the message names the library" grep -q "other-webgpu.wasm" <<<"$msg"
check "--lib for other weights: no shard was fetched" test "$(grep -c params_shard_ "$NGX/cdn.log")" -eq 0
check "--lib for other weights: no tree" test ! -e "$T/cm/$NAME"
rm -rf "$T/cm"

# ---- 3. a legacy model (no mlc-model-manifest.json)
inst "$HUB/org/Legacy/resolve/main/" "$T/cg"
check "legacy: installed byte for byte, no sidecar" is_model "$T/cg/org__Legacy" "$LEG"; show
check "legacy: ... and no mlc-model-manifest.json in the tree" test ! -e "$T/cg/org__Legacy/mlc-model-manifest.json"
expect "legacy: the tree passes modelpkg check" 0 "OK: all checks hold" -- "$MPK" check "$T/cg/org__Legacy"
rm -rf "$T/cg"

phase "refused redirects"
# ---- 4. redirects that must be refused
refused_redirect() { # NAME URL PATTERN [OPTIONS...]
  local what="$1" url="$2" pat="$3"; shift 3
  TO=30 inst "$url" "$T/cr" --name Refused "$@"
  check "$what: refused (exit 1, ${ms} ms)" test "$rc" -eq 1; show 1
  check "$what: the message says why" grep -Eqi "$pat" <<<"$msg"
  check "$what: no tree" test ! -e "$T/cr/Refused"
  rm -rf "$T/cr"
}
refused_redirect "redirect loop (hub <-> CDN)" "$HUB/loop/Model/resolve/main/" "redirect"
refused_redirect "redirect loop (hub -> itself)" "$HUB/selfloop/Model/resolve/main/" "redirect"
refused_redirect "redirect to file:///etc/passwd" "$HUB/evilfile/Model/resolve/main/" "file"
refused_redirect "redirect to ftp://" "$HUB/evilftp/Model/resolve/main/" "ftp"
if [ -n "$TLS" ]; then
  inst "$HUBS/org/Legacy/resolve/main/" "$T/cs" --cacert "$NGX/cert.pem"
  check "https: hub -> CDN over TLS (--cacert) installs" is_model "$T/cs/org__Legacy" "$LEG"; show
  proto="$(grep -o 'HTTP/[0-9.]*$' "$NGX/cdns.log" | sort | uniq -c | tr '\n' ' ')"
  echo "note: https CDN requests by protocol: $proto"
  rm -rf "$T/cs"
  : >"$NGX/cdn.log"
  refused_redirect "https -> http downgrade" "$HUBS/downgrade/org/Legacy/resolve/main/" "http" --cacert "$NGX/cert.pem"
  check "https -> http downgrade: nothing asked of the http CDN" test ! -s "$NGX/cdn.log"
fi

phase "faults"
# ---- 5. faults: mlc_fault_http.py serves F2, an update of F1 (8 shards, shard 0 of 20 MiB: fetched in
#      ranges; shards 0..4 changed, so the faulty shard is fetched, not copied from the installed
#      tree); each case starts from a copy of a cache with F1 installed (from the hub) and ends refused
#      with F1 byte-identical (record included), or with F2 complete.
FAULT_PORT="$(free_port)"; FH="http://127.0.0.1:$FAULT_PORT"
"$PY" "$E2E/mlc_fault_http.py" "$WWW/org" "$FAULT_PORT" "$T/fault.log" 900 &
FAULT_PID=$!
for _ in $(seq 50); do curl -s -o /dev/null "$FH/x" 2>/dev/null && break; sleep 0.1; done
FN=org__F1
inst "$HUB/org/F1/resolve/main/" "$T/cf"
check "faults: F1 installed from the hub" is_model "$T/cf/$FN" "$F1"; show
F1_ALL="$(all_files "$T/cf/$FN")"; F2_FILES="$(model_files "$F2")"
S1=params_shard_1.bin; BIG=params_shard_0.bin
# fault MODE TARGET WANT PATTERN [OPTIONS...]: WANT "refused" (exit 1, the message names TARGET and
# matches PATTERN, v1 untouched) or "complete" (exit 0, v2 in place, modelpkg check passes).
fault() {
  local mode="$1" target="$2" want="$3" pat="$4"; shift 4
  local W="$T/w" what="fault $mode on ${target}${*:+ ($*)}"
  rm -rf "$W"; cp -a "$T/cf" "$W"
  # WATCH=1: while the installer runs, the largest size any staged file of the target's name reached
  local wpid=""
  if [ -n "${WATCH:-}" ]; then
    rm -f "$T/watch.stop"; echo 0 >"$T/watch.max"
    (
      shopt -s globstar nullglob; max=0
      while [ ! -e "$T/watch.stop" ]; do
        for f in "$W/.staging/$FN"/**/"$target"; do
          sz=$(stat -c %s "$f" 2>/dev/null) || continue
          [ "$sz" -le "$max" ] || { max=$sz; echo "$max" >"$T/watch.max"; }
        done
        sleep 0.01
      done
    ) &
    wpid=$!
  fi
  TO="${FTO:-60}" inst "$FH/$mode/$target/F2/resolve/main/" "$W" --name "$FN" --json "$@"
  if [ -n "$wpid" ]; then
    touch "$T/watch.stop"; wait "$wpid"
    local declared; declared=$(stat -c %s "$F2/$target")
    check "$what: while it ran, the staged $target never held more than its $declared bytes (at most $(<"$T/watch.max"))" \
      test "$(<"$T/watch.max")" -le "$declared"
  fi
  # "refused-if-changed": refused when the file did change under the installer (a 206 of it was sent,
  # then the server switched), else — fetched in one stream, the change never happened — complete
  # (whether ranges happened at all is its own check below)
  if [ "$want" = refused-if-changed ]; then
    want=complete; ! grep -q "^206 ${mode%%.*} /$mode/$target/" "$T/fault.log" || want=refused
  fi
  if [ "$want" = refused ]; then
    check "$what: refused (exit 1, ${ms} ms)" test "$rc" -eq 1; show 1
    # (with --json the refusal is in the document on stdout, the events on stderr)
    check "$what: the message names the file and the rule" grep -Eq "$target.*($pat)|($pat).*$target" <<<"$out$msg"
    check "$what: the previous tree is byte-identical" test "$(all_files "$W/$FN")" = "$F1_ALL"
  else
    check "$what: complete (exit 0, ${ms} ms)" test "$rc" -eq 0; show
    check "$what: the tree is F2, byte for byte" eval '[ -f "$W/$FN/modelpkg_mlc_install.json" ] && [ "$(files "$W/$FN" | LC_ALL=C sort -k2)" = "$F2_FILES" ]'
    [ "$rc" -ne 0 ] || [ -z "$pat" ] || check "$what: --json reports it ($pat)" grep -Eq "$pat" <<<"$out"
  fi
  local over; over="$(staged_within "$W" "$FN" "$F2")"
  check "$what: nothing staged beyond a shard's declared size" test -z "$over"; [ -z "$over" ] || echo "$over"
}
fault truncate-2 "$S1" complete '"retries": *[1-9]'
fault truncate-2.b "$BIG" complete '"retries": *[1-9]' --connections 4
fault truncate-99 "$S1" refused "ends after|shorter|transfer|closed|partial" --retries 3
fault reset-2 "$S1" complete '"retries": *[1-9]'
fault reset-2.b "$BIG" complete '"retries": *[1-9]' --connections 4
fault reset-99 "$S1" refused "reset|recv|connection|transfer" --retries 3
fault corrupt "$S1" refused "MD5"
fault short "$S1" refused "shorter than declared|ends after"
WATCH=1 fault oversize "$S1" refused "larger than declared"
WATCH=1 FTO=30 fault infinite "$S1" refused "larger than declared"
check "fault infinite: cut off quickly (${ms} ms)" test "$ms" -lt 20000
FTO=40 fault slow "$S1" refused "low-speed|deadline|timeout" --low-speed 4096 --low-speed-time 2 --timeout 10 --retries 2
check "fault slow: given up within the deadline (${ms} ms)" test "$ms" -lt 30000
fault 404 "$S1" refused "not found"
fault 5xx-2 "$S1" complete '"retries": *[1-9]'
fault 503ra-1 "$S1" complete ""
check "fault 503 with Retry-After: 1: the installer waited (${ms} ms >= 1000)" test "$ms" -ge 1000
fault 5xx-99 "$S1" refused "HTTP 500|500" --retries 3
# a file changed between ranges (the 20 MiB shard, 4 connections)
: >"$T/fault.log"
fault changed "$BIG" refused-if-changed "MD5|changed" --connections 4
check "fault changed: the shard was fetched in ranges (a 206 before the change)" grep -q "^206 changed /changed/$BIG/" "$T/fault.log"
fault etag-changed "$BIG" complete "" --connections 4
check "fault etag-changed: a range after the change was asked with If-Range and answered 200 (a restart)" \
  grep -Eq "^200 etag-changed /etag-changed/$BIG/F2/resolve/main/$BIG bytes=[0-9]+-[0-9]* \"" "$T/fault.log"
fault changed-noifrange "$BIG" refused-if-changed "MD5|changed" --connections 4
check "fault changed-noifrange: the shard was fetched in ranges (a 206 before the change)" grep -q "^206 changed-noifrange /changed-noifrange/$BIG/" "$T/fault.log"
kill "$FAULT_PID" 2>/dev/null; wait "$FAULT_PID" 2>/dev/null; FAULT_PID=""

phase "two installers"
# ---- 6. two installers on one cache (the throttled CDN path: the first is still running)
serve_model() { # serve_model NAME DIR: $WWW/slow/NAME becomes DIR's copy in one rename
  rm -rf "$WWW/slow/.$1.next"; cp -r "$2" "$WWW/slow/.$1.next"; chmod -R a+rX "$WWW/slow/.$1.next"
  rm -rf "$WWW/slow/.$1.prev"; [ ! -e "$WWW/slow/$1" ] || mv "$WWW/slow/$1" "$WWW/slow/.$1.prev"
  mv "$WWW/slow/.$1.next" "$WWW/slow/$1"; rm -rf "$WWW/slow/.$1.prev"
}
serve_model K "$T/gen/K1"
cp -r "$T/gen/K1" "$WWW/slower/K"; chmod -R a+rX "$WWW/slower"
KURL="$HUB/slow/K/resolve/main/"; KN=slow__K; C="$T/cc"
# the first one through the 512 KiB/s-per-connection path (seconds), under the same name
timeout 120 "$MPK" mlc install "$HUB/slower/K/resolve/main/" --name "$KN" --cache "$C" --retry-delay-ms 20 >"$T/first.out" 2>&1 &
pid=$!
for _ in $(seq 200); do [ -n "$(find "$C/.staging/$KN" -name 'params_shard_*' -size +1k 2>/dev/null)" ] && break; sleep 0.02; done
check "two installers: the first one is running" kill -0 "$pid"
TO=20 inst "$KURL" "$C"
check "two installers: the second, without --wait, is refused at once (exit 1, ${ms} ms)" test "$rc" -eq 1 -a "$ms" -lt 5000; show 1
check "two installers: ... saying another installer holds the tree" grep -qi "another installer" <<<"$msg"
TO=60 inst "$KURL" "$C" --wait
rc2=$rc; wait "$pid"; rc1=$?
check "two installers: the first and the one with --wait both succeed" test "$rc1" -eq 0 -a "$rc2" -eq 0
[ "$rc1" -eq 0 ] || first_lines 5 "$(cat "$T/first.out")"
check "two installers: one complete tree" is_model "$C/$KN" "$T/gen/K1"
check "two installers: nothing else in the cache" test "$(LC_ALL=C ls -A "$C")" = "$(printf '.staging\n%s' "$KN")"
rm -rf "$T/C.K1"; cp -a "$C" "$T/C.K1"

phase "SIGKILL cycles"
# ---- 7. SIGKILL at random instants: a first install (none -> K1) and an update (K1 -> K2)
mkfifo "$T/never"; exec {NEVER}<>"$T/never"
# pause MS: sleep MS milliseconds without a process (no fork: on a busy machine one costs tens of ms)
pause() { local s; printf -v s '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); read -r -t "$s" -u "$NEVER" _ || :; }
K1F="$(model_files "$T/gen/K1")"; K2F="$(model_files "$T/gen/K2")"
# state: none, K1, K2 or "mixed" (a tree that is neither, or a tree without its record)
state() {
  [ -e "$C/$KN" ] || { S=none; return; }
  local f; f="$(files "$C/$KN" | LC_ALL=C sort -k2)"
  if [ -f "$C/$KN/modelpkg_mlc_install.json" ] && [ "$f" = "$K1F" ]; then S=K1
  elif [ -f "$C/$KN/modelpkg_mlc_install.json" ] && [ "$f" = "$K2F" ]; then S=K2
  else S=mixed; fi
}
# The classification can fail: K1 with one shard of K2 is "mixed", and so is K1 without its record.
rm -rf "$T/cx"; cp -a "$C" "$T/cx"; C="$T/cx"
cp "$T/gen/K2/params_shard_3.bin" "$C/$KN/"; state
check "self-test: a tree of K1 with one shard of K2 is 'mixed'" test "$S" = mixed
cp "$T/gen/K1/params_shard_3.bin" "$C/$KN/"; state
check "self-test: ... put back, it is K1" test "$S" = K1
rm "$C/$KN/modelpkg_mlc_install.json"; state
check "self-test: K1 without its record is 'mixed'" test "$S" = mixed
C="$T/cc"; rm -rf "$T/cx"
INSTALL=("$MPK" mlc install "$KURL" --cache "$C" --retry-delay-ms 20)
LANDED=0; RETIRED=0
# retired_left: after a resumed install, count a cache whose staging still holds a retired tree (an
# old version renamed out of place by a commit the kill cut before it deleted it)
retired_left() { [ -z "$(ls -A "$C/.staging/$KN/retired" 2>/dev/null)" ] || RETIRED=$((RETIRED + 1)); }
# cycle NAME FROM TO: FROM "none" (an empty cache) or K1 (its saved cache); RUNS kills.
cycle() {
  local name="$1" from="$2" to="$3" t0 t dur=999999 j
  fresh() { rm -rf "$C"; if [ "$from" = none ]; then mkdir -p "$C"; else cp -a "$T/C.$from" "$C"; fi; }
  for j in 1 2; do
    fresh; t0="${EPOCHREALTIME/[.,]/}"; timeout 120 "${INSTALL[@]}" >/dev/null 2>&1; t=$(((${EPOCHREALTIME/[.,]/} - t0) / 1000))
    [ "$t" -ge "$dur" ] || dur=$t
  done
  local max=$((dur * 5 / 4)) landed=0 tries=0 n_from=0 n_to=0 n_bad=0 delay pid rc
  while [ "$landed" -lt "$KILLS" ] && [ "$tries" -lt $((3 * KILLS)) ]; do
    tries=$((tries + 1))
    fresh
    delay=$((RANDOM % (max + 1)))
    "${INSTALL[@]}" >/dev/null 2>&1 &
    pid=$!
    pause "$delay"
    kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rc=$?
    [ "$rc" -ne 137 ] || landed=$((landed + 1))
    state
    if [ "$S" = "$from" ]; then n_from=$((n_from + 1)); elif [ "$S" = "$to" ]; then n_to=$((n_to + 1))
    else n_bad=$((n_bad + 1)); bad "$name kill #$tries (after $delay ms, status $rc): the tree is '$S' (want $from or $to)"; fi
    TO=60 inst "$KURL" "$C" --json; state
    if [ "$rc" -ne 0 ] || [ "$S" != "$to" ]; then
      n_bad=$((n_bad + 1)); bad "$name kill #$tries: the resumed install exited $rc and left '$S' (want $to)"; first_lines 4 "$msg"
    fi
    retired_left
  done
  LANDED=$((LANDED + landed))
  echo "$name: the install takes $dur ms; $tries kills at 0..$max ms, $landed while it ran: $n_from left $from, $n_to left $to; $n_bad failures"
  check "$name: $landed kills landed while the installer ran (wanted $KILLS)" test "$landed" -ge "$KILLS"
  check "$name: every kill left $from or $to whole, and the resumed install completed" test "$n_bad" -eq 0
}
cycle first-install none K1
serve_model K "$T/gen/K2"
cycle update K1 K2
# The commit's instant: a random kill lands there rarely, so these kills are timed from the installer's
# own progress (--json events on stderr, read from a FIFO): 0..6 ms after the first event whose "done"
# reaches 95 % of "total" — in practice the byte event of the last staged byte; the documents, the
# commit and the cleanup of the old tree follow within some 10-20 ms. Until MPK_MLC_LATE_KILLS (8)
# have landed (at most 6 x as many tries).
late_cycle() {
  local runs="${MPK_MLC_LATE_KILLS:-8}" tries=0 pid rc line seen delay n_from=0 n_to=0 n_bad=0 n_seen=0 landed=0 ev
  local missed=0
  while [ "$landed" -lt "$runs" ] && [ "$tries" -lt $((6 * runs)) ]; do
    tries=$((tries + 1))
    rm -rf "$C"; cp -a "$T/C.K1" "$C"
    rm -f "$T/ev"; mkfifo "$T/ev"
    "${INSTALL[@]}" --json >/dev/null 2>"$T/ev" &
    pid=$!
    exec {ev}<"$T/ev"
    seen=""
    while IFS= read -r -t 30 -u "$ev" line; do
      if [[ $line =~ \"done\":([0-9]+),\"total\":([0-9]+) ]] && [ "${BASH_REMATCH[2]}" != 0 ] &&
        [ $((BASH_REMATCH[1] * 20)) -ge $((BASH_REMATCH[2] * 19)) ]; then seen=1; break; fi
    done
    # on a loaded machine the installer can finish before a late kill: after two misses in a row
    # the next kill is sent at once (0 ms) until one lands
    delay=0; [ "$missed" -ge 2 ] || delay=$((RANDOM % 7))
    pause "$delay"
    kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rc=$?
    exec {ev}<&-
    [ -z "$seen" ] || n_seen=$((n_seen + 1))
    if [ "$rc" -eq 137 ]; then landed=$((landed + 1)); missed=0; else missed=$((missed + 1)); fi
    state
    if [ "$S" = K1 ]; then n_from=$((n_from + 1)); elif [ "$S" = K2 ]; then n_to=$((n_to + 1))
    else n_bad=$((n_bad + 1)); bad "commit kill #$tries ($delay ms after 95 % of the bytes, status $rc): the tree is '$S' (want K1 or K2)"; fi
    TO=60 inst "$KURL" "$C" --json; state
    if [ "$rc" -ne 0 ] || [ "$S" != K2 ]; then
      n_bad=$((n_bad + 1)); bad "commit kill #$tries: the resumed install exited $rc and left '$S' (want K2)"; first_lines 4 "$msg"
    fi
    retired_left
  done
  LANDED=$((LANDED + landed))
  echo "commit: $tries kills 0..6 ms after 95 % of the bytes ($n_seen saw it), $landed while the installer ran: $n_from left K1, $n_to left K2; $n_bad failures"
  check "commit: the installer reported 95 % of its bytes before each kill" test "$n_seen" -eq "$tries"
  check "commit: $landed kills landed at the end of the install (wanted $runs)" test "$landed" -ge "$runs"
  check "commit: every kill at the commit left K1 or K2 whole, and the resumed install completed" test "$n_bad" -eq 0
}
late_cycle
check "SIGKILL: $LANDED kills landed while an installer ran (at least 30)" test "$LANDED" -ge 30
# A kill between a commit's swap and its deletion of the old tree leaves that tree, whole, in
# .staging/NAME/retired/; the resumed install's stage open deletes it (no reader holds it:
# docs/fetch.md, "Readers and retired trees"), so no resumed install may leave one.
check "SIGKILL: no resumed install left an old tree in .staging/$KN/retired/ ($RETIRED did)" test "$RETIRED" -eq 0
check "after the kills: nothing staged but the lock" test -z "$(ls -A "$C/.staging/$KN" 2>/dev/null | grep -v -e '^lock$')"
expect "after the kills: the tree passes modelpkg check" 0 "OK: all checks hold" -- "$MPK" check "$C/$KN"

echo "elapsed: $((SECONDS - START)) s"
finish
