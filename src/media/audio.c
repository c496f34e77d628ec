/* Input audio to canonical mono float32 PCM at the processor's rate. Decisions, lengths and
   messages are WebLLM 0.2.86's decodeAudioInput (audio_decode.json pins them); the resampler is
   libsoxr at very high quality instead of WebLLM's linear interpolation.

   Order of checks, as the reference: (WAV) header; canonical length against min..max before any
   sample buffer exists; non-finite samples; source rate; then the samples. Memory is the output
   plus a fixed working set: WAV samples are mixed to mono in blocks and streamed into soxr. */
#define _DEFAULT_SOURCE /* madvise: MADV_DONTNEED really drops pages (posix_madvise does not on Linux) */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>
#include <unistd.h>

#include "core/core.h"
#include "core/mathx.h"
#include "core/pool.h"
#include "media/wav.h"

/* libsoxr is compiled into the library from Debian's source, the same engine and libm on every
   target (cmake/soxr.cmake): its symbols are hidden, nothing is opened at run time. */
#include <soxr.h>

/* soxr's getenv (media/soxr/mpk_soxr_math.h): the environment is never read, so its tuning
   variables cannot change the bytes. On x86-64 its engine is compiled twice, for the baseline and
   for AVX, and soxr picks by the CPU (cmake/soxr.cmake); a test sets this to 0 to run the baseline
   copy on an AVX machine (both must give the same bytes). */
int mpk_audio_soxr_avx_ = -1;
char *mpk_soxr_getenv(const char *name);
char *mpk_soxr_getenv(const char *name) {
  return mpk_audio_soxr_avx_ == 0 && strcmp(name, "SOXR_USE_SIMD64") == 0 ? (char *)"0" : NULL;
}

#define MIX_BLOCK 16384 /* frames mixed to mono per step: 64 KiB of float */
#define RELEASE_STEP ((uint64_t)1 << 20) /* bytes of a mapped input dropped at a time */

/* ---------------------------------------------------------------- input_audio.data text */

static int b64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

static bool is_ascii_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'; }

static bool starts_with_ci(const char *s, size_t len, const char *prefix) {
  size_t n = strlen(prefix);
  if (len < n) return false;
  for (size_t i = 0; i < n; i++) {
    unsigned char a = (unsigned char)s[i], b = (unsigned char)prefix[i];
    if (a >= 'A' && a <= 'Z') a = (unsigned char)(a + 32);
    if (a != b) return false;
  }
  return true;
}

/* atob's forgiving-base64 decode (WHATWG): whitespace removed, one or two '=' dropped when the
   length is a multiple of 4, then only the 64 letters; leftover bits discarded. */
static int atob_decode(const char *s, size_t len, uint8_t **out, size_t *out_len, mpk_error *err) {
  size_t n = 0; /* significant characters */
  for (size_t i = 0; i < len; i++)
    if (!is_ascii_ws((unsigned char)s[i])) n++;
  /* Trailing '=' (after whitespace removal) when n % 4 == 0. */
  size_t pad = 0;
  if (n % 4 == 0) {
    size_t i = len;
    while (i > 0 && pad < 2) {
      unsigned char c = (unsigned char)s[i - 1];
      if (is_ascii_ws(c)) { i--; continue; }
      if (c != '=') break;
      pad++;
      i--;
    }
  }
  size_t m = n - pad;
  if (m % 4 == 1) return mpk_fail(err, MPK_EMALFORMED, "input_audio", NULL, "input_audio.data is not valid base64");
  uint8_t *buf = malloc(m / 4 * 3 + 3);
  if (!buf) return mpk_fail(err, MPK_ENOMEM, "input_audio", NULL, "out of memory");
  size_t o = 0, seen = 0;
  uint32_t acc = 0;
  int nacc = 0;
  for (size_t i = 0; i < len && seen < m; i++) {
    unsigned char c = (unsigned char)s[i];
    if (is_ascii_ws(c)) continue;
    int v = b64_value(c);
    if (v < 0) {
      free(buf);
      return mpk_fail(err, MPK_EMALFORMED, "input_audio", NULL, "input_audio.data is not valid base64");
    }
    seen++;
    acc = (acc << 6) | (uint32_t)v;
    if (++nacc == 4) {
      buf[o++] = (uint8_t)(acc >> 16);
      buf[o++] = (uint8_t)(acc >> 8);
      buf[o++] = (uint8_t)acc;
      acc = 0;
      nacc = 0;
    }
  }
  if (nacc == 2) buf[o++] = (uint8_t)(acc >> 4);
  else if (nacc == 3) {
    buf[o++] = (uint8_t)(acc >> 10);
    buf[o++] = (uint8_t)(acc >> 2);
  }
  *out = buf;
  *out_len = o;
  return 0;
}

int mpk_audio_data_decode(const char *text, size_t len, uint8_t **out, size_t *out_len, mpk_error *err) {
  if (!out || !out_len || !text)
    return mpk_fail(err, MPK_EINVAL, "input_audio", NULL,
                    "WAV input_audio.data must be a base64 string or WAV data URL");
  *out = NULL;
  *out_len = 0;
  const char *enc = text;
  size_t n = len;
  if (len >= 5 && memcmp(text, "data:", 5) == 0) { /* startsWith: case-sensitive */
    static const char *const mimes[] = {"audio/wav;base64,", "audio/wave;base64,", "audio/x-wav;base64,"};
    size_t skip = 0;
    for (size_t i = 0; i < 3 && !skip; i++)
      if (starts_with_ci(text + 5, len - 5, mimes[i])) skip = 5 + strlen(mimes[i]);
    if (!skip)
      return mpk_fail(err, MPK_EMALFORMED, "input_audio", NULL,
                      "input_audio data URLs must contain base64-encoded WAV audio");
    enc = text + skip;
    n = len - skip;
  }
  if (starts_with_ci(enc, n, "http:") || starts_with_ci(enc, n, "https:"))
    return mpk_fail(err, MPK_EUNSUPPORTED, "input_audio", NULL, "audio URLs are not supported");
  return atob_decode(enc, n, out, out_len, err);
}

/* ---------------------------------------------------------------- length */

double mpk_audio_canonical_length(uint64_t frames, double source_rate, int64_t target_rate) {
  if (frames == 0) return 0;
  if (source_rate == (double)target_rate) return (double)frames;
  double r = mpk_js_round(((double)frames * (double)target_rate) / source_rate);
  if (isnan(r)) return r; /* Math.max(1, NaN) */
  return r > 1 ? r : 1;
}

/* A JS number the way String(n) writes the values that reach this message. */
static void js_number(double x, char *buf, size_t size) {
  if (isinf(x)) snprintf(buf, size, "%sInfinity", x < 0 ? "-" : "");
  else if (isnan(x)) snprintf(buf, size, "NaN");
  else if (x == mpk_floor(x) && fabs(x) < 1e21) snprintf(buf, size, "%.0f", x);
  else snprintf(buf, size, "%.17g", x);
}

static int check_range(double length, const mpk_audio_target *t, const char *file, mpk_error *err) {
  if (length < (double)t->min_samples || length > (double)t->max_samples) {
    char got[64];
    js_number(length, got, sizeof got);
    return mpk_fail(err, MPK_ELIMIT, file, NULL, "canonical audio must contain %lld..%lld samples; got %s",
                    (long long)t->min_samples, (long long)t->max_samples, got);
  }
  return 0;
}

static int check_target(const mpk_audio_target *t, mpk_error *err) {
  if (!t) return mpk_fail(err, MPK_EINVAL, "audio_decode", NULL, "no audio processor");
  if (t->sample_rate_hz < 1 || t->sample_rate_hz > MPK_SAFE_INT_MAX)
    return mpk_fail(err, MPK_EINVAL, "audio_decode", "/sample_rate_hz", "sample_rate_hz must be a positive integer");
  if (t->min_samples < 1 || t->max_samples < t->min_samples || t->max_samples > MPK_SAFE_INT_MAX)
    return mpk_fail(err, MPK_EINVAL, "audio_decode", "/min_samples",
                    "need 1 <= min_samples <= max_samples (got %lld..%lld)", (long long)t->min_samples,
                    (long long)t->max_samples);
  return 0;
}

/* ---------------------------------------------------------------- resampling */

/* The source of mono samples being resampled: a caller's float array or a WAV data chunk. */
typedef struct mono_src {
  const float *pcm;           /* or */
  const uint8_t *wav;
  const mpk_wav_info *info;
  uint64_t frames;
  bool release;               /* `wav` is our own page-aligned file mapping: drop what was read */
  uint64_t released;          /* bytes of it dropped so far */
} mono_src;

/* Memory proportional to the output, not the input: once the frames before `frame` are mixed,
   their whole pages of a mapped file leave the resident set (they stay in the page cache). */
static void release_read(mono_src *src, uint64_t frame) {
  if (!src->release) return;
  long page = sysconf(_SC_PAGESIZE);
  uint64_t upto = src->info->data_offset + frame * src->info->block_align;
  upto -= upto % (uint64_t)(page > 0 ? page : 4096);
  if (upto < src->released + RELEASE_STEP) return; /* one madvise per MiB, not per block */
  madvise((void *)(uintptr_t)(src->wav + src->released), (size_t)(upto - src->released), MADV_DONTNEED);
  src->released = upto;
}

/* The filter of SoX's `rate -v` (very high quality), on libsoxr: 28-bit precision, linear phase,
   and SoX 14.4's pass-band end 1 - 0.05 / TO_3dB(rejection) without soxr's extra roll-off
   compensation. soxr 0.1.3's own SOXR_VHQ differs in both (pass-band end 0.91133 instead of
   0.91151, 0.01 dB roll-off compensation); with these two settings modelpkg's output matches
   `sox ... rate -v 16000` to 108 dB SNR on speech at 44.1 kHz (134 dB from 48 kHz) instead of
   80-89 dB (docs/audio.md, scripts/audio_quality.py). */
static soxr_quality_spec_t sox_very_high_quality(void) {
  soxr_quality_spec_t q = soxr_quality_spec(SOXR_VHQ, SOXR_LINEAR_PHASE);
  double rej = q.precision * 20 * log10(2.0);               /* 168.6 dB at 28 bits */
  double to_3db = (1.6e-6 * rej - 7.5e-4) * rej + .646;     /* SoX 14.4 rate.c's TO_3dB(rej) */
  q.passband_end = 1 - .05 / to_3db;
  q.flags = (q.flags & ~(unsigned long)SOXR_ROLLOFF_MEDIUM) | SOXR_ROLLOFF_NONE;
  return q;
}

/* Outputs [skip, skip + n) of a soxr stream fed from input frame `in0` on (then zeros: the signal
   is zero outside the recording, and the zeros let soxr produce enough even when max(1, ...)
   rounded the length up), into `out`; the first `skip` outputs only warm the filter up. */
static int resample_span(mono_src *src, uint64_t in0, double in_rate, double out_rate, size_t skip, float *out,
                         size_t n, const char *file, mpk_error *err) {
  soxr_error_t e = NULL;
  soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  soxr_quality_spec_t q = sox_very_high_quality();
  soxr_runtime_spec_t rt = soxr_runtime_spec(1);
  soxr_t s = soxr_create(in_rate, out_rate, 1, &e, &io, &q, &rt);
  if (!s) return mpk_fail(err, MPK_EUNSUPPORTED, file, NULL, "resampler: %s", e ? e : "cannot be created");
  float *block = src->pcm ? NULL : malloc(MIX_BLOCK * sizeof *block);
  float *scratch = skip ? malloc(skip * sizeof *scratch) : NULL;
  int rc = 0;
  if ((!src->pcm && !block) || (skip && !scratch)) {
    rc = mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
    goto out;
  }
  static const float zeros[1024];
  const size_t want = skip + n;
  size_t done = 0;
  uint64_t n_zeros = (uint64_t)ceil(in_rate / out_rate) + 1, pos = in0, total = src->frames + n_zeros;
  while (pos < total && done < want) {
    const float *in;
    size_t k;
    if (pos < src->frames) {
      k = src->frames - pos < MIX_BLOCK ? (size_t)(src->frames - pos) : MIX_BLOCK;
      if (src->pcm) in = src->pcm + pos;
      else {
        if (!mpk_wav_mix(src->wav, src->info, pos, k, block)) {
          rc = mpk_fail(err, MPK_EMALFORMED, file, NULL, "WAV input contains a non-finite sample");
          goto out;
        }
        release_read(src, pos + k);
        in = block;
      }
    } else {
      k = total - pos < 1024 ? (size_t)(total - pos) : 1024;
      in = zeros;
    }
    size_t fed = 0;
    while (fed < k && done < want) {
      size_t idone = 0, odone = 0;
      float *dst = done < skip ? scratch + done : out + (done - skip);
      size_t room = done < skip ? skip - done : want - done;
      e = soxr_process(s, in + fed, k - fed, &idone, dst, room, &odone);
      if (e) {
        rc = mpk_fail(err, MPK_EIO, file, NULL, "resampler: %s", e);
        goto out;
      }
      if (idone == 0 && odone == 0) break; /* cannot happen with room for output; never spin */
      fed += idone;
      done += odone;
    }
    pos += k;
  }
  while (done < want) { /* flush */
    size_t odone = 0;
    float *dst = done < skip ? scratch + done : out + (done - skip);
    e = soxr_process(s, NULL, 0, NULL, dst, done < skip ? skip - done : want - done, &odone);
    if (e) {
      rc = mpk_fail(err, MPK_EIO, file, NULL, "resampler: %s", e);
      goto out;
    }
    if (odone == 0) break;
    done += odone;
  }
  /* Defensive: soxr always delivered enough in testing; a shortfall is the zero continuation. */
  if (done < skip) done = skip;
  if (done < want) memset(out + (done - skip), 0, (want - done) * sizeof *out);
  /* Below the filter's 28-bit precision an output is the FFT convolution's rounding noise: it fills
     the silence after a sound (1527 of a 2 s silence's 32000 samples) and a sine's exact zeros
     (docs/audio.md). Written as 0, digital silence stays silent. (Every build computes the same
     noise, so this is not what makes the bytes the same: cmake/soxr.cmake is.) */
  for (size_t i = 0; i < n; i++)
    if (fabsf(out[i]) < 0x1p-28f) out[i] = 0;
out:
  free(scratch);
  free(block);
  soxr_delete(s);
  return rc;
}

/* Long recordings are resampled in fixed segments of the output, each its own soxr stream started
   `pre` outputs early on the exact input frame of that output (rates are integers: output j sits
   at input j * in / out, an integer whenever j is a multiple of out / gcd), so a segment's filter
   has the same history as in one long stream. Two cores halve the time; the segmentation depends
   only on the rates and the length, never on the thread count, so the samples do not either (and
   they equal one long stream's to within float32 rounding). */
size_t mpk_audio_segment_len_ = (size_t)1 << 20; /* outputs per segment (~65 s at 16 kHz) */
_Atomic size_t mpk_audio_segments_used_;          /* segments of the latest call (tests read it) */
#define SEGMENT_PRE 8192 /* outputs of filter warm-up, far beyond soxr's longest response */

typedef struct seg_ctx {
  const mono_src *src;
  double in_rate, out_rate;
  float *out;          /* holds outputs [out_first, ...): the whole output, or one batch of segments */
  size_t out_first, seg_first; /* the batch's first output and first segment */
  size_t n_out, seg_len, pre;
  uint64_t unit_in, unit_out;
  const char *file;
  mpk_error *errs;
} seg_ctx;

static int run_segment(void *vctx, size_t task) {
  seg_ctx *c = vctx;
  size_t i = c->seg_first + task;
  size_t o0 = i * c->seg_len, o1 = c->n_out - o0 < c->seg_len ? c->n_out : o0 + c->seg_len;
  size_t p0 = o0 > c->pre ? o0 - c->pre : 0; /* both multiples of unit_out */
  mono_src src = *c->src;                     /* its own record of released pages */
  uint64_t in0 = (uint64_t)(p0 / c->unit_out) * c->unit_in;
  if (src.release) {
    long page = sysconf(_SC_PAGESIZE);
    src.released = src.info->data_offset + in0 * src.info->block_align;
    src.released -= src.released % (uint64_t)(page > 0 ? page : 4096);
  }
  mpk_error_clear(&c->errs[task]);
  return resample_span(&src, in0, c->in_rate, c->out_rate, o0 - p0, c->out + (o0 - c->out_first), o1 - o0, c->file,
                       &c->errs[task]);
}

static uint64_t gcd_u64(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Where the output goes: the whole buffer (out), or a sink fed in order, batch by batch, so that
   memory is a batch (threads x one segment), not the output. Peak and the sum of squares are
   accumulated in output order either way, so the report is the same bits. */
typedef struct out_sink {
  mpk_audio_sink_fn fn;
  void *ctx;
  double peak, sum;
} out_sink;

static int emit(out_sink *k, const float *x, size_t n, mpk_error *err) {
  double peak = k->peak, sum = k->sum;
  for (size_t i = 0; i < n; i++) {
    double v = x[i];
    if (fabs(v) > peak) peak = fabs(v);
    sum += v * v;
  }
  k->peak = peak, k->sum = sum;
  return k->fn ? k->fn(k->ctx, x, n, err) : 0;
}

/* run_segment on the worker pool: its error stays in c->errs[task], which the caller reports. */
static int segment_task(mpk_pool *pool, void *ctx, size_t task, void *scratch, mpk_error *err) {
  (void)pool, (void)scratch, (void)err;
  return run_segment(ctx, task);
}

static int resample(mono_src *src, double in_rate, double out_rate, float *out, size_t n_out, unsigned threads,
                    out_sink *sink, const char *file, mpk_error *err) {
  uint64_t in = (uint64_t)in_rate, o = (uint64_t)out_rate, g = gcd_u64(in, o);
  seg_ctx c = {.src = src, .in_rate = in_rate, .out_rate = out_rate, .out = out, .n_out = n_out,
               .unit_in = in / g, .unit_out = o / g, .file = file};
  c.seg_len = mpk_audio_segment_len_ / c.unit_out * c.unit_out;
  if (c.seg_len == 0) c.seg_len = (size_t)c.unit_out;
  c.pre = (SEGMENT_PRE + c.unit_out - 1) / c.unit_out * c.unit_out;
  size_t n_seg = n_out <= c.seg_len ? 1 : (n_out - 1) / c.seg_len + 1;
  mpk_audio_segments_used_ = n_seg;
  if (threads == 0) threads = mpk_online_cpus() < MPK_AUDIO_MAX_THREADS ? mpk_online_cpus() : MPK_AUDIO_MAX_THREADS;
  size_t batch = out ? n_seg : threads; /* segments run at once */
  if (batch > n_seg) batch = n_seg;
  float *buf = NULL;
  if (!out) {
    size_t cap = batch * c.seg_len < n_out ? batch * c.seg_len : n_out;
    if (!(buf = malloc(cap * sizeof *buf))) return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
    c.out = buf;
  }
  if (!(c.errs = calloc(batch, sizeof *c.errs))) {
    free(buf);
    return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  }
  int rc = 0;
  for (size_t first = 0; first < n_seg && !rc; first += batch) {
    size_t k = n_seg - first < batch ? n_seg - first : batch, failed = 0;
    c.seg_first = first;
    c.out_first = out ? 0 : first * c.seg_len;
    if (k == 1) rc = run_segment(&c, 0);
    else rc = mpk_pool_run(k, &(mpk_pool_opts){.workers = threads}, segment_task, &c, &failed, NULL);
    if (rc) {
      if (err) *err = c.errs[failed];
      break;
    }
    if (sink) {
      size_t o0 = first * c.seg_len, o1 = (first + k) * c.seg_len < n_out ? (first + k) * c.seg_len : n_out;
      rc = emit(sink, c.out + (o0 - c.out_first), o1 - o0, err);
    }
  }
  free(c.errs);
  free(buf);
  return rc;
}

/* ---------------------------------------------------------------- the whole path */

static int check_source_rate(double rate, const char *file, mpk_error *err) {
  if (!(rate > 0) || rate > (double)MPK_SAFE_INT_MAX || rate != mpk_floor(rate))
    return mpk_fail(err, MPK_EMALFORMED, file, NULL, "input_audio.sample_rate must be a positive integer");
  if (rate > MPK_AUDIO_MAX_SAMPLE_RATE)
    return mpk_fail(err, MPK_EUNSUPPORTED, file, NULL, "input_audio.sample_rate must not exceed %d",
                    MPK_AUDIO_MAX_SAMPLE_RATE);
  return 0;
}

/* The output buffer. A long one is 2 MiB aligned and asks for transparent huge pages: filling 37 MiB
   (10 minutes at 16 kHz) then takes 19 page faults instead of 9400, a tenth of the whole run's
   time (bench/run_audio.sh). free() releases it either way. */
static float *alloc_output(size_t n) {
  size_t bytes = n * sizeof(float), huge = (size_t)2 << 20;
  if (bytes < 4 * huge) return malloc(bytes ? bytes : 1);
  void *p = NULL;
  if (posix_memalign(&p, huge, (bytes + huge - 1) / huge * huge) != 0) return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE);
#endif
  return p;
}

/* The length has passed check_range, so it is an integer in min..max. With a sink (`fn` set) the
   samples are handed over in order and never held whole (a->samples stays NULL). */
static int finish(mono_src *src, double rate, size_t length, const mpk_audio_target *t, mpk_audio *a,
                  mpk_audio_sink_fn fn, void *ctx, const char *file, mpk_error *err) {
  a->sample_rate_hz = t->sample_rate_hz;
  a->source_rate = rate;
  a->source_frames = src->frames;
  out_sink sink = {fn, ctx, 0, 0};
  if (!fn && (length > SIZE_MAX / sizeof(float) || !(a->samples = alloc_output(length))))
    return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory (%zu samples)", length);
  a->n_samples = length;
  int rc = 0;
  if (rate == (double)t->sample_rate_hz) { /* the downmixed samples, unchanged */
    if (src->pcm) {
      if (fn) rc = emit(&sink, src->pcm, length, err);
      else memcpy(a->samples, src->pcm, length * sizeof(float));
    } else {
      float *block = fn ? malloc(MIX_BLOCK * sizeof *block) : NULL;
      if (fn && !block) return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
      for (uint64_t pos = 0; pos < length && !rc; pos += MIX_BLOCK) {
        size_t k = length - pos < MIX_BLOCK ? (size_t)(length - pos) : MIX_BLOCK;
        float *dst = fn ? block : a->samples + pos;
        if (!mpk_wav_mix(src->wav, src->info, pos, k, dst))
          rc = mpk_fail(err, MPK_EMALFORMED, file, NULL, "WAV input contains a non-finite sample");
        else {
          release_read(src, pos + k);
          if (fn) rc = emit(&sink, dst, k, err);
        }
      }
      free(block);
    }
    if (!fn && !rc) emit(&sink, a->samples, length, err);
  } else {
    rc = resample(src, rate, (double)t->sample_rate_hz, fn ? NULL : a->samples, length, t->threads, fn ? &sink : NULL,
                  file, err);
    if (!fn && !rc) emit(&sink, a->samples, length, err);
    a->resampled = 1;
  }
  if (rc) return rc;
  a->peak = sink.peak;
  a->rms = length ? sqrt(sink.sum / (double)length) : 0;
  return 0;
}

void mpk_audio_free(mpk_audio *a) {
  if (!a) return;
  free(a->samples);
  free(a);
}

static int from_wav(const void *wav, size_t len, const char *file, const mpk_audio_target *target,
                    bool release, mpk_audio_sink_fn fn, void *ctx, mpk_audio **out, mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, file, NULL, "no output");
  *out = NULL;
  int rc = check_target(target, err);
  if (rc) return rc;
  mpk_wav_info info;
  if ((rc = mpk_wav_parse(wav, len, file, &info, err))) return rc;
  double length = mpk_audio_canonical_length(info.frames, info.sample_rate, target->sample_rate_hz);
  if ((rc = check_range(length, target, file, err))) return rc;
  /* The reference reads every sample (refusing a non-finite one) before it looks at the rate. */
  if (info.sample_rate > MPK_AUDIO_MAX_SAMPLE_RATE) {
    if (info.codec == MPK_WAV_FORMAT_IEEE_FLOAT && !mpk_wav_mix(wav, &info, 0, (size_t)info.frames, NULL))
      return mpk_fail(err, MPK_EMALFORMED, file, NULL, "WAV input contains a non-finite sample");
    return check_source_rate(info.sample_rate, file, err);
  }
  mpk_audio *a = calloc(1, sizeof *a);
  if (!a) return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  a->from_wav = 1;
  a->wav = info;
  a->source_channels = info.channels;
  /* Streamed output cannot be taken back (standard output): a non-finite float sample is looked for
     before the first sample is handed over, as the reference refuses it before producing any. */
  if (fn && info.codec == MPK_WAV_FORMAT_IEEE_FLOAT) {
    mono_src scan = {.wav = wav, .info = &info, .frames = info.frames, .release = release};
    for (uint64_t pos = 0; pos < info.frames; pos += MIX_BLOCK) {
      size_t k = info.frames - pos < MIX_BLOCK ? (size_t)(info.frames - pos) : MIX_BLOCK;
      if (!mpk_wav_mix(wav, &info, pos, k, NULL)) {
        mpk_audio_free(a);
        return mpk_fail(err, MPK_EMALFORMED, file, NULL, "WAV input contains a non-finite sample");
      }
      release_read(&scan, pos + k);
    }
  }
  mono_src src = {.wav = wav, .info = &info, .frames = info.frames, .release = release};
  if ((rc = finish(&src, info.sample_rate, (size_t)length, target, a, fn, ctx, file, err))) {
    mpk_audio_free(a);
    return rc;
  }
  *out = a;
  return 0;
}

int mpk_audio_from_wav(const void *wav, size_t len, const char *file, const mpk_audio_target *target,
                       mpk_audio **out, mpk_error *err) {
  if (!file) file = "input_audio";
  if (!out) return mpk_fail(err, MPK_EINVAL, file, NULL, "no output");
  return from_wav(wav, len, file, target, false, NULL, NULL, out, err);
}

static int wav_file(const char *path, const mpk_audio_target *target, mpk_audio_sink_fn fn, void *ctx,
                    mpk_audio **out, mpk_error *err) {
  if (!out || !path) return mpk_fail(err, MPK_EINVAL, path ? path : "input_audio", NULL, "no input or output");
  *out = NULL;
  mpk_mapped m;
  int rc = mpk_map_file(path, MPK_AUDIO_MAX_FILE_BYTES, &m, err);
  if (rc) return rc;
  if (m.mapped) madvise((void *)(uintptr_t)m.data, m.size, MADV_SEQUENTIAL); /* pages dropped behind */
  rc = from_wav(m.data, m.size, path, target, m.mapped, fn, ctx, out, err);
  mpk_unmap_file(&m);
  return rc;
}

int mpk_audio_from_wav_file(const char *path, const mpk_audio_target *target, mpk_audio **out, mpk_error *err) {
  return wav_file(path, target, NULL, NULL, out, err);
}

int mpk_audio_stream_wav_file(const char *path, const mpk_audio_target *target, mpk_audio_sink_fn sink, void *ctx,
                              mpk_audio **report, mpk_error *err) {
  if (!sink) return mpk_fail(err, MPK_EINVAL, path ? path : "input_audio", NULL, "no sink");
  return wav_file(path, target, sink, ctx, report, err);
}

int mpk_audio_stream_data(const char *text, size_t len, const mpk_audio_target *target, mpk_audio_sink_fn sink,
                          void *ctx, mpk_audio **report, mpk_error *err) {
  if (!report || !sink) return mpk_fail(err, MPK_EINVAL, "input_audio", NULL, "no output");
  *report = NULL;
  int rc = check_target(target, err);
  if (rc) return rc;
  uint8_t *bytes = NULL;
  size_t n = 0;
  if ((rc = mpk_audio_data_decode(text, len, &bytes, &n, err))) return rc;
  rc = from_wav(bytes, n, "input_audio", target, false, sink, ctx, report, err);
  free(bytes);
  return rc;
}

int mpk_audio_from_data(const char *text, size_t len, const mpk_audio_target *target, mpk_audio **out,
                        mpk_error *err) {
  if (!out) return mpk_fail(err, MPK_EINVAL, "input_audio", NULL, "no output");
  *out = NULL;
  int rc = check_target(target, err);
  if (rc) return rc;
  uint8_t *bytes = NULL;
  size_t n = 0;
  if ((rc = mpk_audio_data_decode(text, len, &bytes, &n, err))) return rc;
  rc = mpk_audio_from_wav(bytes, n, "input_audio", target, out, err);
  free(bytes);
  return rc;
}

int mpk_audio_from_pcm_f32(const float *samples, size_t n, double sample_rate, const mpk_audio_target *target,
                           mpk_audio **out, mpk_error *err) {
  const char *file = "input_audio";
  if (!out || (!samples && n))
    return mpk_fail(err, MPK_EINVAL, file, NULL, "pcm_f32 input_audio.data must be a Float32Array");
  *out = NULL;
  int rc = check_target(target, err);
  if (rc) return rc;
  double length = mpk_audio_canonical_length(n, sample_rate, target->sample_rate_hz);
  if ((rc = check_range(length, target, file, err))) return rc;
  for (size_t i = 0; i < n; i++)
    if (!isfinite(samples[i]))
      return mpk_fail(err, MPK_EMALFORMED, file, NULL, "pcm_f32 input_audio contains a non-finite sample");
  if ((rc = check_source_rate(sample_rate, file, err))) return rc;
  mpk_audio *a = calloc(1, sizeof *a);
  if (!a) return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  a->source_channels = 1;
  mono_src src = {.pcm = samples, .frames = n};
  if ((rc = finish(&src, sample_rate, (size_t)length, target, a, NULL, NULL, file, err))) {
    mpk_audio_free(a);
    return rc;
  }
  *out = a;
  return 0;
}
