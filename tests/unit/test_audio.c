/* Audio frontend beyond the WebLLM vectors: a table of malformed WAV files, each refused with its
   message before any sample buffer exists; WebLLM's acceptance corners (fmt after data, padding);
   the resampler's passband and stopband on tones. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "core/core.h"
#include "core/endian.h"
#include "media/wav.h"

/* ---------------------------------------------------------------- a WAV builder */

typedef struct wavb {
  uint8_t b[4096];
  size_t n;
} wavb;

static void put(wavb *w, const void *p, size_t n) {
  assert_true(w->n + n <= sizeof w->b);
  memcpy(w->b + w->n, p, n);
  w->n += n;
}
static void put16(wavb *w, uint32_t v) { uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)}; put(w, b, 2); }
static void put32(wavb *w, uint32_t v) {
  uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  put(w, b, 4);
}
static void riff(wavb *w) { w->n = 0; put(w, "RIFF", 4); put32(w, 0); put(w, "WAVE", 4); }
static void fmt(wavb *w, uint32_t tag, uint32_t ch, uint32_t rate, uint32_t align, uint32_t bits) {
  put(w, "fmt ", 4); put32(w, 16); put16(w, tag); put16(w, ch); put32(w, rate); put32(w, rate * align);
  put16(w, align); put16(w, bits);
}
static void chunk(wavb *w, const char *id, uint32_t declared, const void *p, size_t n) {
  put(w, id, 4); put32(w, declared); if (n) put(w, p, n);
}

typedef struct row {
  const char *what;
  int code;           /* 0: accepted */
  const char *message;
  size_t n_samples;   /* when accepted */
} row;

/* Two 16-bit samples, 1000 and -1000, as a WAV holds them (little-endian on every host). */
static const uint8_t two[4] = {0xe8, 0x03, 0x18, 0xfc};
static const uint8_t zeros_1k[1024];

static void build(int i, wavb *w) {
  riff(w);
  switch (i) {
    case 0: /* a chunk that declares more than the file has */
      fmt(w, 1, 1, 16000, 2, 16); chunk(w, "LIST", 100, "abcd", 4); break;
    case 1: /* data declares 4 GiB - 2 in a 60-byte file (0xFFFFFFFF is a streaming WAV, below) */
      fmt(w, 1, 1, 16000, 2, 16); chunk(w, "data", 0xFFFFFFFEu, two, 4); break;
    case 2: /* fmt declares 4 GiB - 1 */
      put(w, "fmt ", 4); put32(w, 0xFFFFFFFFu); put16(w, 1); break;
    case 3: /* fmt chunk header cut short: only 6 of its 8 bytes */
      fmt(w, 1, 1, 16000, 2, 16); chunk(w, "data", 4, two, 4); put(w, "fmt \x10\x00", 6); break;
    case 4: /* fmt after data: accepted, as WebLLM (the last of each wins, in any order) */
      chunk(w, "data", 4, two, 4); fmt(w, 1, 1, 16000, 2, 16); break;
    case 5: /* a second fmt after data, broken: refused where it stands */
      fmt(w, 1, 1, 16000, 2, 16); chunk(w, "data", 4, two, 4); chunk(w, "fmt ", 8, zeros_1k, 8); break;
    case 6: /* zero channels */
      fmt(w, 1, 0, 16000, 2, 16); chunk(w, "data", 4, two, 4); break;
    case 7: /* sample rate 0 */
      fmt(w, 1, 1, 0, 2, 16); chunk(w, "data", 4, two, 4); break;
    case 8: /* sample rate 4294967295: length max(1, ...) = 1, then the rate limit */
      fmt(w, 1, 1, 0xFFFFFFFFu, 2, 16); chunk(w, "data", 4, two, 4); break;
    case 9: /* 384001 Hz */
      fmt(w, 1, 1, 384001, 2, 16); chunk(w, "data", 4, two, 4); break;
    case 10: /* 1 Hz: 2 frames make 32000 samples > max 16000 */
      fmt(w, 1, 1, 1, 2, 16); chunk(w, "data", 4, two, 4); break;
    case 11: /* block align 4 for mono 16-bit */
      fmt(w, 1, 1, 16000, 4, 16); chunk(w, "data", 4, two, 4); break;
    case 12: /* block align 0 */
      fmt(w, 1, 1, 16000, 0, 16); chunk(w, "data", 4, two, 4); break;
    case 13: /* data not a whole number of blocks */
      fmt(w, 1, 1, 16000, 2, 16); chunk(w, "data", 3, two, 3); put(w, "", 1); break;
    case 14: /* odd chunk padded, then data */
      fmt(w, 1, 1, 16000, 2, 16); chunk(w, "junk", 1, "x\0", 2); chunk(w, "data", 4, two, 4); break;
    case 15: /* odd chunk NOT padded: the walk lands one byte into the data header */
      fmt(w, 1, 1, 16000, 2, 16); chunk(w, "junk", 1, "x", 1); chunk(w, "data", 4, two, 4); break;
    case 16: /* 65535 channels of 8-bit: block align 65535 */
      fmt(w, 1, 65535, 16000, 65535, 8); chunk(w, "data", 0, NULL, 0); break;
    case 17: /* mu-law */
      fmt(w, 7, 1, 8000, 1, 8); chunk(w, "data", 2, two, 2); break;
    case 18: /* non-finite float sample */
      fmt(w, 3, 1, 16000, 4, 32); chunk(w, "data", 4, "\x00\x00\x80\x7f", 4); break;
    case 19: /* refused by its length before decoding: 1024 frames at 1000 Hz -> 16384 samples */
      fmt(w, 1, 1, 1000, 1, 8); chunk(w, "data", 1024, zeros_1k, 1024); break;
    case 20: /* not RIFF */
      w->b[3] = (uint8_t)'X'; break;
    case 21: /* 11 bytes */
      w->n = 11; break;
    case 22: /* 24-bit stereo, 3 frames */
      fmt(w, 1, 2, 16000, 6, 24); chunk(w, "data", 18, zeros_1k, 18); break;
    case 23: /* a chunk id that is not text, declaring too much */
      fmt(w, 1, 1, 16000, 2, 16); chunk(w, "\x01\xff\x00z", 9, NULL, 0); break;
    case 24: /* streaming WAV (ffmpeg or arecord to a pipe): data size 0xFFFFFFFF, read to the end */
      fmt(w, 1, 1, 16000, 2, 16); chunk(w, "data", 0xFFFFFFFFu, two, 4); break;
    case 25: /* data size 0 with samples after it: read to the end, never a sample taken for a chunk id */
      fmt(w, 1, 1, 16000, 2, 16); chunk(w, "data", 0, two, 4); put(w, two, 4); put(w, two, 4); break;
    case 26: /* streaming, a cut-off last frame: dropped */
      fmt(w, 1, 2, 16000, 4, 16); chunk(w, "data", 0xFFFFFFFFu, zeros_1k, 4 * 3 + 3); break;
    case 27: /* data size 0 and nothing after: no frames */
      fmt(w, 1, 1, 16000, 2, 16); chunk(w, "data", 0, NULL, 0); break;
    case 28: /* A-law: the codec named */
      fmt(w, 6, 1, 8000, 1, 8); chunk(w, "data", 2, two, 2); break;
    case 29: /* extensible with the MPEG Layer 3 subformat tag */
      put(w, "fmt ", 4); put32(w, 40); put16(w, 0xFFFE); put16(w, 1); put32(w, 16000); put32(w, 32000); put16(w, 2);
      put16(w, 16); put16(w, 22); put16(w, 16); put32(w, 0);
      put(w, "\x55\x00\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71", 16);
      chunk(w, "data", 4, two, 4); break;
  }
}

static const row rows[] = {
    {"chunk past the end", MPK_EMALFORMED, "WAV LIST chunk is truncated", 0},
    {"4 GiB data in a small file", MPK_EMALFORMED, "WAV data chunk is truncated", 0},
    {"4 GiB fmt", MPK_EMALFORMED, "WAV fmt  chunk is truncated", 0},
    {"trailing 6 bytes", 0, NULL, 2},
    {"fmt after data", 0, NULL, 2},
    {"broken fmt after data", MPK_EMALFORMED, "WAV fmt chunk is truncated", 0},
    {"zero channels", MPK_EMALFORMED, "WAV channel count, sample rate, and block alignment must be positive", 0},
    {"rate 0", MPK_EMALFORMED, "WAV channel count, sample rate, and block alignment must be positive", 0},
    {"rate 2^32-1", MPK_EUNSUPPORTED, "input_audio.sample_rate must not exceed 384000", 0},
    {"rate 384001", MPK_EUNSUPPORTED, "input_audio.sample_rate must not exceed 384000", 0},
    {"rate 1", MPK_ELIMIT, "canonical audio must contain 1..16000 samples; got 32000", 0},
    {"block align 4", MPK_EMALFORMED, "WAV block alignment does not match its sample format", 0},
    {"block align 0", MPK_EMALFORMED, "WAV channel count, sample rate, and block alignment must be positive", 0},
    {"partial block", MPK_EMALFORMED, "WAV block alignment does not match its sample format", 0},
    {"odd chunk padded", 0, NULL, 2},
    {"odd chunk unpadded: the walk reads \"ata\\x04\" as an id", MPK_EMALFORMED, "WAV ata\\x04 chunk is truncated", 0},
    {"65535 channels, no frames", MPK_ELIMIT, "canonical audio must contain 1..16000 samples; got 0", 0},
    {"mu-law", MPK_EUNSUPPORTED, "WAV codec 7 is unsupported; use PCM integer or IEEE float WAV (the file's codec is mu-law (7))", 0},
    {"infinite float", MPK_EMALFORMED, "WAV input contains a non-finite sample", 0},
    {"too long", MPK_ELIMIT, "canonical audio must contain 1..16000 samples; got 16384", 0},
    {"not RIFF", MPK_EMALFORMED, "input_audio is not a RIFF/WAVE file", 0},
    {"11 bytes", MPK_EMALFORMED, "WAV input is truncated", 0},
    {"24-bit stereo", 0, NULL, 3},
    {"binary chunk id", MPK_EMALFORMED, "WAV \\x01\\xff\\x00z chunk is truncated", 0},
    {"streaming WAV, data size 0xFFFFFFFF", 0, NULL, 2},
    {"data size 0 followed by samples", 0, NULL, 6},
    {"streaming WAV, partial last frame", 0, NULL, 3},
    {"data size 0, nothing after", MPK_ELIMIT, "canonical audio must contain 1..16000 samples; got 0", 0},
    {"A-law", MPK_EUNSUPPORTED,
     "WAV codec 6 is unsupported; use PCM integer or IEEE float WAV (the file's codec is A-law (6))", 0},
    {"extensible MP3", MPK_EUNSUPPORTED,
     "WAV codec 85 is unsupported; use PCM integer or IEEE float WAV (the file's codec is MPEG Layer 3 (85))", 0},
};

static void test_malformed_table(void **state) {
  (void)state;
  mpk_audio_target t = {16000, 1, 16000};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    wavb w;
    build((int)i, &w);
    mpk_audio *a = NULL;
    mpk_error err;
    mpk_error_clear(&err);
    int rc = mpk_audio_from_wav(w.b, w.n, "t.wav", &t, &a, &err);
    if (rows[i].code == 0) {
      if (rc) fail_msg("%s: refused: %s", rows[i].what, tu_err(&err));
      assert_int_equal(a->n_samples, rows[i].n_samples);
    } else {
      if (rc == 0) fail_msg("%s: accepted", rows[i].what);
      if (rc != rows[i].code || strncmp(err.message, rows[i].message, strlen(rows[i].message)) != 0)
        fail_msg("%s: expected %d %s\n got %d %s", rows[i].what, rows[i].code, rows[i].message, rc, err.message);
      assert_null(a);
    }
    mpk_audio_free(a);
  }
}

/* The header reader alone: what it reports, and that the 4 GiB declaration is compared with the
   real size (it allocates nothing at all). */
static void test_wav_parse_fields(void **state) {
  (void)state;
  wavb w;
  build(22, &w);
  mpk_wav_info info;
  mpk_error err;
  assert_int_equal(mpk_wav_parse(w.b, w.n, NULL, &info, &err), 0);
  assert_int_equal(info.channels, 2);
  assert_int_equal(info.bits_per_sample, 24);
  assert_int_equal(info.block_align, 6);
  assert_int_equal(info.frames, 3);
  assert_int_equal(info.data_offset, 12 + 24 + 8);
  build(1, &w);
  assert_int_equal(mpk_wav_parse(w.b, w.n, NULL, &info, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "declares 4294967294 bytes, 4 remain"));
  assert_int_equal(err.offset, 36);
  /* Streaming WAVs: to the end of the file, said in the info. */
  build(22, &w);
  assert_int_equal(mpk_wav_parse(w.b, w.n, NULL, &info, &err), 0);
  assert_int_equal(info.data_to_eof, 0);
  assert_int_equal(info.data_declared, 18);
  build(26, &w);
  assert_int_equal(mpk_wav_parse(w.b, w.n, NULL, &info, &err), 0);
  assert_int_equal(info.data_to_eof, 1);
  assert_int_equal(info.data_declared, 0xFFFFFFFFu);
  assert_int_equal(info.frames, 3);
  assert_int_equal(info.data_size, 12);
  assert_int_equal(info.data_dropped, 3);
  build(25, &w);
  assert_int_equal(mpk_wav_parse(w.b, w.n, NULL, &info, &err), 0);
  assert_int_equal(info.data_to_eof, 1);
  assert_int_equal(info.data_declared, 0);
  assert_int_equal(info.frames, 6);
  assert_string_equal(mpk_wav_codec_name(1), "PCM integer");
  assert_string_equal(mpk_wav_codec_name(3), "IEEE float");
  assert_string_equal(mpk_wav_codec_name(0x1234), "unknown");
}

/* ---------------------------------------------------------------- streaming */

static int collect(void *ctx, const float *x, size_t n, mpk_error *err) {
  (void)err;
  float **p = ctx;
  memcpy(*p, x, n * sizeof *x);
  *p += n;
  return 0;
}

static int refuse_after(void *ctx, const float *x, size_t n, mpk_error *err) {
  (void)x;
  size_t *left = ctx;
  if (n > *left) return mpk_fail(err, MPK_EIO, "sink", NULL, "sink full");
  *left -= n;
  return 0;
}

static void write_bytes(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(p, 1, n, f), n);
  fclose(f);
}

/* The streamed output is the held output, bit for bit, batch after batch (small segments force many
   batches); a streaming WAV (data size 0 or 0xFFFFFFFF) gives the samples of the same file with
   its sizes filled in; a sink's refusal stops the conversion with its error. */
static void test_stream_equals_held(void **state) {
  (void)state;
  const uint32_t frames = 3 * 44100;
  size_t n = 44 + (size_t)frames * 4;
  uint8_t *wav = malloc(n + 3);
  memcpy(wav, "RIFF", 4);
  memcpy(wav + 8, "WAVEfmt ", 8);
  const uint8_t f[] = {16, 0, 0, 0, 1, 0, 2, 0, 0x44, 0xac, 0, 0, 0x10, 0xb1, 2, 0, 4, 0, 16, 0};
  memcpy(wav + 16, f, sizeof f);
  memcpy(wav + 36, "data", 4);
  mpk_store_le32(wav + 40, frames * 4);
  mpk_store_le32(wav + 4, (uint32_t)n - 8);
  uint32_t seed = 11;
  for (size_t i = 44; i < n; i += 2) {
    seed = seed * 1664525u + 1013904223u;
    int16_t v = (int16_t)((int)(8000 * sin((double)i * 0.01)) + (int)((seed >> 20) & 1023) - 512);
    mpk_store_le16(wav + i, (uint16_t)v);
  }
  char dir[] = "/tmp/mpk_audio_stream_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char p_ok[256], p_ff[256], p_0[256];
  snprintf(p_ok, sizeof p_ok, "%s/ok.wav", dir);
  snprintf(p_ff, sizeof p_ff, "%s/ff.wav", dir);
  snprintf(p_0, sizeof p_0, "%s/zero.wav", dir);
  write_bytes(p_ok, wav, n);
  mpk_store_le32(wav + 40, 0xFFFFFFFFu);
  mpk_store_le32(wav + 4, 0xFFFFFFFFu);
  wav[n] = 1, wav[n + 1] = 2, wav[n + 2] = 3; /* and a cut-off frame at the end */
  write_bytes(p_ff, wav, n + 3);
  mpk_store_le32(wav + 40, 0);
  mpk_store_le32(wav + 4, 0);
  write_bytes(p_0, wav, n);
  size_t saved = mpk_audio_segment_len_;
  mpk_audio_segment_len_ = 4000; /* 48000 outputs: 12 segments, 6 batches of 2 */
  for (int rate = 0; rate < 2; rate++) {
    mpk_audio_target t = {rate ? 16000 : 44100, 1, 1 << 22, 2};
    mpk_audio *held = NULL;
    mpk_error err;
    if (mpk_audio_from_wav_file(p_ok, &t, &held, &err)) fail_msg("%s", tu_err(&err));
    const char *paths[3] = {p_ok, p_ff, p_0};
    for (int k = 0; k < 3; k++) {
      float *buf = malloc(held->n_samples * sizeof *buf), *end = buf;
      mpk_audio *rep = NULL;
      if (mpk_audio_stream_wav_file(paths[k], &t, collect, &end, &rep, &err)) fail_msg("%s: %s", paths[k], tu_err(&err));
      assert_null(rep->samples);
      assert_int_equal(rep->n_samples, held->n_samples);
      assert_int_equal((size_t)(end - buf), held->n_samples);
      assert_memory_equal(buf, held->samples, held->n_samples * sizeof *buf);
      assert_true(rep->peak == held->peak && rep->rms == held->rms);
      assert_int_equal(rep->wav.data_to_eof, k != 0);
      assert_int_equal(rep->wav.data_dropped, k == 1 ? 3 : 0);
      mpk_audio_free(rep);
      free(buf);
    }
    size_t left = 10000;
    mpk_audio *rep = NULL;
    assert_int_equal(mpk_audio_stream_wav_file(p_ok, &t, refuse_after, &left, &rep, &err), MPK_EIO);
    assert_string_equal(err.message, "sink full");
    assert_null(rep);
    mpk_audio_free(held);
  }
  mpk_audio_segment_len_ = saved;
  unlink(p_ok), unlink(p_ff), unlink(p_0), rmdir(dir);
  free(wav);
}

/* ---------------------------------------------------------------- resampling quality */

static double tone_gain_db(double freq, double src, double dst, double *out_amp) {
  size_t n = (size_t)src; /* one second */
  float *x = malloc(n * sizeof *x);
  assert_non_null(x);
  for (size_t i = 0; i < n; i++) x[i] = (float)(0.5 * sin(2 * M_PI * freq * (double)i / src));
  mpk_audio_target t = {(int64_t)dst, 1, 1000000};
  mpk_audio *a = NULL;
  mpk_error err;
  assert_int_equal(mpk_audio_from_pcm_f32(x, n, src, &t, &a, &err), 0);
  assert_int_equal(a->n_samples, (size_t)dst);
  assert_int_equal(a->resampled, 1);
  /* Amplitude in the middle half (away from the edges), by projection onto the tone. */
  size_t lo = a->n_samples / 4, hi = 3 * a->n_samples / 4;
  double amp;
  if (freq < dst / 2) {
    double sc = 0, ss = 0;
    for (size_t i = lo; i < hi; i++) {
      double ph = 2 * M_PI * freq * (double)i / dst;
      sc += a->samples[i] * cos(ph);
      ss += a->samples[i] * sin(ph);
    }
    amp = 2 * sqrt(sc * sc + ss * ss) / (double)(hi - lo);
  } else { /* above Nyquist: whatever is left is alias; take its peak */
    amp = 0;
    for (size_t i = lo; i < hi; i++) amp = fmax(amp, fabs(a->samples[i]));
  }
  mpk_audio_free(a);
  free(x);
  *out_amp = amp;
  return 20 * log10(amp / 0.5);
}

static void test_tones(void **state) {
  (void)state;
  double amp;
  const double rates[] = {44100, 48000, 22050, 96000};
  for (size_t r = 0; r < 4; r++) {
    for (double f = 100; f <= 7000; f += 1150) {
      double g = tone_gain_db(f, rates[r], 16000, &amp);
      if (fabs(g) > 0.1) fail_msg("%g Hz tone at %g -> 16000: %.4f dB", f, rates[r], g);
    }
    double g7 = tone_gain_db(7000, rates[r], 16000, &amp);
    double s = tone_gain_db(9000, rates[r], 16000, &amp);
    double s2 = tone_gain_db(rates[r] / 2 * 0.9, rates[r], 16000, &amp);
    printf("  %6.0f -> 16000 Hz: 7 kHz %+.4f dB; 9 kHz %.1f dB; %.0f Hz %.1f dB\n", rates[r], g7, s,
           rates[r] / 2 * 0.9, s2);
    if (s > -90 || s2 > -90) fail_msg("%g -> 16000: stopband only %.1f / %.1f dB", rates[r], s, s2);
  }
}

/* Below the filter's 28-bit precision an output is 0 (docs/audio.md): a sine's exact zeros and the
   silence around a burst are exactly 0, not the engine's rounding noise, which differs between
   soxr's engines and libms; nothing is left in (0, 2^-28). */
static void test_below_precision_is_zero(void **state) {
  (void)state;
  const double src = 44100;
  const size_t n = 4 * 44100; /* 1 s silence, 2 s of a 440 Hz sine, 1 s silence */
  float *x = calloc(n, sizeof *x);
  assert_non_null(x);
  for (size_t i = 44100; i < 3 * 44100; i++) x[i] = (float)(0.5 * sin(2 * M_PI * 440 * (double)i / src));
  mpk_audio_target t = {16000, 1, 1000000};
  mpk_audio *a = NULL;
  mpk_error err;
  assert_int_equal(mpk_audio_from_pcm_f32(x, n, src, &t, &a, &err), 0);
  assert_int_equal(a->n_samples, 64000);
  size_t tiny = 0, zeros_in_sine = 0;
  for (size_t i = 0; i < a->n_samples; i++) {
    float v = fabsf(a->samples[i]);
    if (v > 0 && v < 0x1p-28f) tiny++;
    if (i >= 17000 && i < 47000 && i % 200 == 0 && a->samples[i] == 0) zeros_in_sine++; /* 440 Hz: t = k/880 s */
  }
  assert_int_equal(tiny, 0);
  assert_int_equal(zeros_in_sine, 150); /* every exact zero of the sine's steady part */
  for (size_t i = 0; i < 15000; i++) assert_true(a->samples[i] == 0);     /* before the burst's ringing */
  for (size_t i = 50000; i < 64000; i++) assert_true(a->samples[i] == 0); /* after it */
  mpk_audio_free(a);
  free(x);
}

/* Equal rates: the downmixed samples, unchanged; a stereo 16-bit mean is exact. */
static void test_equal_rate_copy(void **state) {
  (void)state;
  wavb w;
  riff(&w);
  fmt(&w, 1, 2, 16000, 4, 16);
  put(&w, "data", 4);
  put32(&w, 8);
  put16(&w, 32767), put16(&w, (uint16_t)-32768), put16(&w, 3), put16(&w, 4);
  mpk_audio_target t = {16000, 1, 10};
  mpk_audio *a = NULL;
  mpk_error err;
  assert_int_equal(mpk_audio_from_wav(w.b, w.n, NULL, &t, &a, &err), 0);
  assert_int_equal(a->resampled, 0);
  assert_int_equal(a->n_samples, 2);
  assert_true(a->samples[0] == (float)((32767 / 32768.0 + -1.0) / 2));
  assert_true(a->samples[1] == (float)((3 / 32768.0 + 4 / 32768.0) / 2));
  assert_true(a->peak == fabs((double)a->samples[1]) || a->peak == fabs((double)a->samples[0]));
  mpk_audio_free(a);
}

/* WebLLM's readSample + mix, one double per channel sample: the reference the integer fast path
   (summed as integers, scaled once) must equal bit for bit. */
static float reference_mix(const uint8_t *p, uint32_t ch, uint32_t bits) {
  double sum = 0;
  for (uint32_t c = 0; c < ch; c++, p += bits / 8) {
    double v;
    if (bits == 8) v = ((int)p[0] - 128) / 128.0;
    else if (bits == 16) v = (int16_t)(p[0] | (p[1] << 8)) / 32768.0;
    else if (bits == 24) {
      int32_t x = (int32_t)(p[0] | (p[1] << 8) | ((uint32_t)p[2] << 16));
      v = (x & 0x800000 ? x - 0x1000000 : x) / 8388608.0;
    } else v = (int32_t)((uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24)) /
               2147483648.0;
    sum += v;
  }
  return (float)(sum / ch);
}

static void test_integer_mix_exact(void **state) {
  (void)state;
  static const uint32_t bits_list[] = {8, 16, 24, 32}, ch_list[] = {1, 2, 3, 5, 7};
  uint32_t seed = 12345;
  for (size_t bi = 0; bi < 4; bi++)
    for (size_t ci = 0; ci < 5; ci++) {
      uint32_t bits = bits_list[bi], ch = ch_list[ci], align = ch * bits / 8, frames = 600 / align;
      uint8_t data[600];
      for (size_t i = 0; i < sizeof data; i++) {
        seed = seed * 1103515245u + 12345u;
        data[i] = (uint8_t)(seed >> 16);
        if (i % 97 == 0) data[i] = i % 2 ? 0x80 : 0x7f; /* extremes */
      }
      wavb w;
      riff(&w);
      fmt(&w, 1, ch, 8000, align, bits);
      chunk(&w, "data", frames * align, data, frames * align);
      mpk_audio_target t = {8000, 1, 1000};
      mpk_audio *a = NULL;
      mpk_error err;
      if (mpk_audio_from_wav(w.b, w.n, NULL, &t, &a, &err)) fail_msg("%u-bit x%u: %s", bits, ch, tu_err(&err));
      assert_int_equal(a->n_samples, frames);
      for (uint32_t f = 0; f < frames; f++) {
        float want = reference_mix(data + f * align, ch, bits);
        if (memcmp(&want, &a->samples[f], sizeof want) != 0)
          fail_msg("%u-bit x%u frame %u: %.9g != %.9g", bits, ch, f, (double)a->samples[f], (double)want);
      }
      mpk_audio_free(a);
    }
}

/* The file entry point gives the same samples as the bytes one, and releases the pages it has
   read: resident memory grows by about the output, not by the input. */
static long rss_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, res = 0;
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &size, &res) != 2) res = -1;
  fclose(f);
  return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static void test_wav_file_releases_input(void **state) {
  (void)state;
  /* 64 MiB of 16-bit stereo at 48 kHz (~350 s) to 8 kHz: output 11 MiB. */
  const uint32_t frames = 16u << 20, rate = 48000;
  char path[] = "/tmp/mpk_audio_file_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  wavb w;
  riff(&w);
  fmt(&w, 1, 2, rate, 4, 16);
  put(&w, "data", 4);
  put32(&w, frames * 4);
  assert_int_equal(write(fd, w.b, w.n), (ssize_t)w.n);
  uint8_t *blk = malloc(1 << 20);
  for (uint32_t done = 0; done < frames; done += (1 << 20) / 4) {
    for (size_t i = 0; i < (1 << 20) / 2; i++) mpk_store_le16(blk + 2 * i, (uint16_t)(((done * 2 + i) * 2654435761u) >> 18));
    assert_int_equal(write(fd, blk, 1 << 20), 1 << 20);
  }
  free(blk);
  close(fd);
  mpk_audio_target t = {8000, 1, 1 << 24};
  mpk_audio *a = NULL, *b = NULL;
  mpk_error err;
  long before = rss_kib();
  if (mpk_audio_from_wav_file(path, &t, &a, &err)) fail_msg("%s", tu_err(&err));
  long grown = rss_kib() - before, out_kib = (long)(a->n_samples * 4 / 1024);
  print_message("   file: output %ld KiB, resident grew %ld KiB (input %u KiB)\n", out_kib, grown, frames * 4 / 1024);
  /* The 64 MiB input is not resident: without the release, growth is input + output (75 MiB);
     with it, the output (11 MiB; 12 in huge pages) plus working set — more under ASan, whose
     shadow and quarantine count too, so the bound is half the input. */
  assert_true(grown < (long)(frames * 4 / 1024) / 2);
  mpk_mapped m;
  assert_int_equal(mpk_map_file(path, (size_t)1 << 30, &m, &err), 0);
  assert_int_equal(mpk_audio_from_wav(m.data, m.size, path, &t, &b, &err), 0);
  mpk_unmap_file(&m);
  assert_int_equal(a->n_samples, b->n_samples);
  assert_memory_equal(a->samples, b->samples, a->n_samples * 4);
  mpk_audio_free(a);
  mpk_audio_free(b);
  /* A missing file names itself. */
  assert_int_equal(mpk_audio_from_wav_file("/nonexistent/x.wav", &t, &a, &err), MPK_ENOTFOUND);
  assert_string_equal(err.file, "/nonexistent/x.wav");
  assert_null(a);
  unlink(path);
}

/* Long recordings are resampled in fixed segments, each with its own filter warm-up: the samples
   must be those of one long stream (to float32 rounding) and must not depend on the thread count. */
static void test_segmented_resampling(void **state) {
  (void)state;
  static const double rates[] = {8000, 11025, 22050, 44100, 48000, 96000, 384000, 44101};
  for (size_t r = 0; r < sizeof rates / sizeof rates[0]; r++) {
    size_t n = (size_t)(rates[r] * 3); /* 3 s */
    float *x = malloc(n * sizeof *x);
    uint32_t seed = 7;
    for (size_t i = 0; i < n; i++) {
      seed = seed * 1664525u + 1013904223u;
      double noise = ((seed >> 8) / 16777216.0 - 0.5) * 0.2;
      x[i] = (float)(0.4 * sin(2 * M_PI * 440.0 * (double)i / rates[r]) + noise);
    }
    mpk_audio_target t = {16000, 1, 1 << 20, 1};
    mpk_audio *whole = NULL, *seg1 = NULL, *seg2 = NULL;
    mpk_error err;
    size_t saved = mpk_audio_segment_len_;
    assert_int_equal(mpk_audio_from_pcm_f32(x, n, rates[r], &t, &whole, &err), 0);
    assert_int_equal(mpk_audio_segments_used_, 1);
    mpk_audio_segment_len_ = 5000; /* 48000 outputs: about 10 segments (44101 Hz: whole seconds, 3) */
    assert_int_equal(mpk_audio_from_pcm_f32(x, n, rates[r], &t, &seg1, &err), 0);
    assert_true(mpk_audio_segments_used_ >= 3);
    t.threads = 2;
    assert_int_equal(mpk_audio_from_pcm_f32(x, n, rates[r], &t, &seg2, &err), 0);
    mpk_audio_segment_len_ = saved;
    assert_int_equal(whole->n_samples, seg1->n_samples);
    assert_memory_equal(seg1->samples, seg2->samples, seg1->n_samples * sizeof(float));
    double maxdiff = 0;
    for (size_t i = 0; i < whole->n_samples; i++) {
      double d = fabs((double)whole->samples[i] - seg1->samples[i]);
      if (d > maxdiff) maxdiff = d;
    }
    print_message("   %6.0f -> 16000 Hz in segments: max difference from one stream %.2g\n", rates[r], maxdiff);
    assert_true(maxdiff < 1e-6); /* float32 rounding of the same arithmetic, not a different filter */
    mpk_audio_free(whole);
    mpk_audio_free(seg1);
    mpk_audio_free(seg2);
    free(x);
  }
}

/* sin without libm (libms differ in the last bits, and the inputs must be the same bytes on every
   host): the argument reduced to [-pi, pi], then the Taylor series to x^21, in IEEE arithmetic
   only (no contraction: -std=c11). Good to ~1e-10, plenty for a test signal. */
static double plain_sin(double x) {
  const double two_pi = 6.283185307179586;
  x -= two_pi * floor(x / two_pi + 0.5);
  double x2 = x * x, t = 1;
  for (int k = 21; k > 1; k -= 2) t = 1 - x2 / (double)(k * (k - 1)) * t;
  return x * t;
}

/* A mono PCM WAV of `bits` (16 or 24) holding round(sample(i) * full scale), little-endian. */
static uint8_t *mono_wav(size_t frames, uint32_t rate, unsigned bits, double (*sample)(size_t, void *), void *ctx,
                         size_t *len) {
  unsigned bps = bits / 8;
  *len = 44 + frames * bps;
  uint8_t *p = malloc(*len);
  assert_non_null(p);
  memcpy(p, "RIFF", 4);
  mpk_store_le32(p + 4, (uint32_t)*len - 8);
  memcpy(p + 8, "WAVEfmt ", 8);
  mpk_store_le32(p + 16, 16);
  mpk_store_le16(p + 20, 1);
  mpk_store_le16(p + 22, 1);
  mpk_store_le32(p + 24, rate);
  mpk_store_le32(p + 28, rate * bps);
  mpk_store_le16(p + 32, (uint16_t)bps);
  mpk_store_le16(p + 34, (uint16_t)bits);
  memcpy(p + 36, "data", 4);
  mpk_store_le32(p + 40, (uint32_t)(frames * bps));
  double full = bits == 16 ? 32767 : 8388607;
  for (size_t i = 0; i < frames; i++) {
    int32_t v = (int32_t)floor(sample(i, ctx) * full + 0.5);
    for (unsigned k = 0; k < bps; k++) p[44 + i * bps + k] = (uint8_t)((uint32_t)v >> (8 * k));
  }
  return p;
}

/* 10 s sweeping linearly from 20 Hz to 20 kHz at half scale (sox's `synth 10 sine 20-20000 vol
   0.5`): past the output's 8 kHz Nyquist the resampler leaves small outputs (~1e-6), where an
   engine's or a libm's last bit shows (17646 of 480000 samples of a 30 s one differed between
   Debian's libsoxr and the WebAssembly module's before cmake/soxr.cmake). */
static double sweep_sample(size_t i, void *ctx) {
  (void)ctx;
  double t = (double)i / 44100, f0 = 20, f1 = 20000, T = 10;
  return 0.5 * plain_sin(2 * 3.141592653589793 * (f0 * t + (f1 - f0) * t * t / (2 * T)));
}

/* 10 s of a 440 Hz sine at half scale, silent for the first 2 s and from 5 to 7 s: a silence after
   sound, and exact zeros every 200th output. */
static double sine_silence_sample(size_t i, void *ctx) {
  (void)ctx;
  if (i % 220500 < 88200) return 0;
  return 0.5 * plain_sin(2 * 3.141592653589793 * 440 * (double)i / 44100);
}

static void expect_audio_sha256(const char *what, const mpk_audio *a, const char *want) {
  assert_true(a->resampled);
  uint8_t *le = malloc(a->n_samples * 4);
  assert_non_null(le);
  for (size_t i = 0; i < a->n_samples; i++) mpk_store_le_f32(le + 4 * i, a->samples[i]);
  tu_expect_sha256(what, le, a->n_samples * 4, want);
  free(le);
}

/* The same bytes on every host (docs/cross.md) and in the WebAssembly module (js/test/media.test.mjs):
   fixed recordings (a stereo 16-bit WAV mixed down, float PCM at three rates, one of them in
   segments on two threads, from an integer generator; a 24-bit sweep past the output's Nyquist and
   a sine with silences, from plain_sin) resampled to 16 kHz hash to what x86-64 gives; the samples
   (host order) are hashed as little-endian float32, the bytes `modelpkg audio -o` writes. soxr's
   tuning variables in the environment change nothing (it sees none: src/media/soxr/). */
static void same_bytes(void) {
  uint32_t x = 88172645u; /* xorshift32: this test's own sequence */
#define NEXT() (x ^= x << 13, x ^= x >> 17, x ^= x << 5, x)
  /* a 0.5 s stereo 44.1 kHz WAV: noise plus a slow ramp on the left, noise on the right */
  enum { FRAMES = 22050 };
  size_t wav_len = 44 + (size_t)FRAMES * 4;
  uint8_t *wav = malloc(wav_len), *p = wav;
  assert_non_null(wav);
  memcpy(p, "RIFF", 4);
  mpk_store_le32(p + 4, (uint32_t)wav_len - 8);
  memcpy(p + 8, "WAVEfmt ", 8);
  mpk_store_le32(p + 16, 16);
  mpk_store_le16(p + 20, 1); /* PCM */
  mpk_store_le16(p + 22, 2); /* channels */
  mpk_store_le32(p + 24, 44100);
  mpk_store_le32(p + 28, 44100 * 4);
  mpk_store_le16(p + 32, 4); /* block align */
  mpk_store_le16(p + 34, 16);
  memcpy(p + 36, "data", 4);
  mpk_store_le32(p + 40, (uint32_t)FRAMES * 4);
  for (uint32_t f = 0; f < FRAMES; f++) {
    mpk_store_le16(p + 44 + 4 * f, (uint16_t)(int16_t)((int32_t)(NEXT() >> 20) - 2048 + (int32_t)(f % 2000) * 8));
    mpk_store_le16(p + 46 + 4 * f, (uint16_t)(int16_t)((int32_t)(NEXT() >> 18) - 8192));
  }
  static const struct {
    double rate;
    size_t segment_len; /* 0: one stream */
    unsigned threads;
    const char *sha256;
  } pcm[] = {
      {48000, 0, 1, "sha256:03f66dd7a0c7103a111569875a1d838bfc0d3c9b03d10c5ee2d702d736669e9b"},
      {22050, 0, 1, "sha256:8d79dafa0edc5f17c515f31445d33a277b37a97ac8e8395cac4e714f245c3557"},
      {11025, 0, 1, "sha256:248013fe2b9dedbbbefa37ff33ad1914af5bb74b6d455d595ae0e12a3d9ca07a"},
      {44100, 3000, 2, "sha256:17d6de958c48bbef992b1c75e229c8945af5ddce40b5dee37d5a18602cf5d045"},
  };
  enum { N = 33075 }; /* 0.75 s at 44.1 kHz */
  float *pcm_in = malloc(N * sizeof *pcm_in);
  assert_non_null(pcm_in);
  for (size_t i = 0; i < N; i++) pcm_in[i] = (float)((int32_t)(NEXT() >> 8) - (1 << 23)) * 0x1p-24f;
#undef NEXT
  for (size_t c = 0; c <= sizeof pcm / sizeof pcm[0]; c++) {
    mpk_audio_target t = {16000, 1, 480000, 1};
    mpk_audio *a = NULL;
    mpk_error err;
    size_t saved = mpk_audio_segment_len_;
    const char *what = "stereo 16-bit WAV at 44100 Hz";
    const char *want = "sha256:e1f3979499f0206e77e23c3d26cf12b47e0294c5c077cb23dd3d2521a6415dce";
    char name[64];
    int rc;
    if (c == 0) {
      rc = mpk_audio_from_wav(wav, wav_len, NULL, &t, &a, &err);
    } else {
      t.threads = pcm[c - 1].threads;
      if (pcm[c - 1].segment_len) mpk_audio_segment_len_ = pcm[c - 1].segment_len;
      rc = mpk_audio_from_pcm_f32(pcm_in, N, pcm[c - 1].rate, &t, &a, &err);
      mpk_audio_segment_len_ = saved;
      snprintf(name, sizeof name, "float PCM at %.0f Hz%s", pcm[c - 1].rate, pcm[c - 1].segment_len ? " in segments" : "");
      what = name;
      want = pcm[c - 1].sha256;
    }
    if (rc) fail_msg("%s: %s", what, tu_err(&err));
    expect_audio_sha256(what, a, want);
    mpk_audio_free(a);
  }
  free(pcm_in);

  static const struct {
    const char *what;
    unsigned bits;
    double (*sample)(size_t, void *);
    const char *sha256;
  } wavs[] = {
      {"24-bit sweep 20 Hz - 20 kHz", 24, sweep_sample,
       "sha256:2fe2aad277be71467b649f8f35e7c3535acc2e5072d258df052be10213fe16d5"},
      {"16-bit 440 Hz sine with silences", 16, sine_silence_sample,
       "sha256:6bd20051c588f391fabdcdf10f0efb40a6c464f07ae9c9c93a1e5991028c5120"},
  };
  for (size_t c = 0; c < sizeof wavs / sizeof wavs[0]; c++) {
    size_t len;
    uint8_t *w = mono_wav(441000, 44100, wavs[c].bits, wavs[c].sample, NULL, &len);
    mpk_audio_target t = {16000, 1, 480000, 1};
    mpk_audio *a = NULL;
    mpk_error err;
    if (mpk_audio_from_wav(w, len, NULL, &t, &a, &err)) fail_msg("%s: %s", wavs[c].what, tu_err(&err));
    assert_int_equal(a->n_samples, 160000);
    expect_audio_sha256(wavs[c].what, a, wavs[c].sha256);
    if (c == 1) { /* the silences are silent (the filter rings for ~110 outputs on either side of a sound) */
      for (size_t i = 0; i < 31000; i++) assert_true(a->samples[i] == 0);
      for (size_t i = 81000; i < 111000; i++) assert_true(a->samples[i] == 0);
    }
    mpk_audio_free(a);
    free(w);
  }

  /* soxr reads SOXR_* tuning variables from the environment (DFT sizes, coefficient table size,
     its engine choice); modelpkg's build of it does not, so the bytes stay those above. */
  setenv("SOXR_LARGE_DFT_SIZE", "8", 1);
  setenv("SOXR_MIN_DFT_SIZE", "8", 1);
  setenv("SOXR_COEFS_SIZE", "100", 1);
  setenv("SOXR_USE_SIMD", "0", 1);
  {
    mpk_audio_target t = {16000, 1, 480000, 1};
    mpk_audio *a = NULL;
    mpk_error err;
    if (mpk_audio_from_wav(wav, wav_len, NULL, &t, &a, &err)) fail_msg("with SOXR_* set: %s", tu_err(&err));
    expect_audio_sha256("stereo 16-bit WAV at 44100 Hz, SOXR_* set", a,
                        "sha256:e1f3979499f0206e77e23c3d26cf12b47e0294c5c077cb23dd3d2521a6415dce");
    mpk_audio_free(a);
  }
  unsetenv("SOXR_LARGE_DFT_SIZE");
  unsetenv("SOXR_MIN_DFT_SIZE");
  unsetenv("SOXR_COEFS_SIZE");
  unsetenv("SOXR_USE_SIMD");
  free(wav);
}

/* ... with whichever copy of soxr's engine the CPU picks, and with the baseline copy (x86-64 builds
   it twice, for SSE2 and for AVX: cmake/soxr.cmake; elsewhere both runs are the one engine). */
static void test_same_bytes_on_every_host(void **state) {
  (void)state;
  same_bytes();
  mpk_audio_soxr_avx_ = 0;
  same_bytes();
  mpk_audio_soxr_avx_ = -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_segmented_resampling),
      cmocka_unit_test(test_integer_mix_exact),
      cmocka_unit_test(test_wav_file_releases_input),
      cmocka_unit_test(test_malformed_table),
      cmocka_unit_test(test_wav_parse_fields),
      cmocka_unit_test(test_stream_equals_held),
      cmocka_unit_test(test_tones),
      cmocka_unit_test(test_below_precision_is_zero),
      cmocka_unit_test(test_equal_rate_copy),
      cmocka_unit_test(test_same_bytes_on_every_host),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
