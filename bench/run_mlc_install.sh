#!/usr/bin/env bash
# bench/run_mlc_install.sh — `modelpkg mlc install` of a generated 2 GiB MLC model from nginx on
# 127.0.0.1, side by side with its peers in interleaved rounds (issue 19's Benchmark; bench/README.md,
# docs/PERFORMANCE.md section 11). Not a test: it prints medians, ratios and one verdict per target.
#
#   SIZE_MIB=2048 LAYOUT=mlc REPEAT=3 THROTTLE=25m CONNECTIONS=4 THROTTLE_REPEAT=3 \
#     ARIA2_VARIANTS="j1x4 j4x1 j2x2 x4s4" bench/run_mlc_install.sh
#
# 1. Model: bench/mlc_model.py DIR --size-mib SIZE_MIB --layout LAYOUT, under $TMPDIR (default
#    /var/tmp: the disk, not a tmpfs) in the hub layout ORG/NAME/resolve/main/: mlc-chat-config.json,
#    tensor-cache.json (size and MD5 of every shard), params_shard_*.bin. LAYOUT=mlc: MLC's (a ~10 %
#    embedding shard, then <= 32 MiB shards); LAYOUT=few: three shards of SIZE/3.
# 2. nginx (its own, free ports, `sendfile on`, ETags on, access log with the connection serial and
#    the request time): server A no cap; server B the same tree with `limit_rate THROTTLE` (nginx's
#    limit is per connection: a CDN's per-connection cap) and `sendfile_max_chunk 256k` (so that no
#    request gets a free first chunk of 2 MiB: a client splitting into small ranges would beat the cap).
# 3. Loopback (server A), REPEAT interleaved rounds, order rotated each round:
#      curl      one curl process, one connection, every file in turn (-K config of url/output pairs)
#      md5sum    md5sum of the served shards, one process (the page cache warm: hashing alone)
#      curl+sync the same curl, then `sync -f` of its directory: its files made durable, as the
#                install makes every file before its commit (a reference, not a target's peer)
#      install   modelpkg mlc install URL --cache C --name bench (default connections) into an empty cache
#    target: install <= 1.2 x max(curl, md5sum), the median of the per-round ratios.
# 4. Throttled (server B), THROTTLE_REPEAT rounds:
#      curl        the same single-connection curl
#      install     modelpkg mlc install ... --connections CONNECTIONS
#      aria2c-VAR  aria2c with each variant of ARIA2_VARIANTS, to the same disk, transfer only (VAR+md5:
#                  the same with every shard's MD5 given, checksum=md5=; aria2c then hashes each file
#                  after it and, measured, starts the next one only after that: much slower):
#                    j1x4  -j1 -x4 -s4 -k1M   one file at a time, split in 4 ranges: <= 4 connections
#                    j4x1  -j4 -x1 -s1        4 files at a time, one connection each: <= 4 connections
#                    j2x2  -j2 -x2 -s2 -k1M   2 files, 2 ranges each: <= 4 connections
#                    x4s4  -x4 -s4 (aria2c's default -j5): up to 20 connections — for reference only
#    targets: curl / install >= 3.5; install <= 1.1 x aria2c, against the fastest variant of the
#    round that keeps to 4 connections (j1x4, j4x1, j2x2, without +md5: the like-for-like peer, and
#    the strictest: it verifies nothing), per round, then the median.
#    Peak RSS of the install process (/usr/bin/time %M, the largest of every install run): < 64 MiB.
#
# Page cache: the served files are read once before the rounds, so nginx and md5sum read memory,
# the same for every peer; before each measurement the previous outputs are removed and `sync` runs
# (outside the timing), so no peer pays for another's writeback. Every peer writes to the same disk
# ($WORK). Checked, not only timed: in the first round of each section every peer's files are
# compared with the model's MD5s (`md5sum -c`, outside the timing) and the install's tree passes
# `modelpkg check`; in every round the file count and sizes are checked.
# Columns: wall (s, process start-up included), MB/s (MB = 10^6 bytes), cpu s (the peer's own
# user+sys), cpu/wall, sys/cpu (the kernel's share: copies, page cache, TCP), other (cores busy with anything else, nginx included, from /proc/stat), peak RSS,
# conns (distinct TCP connections nginx served the peer), reqs (HTTP requests: > files when files
# are split into ranges), max at once (the most requests in flight at one instant, from the
# access log's end time and request time).
# A missing peer tool (aria2c, /usr/bin/time, `modelpkg mlc install`) is reported as skipped, by
# name, and its verdicts say "skipped" — never "met".
set -euo pipefail

SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC_DIR/build-bench}
MODELPKG=${MODELPKG:-$BUILD_DIR/modelpkg}
SIZE_MIB=${SIZE_MIB:-2048}
LAYOUT=${LAYOUT:-mlc}
REPEAT=${REPEAT:-3}
THROTTLE=${THROTTLE:-25m}
THROTTLE_REPEAT=${THROTTLE_REPEAT:-3}
CONNECTIONS=${CONNECTIONS:-4}
ARIA2_VARIANTS=${ARIA2_VARIANTS:-j1x4 j4x1 j2x2 x4s4}
INSTALL_ARGS=${INSTALL_ARGS:-}        # extra options for every mlc install (experiments)
# Extra install peers in the throttled rounds, one per "LABEL=OPTIONS" word (OPTIONS with commas for
# spaces), e.g. SWEEP="c2=--connections,2 c8=--connections,8": a --connections sweep in the same rounds.
SWEEP=${SWEEP:-}
PYTHON=${PYTHON:-/usr/bin/python3}
TIME=/usr/bin/time
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
ARIA2C=${ARIA2C:-$(command -v aria2c || echo aria2c)}
CORES=$(nproc)
SETUP_HINT="scripts/setup.sh --bench"

for tool in "$NGINX" curl md5sum sync "$PYTHON" openssl; do
  command -v "$tool" >/dev/null || { echo "run_mlc_install.sh: missing $tool ($SETUP_HINT)" >&2; exit 2; }
done
[[ -x $MODELPKG ]] || { echo "run_mlc_install.sh: missing $MODELPKG (cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DMPK_BUILD_TESTS=OFF && ninja -C build-bench modelpkg_cli)" >&2; exit 2; }

# Which peers can run; a missing one is a skip, said by name.
SKIPPED=()
HAVE_TIME=1
[[ -x $TIME ]] || { HAVE_TIME=0; SKIPPED+=("peak RSS: /usr/bin/time not found ($SETUP_HINT)"); }
HAVE_INSTALL=1
if ! "$MODELPKG" mlc install --help >/dev/null 2>&1; then
  HAVE_INSTALL=0; SKIPPED+=("install: '$MODELPKG mlc install' not available in this build")
fi
HAVE_ARIA2=1
command -v "$ARIA2C" >/dev/null || { HAVE_ARIA2=0; SKIPPED+=("aria2c: not found ($SETUP_HINT)"); }

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/mpk-bench-mlc.XXXXXX")
NGINX_PID=""
cleanup() {
  if [[ -n $NGINX_PID ]]; then kill "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
RES=$WORK/results.txt   # section peer round wall cpu rss other bytes conns reqs maxconc sys
: >"$RES"

# The model, one download copy and a margin must fit.
need_kib=$((SIZE_MIB * 1024 * 2 + 262144))
free_kib=$(df -Pk "$WORK" | awk 'NR == 2 {print $4}')
((free_kib > need_kib)) || { echo "run_mlc_install.sh: $WORK has $((free_kib / 1024)) MiB free, needs $((need_kib / 1024)) MiB" >&2; exit 2; }

HZ=$(getconf CLK_TCK)
busy_jiffies() { awk '/^cpu /{print $2+$3+$4+$7+$8; exit}' /proc/stat; }
now_ns() { date +%s%N; }

echo "== machine"
echo "nproc: $CORES   cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "kernel: $(uname -r)   $(curl --version | awk 'NR == 1 {print $1, $2}')   $("$NGINX" -v 2>&1)   $( ((HAVE_ARIA2)) && "$ARIA2C" --version | awk 'NR == 1')"
echo "work dir: $WORK ($(df -PT "$WORK" | awk 'NR == 2 {print $2}'))   modelpkg: $MODELPKG"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for s in ${SKIPPED[@]+"${SKIPPED[@]}"}; do echo "SKIPPED $s"; done

echo "== 1. model: $SIZE_MIB MiB, layout $LAYOUT (bench/mlc_model.py)"
MODEL_REL=bench-org/Bench-MLC/resolve/main
MODEL=$WORK/www/$MODEL_REL
mkdir -p "$(dirname "$MODEL")"
t0=$(now_ns)
"$PYTHON" "$SRC_DIR/bench/mlc_model.py" "$MODEL" --size-mib "$SIZE_MIB" --layout "$LAYOUT" >"$WORK/shards.txt"
NSHARDS=$(awk '$1 == "TOTAL" {print $2}' "$WORK/shards.txt")
BYTES=$(awk '$1 == "TOTAL" {print $3}' "$WORK/shards.txt")
sed -i '/^TOTAL /d' "$WORK/shards.txt"   # name size md5, one line per shard
awk '{print $3 "  " $1}' "$WORK/shards.txt" >"$WORK/md5sums.txt"
DOCS=(mlc-chat-config.json tensor-cache.json)
FILES=("${DOCS[@]}")
while read -r name _ _; do FILES+=("$name"); done <"$WORK/shards.txt"
SHARDS=("${FILES[@]:2}")
echo "$NSHARDS shards, $BYTES bytes of shards; largest $(sort -k2n "$WORK/shards.txt" | tail -1 | awk '{printf "%.1f MiB", $2/1048576}'), generated in $(awk -v a="$t0" -v b="$(now_ns)" 'BEGIN{printf "%.1f", (b-a)/1e9}') s"

echo "== 2. nginx on 127.0.0.1"
chmod 755 "$WORK"
chmod -R a+rX "$WORK/www"
free_port() { "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT_A=$(free_port)
PORT_B=$(free_port)
while [[ $PORT_B == "$PORT_A" ]]; do PORT_B=$(free_port); done
mkdir -p "$WORK/ngx"
cat >"$WORK/ngx/nginx.conf" <<EOF
daemon off;
worker_processes auto;
pid $WORK/ngx/nginx.pid;
error_log $WORK/ngx/error.log;
events { worker_connections 512; }
http {
  log_format conn '\$connection \$msec \$request_time \$status \$body_bytes_sent "\$request" "\$http_range"';
  sendfile on;
  tcp_nopush on;
  etag on;
  client_body_temp_path $WORK/ngx/body; proxy_temp_path $WORK/ngx/proxy; fastcgi_temp_path $WORK/ngx/fcgi;
  uwsgi_temp_path $WORK/ngx/uwsgi; scgi_temp_path $WORK/ngx/scgi;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:$PORT_A;
    root $WORK/www;
    access_log $WORK/ngx/access.log conn;
  }
  server {
    listen 127.0.0.1:$PORT_B;
    root $WORK/www;
    access_log $WORK/ngx/access.log conn;
    limit_rate $THROTTLE;
    # nginx sends a chunk, then sleeps chunk/rate: each request's first chunk and the sleep after its
    # last are free. With the default 2 MiB chunk a 1 MiB range arrives unthrottled, so a client that
    # splits files into small ranges would beat the cap itself; 256 KiB keeps that gift <= ~20 ms.
    sendfile_max_chunk 256k;
  }
}
EOF
"$NGINX" -c "$WORK/ngx/nginx.conf" -p "$WORK/ngx" 2>"$WORK/ngx/start.log" &
NGINX_PID=$!
for _ in $(seq 50); do curl -fsS -o /dev/null "http://127.0.0.1:$PORT_A/$MODEL_REL/tensor-cache.json" 2>/dev/null && break; sleep 0.1; done
curl -fsS -o /dev/null "http://127.0.0.1:$PORT_B/$MODEL_REL/tensor-cache.json" ||
  { cat "$WORK/ngx/start.log" "$WORK/ngx/error.log" >&2; echo "run_mlc_install.sh: nginx did not start" >&2; exit 1; }
echo "nginx: no cap http://127.0.0.1:$PORT_A/, limit_rate $THROTTLE per connection http://127.0.0.1:$PORT_B/"

# Per server: the model URL as a hub gives it (no resolve/main/: mlc install adds it as WebLLM does),
# curl's -K config and aria2c's input file (with every shard's MD5).
for which in A B; do
  port=PORT_$which
  base=http://127.0.0.1:${!port}/$MODEL_REL
  printf '%s\n' "http://127.0.0.1:${!port}/bench-org/Bench-MLC" >"$WORK/url.$which"
  for f in "${FILES[@]}"; do printf 'url = "%s/%s"\noutput = "%s/dl/%s"\n' "$base" "$f" "$WORK" "$f"; done >"$WORK/curl.$which.cfg"
  {
    for f in "${DOCS[@]}"; do printf '%s/%s\n  out=%s\n' "$base" "$f" "$f"; done
    while read -r name _ _; do printf '%s/%s\n  out=%s\n' "$base" "$name" "$name"; done <"$WORK/shards.txt"
  } >"$WORK/aria2.$which.txt"
  {
    for f in "${DOCS[@]}"; do printf '%s/%s\n  out=%s\n' "$base" "$f" "$f"; done
    while read -r name _ md5; do printf '%s/%s\n  out=%s\n  checksum=md5=%s\n' "$base" "$name" "$name" "$md5"; done <"$WORK/shards.txt"
  } >"$WORK/aria2md5.$which.txt"
done

aria2_opts() {   # the options of one variant (common ones in measure); VARIANT+md5: the same, MD5s given
  case ${1%+md5} in
    j1x4) echo "-j1 -x4 -s4 -k1M" ;;
    j4x1) echo "-j4 -x1 -s1" ;;
    j2x2) echo "-j2 -x2 -s2 -k1M" ;;
    x4s4) echo "-x4 -s4" ;;
    *) echo "run_mlc_install.sh: unknown ARIA2_VARIANTS entry '$1' (j1x4 j4x1 j2x2 x4s4)" >&2; exit 2 ;;
  esac
}
for v in $ARIA2_VARIANTS; do aria2_opts "$v" >/dev/null; done

# check_files DIR: every file there, the right size (the MD5s in the first round: VERIFY=1).
check_files() {
  local dir=$1 peer=$2 name size _
  while read -r name size _; do
    [[ -f $dir/$name && $(stat -c %s "$dir/$name") == "$size" ]] ||
      { echo "run_mlc_install.sh: $peer: $dir/$name missing or of the wrong size" >&2; exit 1; }
  done <"$WORK/shards.txt"
  if [[ $VERIFY == 1 ]]; then
    (cd "$dir" && md5sum --quiet -c "$WORK/md5sums.txt") ||
      { echo "run_mlc_install.sh: $peer: an MD5 differs from tensor-cache.json's" >&2; exit 1; }
  fi
}

# measure SECTION PEER ROUND: run one peer once, append one line to $RES.
measure() {
  local section=$1 peer=$2 round=$3 which=A
  [[ $section == throttled ]] && which=B
  local out=$WORK/out.txt tf=$WORK/time.txt url
  url=$(cat "$WORK/url.$which")
  local -a cmd
  rm -rf "$WORK/dl" "$WORK/cache"
  mkdir -p "$WORK/dl"
  sync
  case $peer in
    curl)   cmd=(curl -fsS -K "$WORK/curl.$which.cfg") ;;
    curl+sync) cmd=(sh -c 'curl -fsS -K "$1" && sync -f "$2"' sh "$WORK/curl.$which.cfg" "$WORK/dl") ;;
    md5sum) cmd=(md5sum -- "${SHARDS[@]/#/$MODEL/}") ;;
    install | install-*)
      local -a extra=()
      [[ $section == throttled ]] && extra=(--connections "$CONNECTIONS")
      if [[ $peer == install-* ]]; then
        local opts=${SWEEP_OPTS[${peer#install-}]}
        # shellcheck disable=SC2206
        extra=(${opts//,/ })
      fi
      # shellcheck disable=SC2206  # INSTALL_ARGS: words, as given
      cmd=("$MODELPKG" mlc install "$url" --cache "$WORK/cache" --name bench --json "${extra[@]}" $INSTALL_ARGS) ;;
    aria2c-*)
      local input=aria2
      [[ $peer == *+md5 ]] && input=aria2md5
      # shellcheck disable=SC2207
      cmd=("$ARIA2C" --no-conf -q --console-log-level=error --summary-interval=0 --file-allocation=none
           --allow-overwrite=true --auto-file-renaming=false --async-dns=false
           $(aria2_opts "${peer#aria2c-}") -d "$WORK/dl" -i "$WORK/$input.$which.txt") ;;
  esac
  : >"$WORK/ngx/access.log"
  local j0 t0 t1 j1 rc=0
  j0=$(busy_jiffies); t0=$(now_ns)
  if ((HAVE_TIME)); then
    "$TIME" -f '%U %S %M' -o "$tf" "${cmd[@]}" >"$out" 2>"$WORK/err.txt" || rc=$?
  else
    "${cmd[@]}" >"$out" 2>"$WORK/err.txt" || rc=$?
    echo "0 0 0" >"$tf"
  fi
  t1=$(now_ns); j1=$(busy_jiffies)
  ((rc == 0)) || { echo "run_mlc_install.sh: $peer failed (exit $rc):" >&2; tail -5 "$WORK/err.txt" "$out" >&2; exit 1; }
  local wall cpu rss bg u s
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.6f", (b-a)/1e9}')
  read -r u s rss < <(tail -1 "$tf")
  cpu=$(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.2f", u+s}')
  bg=$(awk -v j="$((j1 - j0))" -v hz="$HZ" -v w="$wall" -v c="$cpu" 'BEGIN{b=j/hz/w - c/w; if (b<0) b=0; printf "%.2f", b}')
  case $peer in
    md5sum)
      [[ $VERIFY == 1 ]] && { diff <(sed "s|  $MODEL/|  |" "$out") "$WORK/md5sums.txt" >/dev/null ||
        { echo "run_mlc_install.sh: md5sum's digests differ from the model's" >&2; exit 1; }; } ;;
    curl | curl+sync | aria2c-*) check_files "$WORK/dl" "$peer" ;;
    install*)
      grep -q "\"files\": $NSHARDS," "$out" || { echo "run_mlc_install.sh: $peer did not report $NSHARDS shards:" >&2; head -20 "$out" >&2; exit 1; }
      check_files "$WORK/cache/bench" "$peer"
      [[ $VERIFY == 1 ]] && { "$MODELPKG" check "$WORK/cache/bench" >"$WORK/check.txt" 2>&1 ||
        { echo "run_mlc_install.sh: modelpkg check refuses the installed tree:" >&2; tail -5 "$WORK/check.txt" >&2; exit 1; }; } ;;
  esac
  # conns, requests and the most requests in flight at once, from nginx's "$connection $msec $request_time ..."
  local nconn nreq conc
  nconn=$(awk '{c[$1] = 1} END {k = 0; for (i in c) k++; print k}' "$WORK/ngx/access.log")
  nreq=$(wc -l <"$WORK/ngx/access.log")
  conc=$(awk '{printf "%.3f 1\n%.3f -1\n", $2 - $3, $2}' "$WORK/ngx/access.log" | sort -k1,1g -k2,2n |
         awk '{c += $2; if (c > m) m = c} END {print m + 0}')
  [[ $peer == md5sum ]] && { nconn=0; nreq=0; conc=0; }
  echo "$section $peer $round $wall $cpu $rss $bg $BYTES $nconn $nreq $conc $s" >>"$RES"
}

rounds() {
  local section=$1 n=$2; shift 2
  local -a peers=("$@")
  local r k np=${#peers[@]}
  for ((r = 1; r <= n; r++)); do
    VERIFY=0; ((r == 1)) && VERIFY=1
    for ((k = 0; k < np; k++)); do measure "$section" "${peers[$(((k + r - 1) % np))]}" "$r"; done
    echo "   $section round $r/$n done (load average $(cut -d' ' -f1 /proc/loadavg))"
  done
  rm -rf "$WORK/dl" "$WORK/cache"
}

declare -A SWEEP_OPTS=()
SWEEP_PEERS=()
for w in $SWEEP; do SWEEP_OPTS[${w%%=*}]=${w#*=}; SWEEP_PEERS+=("install-${w%%=*}"); done

echo "== 3. loopback, no cap (the served files read once first: the page cache is warm for every peer)"
cat "${FILES[@]/#/$MODEL/}" >/dev/null
LOOP_PEERS=(curl md5sum curl+sync)
((HAVE_INSTALL)) && LOOP_PEERS+=(install)
[[ $REPEAT != 0 ]] && rounds loopback "$REPEAT" "${LOOP_PEERS[@]}"

if [[ $THROTTLE_REPEAT != 0 ]]; then
  echo "== 4. throttled: limit_rate $THROTTLE per connection"
  THR_PEERS=(curl)
  ((HAVE_INSTALL)) && THR_PEERS+=(install ${SWEEP_PEERS[@]+"${SWEEP_PEERS[@]}"})
  if ((HAVE_ARIA2)); then for v in $ARIA2_VARIANTS; do THR_PEERS+=("aria2c-$v"); done; fi
  rounds throttled "$THROTTLE_REPEAT" "${THR_PEERS[@]}"
fi

echo
awk -v conns="$CONNECTIONS" -v rate="$THROTTLE" -v have_install="$HAVE_INSTALL" -v have_aria2="$HAVE_ARIA2" \
    -v have_time="$HAVE_TIME" -v setup="$SETUP_HINT" '
  function median(arr, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j+1] = arr[j]; arr[j+1] = t }
    return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
  }
  function med_of(sec, peer, field,   i, n, a) {
    n = 0
    for (i = 1; i <= nr; i++) if (S[i] == sec && P[i] == peer) a[++n] = V[i, field]
    return n ? median(a, n) : -1
  }
  function max_of(sec, peer, field,   i, m) {
    m = 0
    for (i = 1; i <= nr; i++) if (S[i] == sec && P[i] == peer && V[i, field] > m) m = V[i, field]
    return m
  }
  # wall of the fastest "fair" aria2c variant (<= conns connections) in a round, or -1
  function best_aria(sec, r,   v, w, b) {
    b = -1
    for (v in FAIR) if ((sec, "aria2c-" v, r) in IDX) { w = V[IDX[sec, "aria2c-" v, r], "wall"]; if (b < 0 || w < b) { b = w; BEST[r] = v } }
    return b
  }
  # median (and range) over rounds of num/den, where each is a peer name, "max:A,B" or "aria2c-fair"
  function wall_of(sec, spec, r,   a, w, x) {
    if (spec == "aria2c-fair") return best_aria(sec, r)
    if (spec ~ /^max:/) { split(substr(spec, 5), a, ","); w = wall_of(sec, a[1], r); x = wall_of(sec, a[2], r); return (w < 0 || x < 0) ? -1 : (w > x ? w : x) }
    return ((sec, spec, r) in IDX) ? V[IDX[sec, spec, r], "wall"] : -1
  }
  function ratio(sec, num, den,   r, n, a, x, y) {
    n = 0; LO = 1e9; HI = 0
    for (r in R) { x = wall_of(sec, num, r); y = wall_of(sec, den, r); if (x > 0 && y > 0) { a[++n] = x / y; if (x/y < LO) LO = x/y; if (x/y > HI) HI = x/y } }
    return n ? median(a, n) : -1
  }
  function verdict(label, x, cmp, target, skipwhy) {
    if (skipwhy != "") { printf "VERDICT %-68s skipped (%s)\n", label, skipwhy; return }
    if (x < 0) { printf "VERDICT %-68s skipped (not measured)\n", label; return }
    ok = cmp == "<=" ? x <= target : (cmp == "<" ? x < target : x >= target)
    printf "VERDICT %-68s %7.3f %s %-5s %s\n", label, x, cmp, target, ok ? "met" : "NOT met"
  }
  {
    nr++; S[nr] = $1; P[nr] = $2; R[$3] = 1; IDX[$1, $2, $3] = nr
    V[nr, "wall"] = $4; V[nr, "mbps"] = $8 / $4 / 1e6; V[nr, "cpuwall"] = $5 / $4; V[nr, "bg"] = $7
    V[nr, "rss"] = $6 / 1024; V[nr, "conns"] = $9; V[nr, "reqs"] = $10; V[nr, "conc"] = $11
    V[nr, "cpu"] = $5; V[nr, "sys"] = $5 > 0 ? $12 / $5 : 0
    if (!(($1, $2) in seen)) { seen[$1, $2] = 1; order[$1] = order[$1] " " $2 }
  }
  END {
    FAIR["j1x4"] = 1; FAIR["j4x1"] = 1; FAIR["j2x2"] = 1
    names["curl"] = "curl, one connection, file after file"
    names["md5sum"] = "md5sum of the shards (warm page cache)"
    names["curl+sync"] = "curl, then sync -f (durable; reference)"
    names["install"] = "modelpkg mlc install"
    names["aria2c-j1x4"] = "aria2c -j1 -x4 -s4 -k1M"
    names["aria2c-j4x1"] = "aria2c -j4 -x1 -s1"
    names["aria2c-j2x2"] = "aria2c -j2 -x2 -s2 -k1M"
    names["aria2c-x4s4"] = "aria2c -x4 -s4, -j5: <= 20 conns (ref.)"
    nsec = split("loopback throttled", secs, " ")
    for (k = 1; k <= nsec; k++) {
      sec = secs[k]; if (order[sec] == "") continue
      nrounds = 0; for (r in R) if ((sec, "curl", r) in IDX) nrounds++
      printf "-- %s%s (median of %d rounds)\n", sec, sec == "throttled" ? ": limit_rate " rate " per connection" : ", no cap", nrounds
      printf "%-44s %8s %7s %6s %8s %7s %6s %9s %6s %5s %5s\n", "peer", "wall s", "MB/s", "cpu s", "cpu/wall", "sys/cpu", "other", "peak RSS", "conns", "reqs", "max@1"
      np = split(order[sec], ps, " ")
      for (i = 1; i <= np; i++) {
        p = ps[i]; nm = p in names ? names[p] : p
        if (p ~ /\+md5$/) nm = names[substr(p, 1, length(p) - 4)] " + MD5"
        if (p == "install") nm = nm (sec == "throttled" ? " --connections " conns : " (default connections)")
        if (p ~ /^install-/) nm = "modelpkg mlc install, " substr(p, 9)
        printf "%-44s %8.2f %7.1f %6.2f %8.2f %7.2f %6.2f %9s %6d %5d %5d\n", nm, med_of(sec, p, "wall"), med_of(sec, p, "mbps"), med_of(sec, p, "cpu"), med_of(sec, p, "cpuwall"), med_of(sec, p, "sys"),
               med_of(sec, p, "bg"), have_time ? sprintf("%.1f MiB", max_of(sec, p, "rss")) : "-", med_of(sec, p, "conns"), med_of(sec, p, "reqs"), max_of(sec, p, "conc")
      }
      if (sec == "throttled") {
        print "ratios (median of per-round ratios; range)"
        np = split(order[sec], ps, " ")
        for (i = 1; i <= np; i++) if (ps[i] ~ /^(aria2c-|install-)/) {
          x = ratio(sec, "install", ps[i]); if (x > 0) printf "  install / %-30s %7.3f (%.3f-%.3f)\n", ps[i], x, LO, HI
        }
        x = ratio(sec, "install", "aria2c-fair")
        if (x > 0) { w = ""; for (r = 1; r in BEST; r++) w = w " " BEST[r]; printf "  install / fastest aria2c with <= 4 connections %7.3f (%.3f-%.3f); fastest per round:%s\n", x, LO, HI, w }
      }
      print ""
    }
    noinst = have_install ? "" : "modelpkg mlc install not available"
    verdict("loopback: install / max(curl, md5sum)", ratio("loopback", "install", "max:curl,md5sum"), "<=", 1.2, noinst)
    if (noinst == "" && ("loopback", "install") in seen) {
      x = ratio("loopback", "install", "curl"); printf "        (install / curl %.3f, install / md5sum %.3f, install / (curl, then sync) %.3f;", x, ratio("loopback", "install", "md5sum"), ratio("loopback", "install", "curl+sync")
      printf " CPU-s: install %.2f, curl + md5sum %.2f)\n", med_of("loopback", "install", "cpu"), med_of("loopback", "curl", "cpu") + med_of("loopback", "md5sum", "cpu")
    }
    verdict("throttled " rate ": curl / install --connections " conns " (speed-up)", ratio("throttled", "curl", "install"), ">=", 3.5, noinst)
    verdict("throttled " rate ": install / aria2c (fastest with <= 4 connections)", ratio("throttled", "install", "aria2c-fair"), "<=", 1.1,
            noinst != "" ? noinst : (have_aria2 ? "" : "aria2c not found: " setup))
    if (have_install && have_time) { m = max_of("loopback", "install", "rss"); t = max_of("throttled", "install", "rss"); if (t > m) m = t }
    verdict("peak RSS of install (MiB, any run)", have_install && have_time ? m : -1, "<", 64, noinst != "" ? noinst : (have_time ? "" : "/usr/bin/time not found: " setup))
  }' "$RES"
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
