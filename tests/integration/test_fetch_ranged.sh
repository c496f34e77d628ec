#!/usr/bin/env bash
# Parallel ranged transfers of the fetch engine (docs/fetch.md, "Ranged transfers"), driven through
# its public API by mpk_fetch_get (tests/util/fetch_get.c). Starts its own nginx on 127.0.0.1
# (several concurrent Range requests over kept-alive connections, HTTP/2 over TLS with a self-signed
# certificate made by openssl here, SIGKILL and resume from the recorded prefix, peak RSS) and
# tests/integration/ranged_http.py (python3 stdlib) for the faults nginx cannot make: piece 0 late,
# a piece dropped mid-transfer, Range ignored, a file changed between ranges (once; every time), a
# Content-Range total larger than declared, 503 with Retry-After. Then `modelpkg mt install
# --connections N --cacert FILE` over https (HTTP/2).
# usage: test_fetch_ranged.sh FETCH_GET MODELPKG SHARED_DIR
set -uo pipefail
GET="$1"
MPK="$2"
TINY="$3/conformance/mobiletransformers/tiny_package"
HERE="$(cd "$(dirname "$0")" && pwd)"
. "$HERE/expect.sh"
need_tool nginx
need_tool curl
need_tool /usr/bin/python3
NGINX="$(tool_path nginx)"
T="$(mktemp -d)"
NGINX_PID=""
PY_PID=""
BG_PID=""
cleanup() {
  [ -n "$BG_PID" ] && kill -9 "$BG_PID" 2>/dev/null
  [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null
  [ -n "$PY_PID" ] && kill "$PY_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
MiB=1048576

# ---- files: 64 MiB and 256 MiB for nginx; 8 MiB (and another 8 MiB, its ".a" version) for python
mkdir -p "$T/www" "$T/py"
head -c $((64 * MiB)) /dev/urandom > "$T/www/big64.bin"
for f in a b c; do head -c $((12 * MiB)) /dev/urandom > "$T/www/own_$f.bin"; done
head -c $((8 * MiB)) /dev/urandom > "$T/py/f8.bin"
head -c $((8 * MiB)) /dev/urandom > "$T/py/f8.bin.a"
echo $((2 * MiB)) > "$T/py/f8.bin.drop"
md5() { local m; m="$(md5sum "$1")"; printf '%s\n' "${m%% *}"; }
BIG64="big64.bin:$((64 * MiB)):$(md5 "$T/www/big64.bin")"
F8="f8.bin:$((8 * MiB)):$(md5 "$T/py/f8.bin")"
cp -r "$TINY" "$T/www/pkg"
chmod 755 "$T"
chmod -R a+rX,u+w "$T/www"

# ---- nginx: plain, throttled (slow/), and https with HTTP/2 when openssl is there
PORT="$(free_port)"
TLS_PORT="$(free_port)"
mkdir -p "$T/ngx"
TLS_BLOCK=""
if have_tool openssl; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ngx/key.pem" -out "$T/ngx/cert.pem" -days 2 \
    -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" >/dev/null 2>&1 || bad "openssl could not make a certificate"
  TLS_BLOCK="server { listen 127.0.0.1:$TLS_PORT ssl http2; root $T/www;
    ssl_certificate $T/ngx/cert.pem; ssl_certificate_key $T/ngx/key.pem; }"
fi
cat > "$T/ngx/nginx.conf" <<EOF
daemon off;
worker_processes 1;
pid $T/ngx/nginx.pid;
error_log $T/ngx/error.log;
events { worker_connections 256; }
http {
  log_format t '\$status \$uri \$http_range \$connection \$msec \$request_time \$server_protocol';
  access_log $T/ngx/access.log t;
  client_body_temp_path $T/ngx/body; proxy_temp_path $T/ngx/proxy; fastcgi_temp_path $T/ngx/fcgi;
  uwsgi_temp_path $T/ngx/uwsgi; scgi_temp_path $T/ngx/scgi;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:$PORT;
    root $T/www;
    location /slow/ { alias $T/www/; limit_rate 4m; }
  }
  $TLS_BLOCK
}
EOF
"$NGINX" -c "$T/ngx/nginx.conf" -p "$T/ngx" 2>"$T/ngx/start.log" &
NGINX_PID=$!
BASE="http://127.0.0.1:$PORT"
for _ in $(seq 50); do curl -fsS -o /dev/null -r 0-0 "$BASE/big64.bin" 2>/dev/null && break; sleep 0.1; done
curl -fsS -o /dev/null -r 0-0 "$BASE/big64.bin" || { tail -5 "$T/ngx/start.log" "$T/ngx/error.log"; echo "FAIL: nginx did not start"; exit 1; }

/usr/bin/python3 "$HERE/ranged_http.py" "$T/py" "$T/py.port" "$T/py.log" 2>"$T/py.err" &
PY_PID=$!
for _ in $(seq 50); do [ -s "$T/py.port" ] && break; sleep 0.1; done
PY="http://127.0.0.1:$(cat "$T/py.port")"

# get SOURCE CACHE [options] FILES...: the download and commit; its output in $out, status in $rc
get() { out="$(timeout 120 "$GET" "$1" "$2" m "${@:3}" 2>&1)"; rc=$?; }
field() { local v="${out##*$1=}"; printf '%s\n' "${v%% *}"; }
committed_ok() { [ "$(md5 "$1")" = "$(md5 "$2")" ]; }
# pylog MODE: the python server's log lines of MODE (time mode file range if-range), in a file
pylog() { : > "$T/sel.log"; while read -r l; do case "$l" in *" $1 f8.bin "*) printf '%s\n' "$l" >> "$T/sel.log" ;; esac; done < "$T/py.log"; }
count_lines() { local n=0; while read -r _; do n=$((n + 1)); done < "$1"; echo "$n"; }

# ---- 1. nginx: 64 MiB in 4 MiB ranges over 4 connections (throttled so that they overlap)
: > "$T/ngx/access.log"
get "$BASE/slow" "$T/c1" --connections 4 --range-bytes $((4 * MiB)) "$BIG64"
if [ $rc -eq 0 ] && committed_ok "$T/c1/m/big64.bin" "$T/www/big64.bin"; then ok "64 MiB in ranges verified ($out)"; else bad "64 MiB in ranges: $out"; fi
# Range requests: 16 of them, over at most 4 connections (kept alive), at least 3 at once.
/usr/bin/python3 - "$T/ngx/access.log" > "$T/an.txt" <<'EOF'
import sys
rows = [l.split() for l in open(sys.argv[1]) if " bytes=" in l]
conns = {r[3] for r in rows}
iv = [(float(r[4]) - float(r[5]), float(r[4])) for r in rows]
peak = max(sum(1 for a, b in iv if a <= t < b) for t, _ in iv) if iv else 0
print(len(rows), len(conns), peak, sum(1 for r in rows if r[0] == "206"))
EOF
read -r nreq nconn peak n206 < "$T/an.txt"
if [ "$nreq" -eq 16 ] && [ "$n206" -eq 16 ] && [ "$nconn" -le 4 ] && [ "$peak" -ge 3 ]; then
  ok "nginx saw $nreq Range requests (206) over $nconn connections, $peak at once"
else bad "nginx access log: $nreq range requests, $n206 206s, $nconn connections, $peak at once"; fi

# ---- 1b. who takes the pieces: 3 files of 12 MiB (3 pieces of 4 MiB), 2 connections. Each file is
# fetched in order by the connection that started it while another file is still to start (one
# writer per file); the last file's pieces are then shared (no connection idles at the tail).
: > "$T/ngx/access.log"
OWN=""
for f in a b c; do OWN="$OWN own_$f.bin:$((12 * MiB)):$(md5 "$T/www/own_$f.bin")"; done
# shellcheck disable=SC2086  # OWN: one word per file
get "$BASE/slow" "$T/c1b" --connections 2 --range-bytes $((4 * MiB)) $OWN
if [ $rc -eq 0 ] && committed_ok "$T/c1b/m/own_c.bin" "$T/www/own_c.bin"; then ok "3 split files verified ($out)"; else bad "3 split files: $out"; fi
/usr/bin/python3 - "$T/ngx/access.log" > "$T/own.txt" <<'EOF'
import sys
rows = [l.split() for l in open(sys.argv[1]) if " bytes=" in l]
req = [(r[1].rsplit("/", 1)[-1], float(r[4]) - float(r[5]), float(r[4])) for r in rows]  # file, start, end
last_start = min(s for f, s, e in req if f == "own_c.bin")
# two requests of one file in flight at once (by more than 50 ms), begun before own_c.bin started
shared = sum(1 for i, (f, s, e) in enumerate(req) for (g, t, u) in req[i + 1:]
             if f == g and min(e, u) - max(s, t) > 0.05 and max(s, t) < last_start - 0.05)
c = [(s, e) for f, s, e in req if f == "own_c.bin"]
tail = max(sum(1 for a, b in c if a <= t < b) for t, _ in c)
print(len(req), shared, tail)
EOF
read -r nreq shared tail < "$T/own.txt"
if [ "$nreq" -eq 9 ] && [ "$shared" -eq 0 ] && [ "$tail" -ge 2 ]; then
  ok "each file in order on one connection until the last started; its pieces then on $tail at once"
else bad "piece ownership: $nreq requests, $shared overlaps within a file before the last started, $tail at once at the tail"; fi

# ---- 2. piece 0 completes last: the digest is still right (hashed in order)
get "$PY/delay0" "$T/c2" --connections 4 --range-bytes $MiB "$F8"
pylog delay0
if [ $rc -eq 0 ] && committed_ok "$T/c2/m/f8.bin" "$T/py/f8.bin" && [ "$(count_lines "$T/sel.log")" -eq 8 ]; then
  ok "pieces out of order: verified, 8 ranges"; else bad "pieces out of order: $out"; cat "$T/sel.log"; fi

# ---- 3. one piece dropped mid-transfer once: that range alone asked again
get "$PY/drop" "$T/c3" --connections 4 --range-bytes $MiB --retry-delay-ms 10 "$F8"
pylog drop
ends="$(while read -r _ _ _ r _; do printf '%s\n' "${r##*-}"; done < "$T/sel.log" | sort | uniq -c)"
asked_twice="$(while read -r c e; do [ "$c" -gt 1 ] && printf '%s ' "$e"; done <<<"$ends")"
if [ $rc -eq 0 ] && committed_ok "$T/c3/m/f8.bin" "$T/py/f8.bin" && [ "$asked_twice" = "$((3 * MiB - 1)) " ] &&
   [ "$(field retries)" -ge 1 ] && [ "$(count_lines "$T/sel.log")" -eq 9 ]; then
  ok "a dropped piece retried alone (the range ending at byte ${asked_twice% } asked twice, the others once)"
else bad "dropped piece: $out; twice: '$asked_twice'"; cat "$T/sel.log"; fi

# ---- 4. Range ignored (200): one stream takes the whole file
get "$PY/norange" "$T/c4" --connections 4 --range-bytes $MiB "$F8"
pylog norange
if [ $rc -eq 0 ] && committed_ok "$T/c4/m/f8.bin" "$T/py/f8.bin" && [ "$(count_lines "$T/sel.log")" -eq 1 ]; then
  ok "no ranges: a single stream, verified"; else bad "no ranges: $out"; cat "$T/sel.log"; fi

# ---- 5. the file changes after the first piece: started over once, then verified
get "$PY/change" "$T/c5" --connections 4 --range-bytes $MiB "$F8"
if [ $rc -eq 0 ] && committed_ok "$T/c5/m/f8.bin" "$T/py/f8.bin" && [ "$(field restarts)" -eq 1 ]; then
  ok "changed between ranges: restarted once, verified ($out)"; else bad "changed once: $out"; fi

# ---- 6. the file changes on every request: a clear error, nothing committed
get "$PY/flip" "$T/c6" --connections 4 --range-bytes $MiB "$F8"
if [ $rc -eq 1 ] && [[ "$out" == *"changed on the server while being downloaded"* ]] && [ ! -e "$T/c6/m" ]; then
  ok "changing on every request refused, nothing committed"; else bad "changing every time: $out"; fi

# ---- 7. a Content-Range total larger than declared: refused before the body
get "$PY/bigtotal" "$T/c7" --connections 4 --range-bytes $MiB "$F8"
staged="$(stat -c %s "$T/c7/.staging/m/new/f8.bin" 2>/dev/null || echo 0)"
if [ $rc -eq 1 ] && [[ "$out" == *"larger than declared"* ]] && [[ "$out" == *"$((8 * MiB + 1000))"* ]] &&
   [ "$staged" -le $((8 * MiB)) ] && [ ! -e "$T/c7/m" ]; then
  ok "total larger than declared refused ($staged bytes staged)"; else bad "larger total: $out (staged $staged)"; fi

# ---- 8. 503 with Retry-After: 1: the next try waits at least 1 s (the backoff would be 10 ms)
get "$PY/retry" "$T/c8" --connections 4 --range-bytes $MiB --retry-delay-ms 10 "$F8"
pylog retry
mapfile -t L < "$T/sel.log"
gap="$(/usr/bin/python3 -c 'import sys; print("%.2f" % (float(sys.argv[2].split()[0]) - float(sys.argv[1].split()[0])))' "${L[0]:-0}" "${L[1]:-0}")"
if [ $rc -eq 0 ] && committed_ok "$T/c8/m/f8.bin" "$T/py/f8.bin" && /usr/bin/python3 -c "import sys; sys.exit(not $gap >= 1.0)"; then
  ok "Retry-After honoured: ${gap} s before the second try"; else bad "Retry-After: $out, gap $gap"; fi

# ---- 8b. a hub redirecting every request to a CDN URL with another signature: each piece follows
get "$PY/hub" "$T/c8b" --connections 4 --range-bytes $MiB "$F8"
pylog ok
n_ok="$(count_lines "$T/sel.log")"
if [ $rc -eq 0 ] && committed_ok "$T/c8b/m/f8.bin" "$T/py/f8.bin" && [ "$n_ok" -eq 8 ]; then
  ok "redirected pieces: each of the 8 ranges followed its 302, verified"; else bad "redirects: $out ($n_ok at the CDN)"; fi

# ---- 8c. Accept-Ranges: none on the first 206: the pieces go one at a time (never two at once)
get "$PY/nosplit" "$T/c8c" --connections 4 --range-bytes $MiB "$F8"
pylog nosplit
mapfile -t L < "$T/sel.log"
spaced=1
for ((i = 1; i < ${#L[@]}; i++)); do
  /usr/bin/python3 -c 'import sys; sys.exit(not float(sys.argv[2].split()[0]) - float(sys.argv[1].split()[0]) >= 0.19)' "${L[i-1]}" "${L[i]}" || spaced=0
done
if [ $rc -eq 0 ] && committed_ok "$T/c8c/m/f8.bin" "$T/py/f8.bin" && [ ${#L[@]} -eq 8 ] && [ $spaced -eq 1 ]; then
  ok "Accept-Ranges: none: 8 ranges one after another, verified"; else bad "Accept-Ranges none: $out"; cat "$T/sel.log"; fi

# ---- 9. HTTP/2 over TLS (ALPN), the certificate from --cacert; each range on its own connection
if have_tool openssl; then
  : > "$T/ngx/access.log"
  get "https://127.0.0.1:$TLS_PORT" "$T/c9" --connections 4 --range-bytes $((8 * MiB)) --cacert "$T/ngx/cert.pem" "$BIG64"
  /usr/bin/python3 - "$T/ngx/access.log" > "$T/an.txt" <<'EOF'
import sys
rows = [l.split() for l in open(sys.argv[1]) if " bytes=" in l]
print(len(rows), sum(1 for r in rows if r[6] == "HTTP/2.0"), len({r[3] for r in rows}))
EOF
  read -r nreq nh2 nconn < "$T/an.txt"
  if [ $rc -eq 0 ] && committed_ok "$T/c9/m/big64.bin" "$T/www/big64.bin" && [ "$nreq" -eq 8 ] && [ "$nh2" -eq 8 ] && [ "$nconn" -ge 2 ]; then
    ok "HTTP/2: $nh2 of $nreq ranges over h2, on $nconn connections"; else bad "HTTP/2: $out ($nreq ranges, $nh2 h2, $nconn connections)"; fi
  # mt install --connections --cacert: the same engine, over HTTP/2 (in a build without mt,
  # docs/components.md, refused naming it)
  if has_component "$MPK" mt; then
    : > "$T/ngx/access.log"
    expect "mt install --connections 3 --cacert over https" 0 '"ok": *true|installed' -- "$MPK" mt install \
      "https://127.0.0.1:$TLS_PORT/pkg" --repo-id org/tiny --cache "$T/c9m" --variant cpu-int4 --features inference,train \
      --connections 3 --cacert "$T/ngx/cert.pem" --json
    h2=0; while read -r l; do case "$l" in *" /pkg/"*HTTP/2.0) h2=$((h2 + 1)) ;; esac; done < "$T/ngx/access.log"
    if [ "$h2" -ge 3 ]; then ok "mt install fetched $h2 files over HTTP/2"; else bad "mt install over h2: $h2 requests"; fi
    expect "mt install without --cacert refuses the self-signed server" 1 'certificate|SSL' -- "$MPK" mt install \
      "https://127.0.0.1:$TLS_PORT/pkg" --repo-id org/tiny --cache "$T/c9n" --variant cpu-int4 --retries 1
  else
    check "mt install over https without mt: refused naming it" refused_without mt "$MPK" mt install \
      "https://127.0.0.1:$TLS_PORT/pkg" --repo-id org/tiny --cache "$T/c9m" --cacert "$T/ngx/cert.pem"
  fi
  # without the certificate: refused (verification on)
  get "https://127.0.0.1:$TLS_PORT" "$T/c9b" --connections 4 --attempts 1 "$BIG64"
  if [ $rc -eq 1 ] && [ ! -e "$T/c9b/m" ]; then ok "self-signed certificate refused without --cacert"; else bad "no cacert: $out"; fi
else
  skip_case "HTTP/2 over TLS" openssl
fi

expect "mt install --connections 65 is a usage error" 2 'connections needs an integer from 1 to 64' -- "$MPK" mt install \
  "$BASE/pkg" --repo-id org/tiny --cache "$T/cx" --connections 65

# ---- 10. SIGKILL during a ranged download, then a resume from the recorded prefix
"$GET" "$BASE/slow" "$T/c10" m --connections 4 --range-bytes $((4 * MiB)) "$BIG64" >/dev/null 2>&1 &
BG_PID=$!
prefix=0
for _ in $(seq 200); do
  rec="$(cat "$T/c10/.staging/m/parts/big64.bin.json" 2>/dev/null)"
  if [[ "$rec" =~ \"prefix\":\ *([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -ge $((8 * MiB)) ]; then prefix="${BASH_REMATCH[1]}"; break; fi
  sleep 0.05
done
kill -9 "$BG_PID" 2>/dev/null
wait "$BG_PID" 2>/dev/null
BG_PID=""
get "$BASE" "$T/c10" --connections 4 --range-bytes $((4 * MiB)) "$BIG64"
if [ "$prefix" -gt 0 ] && [ $rc -eq 0 ] && committed_ok "$T/c10/m/big64.bin" "$T/www/big64.bin" && [ "$(field reused)" -ge "$prefix" ]; then
  ok "SIGKILL at prefix $prefix, resumed: reused $(field reused) bytes, verified"; else bad "kill and resume: prefix $prefix, $out"; fi

# ---- 11. peak RSS of a 256 MiB ranged install (default range size, 4 connections) stays small
head -c $((256 * MiB)) /dev/urandom > "$T/www/big256.bin"
chmod a+r "$T/www/big256.bin"
get "$BASE" "$T/c11" --connections 4 "big256.bin:$((256 * MiB)):$(md5 "$T/www/big256.bin")"
rm -f "$T/www/big256.bin"
if [ $rc -eq 0 ] && [ "$(field vmhwm_kb)" -lt $((64 * 1024)) ]; then
  ok "256 MiB ranged: peak RSS $(field vmhwm_kb) kB (< 64 MiB)"; else bad "256 MiB RSS: $out"; fi

finish
