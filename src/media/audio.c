/* Input audio to canonical mono float32 PCM at the processor's rate. Decisions, lengths and
   messages are WebLLM 0.2.86's decodeAudioInput (audio_decode.json pins them); the resampler is
   libsoxr at very high quality instead of WebLLM's linear interpolation.

   Order of checks, as the reference: (WAV) header; canonical length against min..max before any
   sample buffer exists; non-finite samples; source rate; then the samples. Memory is the output
   plus a fixed working set: WAV samples are mixed to mono in blocks and streamed into soxr. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <soxr.h>

#include "../core/core.h"
#include "wav.h"

#define MIX_BLOCK 16384 /* frames mixed to mono per step: 64 KiB of float */

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

/* Math.round: the nearest integer, ties toward +Infinity. */
static double js_round(double x) {
  if (!isfinite(x)) return x;
  double f = floor(x);
  return x - f >= 0.5 ? f + 1 : f;
}

double mpk_audio_canonical_length(uint64_t frames, double source_rate, int64_t target_rate) {
  if (frames == 0) return 0;
  if (source_rate == (double)target_rate) return (double)frames;
  double r = js_round(((double)frames * (double)target_rate) / source_rate);
  if (isnan(r)) return r; /* Math.max(1, NaN) */
  return r > 1 ? r : 1;
}

/* A JS number the way String(n) writes the values that reach this message. */
static void js_number(double x, char *buf, size_t size) {
  if (isinf(x)) snprintf(buf, size, "%sInfinity", x < 0 ? "-" : "");
  else if (isnan(x)) snprintf(buf, size, "NaN");
  else if (x == floor(x) && fabs(x) < 1e21) snprintf(buf, size, "%.0f", x);
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
} mono_src;

static int resample(const mono_src *src, double in_rate, double out_rate, float *out, size_t n_out,
                    const char *file, mpk_error *err) {
  soxr_error_t e = NULL;
  soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  soxr_quality_spec_t q = soxr_quality_spec(SOXR_VHQ, SOXR_LINEAR_PHASE);
  soxr_runtime_spec_t rt = soxr_runtime_spec(1);
  soxr_t s = soxr_create(in_rate, out_rate, 1, &e, &io, &q, &rt);
  if (!s) return mpk_fail(err, MPK_EUNSUPPORTED, file, NULL, "resampler: %s", e ? e : "cannot be created");
  float *block = NULL;
  if (!src->pcm && !(block = malloc(MIX_BLOCK * sizeof *block))) {
    soxr_delete(s);
    return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  }
  static const float zeros[1024];
  size_t done = 0;
  int rc = 0;
  /* Real samples, then zeros (the signal is zero outside the recording either way) so that soxr
     has produced at least n_out samples even when max(1, ...) rounded the length up; then a flush.
     Output past n_out is not asked for. */
  uint64_t n_zeros = (uint64_t)ceil(in_rate / out_rate) + 1, pos = 0, total = src->frames + n_zeros;
  while (pos < total && done < n_out) {
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
        in = block;
      }
    } else {
      k = total - pos < 1024 ? (size_t)(total - pos) : 1024;
      in = zeros;
    }
    size_t fed = 0;
    while (fed < k && done < n_out) {
      size_t idone = 0, odone = 0;
      e = soxr_process(s, in + fed, k - fed, &idone, out + done, n_out - done, &odone);
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
  while (done < n_out) {
    size_t odone = 0;
    e = soxr_process(s, NULL, 0, NULL, out + done, n_out - done, &odone);
    if (e) {
      rc = mpk_fail(err, MPK_EIO, file, NULL, "resampler: %s", e);
      goto out;
    }
    if (odone == 0) break;
    done += odone;
  }
  /* Defensive: soxr always delivered enough in testing; a shortfall is the zero continuation. */
  if (done < n_out) memset(out + done, 0, (n_out - done) * sizeof *out);
out:
  free(block);
  soxr_delete(s);
  return rc;
}

/* ---------------------------------------------------------------- the whole path */

static void measure(mpk_audio *a) {
  double peak = 0, sum = 0;
  for (size_t i = 0; i < a->n_samples; i++) {
    double v = a->samples[i];
    if (fabs(v) > peak) peak = fabs(v);
    sum += v * v;
  }
  a->peak = peak;
  a->rms = a->n_samples ? sqrt(sum / (double)a->n_samples) : 0;
}

static int check_source_rate(double rate, const char *file, mpk_error *err) {
  if (!(rate > 0) || rate > (double)MPK_SAFE_INT_MAX || rate != floor(rate))
    return mpk_fail(err, MPK_EMALFORMED, file, NULL, "input_audio.sample_rate must be a positive integer");
  if (rate > MPK_AUDIO_MAX_SAMPLE_RATE)
    return mpk_fail(err, MPK_EUNSUPPORTED, file, NULL, "input_audio.sample_rate must not exceed %d",
                    MPK_AUDIO_MAX_SAMPLE_RATE);
  return 0;
}

/* The length has passed check_range, so it is an integer in min..max. */
static int finish(const mono_src *src, double rate, size_t length, const mpk_audio_target *t, mpk_audio *a,
                  const char *file, mpk_error *err) {
  a->sample_rate_hz = t->sample_rate_hz;
  a->source_rate = rate;
  a->source_frames = src->frames;
  if (length > SIZE_MAX / sizeof(float) || !(a->samples = malloc(length * sizeof(float))))
    return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory (%zu samples)", length);
  a->n_samples = length;
  if (rate == (double)t->sample_rate_hz) { /* the downmixed samples, unchanged */
    if (src->pcm) memcpy(a->samples, src->pcm, length * sizeof(float));
    else
      for (uint64_t pos = 0; pos < length; pos += MIX_BLOCK) {
        size_t k = length - pos < MIX_BLOCK ? (size_t)(length - pos) : MIX_BLOCK;
        if (!mpk_wav_mix(src->wav, src->info, pos, k, a->samples + pos))
          return mpk_fail(err, MPK_EMALFORMED, file, NULL, "WAV input contains a non-finite sample");
      }
  } else {
    int rc = resample(src, rate, (double)t->sample_rate_hz, a->samples, length, file, err);
    if (rc) return rc;
    a->resampled = 1;
  }
  measure(a);
  return 0;
}

void mpk_audio_free(mpk_audio *a) {
  if (!a) return;
  free(a->samples);
  free(a);
}

int mpk_audio_from_wav(const void *wav, size_t len, const char *file, const mpk_audio_target *target,
                       mpk_audio **out, mpk_error *err) {
  if (!file) file = "input_audio";
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
  mono_src src = {.wav = wav, .info = &info, .frames = info.frames};
  if ((rc = finish(&src, info.sample_rate, (size_t)length, target, a, file, err))) {
    mpk_audio_free(a);
    return rc;
  }
  *out = a;
  return 0;
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
  if ((rc = finish(&src, sample_rate, (size_t)length, target, a, file, err))) {
    mpk_audio_free(a);
    return rc;
  }
  *out = a;
  return 0;
}
