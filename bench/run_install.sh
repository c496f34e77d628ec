#!/usr/bin/env bash
# run_install.sh — `modelpkg mt install` from nginx on loopback, side by side with its peers, in one run.
#
#   bench/run_install.sh                     # from the source tree, after building build-bench
#   NBIG=3 BIG_MIB=640 NSMALL=128 REPEAT=5 JOBS=4 THROTTLE=128m THROTTLE_REPEAT=3 bench/run_install.sh
#
# 1. Package. bench/mt_package.py writes a package whose cpu-fp16 variant is ~2 GiB with the
#    defaults (the NBIG big files all go to cpu-fp16; NSMALL 1 MiB files are split over both
#    variants), `modelpkg mt build --describe` seals it. The install plans cpu-fp16 with
#    --features inference,train: 127 files, 3 x 640 MiB + 64 x 1 MiB + small documents, 2.08 GB.
# 2. nginx (Debian's, as tests/integration/test_install_http.sh starts it) on a free 127.0.0.1
#    port, generated config, `sendfile on`, every worker core; /pkg/ unthrottled, /slow/ the same
#    tree with `limit_rate THROTTLE` (nginx's limit is per connection).
# 3. REPEAT interleaved rounds (order rotated each round) of these peers, page cache warm (the
#    package is read once first, so the server reads memory, not the disk):
#   curl        curl alone downloading the planned files to disk, JOBS at once over one multi
#               handle (`curl --parallel --parallel-max JOBS`, one url/output pair per file from
#               a -K config), no fsync — the transfer alone
#   curl+sync   the same, then `sync FILE...` (fsync of each downloaded file): the transfer plus
#               making the bytes durable, which an installer must do and curl does not
#   hash        bench_digest --algo sha256 --workers $(nproc) over the served files:
#               mpk_digest_files() with all cores, from the page cache — hashing alone
#   install     `modelpkg mt install http://127.0.0.1:PORT/pkg --variant cpu-fp16 --features
#               inference,train --jobs JOBS` into an empty cache (verified, fsynced, committed)
#    Before each measurement the previous outputs are removed and `sync` runs (outside the
#    timing), so no peer pays for another's writeback. The target (issue 7): install <= 1.2 x
#    max(curl, hash), as the median of the per-round ratios; peak RSS < 64 MiB.
# 4. Throttled: THROTTLE_REPEAT rounds of curl and install through /slow/. "Bound by the link"
#    means install / curl through the same throttle ~ 1, and the effective rate is what the
#    connections allow (the ideal time is printed: each file at THROTTLE on its own connection,
#    JOBS at a time, scheduled as the installer takes them).
#
# Columns: wall (s, process start-up included), MB/s (MB = 10^6 bytes), cpu/wall (user+sys of
# the peer's process, not nginx's), other (cores busy with anything else — nginx included — during
# the measurement, from /proc/stat), peak RSS (/usr/bin/time %M, the largest over the rounds).
# Every install's tree is checked against the manifest's digests (the installer does it; the
# script also requires the install to report every file), and the hash peer's digests are
# compared with the plan's in the first round.
set -euo pipefail

SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC_DIR/build-bench}
MODELPKG=${MODELPKG:-$BUILD_DIR/modelpkg}
BENCH=${BENCH:-$BUILD_DIR/bench/bench_digest}
NBIG=${NBIG:-3}
BIG_MIB=${BIG_MIB:-640}
NSMALL=${NSMALL:-128}
REPEAT=${REPEAT:-5}
JOBS=${JOBS:-4}
THROTTLE=${THROTTLE:-128m}
THROTTLE_REPEAT=${THROTTLE_REPEAT:-3}
INSTALL_ARGS=${INSTALL_ARGS:-}   # extra options for mt install (experiments)
# Another build's modelpkg (e.g. the commit before a change) as one more peer, install-base, in the
# same interleaved rounds: the summary adds install / install-base, a before/after side by side.
MODELPKG_BASE=${MODELPKG_BASE:-}
PYTHON=/usr/bin/python3
TIME=/usr/bin/time
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
CORES=$(nproc)

for tool in "$MODELPKG" ${MODELPKG_BASE:+"$MODELPKG_BASE"} "$BENCH" "$TIME" "$NGINX" curl sync "$PYTHON"; do
  command -v "$tool" >/dev/null || { echo "run_install.sh: missing $tool (build: cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DMPK_BUILD_TESTS=OFF && ninja -C build-bench modelpkg_cli bench_digest; nginx: scripts/setup.sh)" >&2; exit 2; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/mpk-bench-install.XXXXXX")
NGINX_PID=""
cleanup() {
  [[ -n $NGINX_PID ]] && kill "$NGINX_PID" 2>/dev/null && wait "$NGINX_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
RES=$WORK/results.txt   # section peer round wall_s cpu_s rss_kib other_cores bytes
: >"$RES"

HZ=$(getconf CLK_TCK)
busy_jiffies() { awk '/^cpu /{print $2+$3+$4+$7+$8; exit}' /proc/stat; }
now_ns() { date +%s%N; }

echo "== machine"
echo "nproc: $CORES   cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "kernel: $(uname -r)   $(curl --version | awk 'NR == 1 {print $1, $2, $3}')   $("$NGINX" -v 2>&1)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== 1. package: $NBIG x $BIG_MIB MiB + $NSMALL x 1 MiB (bench/mt_package.py), sealed with mt build"
PKG=$WORK/www/pkg
mkdir -p "$WORK/www"
"$PYTHON" "$SRC_DIR/bench/mt_package.py" "$PKG" --big "$NBIG" --big-mib "$BIG_MIB" --small "$NSMALL" --small-mib 1
"$MODELPKG" mt build "$PKG" --describe "$PKG.build.json" | tail -1
"$MODELPKG" mt plan "$PKG" --variant cpu-fp16 --features inference,train --json >"$WORK/plan.json"
# path size sha256, one line per planned file
"$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1]))
for f in d["files"]: print(f["path"], f["size"], f["sha256"])' "$WORK/plan.json" >"$WORK/plan.txt"
NFILES=$(wc -l <"$WORK/plan.txt")
BYTES=$(awk '{s += $2} END {print s}' "$WORK/plan.txt")
echo "plan: cpu-fp16, inference+train: $NFILES files, $BYTES bytes ($(awk -v b="$BYTES" 'BEGIN{printf "%.2f", b/1073741824}') GiB)"

echo "== 2. nginx on 127.0.0.1"
chmod 755 "$WORK"
chmod -R a+rX "$WORK/www"
PORT=$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$WORK/ngx"
cat >"$WORK/ngx/nginx.conf" <<EOF
daemon off;
worker_processes auto;
pid $WORK/ngx/nginx.pid;
error_log $WORK/ngx/error.log;
events { worker_connections 256; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  client_body_temp_path $WORK/ngx/body; proxy_temp_path $WORK/ngx/proxy; fastcgi_temp_path $WORK/ngx/fcgi;
  uwsgi_temp_path $WORK/ngx/uwsgi; scgi_temp_path $WORK/ngx/scgi;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:$PORT;
    root $WORK/www;
    location /slow/ { alias $WORK/www/pkg/; limit_rate $THROTTLE; }
  }
}
EOF
"$NGINX" -c "$WORK/ngx/nginx.conf" -p "$WORK/ngx" 2>"$WORK/ngx/start.log" &
NGINX_PID=$!
BASE=http://127.0.0.1:$PORT
for _ in $(seq 50); do curl -fsS -o /dev/null "$BASE/pkg/mobiletransformers_manifest.json" 2>/dev/null && break; sleep 0.1; done
curl -fsS -o /dev/null "$BASE/pkg/mobiletransformers_manifest.json" || { cat "$WORK/ngx/start.log" "$WORK/ngx/error.log" >&2; echo "run_install.sh: nginx did not start" >&2; exit 1; }
echo "nginx: $BASE, /slow/ limit_rate $THROTTLE per connection"

# curl's -K configs, one per location: the manifest (the installer fetches it too), then the files.
for loc in pkg slow; do
  {
    echo "url = \"$BASE/$loc/mobiletransformers_manifest.json\""
    echo "output = \"$WORK/dl/mobiletransformers_manifest.json\""
    while read -r path _ _; do
      echo "url = \"$BASE/$loc/$path\""
      echo "output = \"$WORK/dl/$path\""
    done <"$WORK/plan.txt"
  } >"$WORK/curl.$loc.cfg"
done
SERVED=()
while read -r path _ _; do SERVED+=("$PKG/$path"); done <"$WORK/plan.txt"

# measure SECTION PEER ROUND: run one peer once, append one line to $RES.
measure() {
  local section=$1 peer=$2 round=$3 loc=pkg
  [[ $section == throttled ]] && loc=slow
  local out=$WORK/out.$peer tf=$WORK/time.txt
  local -a cmd
  rm -rf "$WORK/dl" "$WORK/cache"
  mkdir -p "$WORK/dl"
  sync
  case $peer in
    curl)      cmd=(curl --parallel --parallel-max "$JOBS" --create-dirs -fsS -K "$WORK/curl.$loc.cfg") ;;
    curl+sync) cmd=(sh -c 'curl --parallel --parallel-max "$1" --create-dirs -fsS -K "$2" && cd "$3" && find . -type f -exec sync {} +' \
                    sh "$JOBS" "$WORK/curl.$loc.cfg" "$WORK/dl") ;;
    hash)      cmd=("$BENCH" --algo sha256 --workers "$CORES" "${SERVED[@]}") ;;
    install | install-base)
               local bin=$MODELPKG
               [[ $peer == install-base ]] && bin=$MODELPKG_BASE
               # shellcheck disable=SC2086
               cmd=("$bin" mt install "$BASE/$loc" --repo-id bench/Bench-1B --cache "$WORK/cache"
                    --variant cpu-fp16 --features inference,train --jobs "$JOBS" --json $INSTALL_ARGS) ;;
  esac
  local j0 t0 t1 j1
  j0=$(busy_jiffies); t0=$(now_ns)
  "$TIME" -f '%U %S %M' -o "$tf" "${cmd[@]}" >"$out" 2>"$WORK/err.$peer" || {
    echo "run_install.sh: $peer failed:" >&2; tail -5 "$WORK/err.$peer" "$tf" >&2; exit 1; }
  t1=$(now_ns); j1=$(busy_jiffies)
  local wall cpu rss bg u s
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.6f", (b-a)/1e9}')
  read -r u s rss < <(tail -1 "$tf")
  cpu=$(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.2f", u+s}')
  bg=$(awk -v j="$((j1 - j0))" -v hz="$HZ" -v w="$wall" -v c="$cpu" 'BEGIN{b=j/hz/w - c/w; if (b<0) b=0; printf "%.2f", b}')
  case $peer in
    install | install-base)
      grep -q "\"files\": $NFILES," "$out" || { echo "run_install.sh: the install did not report $NFILES files:" >&2; cat "$out" >&2; exit 1; } ;;
    hash)
      if [[ $round == 1 ]]; then
        # bench_digest prints "DIGEST <hex>  <path>"; the plan says which digest each path must have.
        diff <(sed -n "s|^DIGEST \([0-9a-f]*\)  $PKG/|\1 |p" "$out" | sort) \
             <(awk '{print $3, $1}' "$WORK/plan.txt" | sort) >/dev/null ||
          { echo "run_install.sh: bench_digest's digests differ from the plan's" >&2; exit 1; }
      fi ;;
    curl*)
      [[ $(find "$WORK/dl" -type f | wc -l) -eq $((NFILES + 1)) ]] || { echo "run_install.sh: curl did not download every file" >&2; exit 1; } ;;
  esac
  echo "$section $peer $round $wall $cpu $rss $bg $BYTES" >>"$RES"
}

rounds() {
  local section=$1 n=$2; shift 2
  local -a peers=("$@")
  local r k np=${#peers[@]}
  for ((r = 1; r <= n; r++)); do
    for ((k = 0; k < np; k++)); do measure "$section" "${peers[$(((k + r - 1) % np))]}" "$r"; done
    echo "   $section round $r/$n done (load average $(cut -d' ' -f1 /proc/loadavg))"
  done
  rm -rf "$WORK/dl" "$WORK/cache"
}

summary() {
  awk -v section="$1" -v jobs="$JOBS" -v rate="$THROTTLE" -v ideal="${2:-0}" '
    function median(arr, n,   i, j, t) {
      for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j+1] = arr[j]; arr[j+1] = t }
      return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
    }
    function med_of(peer, field,   i, n, a) {
      n = 0
      for (i = 1; i <= nr; i++) if (P[i] == peer) a[++n] = V[i, field]
      return n ? median(a, n) : -1
    }
    # median over rounds of wall(p1) / max(wall(p2), wall(p3))
    function med_ratio(p1, p2, p3,   r, n, a, d) {
      n = 0
      for (r in R) if ((p1, r) in IDX && (p2, r) in IDX) {
        d = V[IDX[p2, r], "wall"]
        if (p3 != "" && (p3, r) in IDX && V[IDX[p3, r], "wall"] > d) d = V[IDX[p3, r], "wall"]
        a[++n] = V[IDX[p1, r], "wall"] / d
      }
      return n ? median(a, n) : -1
    }
    function minmax_ratio(p1, p2, p3, which,   r, d, x, m) {
      m = which == "min" ? 1e9 : 0
      for (r in R) if ((p1, r) in IDX && (p2, r) in IDX) {
        d = V[IDX[p2, r], "wall"]
        if (p3 != "" && (p3, r) in IDX && V[IDX[p3, r], "wall"] > d) d = V[IDX[p3, r], "wall"]
        x = V[IDX[p1, r], "wall"] / d
        if (which == "min" ? x < m : x > m) m = x
      }
      return m
    }
    $1 == section {
      nr++; P[nr] = $2; if (!($3 in R)) nrounds++; R[$3] = 1; IDX[$2, $3] = nr
      V[nr, "wall"] = $4; V[nr, "mbps"] = $8 / $4 / 1e6; V[nr, "cpuwall"] = $5 / $4; V[nr, "bg"] = $7
      if (!($2 in seen)) seen[$2] = 1
      if ($6 / 1024 > maxrss[$2]) maxrss[$2] = $6 / 1024
    }
    END {
      if (!nr) exit
      names["curl"] = "curl --parallel " jobs ", to disk"
      names["curl+sync"] = "curl --parallel " jobs " + fsync each file"
      names["hash"] = "mpk_digest_files, all cores (hash only)"
      names["install"] = "modelpkg mt install --jobs " jobs
      names["install-base"] = "the same, the MODELPKG_BASE build"
      split("curl curl+sync hash install install-base", want, " ")
      printf "\n-- %s (median of %d rounds)\n", section, nrounds
      printf "%-42s %8s %8s %8s %6s %10s\n", "peer", "wall s", "MB/s", "cpu/wall", "other", "peak RSS"
      for (i = 1; i <= 5; i++) {
        p = want[i]; if (!(p in seen)) continue
        printf "%-42s %8.2f %8.0f %8.2f %6.2f %7.1f MiB\n", names[p], med_of(p, "wall"), med_of(p, "mbps"),
               med_of(p, "cpuwall"), med_of(p, "bg"), maxrss[p]
      }
      print "ratios (median of per-round ratios; range)                    value   target"
      if (section == "loopback") {
        x = med_ratio("install", "curl", "hash")
        printf "  install / max(curl, hash)                          %6.3f (%.3f-%.3f)   <= 1.20 %s\n", x,
               minmax_ratio("install", "curl", "hash", "min"), minmax_ratio("install", "curl", "hash", "max"), (x <= 1.2 ? "met" : "MISSED")
        printf "  install / curl                                     %6.3f\n", med_ratio("install", "curl", "")
        printf "  install / hash                                     %6.3f\n", med_ratio("install", "hash", "")
        if ("curl+sync" in seen) printf "  install / (curl + fsync)                           %6.3f\n", med_ratio("install", "curl+sync", "")
        if ("install-base" in seen) printf "  install / install-base (before/after, same rounds)  %6.3f (%.3f-%.3f)\n", med_ratio("install", "install-base", ""), minmax_ratio("install", "install-base", "", "min"), minmax_ratio("install", "install-base", "", "max")
        printf "  install peak RSS (any round)                       %6.1f MiB   < 64 MiB %s\n", maxrss["install"], (maxrss["install"] < 64 ? "met" : "MISSED")
      } else {
        x = med_ratio("install", "curl", "")
        printf "  install / curl, both through limit_rate %-6s      %6.3f (%.3f-%.3f)   ~1: bound by the link\n", rate, x,
               minmax_ratio("install", "curl", "", "min"), minmax_ratio("install", "curl", "", "max")
        if ("install-base" in seen) printf "  install / install-base (before/after, same rounds)  %6.3f (%.3f-%.3f)\n", med_ratio("install", "install-base", ""), minmax_ratio("install", "install-base", "", "min"), minmax_ratio("install", "install-base", "", "max")
        if (ideal > 0) printf "  install / ideal (each file at %s on its own connection, %d at a time: %.2f s)  %6.3f\n", rate, jobs, ideal, med_of("install", "wall") / ideal
      }
    }' "$RES"
}

echo "== 3. loopback: page cache warmed (the package read once)"
cat "${SERVED[@]}" >/dev/null
rounds loopback "$REPEAT" curl curl+sync hash install ${MODELPKG_BASE:+install-base}
summary loopback

if [[ $THROTTLE_REPEAT != 0 ]]; then
  echo
  echo "== 4. throttled: limit_rate $THROTTLE per connection"
  # The ideal: files in plan order, JOBS at a time, each at the limit (what the link allows).
  ideal=$(awk -v jobs="$JOBS" -v rate="$THROTTLE" '
    BEGIN { r = rate + 0; u = substr(rate, length(rate)); if (u == "m" || u == "M") r *= 1048576; else if (u == "k" || u == "K") r *= 1024 }
    { t = $2 / r; best = 1; for (j = 2; j <= jobs; j++) if (free[j] < free[best]) best = j; free[best] += t; if (free[best] > end) end = free[best] }
    END { printf "%.3f", end }' "$WORK/plan.txt")
  rounds throttled "$THROTTLE_REPEAT" curl install ${MODELPKG_BASE:+install-base}
  summary throttled "$ideal"
fi
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
