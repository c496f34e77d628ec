/* Fuzz target: the RIFF/WAVE reader and the whole WAV-to-canonical-PCM path behind it (length
   check, mixing, soxr). What it accepts must be self-consistent: the data chunk inside the input,
   a whole number of blocks, an output of exactly the canonical length within the limits. The
   first input byte picks the output rate, so equal-rate copies and resampling both run. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "modelpkg.h"

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
  mpk_audio_free(a);
  return 0;
}
