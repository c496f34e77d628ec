/* Internal: the LoRA merge arithmetic — merged = W + scale·(B @ A) streamed over row blocks of W,
   for float32/float16/bfloat16 weights and for quantized ones (uint8 or packed uint4 with a scale
   and a zero point). The formulas, the rounding and the quantized layouts are in
   docs/merge-arithmetic.md. Not installed: the orchestrator (merge.c) finds the factors, the scale
   and the orientation, then calls these functions.
   Byte order: every tensor these functions read or write (W, the quantized roles, the outputs) is
   the file's bytes, little-endian on every host; A and B are float32 in host order (decoded by the
   safetensors reader). docs/cross.md, "Byte order". */
#ifndef MPK_MT_MERGE_KERNEL_H
#define MPK_MT_MERGE_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "modelpkg.h"

/* ---------------------------------------------------------------- element types */

typedef enum mpk_mk_dtype { MPK_MK_F32 = 0, MPK_MK_F16, MPK_MK_BF16 } mpk_mk_dtype;
typedef enum mpk_mk_qtype { MPK_MK_U8 = 0, MPK_MK_U4 } mpk_mk_qtype;

/* float32 / float16 / bfloat16 and uint8 / uint4 (core's dtype registry names). 0, or
   MPK_EUNSUPPORTED for any other name. */
int mpk_mk_dtype_from_name(const char *name, mpk_mk_dtype *out);
int mpk_mk_qtype_from_name(const char *name, mpk_mk_qtype *out);
size_t mpk_mk_dtype_size(mpk_mk_dtype dt);

/* Which code computes the tiles. AUTO picks the best the CPU has (checked at run time); the
   others exist so tests can prove the paths give the same bits and benchmarks can compare them.
   Asking for one the CPU lacks is MPK_EUNSUPPORTED. */
typedef enum mpk_mk_impl {
  MPK_MK_AUTO = 0,
  MPK_MK_PORTABLE, /* plain C11 (fmaf) */
  MPK_MK_AVX2,     /* AVX2 + FMA + F16C, 8 lanes */
  MPK_MK_AVX512,   /* AVX-512 F/BW/VL, 16 lanes */
} mpk_mk_impl;
/* Whether this CPU (and build) can run `impl`; the name of what AUTO resolves to. */
int mpk_mk_impl_available(mpk_mk_impl impl);
mpk_mk_impl mpk_mk_impl_best(void);
const char *mpk_mk_impl_name(mpk_mk_impl impl);

/* ---------------------------------------------------------------- dense weights */

/* One weight W (row-major, `rows` × `cols`, as it lies on disk) and its adapter.
   A is [rank, in] and B is [out, rank], float32 row-major (borrowed; A holds rank·in floats and B
   out·rank). transposed = 0: W is [out, in] (no_transpose), W[o][i] += delta[o][i];
   transposed = 1: W is [in, out] (already_transposed_for_inference), W[i][o] += delta[o][i].
   delta[o][i] = Σ_r (scale·B[o][r])·A[r][i], the sum in r order with one rounding per term (fma). */
typedef struct mpk_merge_dense {
  const char *name;      /* names the tensor in error messages (may be NULL) */
  const void *base;      /* W: rows·cols elements of `dtype` (borrowed, e.g. an mmap) */
  size_t base_len;       /* its size in bytes: must be rows·cols·size(dtype) */
  mpk_mk_dtype dtype;
  int64_t rows, cols;
  int transposed;
  const float *A, *B;
  int64_t rank;
  float scale;
  /* optional */
  mpk_progress_fn progress; /* bytes of output written, out of all (may cancel) */
  void *progress_ctx;
  mpk_mk_impl impl;         /* 0: AUTO */
  int64_t block_rows;       /* rows per block handed to a worker; 0: automatic (~512 KiB out) */
} mpk_merge_dense;

/* Check the shapes, sizes and arguments without computing anything. */
int mpk_merge_dense_check(const mpk_merge_dense *m, mpk_error *err);
/* The merged rows [r0, r1) of W into `out` ((r1 − r0)·cols elements of m->dtype). Prepares the
   factors on every call (O(cols·rank) for a transposed weight): for tests and small pieces. */
int mpk_merge_dense_rows(const mpk_merge_dense *m, int64_t r0, int64_t r1, void *out, mpk_error *err);
/* The whole merged tensor into `out` (base_len bytes; may not overlap base), row blocks spread over
   `threads` workers (<= 0: one per online CPU, at most 8). */
int mpk_merge_dense_to_buf(const mpk_merge_dense *m, int threads, void *out, mpk_error *err);
/* The same, each block written with pwrite() to `fd` at its offset (the tensor starts at byte 0 of
   fd). Peak memory: threads × one block (512 KiB) + for a transposed weight one copy of scale·Bᵀ
   (rank·out floats). No fsync: the caller's transaction does that. */
int mpk_merge_dense_to_fd(const mpk_merge_dense *m, int threads, int fd, mpk_error *err);

/* ---------------------------------------------------------------- quantized weights */

/* weight_quantized + scale + zero_point (docs/merge-arithmetic.md, "Quantized layouts"):
   w = (q − zp)·s per element, s and zp those of its group. The weight's logical shape is
   rows × cols in the same orientation as a dense W. The scale's shape decides the scheme: one
   element (shape [], [1] or [1, 1]) is per-tensor; [out, in/G] for an [out, in] weight, or
   [in/G, out] for an [in, out] one, is per group of G consecutive input elements (G divides in;
   G = in is per output channel). The zero point has the scale's shape. uint4 is packed two per
   byte, low nibble first, row-major over the logical shape; an odd count leaves a zero high
   nibble in the last byte. */
typedef struct mpk_merge_quant {
  const char *name;
  const void *q;            /* weight_quantized */
  size_t q_len;
  mpk_mk_qtype q_type;
  int64_t rows, cols;
  const void *q_scale;      /* scale role: float32 or float16 */
  size_t q_scale_len;
  mpk_mk_dtype q_scale_dtype;
  int q_scale_ndim;         /* 0..2 */
  int64_t q_scale_shape[2];
  const void *q_zero;       /* zero_point role: uint8 or uint4, the scale's shape */
  size_t q_zero_len;
  mpk_mk_qtype q_zero_type;
  int q_zero_ndim;
  int64_t q_zero_shape[2];
  int transposed;
  const float *A, *B;
  int64_t rank;
  float scale;              /* the LoRA scale (alpha / rank) */
  /* optional, as for dense */
  mpk_progress_fn progress;
  void *progress_ctx;
  mpk_mk_impl impl;
  int64_t block_rows;       /* 0: automatic; rounded up to what the groups need */
} mpk_merge_quant;

/* What the shapes declare, and the sizes of the three outputs (equal to the inputs'). */
typedef struct mpk_mk_qlayout {
  int per_tensor;        /* 1: one scale and zero point for the whole tensor */
  int64_t group;         /* G: input elements per group (per-tensor: in) */
  int64_t n_groups;      /* elements of the scale / zero point */
  int qmax;              /* 255 (uint8) or 15 (uint4) */
  size_t q_bytes, scale_bytes, zero_bytes;
} mpk_mk_qlayout;

/* Check shapes, dtypes and sizes (and that every input zero point is <= qmax and a packed
   tensor's padding nibble is 0); fill *out (may be NULL). */
int mpk_merge_quant_check(const mpk_merge_quant *m, mpk_mk_qlayout *out, mpk_error *err);
/* Dequantize, merge in float32, requantize with the same scheme: per group, asymmetric min/max
   over the merged values with 0 included; scale = the smallest value of the scale's dtype that
   is >= (max − min)/qmax; zp = clamp(round(−min/scale)); q = clamp(round(w/scale) + zp); a group
   whose values are all 0 gets scale 0, zp 0, q 0. A non-finite merged value is refused
   (MPK_EUNSUPPORTED), as is a float16 scale that would overflow. Outputs are the three roles in
   their input dtypes and sizes. Per-tensor scales (and per-group ones of an [in, out] weight with
   very large groups) take two passes over W: one for min/max, one to quantize. */
int mpk_merge_quant_to_bufs(const mpk_merge_quant *m, int threads, void *q_out, void *scale_out,
                            void *zero_out, mpk_error *err);
int mpk_merge_quant_to_fds(const mpk_merge_quant *m, int threads, int fd_q, int fd_scale, int fd_zero,
                           mpk_error *err);

/* ---------------------------------------------------------------- scalar conversions */

/* IEEE binary16 / bfloat16 <-> binary32, round to nearest even, exactly as F16C's
   vcvtps2ph/vcvtph2ps do: overflow gives infinity, subnormals are kept (never flushed), a NaN stays
   a NaN with its quiet bit set and the top of its payload kept. */
static inline uint32_t mpk_mk_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline float mpk_mk_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline float mpk_mk_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return mpk_mk_float(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0));
  if (e) return mpk_mk_float(sign | ((e + 112u) << 23) | (m << 13));
  /* zero or subnormal: m·2^-24 is exact in binary32 */
  return mpk_mk_float(sign | mpk_mk_bits((float)m * 0x1p-24f));
}

static inline uint16_t mpk_mk_f32_to_f16(float f) {
  uint32_t x = mpk_mk_bits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu)); /* NaN */
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to infinity */
  if (ax >= 0x38800000u) {                                   /* normal half: rebias, round */
    uint32_t r = ax - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
  }
  if (ax <= 0x33000000u) return sign; /* <= 2^-25: ties to the even 0 */
  uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126u - e; /* units of 2^-24 */
  uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) q++;
  return (uint16_t)(sign | q);
}

static inline float mpk_mk_bf16_to_f32(uint16_t h) { return mpk_mk_float((uint32_t)h << 16); }

static inline uint16_t mpk_mk_f32_to_bf16(float f) {
  uint32_t x = mpk_mk_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* NaN: quiet */
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* ---------------------------------------------------------------- tiles (merge_tiles.c) */

/* out[i][j] = round_dtype(base[i][j] + Σ_r L[i][r]·R[r][j]) for `nrows` rows of `cols`
   elements; L is [nrows, rank], R is [rank, cols]; out may equal base. Every implementation
   computes each element with the same operations in the same order, so all give the same bits.
   `stream`: out is a large destination not read again soon, so the SIMD paths may write it with
   non-temporal stores (no read-for-ownership of lines about to be overwritten whole). */
typedef struct mpk_mk_tile_args {
  const float *L, *R;
  int64_t rank, cols, nrows;
  const void *base;
  void *out;
  mpk_mk_dtype dtype;
  int stream;
} mpk_mk_tile_args;

void mpk_mk_rows_portable(const mpk_mk_tile_args *a);
#if defined(__x86_64__) && defined(__GNUC__)
#define MPK_MK_X86 1
void mpk_mk_rows_avx2(const mpk_mk_tile_args *a);
void mpk_mk_rows_avx512(const mpk_mk_tile_args *a);
#endif

#endif
