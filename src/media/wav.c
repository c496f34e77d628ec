/* The RIFF/WAVE reader: WebLLM 0.2.86's decodeWav rules, restated in C. Its acceptance must match
   the reference exactly (audio_decode.json), so every check below runs in the reference's order:
   the chunk walk (errors as chunks are met), then codec, positivity, sample format, block
   alignment. Only header fields are read here; samples are read by mpk_wav_mix(). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "core/endian.h"
#include "media/wav.h"

/* RIFF is little-endian (core/endian.h). */

/* Bytes 4..15 of the PCM and IEEE float subformat GUIDs; bytes 0..3 hold the format tag. */
static const uint8_t guid_tail[12] = {0x00, 0x00, 0x10, 0x00, 0x80, 0x00,
                                      0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71};

/* A chunk id for a message: printable ASCII as is, other bytes as \xNN (a message is one line). */
static void fourcc_text(const uint8_t *p, char out[17]) {
  size_t o = 0;
  for (int i = 0; i < 4; i++) {
    if (p[i] >= 0x20 && p[i] < 0x7f) out[o++] = (char)p[i];
    else o += (size_t)snprintf(out + o, 5, "\\x%02x", p[i]);
  }
  out[o] = '\0';
}

const char *mpk_wav_codec_name(uint32_t codec) {
  switch (codec) {
    case 0x0001: return "PCM integer";
    case 0x0002: return "Microsoft ADPCM";
    case 0x0003: return "IEEE float";
    case 0x0006: return "A-law";
    case 0x0007: return "mu-law";
    case 0x0010: return "OKI ADPCM";
    case 0x0011: return "IMA ADPCM";
    case 0x0022: return "DSP Group TrueSpeech";
    case 0x0031: return "GSM 6.10";
    case 0x0040: return "G.721 ADPCM";
    case 0x0050: return "MPEG";
    case 0x0055: return "MPEG Layer 3";
    case 0x0092: return "Dolby AC-3 SPDIF";
    case 0x0160: return "Windows Media Audio 1";
    case 0x0161: return "Windows Media Audio 2";
    case 0x0162: return "Windows Media Audio Professional";
    case 0x0163: return "Windows Media Audio Lossless";
    case 0x00FF: return "AAC";
    case 0x1610: return "MPEG-4 AAC (HE-AAC)";
    case 0x2000: return "Dolby AC-3";
    case 0x2001: return "DTS";
    case 0xF1AC: return "FLAC";
    case 0xFFFE: return "extensible";
    default: return "unknown";
  }
}

int mpk_wav_parse(const void *wav, size_t len, const char *file, mpk_wav_info *out, mpk_error *err) {
  const uint8_t *b = wav;
  if (!file) file = "input_audio";
  if (!out || (!b && len)) return mpk_fail(err, MPK_EINVAL, file, NULL, "no WAV input");
  memset(out, 0, sizeof *out);
  if (len < 12) return mpk_fail(err, MPK_EMALFORMED, file, NULL, "WAV input is truncated");
  if (memcmp(b, "RIFF", 4) != 0 || memcmp(b + 8, "WAVE", 4) != 0)
    return mpk_fail_at(err, MPK_EMALFORMED, file, 0, "input_audio is not a RIFF/WAVE file");

  bool have_fmt = false, have_data = false;
  uint32_t format = 0, channels = 0, rate = 0, bits = 0, align = 0, tag = 0, valid = 0;
  uint64_t data_off = 0, data_size = 0;
  uint32_t data_declared = 0;
  bool to_eof = false;
  uint64_t off = 12; /* 64-bit: payload + size + pad never wraps */
  while (off + 8 <= len) {
    const uint8_t *h = b + off;
    uint64_t size = mpk_load_le32(h + 4), payload = off + 8;
    /* A streaming writer (ffmpeg or arecord to a pipe) cannot seek back to fill in the size: 0 or
       0xFFFFFFFF. Its data run to the end of the file, as sox and ffmpeg read them; nothing after
       them can be told from samples, so the walk ends here. */
    if (memcmp(h, "data", 4) == 0 && (size == 0 || size == 0xFFFFFFFFu)) {
      data_off = payload;
      data_size = len - payload;
      data_declared = (uint32_t)size;
      have_data = to_eof = true;
      break;
    }
    if (payload + size > len) {
      char id[17];
      fourcc_text(h, id);
      return mpk_fail_at(err, MPK_EMALFORMED, file, (int64_t)off,
                         "WAV %s chunk is truncated (declares %llu bytes, %llu remain)", id,
                         (unsigned long long)size, (unsigned long long)(len - payload));
    }
    const uint8_t *p = b + payload;
    if (memcmp(h, "fmt ", 4) == 0) {
      if (size < 16) return mpk_fail_at(err, MPK_EMALFORMED, file, (int64_t)off, "WAV fmt chunk is truncated");
      tag = format = mpk_load_le16(p);
      channels = mpk_load_le16(p + 2);
      rate = mpk_load_le32(p + 4);
      align = mpk_load_le16(p + 12);
      valid = bits = mpk_load_le16(p + 14);
      if (format == MPK_WAV_FORMAT_EXTENSIBLE) {
        if (size < 40 || mpk_load_le16(p + 16) < 22)
          return mpk_fail_at(err, MPK_EMALFORMED, file, (int64_t)off, "WAV extensible fmt chunk is truncated");
        valid = mpk_load_le16(p + 18);
        if (valid < 1 || valid > bits)
          return mpk_fail_at(err, MPK_EMALFORMED, file, (int64_t)off,
                             "WAV valid bits per sample must fit the container bit depth (%u valid, %u bits)",
                             valid, bits);
        /* A subformat outside the known GUID family keeps the extensible tag, refused below. */
        if (memcmp(p + 28, guid_tail, sizeof guid_tail) == 0) format = mpk_load_le32(p + 24);
      }
      have_fmt = true;
    } else if (memcmp(h, "data", 4) == 0) {
      data_off = payload;
      data_size = size;
      data_declared = (uint32_t)size;
      have_data = true;
    }
    off = payload + size + (size & 1);
  }
  if (!have_fmt || !have_data)
    return mpk_fail(err, MPK_EMALFORMED, file, NULL, "WAV input requires fmt and data chunks");
  if (format != MPK_WAV_FORMAT_PCM && format != MPK_WAV_FORMAT_IEEE_FLOAT)
    return mpk_fail(err, MPK_EUNSUPPORTED, file, NULL,
                    "WAV codec %u is unsupported; use PCM integer or IEEE float WAV (the file's codec is %s (%u))",
                    format, format == MPK_WAV_FORMAT_EXTENSIBLE ? "an unknown extensible subformat"
                                                                : mpk_wav_codec_name(format),
                    format);
  if (channels < 1 || rate < 1 || align < 1)
    return mpk_fail(err, MPK_EMALFORMED, file, NULL,
                    "WAV channel count, sample rate, and block alignment must be positive");
  bool int_ok = format == MPK_WAV_FORMAT_PCM && (bits == 8 || bits == 16 || bits == 24 || bits == 32);
  bool float_ok = format == MPK_WAV_FORMAT_IEEE_FLOAT && (bits == 32 || bits == 64);
  if (!int_ok && !float_ok)
    return mpk_fail(err, MPK_EUNSUPPORTED, file, NULL,
                    "unsupported WAV sample format: codec=%u, bits=%u (%s with %u bits; PCM integer takes 8, 16, 24 "
                    "or 32, IEEE float 32 or 64)",
                    format, bits, mpk_wav_codec_name(format), bits);
  uint64_t dropped = 0;
  if (to_eof && (uint64_t)align == (uint64_t)channels * (bits / 8)) { /* a cut-off last frame is not read */
    dropped = data_size % align;
    data_size -= dropped;
  }
  if ((uint64_t)align != (uint64_t)channels * (bits / 8) || data_size % align != 0)
    return mpk_fail(err, MPK_EMALFORMED, file, NULL,
                    "WAV block alignment does not match its sample format (block align %u, %u channels of "
                    "%u bits, data %llu bytes)",
                    align, channels, bits, (unsigned long long)data_size);
  out->format_tag = tag;
  out->codec = format;
  out->channels = channels;
  out->sample_rate = rate;
  out->bits_per_sample = bits;
  out->valid_bits = valid;
  out->block_align = align;
  out->data_offset = data_off;
  out->data_size = data_size;
  out->frames = data_size / align;
  out->data_to_eof = to_eof;
  out->data_declared = data_declared;
  out->data_dropped = dropped;
  return 0;
}

/* One channel sample as a double, exactly as WebLLM's readSample scales it. */
static inline double read_sample(const uint8_t *p, uint32_t codec, uint32_t bits) {
  if (codec == MPK_WAV_FORMAT_IEEE_FLOAT) {
    if (bits == 32) return mpk_load_le_f32(p);
    return mpk_load_le_f64(p);
  }
  switch (bits) {
    case 8: return ((int)p[0] - 128) / 128.0;
    case 16: return (int16_t)mpk_load_le16(p) / 32768.0;
    case 24: {
      int32_t v = (int32_t)(p[0] | (p[1] << 8) | ((uint32_t)p[2] << 16));
      if (v & 0x800000) v -= 0x1000000;
      return v / 8388608.0;
    }
    default: return (int32_t)mpk_load_le32(p) / 2147483648.0;
  }
}

/* One integer channel sample, unscaled (u8 re-centred on 0). */
static inline int64_t read_int(const uint8_t *p, uint32_t bits) {
  switch (bits) {
    case 8: return (int)p[0] - 128;
    case 16: return (int16_t)mpk_load_le16(p);
    case 24: {
      int32_t v = (int32_t)(p[0] | (p[1] << 8) | ((uint32_t)p[2] << 16));
      return (v & 0x800000) ? v - 0x1000000 : v;
    }
    default: return (int32_t)mpk_load_le32(p);
  }
}

/* Integer PCM, the common case, without a double per channel sample. Bit-exact with the double
   path: each scaled sample int / 2^k is exact in double, and so is every partial sum (at most
   65535 channels of 32-bit values stay below 2^53 units of 2^-31), so WebLLM's double sum equals
   isum * 2^-k exactly; the one rounding is the division by the channel count, done the same way. */
static void mix_int(const uint8_t *p, size_t align, uint32_t ch, uint32_t bits, size_t n, float *out) {
  const double scale = bits == 8 ? 1 / 128.0 : bits == 16 ? 1 / 32768.0 : bits == 24 ? 1 / 8388608.0
                                                                                    : 1 / 2147483648.0;
  const size_t bps = bits / 8;
  if (bits == 16 && ch == 2) { /* the usual stereo recording */
    for (size_t i = 0; i < n; i++, p += 4)
      out[i] = (float)((double)((int16_t)mpk_load_le16(p) + (int16_t)mpk_load_le16(p + 2)) * scale / 2);
    return;
  }
  if (ch == 1) {
    for (size_t i = 0; i < n; i++, p += align) out[i] = (float)((double)read_int(p, bits) * scale);
    return;
  }
  for (size_t i = 0; i < n; i++, p += align) {
    int64_t sum = 0;
    for (uint32_t c = 0; c < ch; c++) sum += read_int(p + c * bps, bits);
    out[i] = (float)((double)sum * scale / ch);
  }
}

bool mpk_wav_mix(const uint8_t *wav, const mpk_wav_info *info, uint64_t first, size_t n, float *out) {
  const uint32_t ch = info->channels, bits = info->bits_per_sample, codec = info->codec;
  const size_t bps = bits / 8, align = info->block_align;
  const uint8_t *p = wav + info->data_offset + first * align;
  const bool is_float = codec == MPK_WAV_FORMAT_IEEE_FLOAT;
  if (!is_float) { /* integers are always finite */
    if (out) mix_int(p, align, ch, bits, n, out);
    return true;
  }
  if (ch == 1) {
    for (size_t i = 0; i < n; i++, p += align) {
      double s = read_sample(p, codec, bits);
      if (is_float && !isfinite(s)) return false;
      if (out) out[i] = (float)s; /* s / 1 */
    }
    return true;
  }
  for (size_t i = 0; i < n; i++, p += align) {
    double mixed = 0;
    for (uint32_t c = 0; c < ch; c++) {
      double s = read_sample(p + c * bps, codec, bits);
      if (is_float && !isfinite(s)) return false;
      mixed += s;
    }
    if (out) out[i] = (float)(mixed / ch);
  }
  return true;
}
