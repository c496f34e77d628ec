/* Fuzz target: the RIFF/WAVE reader and the whole WAV-to-canonical-PCM path behind it (length
   check, mixing, soxr). What it accepts must be self-consistent: the data chunk inside the input,
   a whole number of blocks, an output of exactly the canonical length within the limits. The
   first input byte picks the output rate, so equal-rate copies and resampling both run. The
   streaming path (a sink fed in batches) must give the held path's samples, bit for bit. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "modelpkg.h"

typedef struct cmp_ctx {
  const float *want;
  size_t at, n;
  int bad;
} cmp_ctx;

static int compare(void *ctx, const float *x, size_t n, mpk_error *err) {
  (void)err;
  cmp_ctx *c = ctx;
  if (c->at + n > c->n || memcmp(c->want + c->at, x, n * sizeof *x) != 0) c->bad = 1;
  c->at += n;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const int64_t rates[4] = {16000, 8000, 44100, 22050};
  if (size < 1) return 0;
  mpk_audio_target t = {rates[data[0] & 3], 1, 4096};
  data++;
  size--;
  mpk_error err;
  mpk_wav_info info;
  int parsed = mpk_wav_parse(data, size, NULL, &info, &err);
  if (parsed == 0) {
    if (info.data_offset > size || info.data_size > size - info.data_offset) __builtin_trap();
    if (info.block_align == 0 || info.data_size % info.block_align != 0) __builtin_trap();
    if (info.block_align != info.channels * (info.bits_per_sample / 8)) __builtin_trap();
    /* a streaming WAV (declared 0 or 0xFFFFFFFF) runs to the end, less a partial frame */
    if (info.data_to_eof && ((info.data_declared != 0 && info.data_declared != 0xFFFFFFFFu) ||
                             info.data_offset + info.data_size + info.data_dropped != size ||
                             info.data_dropped >= info.block_align))
      __builtin_trap();
    if (!info.data_to_eof && (info.data_dropped != 0 || info.data_declared != info.data_size)) __builtin_trap();
    if (mpk_wav_codec_name(info.codec)[0] == '\0') __builtin_trap();
  }
  mpk_audio *a = NULL;
  int rc = mpk_audio_from_wav(data, size, NULL, &t, &a, &err);
  if (rc == 0) {
    if (parsed != 0) __builtin_trap();
    double want = mpk_audio_canonical_length(info.frames, info.sample_rate, t.sample_rate_hz);
    if ((double)a->n_samples != want || a->n_samples < 1 || a->n_samples > 4096) __builtin_trap();
    if (!a->resampled && a->source_frames != a->n_samples) __builtin_trap();
    if (!(a->peak >= 0) && !isnan(a->peak)) __builtin_trap();
  } else if (a != NULL) {
    __builtin_trap();
  }
  /* The streamed samples are the held ones (base64 text is the streaming entry point for bytes). */
  cmp_ctx c = {a ? a->samples : NULL, 0, a ? a->n_samples : 0, 0};
  static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char *text = size <= 3 * 4096 ? malloc((size + 2) / 3 * 4 + 1) : NULL;
  if (text) {
    size_t o = 0;
    for (size_t i = 0; i < size; i += 3) {
      uint32_t v = (uint32_t)data[i] << 16 | (i + 1 < size ? (uint32_t)data[i + 1] << 8 : 0) | (i + 2 < size ? data[i + 2] : 0);
      text[o++] = b64[v >> 18], text[o++] = b64[(v >> 12) & 63];
      text[o++] = i + 1 < size ? b64[(v >> 6) & 63] : '=';
      text[o++] = i + 2 < size ? b64[v & 63] : '=';
    }
    mpk_audio *r = NULL;
    int src = mpk_audio_stream_data(text, o, &t, compare, &c, &r, &err);
    if ((src == 0) != (rc == 0) || (src == 0 && (c.bad || c.at != c.n || r->samples != NULL))) __builtin_trap();
    if (src == 0 && (memcmp(&r->peak, &a->peak, sizeof r->peak) || memcmp(&r->rms, &a->rms, sizeof r->rms)))
      __builtin_trap();
    mpk_audio_free(r);
    free(text);
  }
  mpk_audio_free(a);
  return 0;
}
