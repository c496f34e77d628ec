/*
 * modelpkg/media.h — input frontends: audio (WAV / PCM to the mono float32 an audio_decode adapter
 * expects) and images (JPEG / PNG / WebP to the NHWC pixel tensor an image_decode adapter expects).
 *
 * Threads: every function may run in several threads at once; an mpk_audio or mpk_image is plain
 * data once returned, readable from any thread. A conversion with mpk_audio_target.threads > 1 runs
 * workers inside the call and joins them before it returns; an mpk_audio_sink_fn is called from the
 * caller's thread only, in output order.
 */
#ifndef MODELPKG_MEDIA_H
#define MODELPKG_MEDIA_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* component: audio */
/* ============================================================================================
 * audio: a recording to the canonical mono float32 PCM an audio_decode adapter expects
 *
 * Accepts and refuses exactly what WebLLM 0.2.86's decodeAudioInput does (same decision, same
 * output length, same message), then resamples with libsoxr set to SoX's `rate -v` filter instead of
 * WebLLM's linear interpolation. Nothing here knows MLC: the caller passes the processor's rate
 * and limits (an mpk_mlc_audio_decode maps onto mpk_audio_target field by field).
 * ========================================================================================== */

/** Highest source sample rate accepted (WebLLM's MAX_SAMPLE_RATE). */
#define MPK_AUDIO_MAX_SAMPLE_RATE 384000
/** WAVE_FORMAT_PCM, WAVE_FORMAT_IEEE_FLOAT, WAVE_FORMAT_EXTENSIBLE. */
#define MPK_WAV_FORMAT_PCM 1
#define MPK_WAV_FORMAT_IEEE_FLOAT 3
#define MPK_WAV_FORMAT_EXTENSIBLE 0xFFFE

/** What a RIFF/WAVE file holds once mpk_wav_parse() accepted it. */
typedef struct mpk_wav_info {
  uint32_t format_tag;      /**< wFormatTag as written: 1, 3 or 0xFFFE */
  uint32_t codec;           /**< 1 (PCM integer) or 3 (IEEE float); the subformat when extensible */
  uint32_t channels;        /**< >= 1 */
  uint32_t sample_rate;     /**< >= 1, as declared (the 384 kHz limit is checked when decoding) */
  uint32_t bits_per_sample; /**< 8, 16, 24, 32 (integer) or 32, 64 (float) */
  uint32_t valid_bits;      /**< extensible: wValidBitsPerSample (not used for scaling); else bits */
  uint32_t block_align;     /**< channels * bits / 8 */
  uint64_t data_offset;     /**< byte offset of the last data chunk's payload */
  uint64_t data_size;       /**< its size: a whole number of blocks, inside the file */
  uint64_t frames;          /**< data_size / block_align */
  /** 1: the data chunk declared 0 or 0xFFFFFFFF bytes (a streaming WAV, as ffmpeg and arecord write
      to a pipe): its data run to the end of the file, a trailing partial frame dropped; the walk
      stops there. 0: the size as declared. */
  int data_to_eof;
  uint32_t data_declared;   /**< the data chunk's size field as written */
  uint64_t data_dropped;    /**< data_to_eof: bytes of a trailing partial frame not read */
} mpk_wav_info;

/** A WAV format tag's name: "PCM integer" (1), "IEEE float" (3), "A-law" (6), "mu-law" (7),
    "Microsoft ADPCM" (2), "IMA ADPCM" (0x11), "MPEG Layer 3" (0x55), "extensible" (0xFFFE), ...;
    "unknown" for a tag without a registered name. */
MPK_API const char *mpk_wav_codec_name(uint32_t codec);

/**
 * Read a RIFF/WAVE header with WebLLM's rules: chunks walked from byte 12 while 8 header bytes
 * remain (the RIFF size field is ignored, odd chunks padded, the last fmt and the last data chunk
 * win, in any order), a chunk reaching past the end refused — except a data chunk declaring 0 or
 * 0xFFFFFFFF bytes, a streaming WAV, whose data run to the end of the file as sox and ffmpeg read
 * it (data_to_eof; WebLLM refuses these); PCM 8/16/24/32-bit or IEEE float
 * 32/64-bit, plain or WAVE_FORMAT_EXTENSIBLE with those subformats; block alignment consistent.
 * Compressed codecs are MPK_EUNSUPPORTED ("WAV codec 6 is unsupported; ... (A-law)"); anything else
 * malformed is MPK_EMALFORMED. Reads only the header bytes; allocates nothing. `file` names the
 * input in errors (NULL: "input_audio").
 */
MPK_API int mpk_wav_parse(const void *wav, size_t len, const char *file, mpk_wav_info *out,
                          mpk_error *err);

/**
 * The bytes an OpenAI-style input_audio.data string carries: raw base64 (forgiving, as atob:
 * ASCII whitespace skipped, padding optional) or a data:audio/wav;base64, URL (also audio/wave,
 * audio/x-wav; the MIME type in any case). http(s) URLs are refused. `*out` is malloc'ed (at most
 * 3/4 of `len`), freed with mpk_free().
 */
MPK_API int mpk_audio_data_decode(const char *text, size_t len, uint8_t **out, size_t *out_len,
                                  mpk_error *err);

/** Threads a long recording is resampled on by default (one per online CPU, at most this). */
#define MPK_AUDIO_MAX_THREADS 4

/** The processor's side: output rate and the accepted output lengths (1 <= min <= max). */
typedef struct mpk_audio_target {
  int64_t sample_rate_hz;
  int64_t min_samples;
  int64_t max_samples;
  /** Threads for resampling recordings longer than about a minute of output: 0 = one per online
      CPU (at most MPK_AUDIO_MAX_THREADS), 1 = the caller's thread only. The samples are the same
      whatever the number. */
  unsigned threads;
} mpk_audio_target;

/**
 * Output length for `frames` at `source_rate` Hz: 0 when frames is 0, `frames` when the rates
 * are equal, else max(1, round-half-up(frames * target / source)) evaluated as WebLLM does (IEEE
 * double; +Infinity for a source rate of 0, NaN for a NaN rate).
 */
MPK_API double mpk_audio_canonical_length(uint64_t frames, double source_rate, int64_t target_rate);

/** Canonical audio and a report of where it came from. Freed with mpk_audio_free(). */
typedef struct mpk_audio {
  float *samples;            /**< mono float32 at sample_rate_hz */
  size_t n_samples;          /**< the canonical length, min_samples..max_samples */
  int64_t sample_rate_hz;
  int from_wav;              /**< 1: a WAV file; 0: PCM float32 given by the caller */
  mpk_wav_info wav;          /**< from_wav: the header */
  double source_rate;        /**< Hz */
  uint32_t source_channels;
  uint64_t source_frames;
  int resampled;             /**< 0: rates equal, the downmixed samples copied unchanged */
  double peak;               /**< max |sample| of the output */
  double rms;                /**< root mean square of the output */
} mpk_audio;

/**
 * A WAV file (bytes) to canonical audio: mpk_wav_parse(), then the length check (before any
 * sample buffer exists: "canonical audio must contain MIN..MAX samples; got N", MPK_ELIMIT), the
 * samples (integer scaling (u8-128)/128, /32768, /8388608, /2147483648; the channels' mean;
 * non-finite refused), the source rate (<= 384000), then soxr with SoX's rate -v filter (linear phase),
 * mono, producing exactly the canonical length. Memory: the output plus a fixed working set.
 */
MPK_API int mpk_audio_from_wav(const void *wav, size_t len, const char *file,
                               const mpk_audio_target *target, mpk_audio **out, mpk_error *err);
/** Largest WAV file mpk_audio_from_wav_file() reads (16 GiB; the length limits bind long before).
    Where size_t is 32 bits (wasm32, 32-bit ARM) it is SIZE_MAX, what can be mapped at all. */
#define MPK_AUDIO_MAX_FILE_BYTES ((size_t)(SIZE_MAX > 0xffffffffu ? 0x400000000ull : SIZE_MAX))
/**
 * A WAV file by path: the same as mpk_audio_from_wav() on its bytes, but the file is mapped and the
 * pages already read are released as it goes, so memory is the output plus a fixed working set
 * whatever the input's size (a 10-minute 44.1 kHz stereo file: about 40 MiB, not 150).
 */
MPK_API int mpk_audio_from_wav_file(const char *path, const mpk_audio_target *target, mpk_audio **out,
                                    mpk_error *err);
/**
 * Where streamed samples go: called in output order with the next `n` samples (mono float32, host
 * order), borrowed for the call; a non-zero return (with *err set) stops the conversion.
 */
typedef int (*mpk_audio_sink_fn)(void *ctx, const float *samples, size_t n, mpk_error *err);
/**
 * mpk_audio_from_wav_file() with the samples handed to `sink` as they are produced instead of held:
 * memory is a fixed working set (a batch of resampling segments, about 4 MiB per thread) whatever
 * the length. The same checks run first, and a float WAV is scanned for a non-finite sample before
 * the first sample is handed over; the samples are bit-identical to mpk_audio_from_wav_file()'s.
 * `*report` is the same report with samples NULL.
 */
MPK_API int mpk_audio_stream_wav_file(const char *path, const mpk_audio_target *target, mpk_audio_sink_fn sink,
                                      void *ctx, mpk_audio **report, mpk_error *err);
/** The same for input_audio.data text (mpk_audio_from_data()). */
MPK_API int mpk_audio_stream_data(const char *text, size_t len, const mpk_audio_target *target,
                                  mpk_audio_sink_fn sink, void *ctx, mpk_audio **report, mpk_error *err);
/** input_audio.data text (raw base64 or a WAV data URL): mpk_audio_data_decode(), then the above. */
MPK_API int mpk_audio_from_data(const char *text, size_t len, const mpk_audio_target *target,
                                mpk_audio **out, mpk_error *err);
/**
 * Mono PCM float32 the caller already decoded, at `sample_rate` Hz (a double, as WebLLM takes a
 * JS number: a fractional or non-positive rate is refused after the length check, as there).
 */
MPK_API int mpk_audio_from_pcm_f32(const float *samples, size_t n, double sample_rate,
                                   const mpk_audio_target *target, mpk_audio **out, mpk_error *err);
/** Free the mpk_audio and everything it points to; accepts NULL. */
MPK_API void mpk_audio_free(mpk_audio *a);

/* component: image */
/* ============================================================================================
 * image: a photo to the [1, height, width, 3] pixel tensor an image_decode adapter expects
 *
 * Decodes JPEG (libjpeg-turbo, DCT-domain downscaling), PNG (libspng) and WebP (libwebp); anything
 * else is refused naming the format. The resize plan is WebLLM 0.2.86's planImageResize; the pixels
 * come from an antialiased separable filter over the target window only. Nothing here knows MLC:
 * the caller passes the processor's resize (an mpk_mlc_image_decode maps onto mpk_image_target).
 * ========================================================================================== */

/** Largest width or height accepted from a header (checked before any pixel buffer exists). */
#define MPK_IMAGE_MAX_DIM 65535
/** Default bound on source pixels (width * height) when mpk_image_options.max_pixels is 0. */
#define MPK_IMAGE_DEFAULT_MAX_PIXELS (256u * 1024u * 1024u)
/**
 * Default memory budget for decoding (mpk_image_options.max_decode_bytes 0): 512 MiB. What decoding
 * needs is computed from the header before any pixel is decoded: the decoded pixels at 3 bytes each
 * (a JPEG at the DCT scale it will be decoded at; a PNG's rows count although they are streamed), a
 * progressive JPEG's coefficient buffers (128 bytes per 8x8 block of every component, full size), a
 * lossless WebP's ARGB plane (4 bytes per pixel) and a WebP's alpha plane (1 byte per pixel). Past
 * the budget the image is refused (MPK_ELIMIT, the budget named) before the allocation.
 */
#define MPK_IMAGE_DEFAULT_MAX_DECODE_BYTES ((uint64_t)512 << 20)

typedef enum mpk_image_format {
  MPK_IMAGE_FORMAT_UNKNOWN = 0,
  MPK_IMAGE_FORMAT_JPEG,
  MPK_IMAGE_FORMAT_PNG,
  MPK_IMAGE_FORMAT_WEBP
} mpk_image_format;

/** "jpeg", "png", "webp", "unknown". */
MPK_API const char *mpk_image_format_name(mpk_image_format f);

typedef enum mpk_image_resize_mode {
  MPK_IMAGE_RESIZE_STRETCH = 0,   /**< draw the whole image at the target size */
  MPK_IMAGE_RESIZE_CENTER_CROP    /**< scale uniformly to cover the target, keep the centred window */
} mpk_image_resize_mode;

/** The processor's resize: mode and target size (both >= 1). */
typedef struct mpk_image_target {
  mpk_image_resize_mode mode;
  int64_t height;
  int64_t width;
} mpk_image_target;

/** planImageResize: the source drawn at width x height, the target window at (left, top). */
typedef struct mpk_image_plan {
  int64_t width;   /**< scaled width (stretch: the target width) */
  int64_t height;  /**< scaled height */
  int64_t left;    /**< window offset in the scaled image (floor of the centring offset) */
  int64_t top;
} mpk_image_plan;

/**
 * WebLLM's planImageResize for a source of src_width x src_height (upright, after orientation):
 * stretch draws at the target size; center_crop scales by max(H/h, W/w), rounds the scaled size
 * half up, and centres the window with floor offsets (every case of image_resize.json).
 * MPK_EINVAL for a non-positive size.
 */
MPK_API int mpk_image_plan_resize(int64_t src_width, int64_t src_height, const mpk_image_target *target,
                                  mpk_image_plan *out, mpk_error *err);

/** Receives row y (0: the top) of an image's tensor: width * 3 bytes, valid during the call only
    (mpk_image_options.rows). 0 to go on; an MPK_E* code, with err filled, to stop. */
typedef int (*mpk_image_rows_fn)(void *ctx, int64_t y, const uint8_t *row, size_t len, mpk_error *err);

typedef struct mpk_image_options {
  size_t struct_size; /**< sizeof as compiled, set by the _INIT macro; 0: the 0.1 layout (docs/API.md) */
  int ignore_orientation;  /**< 1: pixels as stored, EXIF orientation not applied */
  uint64_t max_pixels;     /**< bound on source width * height; 0: MPK_IMAGE_DEFAULT_MAX_PIXELS */
  uint64_t max_decode_bytes; /**< decoding memory budget; 0: MPK_IMAGE_DEFAULT_MAX_DECODE_BYTES */
  /** Set: the tensor's rows go to rows(rows_ctx, ...) top to bottom, each once, and the returned
      image has no pixels (NULL): a caller that only writes the tensor out never holds it whole.
      With an orientation that neither transposes nor flips vertically (1, 2: nearly every file)
      a JPEG's or non-interlaced PNG's rows arrive while the file decodes, from one row buffer;
      otherwise the window is made whole first. rows() may run on another thread than the caller
      (never two at once); a non-zero return (an MPK_E* code, with err filled) stops the work and
      mpk_image_from_bytes returns it, with that error. */
  mpk_image_rows_fn rows;
  void *rows_ctx;
} mpk_image_options;
/** Every field its default, struct_size set (C and C++17). */
#define MPK_IMAGE_OPTIONS_INIT MPK_OPTIONS_INIT(mpk_image_options)

/** The pixel tensor and a report of where it came from. Freed with mpk_image_free(). */
typedef struct mpk_image {
  uint8_t *pixels;           /**< [height][width][3] RGB, row-major (NHWC with N = 1); NULL with options.rows */
  int64_t width;             /**< the target width */
  int64_t height;            /**< the target height */
  mpk_image_format format;
  uint32_t source_width;     /**< as stored in the file */
  uint32_t source_height;
  uint32_t source_channels;  /**< 1 grey, 2 grey+alpha, 3 RGB, 4 RGBA (palette: 3 or 4; JPEG CMYK: 4) */
  uint32_t source_bits;      /**< bits per channel as stored: 8 or 16, PNG grey also 1, 2, 4 (palette: 8) */
  int has_alpha;             /**< the alpha channel was dropped (colour channels kept as stored) */
  int orientation;           /**< EXIF orientation 1..8 found (1 when none) */
  int orientation_applied;   /**< 0 with ignore_orientation or orientation 1 */
  uint32_t decoded_width;    /**< what the decoder produced (JPEG: after DCT scaling M/8) */
  uint32_t decoded_height;
  int jpeg_scale_num;        /**< JPEG: M of the M/8 DCT scale used; 8 for other formats */
  mpk_image_plan plan;       /**< the resize plan, on the upright source size */
  char warning[256];         /**< a decoder warning that left the pixels whole (JPEG: extraneous bytes
                                  before a marker, ...), the first one; "" when none */
} mpk_image;

/**
 * Image file bytes to the target tensor: sniff the format (by content, never the name), check the
 * declared dimensions against MPK_IMAGE_MAX_DIM and max_pixels before decoding, decode (JPEG at
 * the smallest DCT scale M/8 whose result still covers the plan's scaled size), drop alpha, reduce
 * 16-bit samples to 8 with rounding, expand grey and palette to RGB, apply the EXIF orientation
 * (unless told not to), plan, resample the target window. `file` names the input in errors (NULL:
 * "image"); `opts` may be NULL.
 */
MPK_API int mpk_image_from_bytes(const void *data, size_t len, const char *file,
                                 const mpk_image_target *target, const mpk_image_options *opts,
                                 mpk_image **out, mpk_error *err);
/** Free the mpk_image and everything it points to; accepts NULL. */
MPK_API void mpk_image_free(mpk_image *img);

/**
 * The tensor's bytes as the compiled program takes them: `elem_size` 1 (uint8) copies the pixels;
 * 4 (uint32) zero-extends each value, little-endian. `out_size` must be at least
 * height * width * 3 * elem_size (MPK_ELIMIT otherwise).
 */
/**
 * The image as an 8-bit RGB PNG file's bytes (a preview of the tensor; libspng's encoder): `*out`
 * is malloc'ed, freed with mpk_free(); its length goes to `*out_len`.
 */
MPK_API int mpk_image_encode_png(const mpk_image *img, void **out, size_t *out_len, mpk_error *err);

MPK_API int mpk_image_tensor_bytes(const mpk_image *img, int elem_size, void *out, size_t out_size,
                                   mpk_error *err);

#ifdef __cplusplus
}
#endif

#endif /* MODELPKG_MEDIA_H */
