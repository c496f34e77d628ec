/* The LoRA merge arithmetic: shapes and sizes checked, the factors prepared (scaled, and
   transposed for an [in, out] weight), then W streamed in row blocks over a bounded pool of workers,
   each block merged by the tile code of merge_tiles.c and written at its offset. Quantized weights
   are dequantized block by block, merged in float32 and requantized (docs/merge-arithmetic.md).
   Nothing here holds more than one block per worker plus the factors. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <stdatomic.h>

#include "core/core.h"
#include "core/cpu.h"
#include "core/endian.h"
#include "core/mathx.h"
#include "core/pool.h"
#include "mt/merge/merge_kernel.h"

#define MAX_WORKERS 8
/* Output bytes per block of a dense merge written to a file: small enough to stay in L2 between
   the tiles that write it and the pwrite() that copies it out, large enough that pwrite's
   per-call cost does not show (docs/PERFORMANCE.md, "LoRA merge"). */
#define DENSE_BLOCK_BYTES ((size_t)512 * 1024)
/* A merge into the caller's buffer at least this large writes with non-temporal stores. */
#define STREAM_MIN_BYTES ((size_t)4 * 1024 * 1024)
/* float32 bytes per block of a quantized merge. */
#define QUANT_BLOCK_BYTES ((size_t)512 * 1024)
/* An [in, out] weight with groups of G input rows is done in one pass when 2·G rows of float32 fit
   in this; otherwise in two (min/max, then quantize), so memory stays bounded. */
#define QUANT_SINGLE_MAX ((size_t)8 * 1024 * 1024)
#define MAX_RANK 65536

/* ---------------------------------------------------------------- names */

/* Names are core's dtype registry's; the kernel knows its types by registry id. */
static const mpk_dtype_id mk_dtype_ids[] = {[MPK_MK_F32] = MPK_DT_FLOAT32, [MPK_MK_F16] = MPK_DT_FLOAT16,
                                            [MPK_MK_BF16] = MPK_DT_BFLOAT16};

int mpk_mk_dtype_from_name(const char *name, mpk_mk_dtype *out) {
  const mpk_dtype *d = mpk_dtype_by_name(name);
  switch (d ? d->id : MPK_DT_UNKNOWN) {
    case MPK_DT_FLOAT32: *out = MPK_MK_F32; return 0;
    case MPK_DT_FLOAT16: *out = MPK_MK_F16; return 0;
    case MPK_DT_BFLOAT16: *out = MPK_MK_BF16; return 0;
    default: return MPK_EUNSUPPORTED;
  }
}

int mpk_mk_qtype_from_name(const char *name, mpk_mk_qtype *out) {
  const mpk_dtype *d = mpk_dtype_by_name(name);
  switch (d ? d->id : MPK_DT_UNKNOWN) {
    case MPK_DT_UINT8: *out = MPK_MK_U8; return 0;
    case MPK_DT_UINT4: *out = MPK_MK_U4; return 0;
    default: return MPK_EUNSUPPORTED;
  }
}

size_t mpk_mk_dtype_size(mpk_mk_dtype dt) { return dt == MPK_MK_F32 ? 4 : 2; }

static const char *dtype_name(mpk_mk_dtype dt) {
  const char *s = (unsigned)dt <= MPK_MK_BF16 ? mpk_dtype_name(mk_dtype_ids[dt]) : NULL;
  return s ? s : "?";
}

static const char *qtype_name(mpk_mk_qtype q) { return mpk_dtype_name(q == MPK_MK_U4 ? MPK_DT_UINT4 : MPK_DT_UINT8); }

/* ---------------------------------------------------------------- implementation choice */

typedef void (*rows_fn)(const mpk_mk_tile_args *);

static int impl_available(mpk_mk_impl impl) {
  switch (impl) {
    case MPK_MK_AUTO:
    case MPK_MK_PORTABLE: return 1;
#ifdef MPK_MK_X86
    case MPK_MK_AVX2: {
      const unsigned need = MPK_CPU_AVX2 | MPK_CPU_FMA | MPK_CPU_F16C;
      return (mpk_cpu_features() & need) == need;
    }
    case MPK_MK_AVX512: {
      const unsigned need = MPK_CPU_AVX512 | MPK_CPU_AVX2 | MPK_CPU_FMA | MPK_CPU_F16C;
      return (mpk_cpu_features() & need) == need;
    }
#endif
    default: return 0;
  }
}

/* cpuid traps to the hypervisor in a VM: ask once (bit k: implementation k is available). */
static int available_mask(void) {
  static _Atomic int mask = -1;
  int m = atomic_load_explicit(&mask, memory_order_relaxed);
  if (m < 0) {
    m = 0;
    for (int k = MPK_MK_AUTO; k <= MPK_MK_AVX512; k++)
      if (impl_available((mpk_mk_impl)k)) m |= 1 << k;
    atomic_store_explicit(&mask, m, memory_order_relaxed);
  }
  return m;
}

int mpk_mk_impl_available(mpk_mk_impl impl) {
  return (unsigned)impl <= MPK_MK_AVX512 && (available_mask() >> impl & 1);
}

mpk_mk_impl mpk_mk_impl_best(void) {
  return mpk_mk_impl_available(MPK_MK_AVX512) ? MPK_MK_AVX512
         : mpk_mk_impl_available(MPK_MK_AVX2) ? MPK_MK_AVX2
                                               : MPK_MK_PORTABLE;
}

const char *mpk_mk_impl_name(mpk_mk_impl impl) {
  switch (impl) {
    case MPK_MK_AUTO: return mpk_mk_impl_name(mpk_mk_impl_best());
    case MPK_MK_PORTABLE: return "portable";
    case MPK_MK_AVX2: return "avx2";
    case MPK_MK_AVX512: return "avx512";
  }
  return "?";
}

static int resolve_impl(mpk_mk_impl want, const char *name, rows_fn *fn, mpk_error *err) {
  if (want == MPK_MK_AUTO) want = mpk_mk_impl_best();
  if ((unsigned)want > MPK_MK_AVX512 || !mpk_mk_impl_available(want))
    return mpk_fail(err, MPK_EUNSUPPORTED, name, NULL, "merge kernel '%s' is not available on this CPU",
                    mpk_mk_impl_name(want));
  switch (want) {
#ifdef MPK_MK_X86
    case MPK_MK_AVX2: *fn = mpk_mk_rows_avx2; break;
    case MPK_MK_AVX512: *fn = mpk_mk_rows_avx512; break;
#endif
    default: *fn = mpk_mk_rows_portable; break;
  }
  return 0;
}

/* ---------------------------------------------------------------- shared checks */

static bool mul_size(size_t a, size_t b, size_t *out) { return !__builtin_mul_overflow(a, b, out); }

/* Elements of a rows × cols tensor, overflow-checked (and below 2^62 so any byte count fits). */
static int numel(int64_t rows, int64_t cols, const char *name, size_t *out, mpk_error *err) {
  if (rows < 1 || cols < 1)
    return mpk_fail(err, MPK_EINVAL, name, NULL, "weight shape [%lld, %lld]: both dimensions must be >= 1",
                    (long long)rows, (long long)cols);
  size_t n;
  if (!mul_size((size_t)rows, (size_t)cols, &n) || (uint64_t)n > ((uint64_t)1 << 60)) /* 64-bit: wasm32 */
    return mpk_fail(err, MPK_ELIMIT, name, NULL, "weight shape [%lld, %lld] is too large", (long long)rows,
                    (long long)cols);
  *out = n;
  return 0;
}

static int check_factors(const char *name, const float *A, const float *B, int64_t rank, float scale,
                         int transposed, int64_t rows, int64_t cols, mpk_error *err) {
  if (!A || !B) return mpk_fail(err, MPK_EINVAL, name, NULL, "adapter factor A or B is NULL");
  if (rank < 1 || rank > MAX_RANK)
    return mpk_fail(err, MPK_EINVAL, name, NULL, "adapter rank %lld must be between 1 and %d", (long long)rank,
                    MAX_RANK);
  if (!isfinite(scale)) return mpk_fail(err, MPK_EINVAL, name, NULL, "merge scale must be a finite number");
  if (transposed != 0 && transposed != 1)
    return mpk_fail(err, MPK_EINVAL, name, NULL, "orientation flag must be 0 or 1");
  size_t n = 0;
  if (!mul_size((size_t)(rows + cols), (size_t)rank, &n) || !mul_size(n, sizeof(float), &n) ||
      (uint64_t)n > ((uint64_t)1 << 40))
    return mpk_fail(err, MPK_ELIMIT, name, NULL, "adapter factors of rank %lld are too large", (long long)rank);
  return 0;
}

/* ---------------------------------------------------------------- prepared factors */

/* W_merged = W + L·R in W's own layout, L [rows, rank] and R [rank, cols]:
     [out, in] weight: L = scale·B, R = A;   [in, out] weight: L = Aᵀ, R = scale·Bᵀ.
   Both orientations multiply the same two numbers for an element, (scale·B[o][r]) and A[r][i], so
   a transposed weight merges to exactly the transpose of the untransposed result. R is A itself or
   one prepared copy; L is built per block in the worker's scratch (rows × rank floats of fresh
   memory per call would cost page faults, not arithmetic). */
typedef struct factors {
  const float *A, *B;
  int64_t rows, rank;
  float scale;
  int transposed;
  const float *R; /* A itself, or `own` */
  float *own;
} factors;

static void factors_free(factors *f) {
  free(f->own);
  memset(f, 0, sizeof *f);
}

static int factors_prepare(const char *name, const float *A, const float *B, int64_t rank, float scale,
                           int transposed, int64_t rows, int64_t cols, factors *f, mpk_error *err) {
  *f = (factors){.A = A, .B = B, .rows = rows, .rank = rank, .scale = scale, .transposed = transposed, .R = A};
  if (transposed) { /* R = scale·Bᵀ, in blocks of 64 columns so both sides stay in L1 */
    if (!(f->own = malloc((size_t)rank * (size_t)cols * sizeof(float))))
      return mpk_fail(err, MPK_ENOMEM, name, NULL, "out of memory for the adapter factors");
    for (int64_t o0 = 0; o0 < cols; o0 += 64)
      for (int64_t r = 0; r < rank; r++)
        for (int64_t o = o0; o < cols && o < o0 + 64; o++) f->own[r * cols + o] = scale * B[o * rank + r];
    f->R = f->own;
  }
  return 0;
}

/* L's rows [r0, r0 + n) into L ([n, rank]). */
static void factors_rows(const factors *f, int64_t r0, int64_t n, float *L) {
  const int64_t rank = f->rank;
  if (!f->transposed) {
    const float *b = f->B + r0 * rank;
    for (int64_t k = 0; k < n * rank; k++) L[k] = f->scale * b[k];
  } else {
    for (int64_t r = 0; r < rank; r++) {
      const float *a = f->A + r * f->rows + r0;
      for (int64_t i = 0; i < n; i++) L[i * rank + r] = a[i];
    }
  }
}

/* Bytes of scratch for L of `n` rows, rounded to a cache line. */
static size_t l_bytes(int64_t n, int64_t rank) { return ((size_t)n * (size_t)rank * sizeof(float) + 63) & ~(size_t)63; }

/* ---------------------------------------------------------------- blocks on the worker pool */

/* How a tensor's row blocks run on core's worker pool: each worker gets its scratch once; progress
   is reported per block (the callback may cancel). */
typedef struct blocks {
  int64_t n;
  size_t scratch_bytes;
  uint64_t total;
  mpk_progress_fn progress;
  void *progress_ctx;
  uint64_t base; /* bytes an earlier run of the same tensor reported (the first of two passes) */
} blocks;

static int blocks_progress(void *ctx, uint64_t done, uint64_t total) {
  const blocks *b = ctx;
  return b->progress(b->progress_ctx, b->base + done, total);
}

static int run_blocks(const blocks *b, mpk_pool_task fn, void *ctx, int threads, const char *name, mpk_error *err) {
  if (threads <= 0) threads = (int)mpk_online_cpus();
  if (threads > MAX_WORKERS) threads = MAX_WORKERS;
  mpk_pool_opts o = {.workers = (unsigned)threads, .scratch_bytes = b->scratch_bytes,
                     .progress = b->progress ? blocks_progress : NULL, .progress_ctx = (void *)b, .total = b->total};
  int rc = mpk_pool_run((size_t)b->n, &o, fn, ctx, NULL, err);
  if (rc == MPK_ECANCELLED) mpk_fail(err, MPK_ECANCELLED, name, NULL, "cancelled");
  return rc;
}

/* ---------------------------------------------------------------- output */

/* Where results go: memory (buf) or a file (fd, written with pwrite at the same offsets). */
typedef struct sink {
  uint8_t *buf[3];
  int fd[3];
} sink;

static int sink_write(const sink *s, int k, uint64_t off, const void *p, size_t n, const char *name,
                      mpk_error *err) {
  if (s->buf[k]) {
    memcpy(s->buf[k] + off, p, n);
    return 0;
  }
  const uint8_t *b = p;
  while (n) {
    ssize_t w = pwrite(s->fd[k], b, n, (off_t)off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      return mpk_fail_at(err, MPK_EIO, name, (int64_t)off, "write failed: %s", w < 0 ? strerror(errno) : "no progress");
    b += w;
    n -= (size_t)w;
    off += (uint64_t)w;
  }
  return 0;
}

/* ---------------------------------------------------------------- dense */

int mpk_merge_dense_check(const mpk_merge_dense *m, mpk_error *err) {
  if (!m) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL merge description");
  const char *name = m->name;
  if ((unsigned)m->dtype > MPK_MK_BF16)
    return mpk_fail(err, MPK_EUNSUPPORTED, name, NULL, "weight dtype must be float32, float16 or bfloat16");
  size_t n = 0, bytes;
  int rc = numel(m->rows, m->cols, name, &n, err);
  if (rc) return rc;
  bytes = n * mpk_mk_dtype_size(m->dtype);
  if (!m->base) return mpk_fail(err, MPK_EINVAL, name, NULL, "base weight is NULL");
  if (m->base_len != bytes)
    return mpk_fail(err, MPK_EMISMATCH, name, NULL, "base weight has %zu bytes, shape [%lld, %lld] of %s needs %zu",
                    m->base_len, (long long)m->rows, (long long)m->cols, dtype_name(m->dtype), bytes);
  if (m->block_rows < 0) return mpk_fail(err, MPK_EINVAL, name, NULL, "block_rows must be >= 0");
  return check_factors(name, m->A, m->B, m->rank, m->scale, m->transposed, m->rows, m->cols, err);
}

typedef struct dense_ctx {
  const mpk_merge_dense *m;
  factors f;
  rows_fn fn;
  size_t es;
  int64_t br;
  sink s;
  int stream;
} dense_ctx;

static int dense_block(mpk_pool *p, void *ctx, size_t block, void *scratch_, mpk_error *err) {
  dense_ctx *c = ctx;
  uint8_t *scratch = scratch_;
  int64_t b = (int64_t)block;
  const mpk_merge_dense *m = c->m;
  int64_t r0 = b * c->br, r1 = r0 + c->br < m->rows ? r0 + c->br : m->rows;
  size_t off = (size_t)r0 * (size_t)m->cols * c->es, len = (size_t)(r1 - r0) * (size_t)m->cols * c->es;
  float *L = (float *)(void *)scratch;
  uint8_t *out = c->s.buf[0] ? c->s.buf[0] + off : scratch + l_bytes(c->br, m->rank);
  factors_rows(&c->f, r0, r1 - r0, L);
  mpk_mk_tile_args a = {.L = L, .R = c->f.R, .rank = m->rank, .cols = m->cols,
                        .nrows = r1 - r0, .base = (const uint8_t *)m->base + off, .out = out, .dtype = m->dtype,
                        .stream = c->stream};
  c->fn(&a);
  if (!c->s.buf[0]) {
    int rc = sink_write(&c->s, 0, off, out, len, m->name, err);
    if (rc) return rc;
  }
  mpk_pool_advance(p, len);
  return 0;
}

static int64_t dense_block_rows(const mpk_merge_dense *m, size_t es) {
  if (m->block_rows > 0) return m->block_rows < m->rows ? m->block_rows : m->rows;
  size_t row = (size_t)m->cols * es;
  int64_t br = (int64_t)(DENSE_BLOCK_BYTES / row);
  if (br > 12) br -= br % 12; /* whole 4- and 6-row tiles */
  if (br < 1) br = 1;
  return br < m->rows ? br : m->rows;
}

static int dense_run(const mpk_merge_dense *m, int threads, const sink *s, mpk_error *err) {
  int rc = mpk_merge_dense_check(m, err);
  if (rc) return rc;
  dense_ctx c = {.m = m, .es = mpk_mk_dtype_size(m->dtype), .s = *s,
                 .stream = s->buf[0] && m->base_len >= STREAM_MIN_BYTES};
  if ((rc = resolve_impl(m->impl, m->name, &c.fn, err))) return rc;
  if ((rc = factors_prepare(m->name, m->A, m->B, m->rank, m->scale, m->transposed, m->rows, m->cols, &c.f, err)))
    return rc;
  c.br = dense_block_rows(m, c.es);
  blocks p = {.n = (m->rows + c.br - 1) / c.br,
              .scratch_bytes = l_bytes(c.br, m->rank) + (s->buf[0] ? 0 : (size_t)c.br * (size_t)m->cols * c.es),
              .total = m->base_len, .progress = m->progress, .progress_ctx = m->progress_ctx};
  rc = run_blocks(&p, dense_block, &c, threads, m->name, err);
  factors_free(&c.f);
  return rc;
}

int mpk_merge_dense_to_buf(const mpk_merge_dense *m, int threads, void *out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, m ? m->name : NULL, NULL, "output buffer is NULL");
  sink s = {.buf = {out}};
  return dense_run(m, threads, &s, err);
}

int mpk_merge_dense_to_fd(const mpk_merge_dense *m, int threads, int fd, mpk_error *err) {
  if (fd < 0) return mpk_fail(err, MPK_EINVAL, m ? m->name : NULL, NULL, "invalid output file descriptor");
  sink s = {.fd = {fd, -1, -1}};
  return dense_run(m, threads, &s, err);
}

int mpk_merge_dense_rows(const mpk_merge_dense *m, int64_t r0, int64_t r1, void *out, mpk_error *err) {
  int rc = mpk_merge_dense_check(m, err);
  if (rc) return rc;
  if (r0 < 0 || r1 > m->rows || r0 > r1 || !out)
    return mpk_fail(err, MPK_EINVAL, m->name, NULL, "rows [%lld, %lld) are not within [0, %lld)", (long long)r0,
                    (long long)r1, (long long)m->rows);
  if (r0 == r1) return 0;
  rows_fn fn;
  if ((rc = resolve_impl(m->impl, m->name, &fn, err))) return rc;
  factors f;
  if ((rc = factors_prepare(m->name, m->A, m->B, m->rank, m->scale, m->transposed, m->rows, m->cols, &f, err)))
    return rc;
  float *L = malloc(l_bytes(r1 - r0, m->rank));
  if (!L) {
    factors_free(&f);
    return mpk_fail(err, MPK_ENOMEM, m->name, NULL, "out of memory");
  }
  factors_rows(&f, r0, r1 - r0, L);
  size_t es = mpk_mk_dtype_size(m->dtype);
  mpk_mk_tile_args a = {.L = L, .R = f.R, .rank = m->rank, .cols = m->cols, .nrows = r1 - r0,
                        .base = (const uint8_t *)m->base + (size_t)r0 * (size_t)m->cols * es, .out = out,
                        .dtype = m->dtype};
  fn(&a);
  free(L);
  factors_free(&f);
  return 0;
}

/* ---------------------------------------------------------------- quantized: layout */

static size_t q_bytes(mpk_mk_qtype t, size_t n) { return t == MPK_MK_U4 ? n / 2 + (n & 1) : n; }

static inline int q_get(const uint8_t *p, mpk_mk_qtype t, size_t k) {
  return t == MPK_MK_U4 ? (p[k >> 1] >> ((k & 1) * 4)) & 15 : p[k];
}

static void shape_str(char *buf, size_t size, int ndim, const int64_t *shape) {
  size_t n = (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < ndim && n < size; d++)
    n += (size_t)snprintf(buf + n, size - n, "%s%lld", d ? ", " : "", (long long)shape[d]);
  if (n < size) snprintf(buf + n, size - n, "]");
}

int mpk_merge_quant_check(const mpk_merge_quant *m, mpk_mk_qlayout *out, mpk_error *err) {
  if (!m) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL merge description");
  const char *name = m->name;
  mpk_mk_qlayout L = {0};
  size_t n = 0;
  int rc = numel(m->rows, m->cols, name, &n, err);
  if (rc) return rc;
  if ((unsigned)m->q_type > MPK_MK_U4)
    return mpk_fail(err, MPK_EUNSUPPORTED, name, NULL, "weight_quantized dtype must be uint8 or uint4");
  if ((unsigned)m->q_zero_type > MPK_MK_U4)
    return mpk_fail(err, MPK_EUNSUPPORTED, name, NULL, "zero_point dtype must be uint8 or uint4");
  if (m->q_scale_dtype != MPK_MK_F32 && m->q_scale_dtype != MPK_MK_F16)
    return mpk_fail(err, MPK_EUNSUPPORTED, name, NULL, "scale dtype must be float32 or float16");
  if (m->q_type == MPK_MK_U8 && m->q_zero_type == MPK_MK_U4)
    return mpk_fail(err, MPK_EUNSUPPORTED, name, NULL,
                    "zero_point is uint4 but weight_quantized is uint8: zero points up to 255 need uint8");
  if (!m->q || !m->q_scale || !m->q_zero)
    return mpk_fail(err, MPK_EINVAL, name, NULL, "weight_quantized, scale or zero_point is NULL");
  L.qmax = m->q_type == MPK_MK_U4 ? 15 : 255;
  L.q_bytes = q_bytes(m->q_type, n);
  if (m->q_len != L.q_bytes)
    return mpk_fail(err, MPK_EMISMATCH, name, NULL, "weight_quantized has %zu bytes, shape [%lld, %lld] of %s needs %zu",
                    m->q_len, (long long)m->rows, (long long)m->cols, qtype_name(m->q_type),
                    L.q_bytes);

  /* the scheme, from the scale's shape */
  char ss[96], zs[96];
  if (m->q_scale_ndim < 0 || m->q_scale_ndim > 2 || m->q_zero_ndim < 0 || m->q_zero_ndim > 2)
    return mpk_fail(err, MPK_EUNSUPPORTED, name, NULL, "scale and zero_point must have 0, 1 or 2 dimensions");
  shape_str(ss, sizeof ss, m->q_scale_ndim, m->q_scale_shape);
  shape_str(zs, sizeof zs, m->q_zero_ndim, m->q_zero_shape);
  int64_t sn = 1;
  for (int d = 0; d < m->q_scale_ndim; d++) {
    if (m->q_scale_shape[d] < 1 || m->q_scale_shape[d] > m->rows * m->cols)
      return mpk_fail(err, MPK_EMALFORMED, name, NULL, "scale shape %s has a dimension out of range", ss);
    sn *= m->q_scale_shape[d];
  }
  if (m->q_zero_ndim != m->q_scale_ndim ||
      (m->q_scale_ndim >= 1 && m->q_zero_shape[0] != m->q_scale_shape[0]) ||
      (m->q_scale_ndim == 2 && m->q_zero_shape[1] != m->q_scale_shape[1]))
    return mpk_fail(err, MPK_EMISMATCH, name, NULL, "zero_point shape %s must equal the scale's shape %s", zs, ss);
  const int64_t out_dim = m->transposed ? m->cols : m->rows, in_dim = m->transposed ? m->rows : m->cols;
  if (sn == 1) {
    L.per_tensor = 1;
    L.group = in_dim;
    L.n_groups = 1;
  } else {
    const int64_t s_out = m->q_scale_ndim == 2 ? m->q_scale_shape[m->transposed ? 1 : 0] : -1;
    const int64_t s_in = m->q_scale_ndim == 2 ? m->q_scale_shape[m->transposed ? 0 : 1] : -1;
    if (m->q_scale_ndim != 2 || s_out != out_dim || in_dim % s_in != 0)
      return mpk_fail(err, MPK_EUNSUPPORTED, name, NULL,
                      "scale shape %s declares no supported scheme for a weight of shape [%lld, %lld] (%s): expected "
                      "one element (per-tensor) or %s per group of G input elements, G dividing %lld",
                      ss, (long long)m->rows, (long long)m->cols,
                      m->transposed ? "[in, out]" : "[out, in]", m->transposed ? "[in/G, out]" : "[out, in/G]",
                      (long long)in_dim);
    L.group = in_dim / s_in;
    L.n_groups = sn;
  }
  size_t es = mpk_mk_dtype_size(m->q_scale_dtype);
  L.scale_bytes = (size_t)L.n_groups * es;
  L.zero_bytes = q_bytes(m->q_zero_type, (size_t)L.n_groups);
  if (m->q_scale_len != L.scale_bytes)
    return mpk_fail(err, MPK_EMISMATCH, name, NULL, "scale has %zu bytes, shape %s of %s needs %zu", m->q_scale_len, ss,
                    dtype_name(m->q_scale_dtype), L.scale_bytes);
  if (m->q_zero_len != L.zero_bytes)
    return mpk_fail(err, MPK_EMISMATCH, name, NULL, "zero_point has %zu bytes, shape %s of %s needs %zu", m->q_zero_len,
                    zs, qtype_name(m->q_zero_type), L.zero_bytes);
  /* what the bytes hold: packing padding and zero point range */
  if (m->q_type == MPK_MK_U4 && (n & 1) && (((const uint8_t *)m->q)[L.q_bytes - 1] >> 4))
    return mpk_fail_at(err, MPK_EMALFORMED, name, (int64_t)L.q_bytes - 1,
                       "weight_quantized: the unused high nibble of the last byte must be 0");
  if (m->q_zero_type == MPK_MK_U4 && (L.n_groups & 1) && (((const uint8_t *)m->q_zero)[L.zero_bytes - 1] >> 4))
    return mpk_fail_at(err, MPK_EMALFORMED, name, (int64_t)L.zero_bytes - 1,
                       "zero_point: the unused high nibble of the last byte must be 0");
  for (size_t g = 0; g < (size_t)L.n_groups; g++) {
    int z = q_get(m->q_zero, m->q_zero_type, g);
    if (z > L.qmax)
      return mpk_fail(err, MPK_EMALFORMED, name, NULL, "zero_point element %zu is %d, above the weight's maximum %d", g,
                      z, L.qmax);
  }
  if (m->block_rows < 0) return mpk_fail(err, MPK_EINVAL, name, NULL, "block_rows must be >= 0");
  rc = check_factors(name, m->A, m->B, m->rank, m->scale, m->transposed, m->rows, m->cols, err);
  if (rc) return rc;
  if (out) *out = L;
  return 0;
}

/* ---------------------------------------------------------------- quantized: arithmetic */

/* Round half to even, as nearbyintf() in the default mode, without its library call (x86-64
   without SSE4.1 has no instruction for it): adding and removing 1.5·2^23 leaves the float's
   integer part rounded by the addition itself. Quotients here are within ±(qmax + 1); the clamp
   only keeps the trick valid for anything else. */
static inline float round_even(float v) {
#if FLT_EVAL_METHOD == 0
  v = v > 0x1p22f ? 0x1p22f : v < -0x1p22f ? -0x1p22f : v;
  return (v + 0x1.8p23f) - 0x1.8p23f;
#else
  return nearbyintf(v);
#endif
}

/* The parameters of one group from its merged min (<= 0) and max (>= 0). The scale is rounded up
   to its storage dtype, so (max − min)/scale <= qmax and the grid covers the range. */
static int group_params(float mn, float mx, int qmax, mpk_mk_dtype sdt, float *s, uint16_t *s16, int *zp,
                        const char *name, mpk_error *err) {
  double want = ((double)mx - (double)mn) / qmax;
  if (want == 0) {
    *s = 0.0f;
    *s16 = 0;
    *zp = 0;
    return 0;
  }
  if (sdt == MPK_MK_F16) {
    uint16_t h = mpk_mk_f32_to_f16((float)want);
    while (h < 0x7c00 && (double)mpk_mk_f16_to_f32(h) < want) h++;
    if (h >= 0x7c00)
      return mpk_fail(err, MPK_EUNSUPPORTED, name, NULL,
                      "merged values span %g, too wide for a float16 scale (at most 65504 per step)", (double)mx - mn);
    *s16 = h;
    *s = mpk_mk_f16_to_f32(h);
  } else {
    float f = (float)want;
    if ((double)f < want) f = mpk_nextupf(f);
    *s = f;
  }
  float z = round_even(-mn / *s);
  *zp = z < 0 ? 0 : z > (float)qmax ? qmax : (int)z;
  return 0;
}

static inline int quantize(float w, float s, int zp, int qmax) {
  if (s == 0.0f) return 0; /* an all-zero group */
  float v = round_even(w / s) + (float)zp;
  return v < 0 ? 0 : v > (float)qmax ? qmax : (int)v;
}

typedef struct quant_ctx {
  const mpk_merge_quant *m;
  mpk_mk_qlayout L;
  factors f;
  rows_fn fn;
  sink s;
  int64_t br;           /* rows per block */
  int64_t max_groups;   /* groups a block can touch */
  int two_pass, pass;   /* pass 1: min/max only; pass 2 (or single pass): quantize and write */
  float *gmin, *gmax;   /* two-pass: per group */
  float *gs;            /* two-pass: final scales (float32 values) */
  uint8_t *gz;          /* two-pass: final zero points */
  /* group of element (i, j) = row_first(i) + colg[j]; a row's groups are
     [row_first(i), row_first(i) + row_groups) */
  int64_t *colg;
  int64_t row_groups;
} quant_ctx;

static inline int64_t row_first(const quant_ctx *c, int64_t row) {
  if (c->L.per_tensor) return 0;
  if (!c->m->transposed) return row * c->row_groups;
  return (row / c->L.group) * c->m->cols;
}

static inline int64_t group_of(const quant_ctx *c, int64_t row, int64_t col) {
  return row_first(c, row) + c->colg[col];
}

static inline float scale_at(const mpk_merge_quant *m, int64_t g) {
  const uint8_t *b = m->q_scale; /* little-endian, as in its file */
  return m->q_scale_dtype == MPK_MK_F16 ? mpk_mk_f16_to_f32(mpk_load_le16(b + 2 * g)) : mpk_load_le_f32(b + 4 * g);
}

/* Scratch of one worker: the merged float32 block, then the block's q bytes, group min/max,
   scales and zero points (packed as stored). */
typedef struct qscratch {
  float *L;
  float *rs; /* one row's input scales and zero points, by colg */
  int *rz;
  float *w;
  uint8_t *q;
  float *mn, *mx, *s;
  uint8_t *sbytes, *zbytes;
  int *z;
} qscratch;

static size_t qscratch_layout(const quant_ctx *c, qscratch *x, uint8_t *base) {
  size_t elems = (size_t)c->br * (size_t)c->m->cols, g = (size_t)c->max_groups, off = 0;
#define TAKE(field, type, count)                                   \
  do {                                                             \
    if (x) x->field = (type *)(void *)(base + off);                \
    off += ((size_t)(count) * sizeof(type) + 63) & ~(size_t)63;     \
  } while (0)
  TAKE(L, float, (size_t)c->br * (size_t)c->m->rank);
  TAKE(rs, float, (size_t)c->row_groups);
  TAKE(rz, int, (size_t)c->row_groups);
  TAKE(w, float, elems);
  TAKE(q, uint8_t, elems);
  TAKE(mn, float, g);
  TAKE(mx, float, g);
  TAKE(s, float, g);
  TAKE(z, int, g);
  TAKE(sbytes, uint8_t, g * 4);
  TAKE(zbytes, uint8_t, g);
#undef TAKE
  return off;
}

static int quant_block(mpk_pool *p, void *ctx, size_t block, void *scratch_, mpk_error *err) {
  quant_ctx *c = ctx;
  uint8_t *scratch = scratch_;
  int64_t b = (int64_t)block;
  const mpk_merge_quant *m = c->m;
  const int64_t cols = m->cols, r0 = b * c->br, r1 = r0 + c->br < m->rows ? r0 + c->br : m->rows;
  const size_t e0 = (size_t)r0 * (size_t)cols, ne = (size_t)(r1 - r0) * (size_t)cols;
  const int qmax = c->L.qmax;
  qscratch x;
  qscratch_layout(c, &x, scratch);

  /* dequantize: the row's scales and zero points once, then every element by its column. The block
     is float32 in little-endian bytes, as the tiles read and write every base (a plain store and
     load on a little-endian host). */
  const int64_t *colg = c->colg;
  for (int64_t i = r0; i < r1; i++) {
    uint8_t *w = (uint8_t *)(x.w + (size_t)(i - r0) * (size_t)cols);
    size_t e = (size_t)i * (size_t)cols;
    int64_t rf = row_first(c, i);
    for (int64_t k = 0; k < c->row_groups; k++) {
      x.rs[k] = scale_at(m, rf + k);
      x.rz[k] = q_get(m->q_zero, m->q_zero_type, (size_t)(rf + k));
    }
    const uint8_t *qb = m->q;
    if (m->q_type == MPK_MK_U4)
      for (int64_t j = 0; j < cols; j++) {
        size_t k = e + (size_t)j;
        mpk_store_le_f32(w + 4 * j, (float)(((qb[k >> 1] >> ((k & 1) * 4)) & 15) - x.rz[colg[j]]) * x.rs[colg[j]]);
      }
    else
      for (int64_t j = 0; j < cols; j++)
        mpk_store_le_f32(w + 4 * j, (float)(qb[e + (size_t)j] - x.rz[colg[j]]) * x.rs[colg[j]]);
  }
  /* merge in place */
  factors_rows(&c->f, r0, r1 - r0, x.L);
  mpk_mk_tile_args a = {.L = x.L, .R = c->f.R, .rank = m->rank, .cols = cols,
                        .nrows = r1 - r0, .base = x.w, .out = x.w, .dtype = MPK_MK_F32};
  c->fn(&a);

  /* min/max per group (0 included), over the groups this block touches: [g0, g0 + ng) */
  const int64_t g0 = group_of(c, r0, 0), ng = group_of(c, r1 - 1, cols - 1) - g0 + 1;
  if (c->pass != 2) {
    for (int64_t g = 0; g < ng; g++) x.mn[g] = x.mx[g] = 0.0f;
    for (int64_t i = r0; i < r1; i++) {
      const uint8_t *w = (const uint8_t *)(x.w + (size_t)(i - r0) * (size_t)cols);
      float *mn = x.mn + (row_first(c, i) - g0), *mx = x.mx + (row_first(c, i) - g0);
      for (int64_t j = 0; j < cols; j++) {
        float v = mpk_load_le_f32(w + 4 * j);
        if (!isfinite(v))
          return mpk_fail(err, MPK_EUNSUPPORTED, m->name, NULL,
                          "merged value at [%lld, %lld] is not finite; it cannot be quantized", (long long)i,
                          (long long)j);
        int64_t g = colg[j];
        if (v < mn[g]) mn[g] = v;
        if (v > mx[g]) mx[g] = v;
      }
    }
  }
  if (c->pass == 1) { /* fold into the tensor-wide min/max; quantized in pass 2 */
    mpk_pool_lock(p);
    for (int64_t g = 0; g < ng; g++) {
      if (x.mn[g] < c->gmin[g0 + g]) c->gmin[g0 + g] = x.mn[g];
      if (x.mx[g] > c->gmax[g0 + g]) c->gmax[g0 + g] = x.mx[g];
    }
    mpk_pool_unlock(p);
    mpk_pool_advance(p, q_bytes(m->q_type, ne));
    return 0;
  }

  int rc;
  if (c->pass == 0) { /* single pass: this block holds its groups whole */
    const size_t ses = mpk_mk_dtype_size(m->q_scale_dtype);
    for (int64_t g = 0; g < ng; g++) {
      uint16_t h = 0;
      if ((rc = group_params(x.mn[g], x.mx[g], qmax, m->q_scale_dtype, &x.s[g], &h, &x.z[g], m->name, err))) return rc;
      if (ses == 2) mpk_store_le16(x.sbytes + 2 * g, h);
      else mpk_store_le_f32(x.sbytes + 4 * g, x.s[g]);
    }
    if (m->q_zero_type == MPK_MK_U4) {
      memset(x.zbytes, 0, (size_t)ng / 2 + 1);
      for (int64_t g = 0; g < ng; g++) x.zbytes[g >> 1] |= (uint8_t)(x.z[g] << ((g & 1) * 4));
    } else {
      for (int64_t g = 0; g < ng; g++) x.zbytes[g] = (uint8_t)x.z[g];
    }
    /* g0 is even (blocks are whole pairs of group rows), so packed zero points start on a byte */
    if ((rc = sink_write(&c->s, 1, (uint64_t)g0 * ses, x.sbytes, (size_t)ng * ses, m->name, err)) ||
        (rc = sink_write(&c->s, 2, q_bytes(m->q_zero_type, (size_t)g0), x.zbytes, q_bytes(m->q_zero_type, (size_t)ng),
                         m->name, err)))
      return rc;
  } else { /* pass 2: the tensor-wide parameters */
    for (int64_t g = 0; g < ng; g++) {
      x.s[g] = c->gs[g0 + g];
      x.z[g] = c->gz[g0 + g];
    }
  }

  /* quantize and pack; e0 is even (blocks are even row counts or start at 0) */
  if (m->q_type == MPK_MK_U4) memset(x.q, 0, ne / 2 + 1);
  for (int64_t i = r0; i < r1; i++) {
    const uint8_t *w = (const uint8_t *)(x.w + (size_t)(i - r0) * (size_t)cols);
    const float *sp = x.s + (row_first(c, i) - g0);
    const int *zp = x.z + (row_first(c, i) - g0);
    size_t k = (size_t)(i - r0) * (size_t)cols;
    if (m->q_type == MPK_MK_U4)
      for (int64_t j = 0; j < cols; j++, k++)
        x.q[k >> 1] |= (uint8_t)(quantize(mpk_load_le_f32(w + 4 * j), sp[colg[j]], zp[colg[j]], qmax) << ((k & 1) * 4));
    else
      for (int64_t j = 0; j < cols; j++, k++) x.q[k] = (uint8_t)quantize(mpk_load_le_f32(w + 4 * j), sp[colg[j]], zp[colg[j]], qmax);
  }
  if ((rc = sink_write(&c->s, 0, q_bytes(m->q_type, e0), x.q, q_bytes(m->q_type, ne), m->name, err))) return rc;
  mpk_pool_advance(p, q_bytes(m->q_type, ne));
  return 0;
}

/* Two-pass: the parameters of every group from the min/max of pass 1, written whole. */
static int quant_params_all(quant_ctx *c, mpk_error *err) {
  const mpk_merge_quant *m = c->m;
  const size_t ng = (size_t)c->L.n_groups, ses = mpk_mk_dtype_size(m->q_scale_dtype);
  uint8_t *sb = malloc(ng * ses), *zb = calloc(ng, 1);
  int rc = 0;
  if (!sb || !zb) {
    rc = mpk_fail(err, MPK_ENOMEM, m->name, NULL, "out of memory");
    goto out;
  }
  for (size_t g = 0; g < ng; g++) {
    uint16_t h = 0;
    int z;
    if ((rc = group_params(c->gmin[g], c->gmax[g], c->L.qmax, m->q_scale_dtype, &c->gs[g], &h, &z, m->name, err)))
      goto out;
    c->gz[g] = (uint8_t)z;
    if (ses == 2) mpk_store_le16(sb + 2 * g, h);
    else mpk_store_le_f32(sb + 4 * g, c->gs[g]);
    if (m->q_zero_type == MPK_MK_U4) zb[g >> 1] |= (uint8_t)(z << ((g & 1) * 4));
    else zb[g] = (uint8_t)z;
  }
  if (!(rc = sink_write(&c->s, 1, 0, sb, ng * ses, m->name, err)))
    rc = sink_write(&c->s, 2, 0, zb, q_bytes(m->q_zero_type, ng), m->name, err);
out:
  free(sb);
  free(zb);
  return rc;
}

static int quant_run(const mpk_merge_quant *m, int threads, const sink *s, mpk_error *err) {
  quant_ctx c = {.m = m, .s = *s};
  int rc = mpk_merge_quant_check(m, &c.L, err);
  if (rc) return rc;
  if ((rc = resolve_impl(m->impl, m->name, &c.fn, err))) return rc;
  const size_t row_bytes = (size_t)m->cols * sizeof(float);
  const bool grouped_rows = m->transposed && !c.L.per_tensor; /* a group spans G rows */
  c.two_pass = c.L.per_tensor || (grouped_rows && (size_t)c.L.group * 2 * row_bytes > QUANT_SINGLE_MAX);
  /* Blocks are whole pairs of units (a unit is G rows when a group spans rows, else one row), so
     every block starts on an even element and an even group: packed nibbles never straddle two
     blocks. */
  int64_t unit = grouped_rows && !c.two_pass ? 2 * c.L.group : 2;
  int64_t br = m->block_rows > 0 ? m->block_rows : (int64_t)(QUANT_BLOCK_BYTES / row_bytes);
  if (br < 1) br = 1;
  br = (br + unit - 1) / unit * unit;
  c.br = br < m->rows ? br : m->rows;
  if (c.L.per_tensor) c.max_groups = 1;
  else if (!m->transposed) c.max_groups = c.br * (m->cols / c.L.group);
  else c.max_groups = (c.br / c.L.group + 2) * m->cols;
  if (c.max_groups > c.L.n_groups) c.max_groups = c.L.n_groups;

  c.row_groups = c.L.per_tensor ? 1 : !m->transposed ? m->cols / c.L.group : m->cols;
  if (!(c.colg = malloc((size_t)m->cols * sizeof *c.colg))) return mpk_fail(err, MPK_ENOMEM, m->name, NULL, "out of memory");
  for (int64_t j = 0; j < m->cols; j++) c.colg[j] = c.L.per_tensor ? 0 : !m->transposed ? j / c.L.group : j;
  if ((rc = factors_prepare(m->name, m->A, m->B, m->rank, m->scale, m->transposed, m->rows, m->cols, &c.f, err))) {
    free(c.colg);
    return rc;
  }
  blocks p = {.n = (m->rows + c.br - 1) / c.br, .scratch_bytes = qscratch_layout(&c, NULL, NULL),
              .total = c.L.q_bytes * (c.two_pass ? 2 : 1), .progress = m->progress, .progress_ctx = m->progress_ctx};
  if (!c.two_pass) {
    c.pass = 0;
    rc = run_blocks(&p, quant_block, &c, threads, m->name, err);
  } else {
    size_t ng = (size_t)c.L.n_groups;
    c.gmin = calloc(ng, sizeof(float));
    c.gmax = calloc(ng, sizeof(float));
    c.gs = calloc(ng, sizeof(float));
    c.gz = calloc(ng, 1);
    if (!c.gmin || !c.gmax || !c.gs || !c.gz) rc = mpk_fail(err, MPK_ENOMEM, m->name, NULL, "out of memory");
    if (!rc) {
      c.pass = 1;
      rc = run_blocks(&p, quant_block, &c, threads, m->name, err);
    }
    if (!rc) rc = quant_params_all(&c, err);
    if (!rc) {
      c.pass = 2;
      p.base = c.L.q_bytes; /* pass 1 reported every block's bytes once */
      rc = run_blocks(&p, quant_block, &c, threads, m->name, err);
    }
    free(c.gmin);
    free(c.gmax);
    free(c.gs);
    free(c.gz);
  }
  factors_free(&c.f);
  free(c.colg);
  return rc;
}

int mpk_merge_quant_to_bufs(const mpk_merge_quant *m, int threads, void *q_out, void *scale_out, void *zero_out,
                            mpk_error *err) {
  if (!q_out || !scale_out || !zero_out)
    return mpk_fail(err, MPK_EINVAL, m ? m->name : NULL, NULL, "output buffer is NULL");
  sink s = {.buf = {q_out, scale_out, zero_out}};
  return quant_run(m, threads, &s, err);
}

int mpk_merge_quant_to_fds(const mpk_merge_quant *m, int threads, int fd_q, int fd_scale, int fd_zero,
                           mpk_error *err) {
  if (fd_q < 0 || fd_scale < 0 || fd_zero < 0)
    return mpk_fail(err, MPK_EINVAL, m ? m->name : NULL, NULL, "invalid output file descriptor");
  sink s = {.fd = {fd_q, fd_scale, fd_zero}};
  return quant_run(m, threads, &s, err);
}
