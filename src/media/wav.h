/* Internal: reading the samples of a WAV file mpk_wav_parse() accepted (wav.c), for audio.c. */
#ifndef MPK_WAV_H
#define MPK_WAV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modelpkg.h"

/* Frames [first, first + n) of `info`'s data chunk in `wav`, each the mean of its channels
   computed as WebLLM does (the channel samples summed in double, divided by the channel count,
   rounded to float32). Returns false at the first non-finite channel sample. `out` may be NULL
   (only the non-finite check runs). */
bool mpk_wav_mix(const uint8_t *wav, const mpk_wav_info *info, uint64_t first, size_t n, float *out);

/* Outputs per resampling segment (audio.c); tests shrink it to exercise the segmentation. */
extern size_t mpk_audio_segment_len_;
/* 0: x86-64's baseline copy of soxr's engine even where the CPU has AVX (audio.c; tests) */
extern int mpk_audio_soxr_avx_;
extern _Atomic size_t mpk_audio_segments_used_; /* how many the latest resampling used */

#endif
