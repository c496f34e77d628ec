/* Fuzz target: input_audio.data — a base64 string or a WAV data URL (atob's forgiving base64, the
   data URL's MIME types, URLs refused) — decoded, then as a whole request (WAV decoding and
   resampling to 16 kHz, at most 2^16 samples so each run stays fast). */
#include <stddef.h>
#include <stdint.h>

#include "modelpkg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_error err;
  uint8_t *out = NULL;
  size_t n = 0;
  if (mpk_audio_data_decode((const char *)data, size, &out, &n, &err) == 0) {
    if (n > size) __builtin_trap(); /* base64 never grows */
    mpk_free(out);
  }
  mpk_audio_target t = {.sample_rate_hz = 16000, .min_samples = 1, .max_samples = 1 << 16, .threads = 1};
  mpk_audio *a = NULL;
  if (mpk_audio_from_data((const char *)data, size, &t, &a, &err) == 0)
    if (a->n_samples < 1 || a->n_samples > (1 << 16)) __builtin_trap();
  mpk_audio_free(a);
  return 0;
}
