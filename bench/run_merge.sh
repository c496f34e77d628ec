#!/usr/bin/env bash
# run_merge.sh — merging a LoRA adapter into a weight: modelpkg side by side with numpy and with
# the memory floor, in one run; then a whole 1B-parameter-class model.
#
#   bench/run_merge.sh                       # from the source tree, after building build-bench
#   ROWS=4096 COLS=4096 RANK=16 DTYPE=f16 REPEAT=5 ITERS=9 MODEL=1 MODEL_REPEAT=3 bench/run_merge.sh
#
# 0. Memory bandwidth of one core, once: memcpy between two resident BW_MIB MiB buffers.
#
# 1. One tensor. `bench_merge gen` writes a ROWS × COLS weight of DTYPE (values in [-1, 1)) and
#    rank-RANK factors A [RANK, COLS], B [ROWS, RANK] (float32) into a temporary directory. Then
#    REPEAT interleaved rounds (the order rotated every round) of these peers, each a process that
#    times ITERS iterations in-process and reports its median:
#
#   memcpy     memcpy() of the base into a resident buffer: reading the base and writing the
#              result once at this machine's memory bandwidth (one core) — THE floor of the target
#   mpk-buf-1  mpk_merge_dense_to_buf(), 1 thread: the merge kernel into a resident buffer
#   mpk-buf-2  the same, 2 threads
#   copyfd     one pwrite() of the whole base into a file truncated before each iteration: the
#              floor of any merge that writes its result with write(2) (the page-cache copy)
#   mpk-fd-1   mpk_merge_dense_to_fd(), 1 thread: what `modelpkg mt merge` does per tensor (blocks
#              merged into a per-worker buffer, then pwrite()), minus the fsync
#   mpk-fd-2   the same, 2 threads
#   numpy      /usr/bin/python3 + numpy, one core (OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1):
#              `(base.astype(float32) + scale * (B @ A)).astype(float16)` on arrays in memory;
#              also reports the B @ A part alone (numpy-matmul), to show what a faster BLAS could
#              and could not change
#   numpy-file the same from np.fromfile() of the base to .tofile() of the result
#
#    Every figure is a median over the rounds (of each process's median); a ratio is the median of
#    per-round ratios (both peers ran in the same round, seconds apart). The merged bytes are
#    checked: modelpkg's (1 and 2 threads, buffer and file) must be identical in every round; in
#    the first, modelpkg's and numpy's results are compared with a float64 computation (modelpkg
#    must be within float32 rounding + half a float16 ulp of it; numpy sums in another order).
#    Alongside each peer: cpu/wall (its CPU time over its wall time, both in-process), and
#    `other`, the cores busy with OTHER processes during the round (from /proc/stat).
#
# 2. Whole model (MODEL=1): every attention and MLP projection of 16 layers of a Llama-3.2-1B-
#    shaped decoder (973 M parameters, float16, rank RANK, [out, in]), each tensor merged by
#    mpk_merge_dense_to_fd() into its own file, closed and removed (bench_merge model), with 1
#    and 2 threads, and the copy floor (each base tensor pwrite()n to its file); MODEL_REPEAT
#    interleaved rounds. MODEL_NUMPY=1 adds numpy on the same layout (each result .tofile()d and
#    removed; NP_MODEL_ITERS iterations, ~15 s each).
#
# 3. Variants (VARIANTS=1): the same tensor through the AVX2 and portable kernels (forced), stored
#    [in, out], with rank 4 and 64, as float32 and bfloat16: to_buf with 1 thread, each beside a
#    memcpy of its own bytes, VAR_REPEAT rounds (the portable kernel: 1 iteration per round).
#
# The temporary directory (TMPDIR, default /tmp: a real file system, like a package) is removed
# at the end. Outputs are removed right after they are written, so no data reaches the disk.
set -euo pipefail

SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC_DIR/build-bench}
BENCH=${BENCH:-$BUILD_DIR/bench/bench_merge}
ROWS=${ROWS:-4096}
COLS=${COLS:-4096}
RANK=${RANK:-16}
DTYPE=${DTYPE:-f16}
SCALE=${SCALE:-2.0}
REPEAT=${REPEAT:-5}
ITERS=${ITERS:-9}
NP_ITERS=${NP_ITERS:-5}
MODEL=${MODEL:-1}
MODEL_REPEAT=${MODEL_REPEAT:-3}
MODEL_ITERS=${MODEL_ITERS:-3}
MODEL_NUMPY=${MODEL_NUMPY:-1}
NP_MODEL_ITERS=${NP_MODEL_ITERS:-1}
BW_MIB=${BW_MIB:-512}
VARIANTS=${VARIANTS:-1}
VAR_REPEAT=${VAR_REPEAT:-3}
# numpy lives with Debian's interpreter, not with the python3 first on PATH.
PYTHON=${PYTHON:-/usr/bin/python3}
TIME=/usr/bin/time

[[ -x $TIME ]] || { echo "run_merge.sh: missing $TIME (apt install time)" >&2; exit 2; }
[[ -x $BENCH ]] || { echo "run_merge.sh: missing $BENCH (build: cmake -S . -B build-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DMPK_BUILD_TESTS=OFF && ninja -C build-bench bench_merge)" >&2; exit 2; }
"$PYTHON" -c 'import numpy' 2>/dev/null || { echo "run_merge.sh: $PYTHON has no numpy (apt install python3-numpy)" >&2; exit 2; }
[[ $DTYPE == f16 ]] || { echo "run_merge.sh: the numpy peer is written for DTYPE=f16" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/mpk-bench-merge.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
RES=$WORK/results.txt   # section peer round median_s cpu_s other_cores extra
: >"$RES"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

HZ=$(getconf CLK_TCK)
busy_jiffies() { awk '/^cpu /{print $2+$3+$4+$7+$8; exit}' /proc/stat; }
now_ns() { date +%s%N; }

echo "== machine"
echo "nproc: $(getconf _NPROCESSORS_ONLN)   cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')   kernel: $(uname -r)"
echo "python: $($PYTHON -c 'import sys, numpy; print(sys.version.split()[0], "numpy", numpy.__version__)')   BLAS: $(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || echo '?')"
"$BENCH" gen --dir "$WORK" --rows "$ROWS" --cols "$COLS" --rank "$RANK" --dtype "$DTYPE" >/dev/null
IMPL=$("$BENCH" run --dir "$WORK" --mode memcpy --rows "$ROWS" --cols "$COLS" --rank "$RANK" --dtype "$DTYPE" --iters 1 |
  sed -n 's/.* impl=\([a-z0-9]*\).*/\1/p')
echo "merge kernel: $IMPL   load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "tensor: $ROWS x $COLS $DTYPE, rank $RANK, scale $SCALE   rounds: $REPEAT x $ITERS iterations (numpy $NP_ITERS)   dir: $WORK"

PY_NUMPY='
import sys, time, os
import numpy as np
d, rows, cols, rank, scale, iters, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
A = np.fromfile(os.path.join(d, "A.bin"), dtype=np.float32).reshape(rank, cols)
B = np.fromfile(os.path.join(d, "B.bin"), dtype=np.float32).reshape(rows, rank)
s = np.float32(scale)
base = np.fromfile(os.path.join(d, "base.bin"), dtype=np.float16).reshape(rows, cols)
out_path = os.path.join(d, "np_out.bin")
ts, tm, cs = [], [], []
for it in range(iters):
    c0 = time.process_time(); t0 = time.perf_counter()
    if mode == "file":
        base = np.fromfile(os.path.join(d, "base.bin"), dtype=np.float16).reshape(rows, cols)
    delta = B @ A
    t1 = time.perf_counter()
    out = (base.astype(np.float32) + s * delta).astype(np.float16)
    if mode == "file":
        out.tofile(out_path)
    t2 = time.perf_counter(); c1 = time.process_time()
    ts.append(t2 - t0); tm.append(t1 - t0); cs.append(c1 - c0)
    if mode == "file":
        os.unlink(out_path)
med = lambda v: sorted(v)[len(v) // 2] if len(v) % 2 else sum(sorted(v)[len(v)//2 - 1:len(v)//2 + 1]) / 2
if mode == "mem":
    out.tofile(out_path + ".keep")
print("RESULT mode=numpy-%s median_s=%.6f matmul_s=%.6f cpu_s=%.6f" % (mode, med(ts), med(tm), med(cs)))
'

# measure SECTION PEER ROUND: run one peer once, append a line to $RES.
measure() {
  local section=$1 peer=$2 round=$3 out=$WORK/out.txt
  local -a cmd
  case $peer in
    memcpy)     cmd=("$BENCH" run --dir "$WORK" --mode memcpy --rows "$ROWS" --cols "$COLS" --rank "$RANK" --dtype "$DTYPE" --iters "$ITERS") ;;
    copyfd)     cmd=("$BENCH" run --dir "$WORK" --mode copyfd --rows "$ROWS" --cols "$COLS" --rank "$RANK" --dtype "$DTYPE" --iters "$ITERS") ;;
    mpk-buf-1)  cmd=("$BENCH" run --dir "$WORK" --mode buf --threads 1 --rows "$ROWS" --cols "$COLS" --rank "$RANK" --dtype "$DTYPE" --scale "$SCALE" --iters "$ITERS" --save "$WORK/mpk-buf-1.bin") ;;
    mpk-buf-2)  cmd=("$BENCH" run --dir "$WORK" --mode buf --threads 2 --rows "$ROWS" --cols "$COLS" --rank "$RANK" --dtype "$DTYPE" --scale "$SCALE" --iters "$ITERS" --save "$WORK/mpk-buf-2.bin") ;;
    mpk-fd-1)   cmd=("$BENCH" run --dir "$WORK" --mode fd --threads 1 --rows "$ROWS" --cols "$COLS" --rank "$RANK" --dtype "$DTYPE" --scale "$SCALE" --iters "$ITERS" --save "$WORK/mpk-fd-1.bin") ;;
    mpk-fd-2)   cmd=("$BENCH" run --dir "$WORK" --mode fd --threads 2 --rows "$ROWS" --cols "$COLS" --rank "$RANK" --dtype "$DTYPE" --scale "$SCALE" --iters "$ITERS" --save "$WORK/mpk-fd-2.bin") ;;
    numpy)      cmd=("$PYTHON" -c "$PY_NUMPY" "$WORK" "$ROWS" "$COLS" "$RANK" "$SCALE" "$NP_ITERS" mem) ;;
    numpy-file) cmd=("$PYTHON" -c "$PY_NUMPY" "$WORK" "$ROWS" "$COLS" "$RANK" "$SCALE" "$NP_ITERS" file) ;;
    model-merge-1) cmd=("$BENCH" model --dir "$WORK" --mode merge --threads 1 --rank "$RANK" --scale "$SCALE" --iters "$MODEL_ITERS") ;;
    model-merge-2) cmd=("$BENCH" model --dir "$WORK" --mode merge --threads 2 --rank "$RANK" --scale "$SCALE" --iters "$MODEL_ITERS") ;;
    model-copy)    cmd=("$BENCH" model --dir "$WORK" --mode copy --rank "$RANK" --iters "$MODEL_ITERS") ;;
    model-numpy)   cmd=("$PYTHON" -c "$PY_MODEL" "$WORK" "$RANK" "$SCALE" "$NP_MODEL_ITERS") ;;
  esac
  local j0 j1 t0 t1 tf=$WORK/time.txt
  j0=$(busy_jiffies); t0=$(now_ns)
  "$TIME" -f '%U %S' -o "$tf" "${cmd[@]}" >"$out" 2>"$WORK/err.txt" ||
    { echo "run_merge.sh: $peer failed:" >&2; cat "$WORK/err.txt" "$tf" >&2; exit 1; }
  t1=$(now_ns); j1=$(busy_jiffies)
  local line med cpu mm bg u s
  line=$(grep '^RESULT' "$out")
  med=$(sed -n 's/.* median_s=\([0-9.]*\).*/\1/p' <<<"$line")
  cpu=$(sed -n 's/.* cpu_s=\([0-9.]*\).*/\1/p' <<<"$line")
  mm=$(sed -n 's/.* matmul_s=\([0-9.]*\).*/\1/p' <<<"$line"); mm=${mm:-0}
  # cores busy with other processes while this one ran: all busy time over its wall time, minus
  # its own CPU time (whole process, start-up included; /proc/stat counts 10 ms ticks)
  read -r u s < <(tail -1 "$tf")
  bg=$(awk -v j="$((j1 - j0))" -v hz="$HZ" -v t0="$t0" -v t1="$t1" -v c="$(awk -v u="$u" -v s="$s" 'BEGIN{print u+s}')" \
    'BEGIN{w=(t1-t0)/1e9; b=(j/hz - c)/w; if (b<0) b=0; printf "%.2f", b}')
  echo "$section $peer $round $med $cpu $bg $mm" >>"$RES"
}

check_outputs() {
  local p
  for p in mpk-buf-2 mpk-fd-1 mpk-fd-2; do
    cmp -s "$WORK/mpk-buf-1.bin" "$WORK/$p.bin" || { echo "run_merge.sh: $p and mpk-buf-1 wrote different bytes" >&2; exit 1; }
  done
  [[ -n ${CHECKED:-} ]] && return 0 # the float64 comparison once is enough
  CHECKED=1
  "$PYTHON" - "$WORK" "$ROWS" "$COLS" "$RANK" "$SCALE" <<'EOF'
import sys, os, numpy as np
d, rows, cols, rank, scale = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
A = np.fromfile(os.path.join(d, "A.bin"), dtype=np.float32).reshape(rank, cols).astype(np.float64)
B = np.fromfile(os.path.join(d, "B.bin"), dtype=np.float32).reshape(rows, rank).astype(np.float64)
W = np.fromfile(os.path.join(d, "base.bin"), dtype=np.float16).reshape(rows, cols).astype(np.float64)
sc = float(np.float32(scale))
exact = W + sc * (B @ A)
mag = np.abs(W) + abs(sc) * (np.abs(B) @ np.abs(A))
# float32 work (rank + 3 roundings on the magnitudes), then half an ulp of float16 at the result
err32 = (rank + 3) * 2.0**-24 * (mag + np.abs(exact))
e = np.floor(np.log2(np.maximum(np.abs(exact) + err32, 2.0**-24)))
bound = err32 + 0.5 * 2.0**(np.maximum(e, -14) - 10)
def report(name, path):
    x = np.fromfile(path, dtype=np.float16).reshape(rows, cols).astype(np.float64)
    r = np.abs(x - exact) / bound
    print("   %-8s against float64: worst error %.3f of the bound (float32 work + half a float16 ulp)" % (name, r.max()))
    return r.max()
m = report("modelpkg", os.path.join(d, "mpk-buf-1.bin"))
report("numpy", os.path.join(d, "np_out.bin.keep"))
a = np.fromfile(os.path.join(d, "mpk-buf-1.bin"), dtype=np.uint16)
b = np.fromfile(os.path.join(d, "np_out.bin.keep"), dtype=np.uint16)
print("   numpy and modelpkg differ in %d of %d elements (different summation order)" % (int((a != b).sum()), a.size))
if m > 1:
    sys.exit("run_merge.sh: modelpkg is outside the error bound")
EOF
}

rounds() {
  local section=$1 n=$2; shift 2
  local -a peers=("$@")
  local r k np=${#peers[@]}
  for ((r = 1; r <= n; r++)); do
    for ((k = 0; k < np; k++)); do
      measure "$section" "${peers[$(((k + r - 1) % np))]}" "$r"
    done
    [[ $section == tensor ]] && check_outputs
    echo "   round $r/$n done (load average $(cut -d' ' -f1 /proc/loadavg))"
  done
}

# summary SECTION BYTES: the table and the ratios.
summary() {
  local bw
  bw=$(sed -n 's/.* gbps=\([0-9.]*\).*/\1/p' <<<"$BW")
  awk -v section="$1" -v bytes="$2" -v bw="$bw" '
    function median(arr, n,   i, j, t) {
      for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j+1] = arr[j]; arr[j+1] = t }
      return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
    }
    function med_of(peer, field,   i, n, a) {
      n = 0
      for (i = 1; i <= nr; i++) if (P[i] == peer) a[++n] = V[i, field]
      return n ? median(a, n) : -1
    }
    function med_ratio(p1, p2,   r, n, a) {
      n = 0
      for (r in R) if ((p1, r) in IDX && (p2, r) in IDX) a[++n] = V[IDX[p1, r], "t"] / V[IDX[p2, r], "t"]
      return n ? median(a, n) : -1
    }
    $1 == section {
      nr++; P[nr] = $2; if (!($3 in R)) nrounds++; R[$3] = 1; IDX[$2, $3] = nr
      V[nr, "t"] = $4; V[nr, "cpu"] = $5; V[nr, "bg"] = $6; V[nr, "mm"] = $7
      if (!($2 in seen)) { seen[$2] = 1 }
    }
    END {
      if (!nr) exit
      names["memcpy"] = "memcpy (read + write at memory bandwidth)"
      names["mpk-buf-1"] = "modelpkg to_buf, 1 thread"
      names["mpk-buf-2"] = "modelpkg to_buf, 2 threads"
      names["copyfd"] = "pwrite() of the base (page-cache copy)"
      names["mpk-fd-1"] = "modelpkg to_fd, 1 thread"
      names["mpk-fd-2"] = "modelpkg to_fd, 2 threads"
      names["numpy"] = "numpy, 1 core, in memory"
      names["numpy-file"] = "numpy, 1 core, file to file"
      names["model-copy"] = "copy floor: pwrite() each base tensor"
      names["model-merge-1"] = "modelpkg to_fd, 1 thread"
      names["model-merge-2"] = "modelpkg to_fd, 2 threads"
      names["model-numpy"] = "numpy, 1 core, file out"
      split("memcpy mpk-buf-1 mpk-buf-2 copyfd mpk-fd-1 mpk-fd-2 numpy numpy-file model-copy model-merge-1 model-merge-2 model-numpy", want, " ")
      printf "\n-- %s (median of %d rounds)\n", section, nrounds
      printf "%-44s %11s %9s %8s %6s\n", "peer", "time", "GB/s", "cpu/wall", "other"
      for (i = 1; i <= 12; i++) {
        p = want[i]; if (!(p in seen)) continue
        t = med_of(p, "t")
        printf "%-44s %8.2f ms %9.2f %8.2f %6.2f\n", names[p], t * 1e3, 2 * bytes / t / 1e9, med_of(p, "cpu") / t, med_of(p, "bg")
        if (p == "numpy") printf "%-44s %8.2f ms\n", "  of which B @ A", med_of(p, "mm") * 1e3
      }
      print "ratios (median of per-round ratios)                       value   target"
      if (section == "tensor") {
        x = med_ratio("numpy", "mpk-buf-1"); printf "  numpy / modelpkg to_buf 1 thread (speed-up)          %8.1f   >= 10 %s\n", x, (x >= 10 ? "met" : "MISSED")
        x = med_ratio("numpy-file", "mpk-fd-1"); printf "  numpy file / modelpkg to_fd 1 thread (speed-up)      %8.1f   >= 10 %s\n", x, (x >= 10 ? "met" : "MISSED")
        x = med_ratio("mpk-buf-1", "memcpy"); printf "  modelpkg to_buf 1 thread / memcpy                    %8.2f   <= 2 %s\n", x, (x <= 2 ? "met" : "MISSED")
        x = med_ratio("mpk-buf-2", "memcpy"); printf "  modelpkg to_buf 2 threads / memcpy                   %8.2f   <= 2 %s\n", x, (x <= 2 ? "met" : "MISSED")
        fl = 2 * bytes / (bw * 1e9)
        x = med_of("mpk-buf-1", "t") / fl; printf "  modelpkg to_buf 1 thread / (2 x tensor at %.1f GB/s = %.2f ms)  %5.2f   <= 2 %s\n", bw, fl * 1e3, x, (x <= 2 ? "met" : "MISSED")
        x = med_of("mpk-buf-2", "t") / fl; printf "  modelpkg to_buf 2 threads / the same                 %8.2f   <= 2 %s\n", x, (x <= 2 ? "met" : "MISSED")
        x = med_ratio("mpk-fd-1", "copyfd"); printf "  modelpkg to_fd 1 thread / pwrite copy               %8.2f\n", x
        x = med_ratio("mpk-fd-2", "copyfd"); printf "  modelpkg to_fd 2 threads / pwrite copy              %8.2f\n", x
        x = med_ratio("mpk-buf-1", "mpk-buf-2"); printf "  to_buf: 1 thread / 2 threads                         %8.2f\n", x
      } else {
        x = med_ratio("model-merge-1", "model-copy"); printf "  modelpkg 1 thread / copy floor                       %8.2f\n", x
        x = med_ratio("model-merge-2", "model-copy"); printf "  modelpkg 2 threads / copy floor                      %8.2f\n", x
        if ("model-numpy" in seen) { x = med_ratio("model-numpy", "model-merge-1"); printf "  numpy / modelpkg 1 thread (speed-up)                 %8.1f\n", x }
      }
    }' "$RES"
}

BW=$("$BENCH" bw --mib "$BW_MIB" --iters 7 | grep '^RESULT')
echo "memory bandwidth, one core: memcpy of $BW_MIB MiB in $(sed -n 's/.* median_s=\([0-9.]*\).*/\1/p' <<<"$BW" | awk '{printf "%.2f ms", $1*1e3}'): $(sed -n 's/.* gbps=\([0-9.]*\).*/\1/p' <<<"$BW" | awk '{printf "%.1f", $1}') GB/s read + write (median of 7)"
echo "== one tensor: $ROWS x $COLS"
rounds tensor "$REPEAT" memcpy mpk-buf-1 mpk-buf-2 copyfd mpk-fd-1 mpk-fd-2 numpy numpy-file
summary tensor "$(( ROWS * COLS * 2 ))"

if [[ $MODEL == 1 ]]; then
  PY_MODEL='
import sys, time, os
import numpy as np
d, rank, scale, iters = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
layer = [(2048, 2048), (512, 2048), (512, 2048), (2048, 2048), (8192, 2048), (8192, 2048), (2048, 8192)]
rng = np.random.default_rng(1)
# one base tensor and adapter per projection kind, reused by every layer (numpy is far from any cache effect)
bases = [rng.uniform(-1, 1, (o, i)).astype(np.float16) for o, i in layer]
As = [rng.uniform(-1, 1, (rank, i)).astype(np.float32) for o, i in layer]
Bs = [rng.uniform(-1, 1, (o, rank)).astype(np.float32) for o, i in layer]
s = np.float32(scale)
path = os.path.join(d, "np_model_tensor.bin")
ts, cs = [], []
for it in range(iters):
    c0 = time.process_time(); t0 = time.perf_counter()
    for l in range(16):
        for k in range(len(layer)):
            out = (bases[k].astype(np.float32) + s * (Bs[k] @ As[k])).astype(np.float16)
            out.tofile(path)
            os.unlink(path)
    ts.append(time.perf_counter() - t0); cs.append(time.process_time() - c0)
ts.sort(); cs.sort()
print("RESULT mode=model-numpy median_s=%.6f cpu_s=%.6f" % (ts[len(ts) // 2], cs[len(cs) // 2]))
'
  echo
  echo "== whole model: 16 layers x (q, k, v, o, gate, up, down), Llama-3.2-1B shapes, float16, rank $RANK"
  peers=(model-copy model-merge-1 model-merge-2)
  [[ $MODEL_NUMPY == 1 ]] && peers+=(model-numpy)
  rounds model "$MODEL_REPEAT" "${peers[@]}"
  summary model 1946157056
fi

if [[ $VARIANTS == 1 ]]; then
  # name: gen/run options. Each variant is timed (to_buf, 1 thread) beside a memcpy of its own
  # tensor, in VAR_REPEAT rounds; the kernel is forced for avx2 and portable.
  declare -A VOPT=(
    [f16-avx512]="--dtype f16" [f16-avx2]="--dtype f16 --impl avx2" [f16-portable]="--dtype f16 --impl portable"
    [f16-transposed]="--dtype f16 --transposed" [f16-rank4]="--dtype f16 --rank 4" [f16-rank64]="--dtype f16 --rank 64"
    [f32]="--dtype f32" [bf16]="--dtype bf16")
  VNAMES=(f16-avx512 f16-avx2 f16-portable f16-transposed f16-rank4 f16-rank64 f32 bf16)
  echo
  echo "== variants: $ROWS x $COLS, to_buf with 1 thread, each beside a memcpy of the same bytes ($VAR_REPEAT rounds)"
  for v in "${VNAMES[@]}"; do
    mkdir -p "$WORK/v-$v"
    read -ra o <<<"${VOPT[$v]}"
    gen=()
    for ((k = 0; k < ${#o[@]}; k++)); do
      [[ ${o[$k]} == --impl ]] && { k=$((k + 1)); continue; }
      gen+=("${o[$k]}")
    done
    [[ " ${gen[*]} " == *" --rank "* ]] || gen+=(--rank "$RANK")
    "$BENCH" gen --dir "$WORK/v-$v" --rows "$ROWS" --cols "$COLS" "${gen[@]}" >/dev/null
  done
  VRES=$WORK/variants.txt
  : >"$VRES"
  for ((r = 1; r <= VAR_REPEAT; r++)); do
    for v in "${VNAMES[@]}"; do
      read -ra o <<<"${VOPT[$v]}"
      [[ " ${o[*]} " == *" --rank "* ]] || o+=(--rank "$RANK")
      it=$ITERS
      [[ $v == *portable ]] && it=1
      t=$("$BENCH" run --dir "$WORK/v-$v" --mode buf --rows "$ROWS" --cols "$COLS" --scale "$SCALE" --iters "$it" "${o[@]}" |
        sed -n 's/^RESULT.* median_s=\([0-9.]*\).*/\1/p')
      o2=()
      for ((k = 0; k < ${#o[@]}; k++)); do [[ ${o[$k]} == --impl ]] && k=$((k + 1)) || o2+=("${o[$k]}"); done
      m=$("$BENCH" run --dir "$WORK/v-$v" --mode memcpy --rows "$ROWS" --cols "$COLS" --iters "$ITERS" "${o2[@]}" |
        sed -n 's/^RESULT.* median_s=\([0-9.]*\).*/\1/p')
      echo "$v $r $t $m" >>"$VRES"
    done
    echo "   round $r/$VAR_REPEAT done (load average $(cut -d' ' -f1 /proc/loadavg))"
  done
  awk '
    function median(arr, n,   i, j, t) {
      for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j+1] = arr[j]; arr[j+1] = t }
      return n % 2 ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
    }
    { if (!($1 in n)) order[++nv] = $1; n[$1]++; T[$1, n[$1]] = $3; M[$1, n[$1]] = $4; Q[$1, n[$1]] = $3 / $4 }
    END {
      printf "%-16s %12s %12s %14s\n", "variant", "merge", "memcpy", "merge/memcpy"
      for (i = 1; i <= nv; i++) {
        v = order[i]
        for (k = 1; k <= n[v]; k++) { a[k] = T[v, k]; b[k] = M[v, k]; c[k] = Q[v, k] }
        printf "%-16s %9.2f ms %9.2f ms %14.2f\n", v, median(a, n[v]) * 1e3, median(b, n[v]) * 1e3, median(c, n[v])
      }
    }' "$VRES"
fi
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
