/* Audio and image for the JS package (decodeAudio, decodeImage, planImageResize): the processor
   object as the package's tasks declare it, the input bytes, and the output tensor handed over as
   the module's blob (mpkjs_blob: JavaScript copies it out, then frees it) beside a JSON report.
   Built into every module; where the audio or image component is off (the contract module) the
   library's stubs answer MPK_EUNSUPPORTED and js/src/index.js loads the media module instead. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <emscripten/emscripten.h>

#include "api.h"

#define PROCESSOR "processor"

/* The last operation's binary output (single-threaded module: one at a time). */
static void *blob;
static size_t blob_len;

EMSCRIPTEN_KEEPALIVE void *mpkjs_blob_ptr(void) { return blob; }
EMSCRIPTEN_KEEPALIVE size_t mpkjs_blob_len(void) { return blob_len; }
EMSCRIPTEN_KEEPALIVE void mpkjs_blob_free(void) {
  free(blob);
  blob = NULL;
  blob_len = 0;
}

static int proc_int(const json_t *o, const char *key, const char *where, int64_t *out, mpk_error *err) {
  const json_t *v = json_object_get(o, key);
  if (!json_is_integer(v)) {
    char ptr[128], rule[160];
    snprintf(ptr, sizeof ptr, "%s/%s", where, key);
    snprintf(rule, sizeof rule, "%s must be an integer", key);
    mpkjs_fail(err, MPK_EINVAL, PROCESSOR, ptr, rule);
    return MPK_EINVAL;
  }
  *out = json_integer_value(v);
  return 0;
}

/* args {processor: {sample_rate_hz, min_samples, max_samples, ...}, form: "wav" | "data" | "pcm_f32",
   sample_rate (pcm_f32), file}; data: the WAV bytes, input_audio.data text, or float32 samples. */
json_t *mpkjs_op_audio_decode(const json_t *args, const void *data, size_t len, mpk_error *err) {
  const json_t *proc = json_object_get(args, "processor");
  mpk_audio_target t = {.threads = 1}; /* no threads in the module */
  if (!json_is_object(proc)) return mpkjs_fail(err, MPK_EINVAL, PROCESSOR, "", "the audio processor must be an object");
  if (proc_int(proc, "sample_rate_hz", "", &t.sample_rate_hz, err) || proc_int(proc, "min_samples", "", &t.min_samples, err) ||
      proc_int(proc, "max_samples", "", &t.max_samples, err))
    return NULL;
  const char *form = json_string_value(json_object_get(args, "form"));
  const char *file = json_string_value(json_object_get(args, "file"));
  mpk_audio *a = NULL;
  int rc;
  const json_t *plain = json_object_get(args, "plain_array_length");
  if (json_is_integer(plain)) {
    /* samples given as a plain array, not a Float32Array: refused as WebLLM refuses them (the
       library's NULL-array form) */
    rc = mpk_audio_from_pcm_f32(NULL, (size_t)json_integer_value(plain), json_number_value(json_object_get(args, "sample_rate")),
                                &t, &a, err);
  } else if (form && strcmp(form, "pcm_f32") == 0) {
    if (len % sizeof(float)) return mpkjs_fail(err, MPK_EINVAL, file, "", "PCM float32 data must be a whole number of samples");
    rc = mpk_audio_from_pcm_f32(data, len / sizeof(float), json_number_value(json_object_get(args, "sample_rate")), &t, &a,
                                err);
  } else if (form && strcmp(form, "data") == 0) {
    /* no text at all (input_audio.data of another type): the library's NULL form, WebLLM's refusal */
    bool none = json_is_true(json_object_get(args, "no_data"));
    rc = mpk_audio_from_data(none ? NULL : data, none ? 0 : len, &t, &a, err);
  } else {
    rc = mpk_audio_from_wav(data, len, file, &t, &a, err);
  }
  if (rc) return NULL;
  json_t *r = json_pack("{s:I, s:I, s:b, s:f, s:i, s:I, s:b, s:f, s:f}", "samples", (json_int_t)a->n_samples,
                        "sample_rate_hz", (json_int_t)a->sample_rate_hz, "from_wav", a->from_wav, "source_rate",
                        a->source_rate, "source_channels", (int)a->source_channels, "source_frames",
                        (json_int_t)a->source_frames, "resampled", a->resampled, "peak", a->peak, "rms", a->rms);
  mpkjs_blob_free();
  blob = a->samples; /* handed over: the report keeps no pointer to it */
  blob_len = a->n_samples * sizeof(float);
  a->samples = NULL;
  mpk_audio_free(a);
  return r;
}

/* The processor's resize: {mode: "stretch" | "center_crop", height, width}. */
static int read_target(const json_t *resize, mpk_image_target *t, mpk_error *err) {
  const char *mode = json_string_value(json_object_get(resize, "mode"));
  if (!json_is_object(resize)) {
    mpkjs_fail(err, MPK_EINVAL, PROCESSOR, "/resize", "the resize must be an object {mode, height, width}");
    return MPK_EINVAL;
  }
  if (!mode || (strcmp(mode, "stretch") != 0 && strcmp(mode, "center_crop") != 0)) {
    mpkjs_fail(err, MPK_EINVAL, PROCESSOR, "/resize/mode", "mode must be \"stretch\" or \"center_crop\"");
    return MPK_EINVAL;
  }
  t->mode = strcmp(mode, "stretch") == 0 ? MPK_IMAGE_RESIZE_STRETCH : MPK_IMAGE_RESIZE_CENTER_CROP;
  return proc_int(resize, "height", "/resize", &t->height, err) || proc_int(resize, "width", "/resize", &t->width, err)
             ? MPK_EINVAL
             : 0;
}

static json_t *plan_json(const mpk_image_plan *p) {
  return json_pack("{s:I, s:I, s:I, s:I}", "width", (json_int_t)p->width, "height", (json_int_t)p->height, "left",
                   (json_int_t)p->left, "top", (json_int_t)p->top);
}

/* args {resize, src_width, src_height}: WebLLM's planImageResize. */
json_t *mpkjs_op_image_plan(const json_t *args, const void *data, size_t len, mpk_error *err) {
  (void)data, (void)len;
  mpk_image_target t;
  mpk_image_plan p;
  if (read_target(json_object_get(args, "resize"), &t, err) ||
      mpk_image_plan_resize(json_integer_value(json_object_get(args, "src_width")),
                            json_integer_value(json_object_get(args, "src_height")), &t, &p, err))
    return NULL;
  return plan_json(&p);
}

/* args {processor: {resize: {...}, ...}, dtype: "uint8" | "uint32", ignore_orientation, max_pixels, file};
   data: the image file. */
json_t *mpkjs_op_image_decode(const json_t *args, const void *data, size_t len, mpk_error *err) {
  const json_t *proc = json_object_get(args, "processor");
  mpk_image_target t;
  if (!json_is_object(proc)) return mpkjs_fail(err, MPK_EINVAL, PROCESSOR, "", "the image processor must be an object");
  if (read_target(json_object_get(proc, "resize"), &t, err)) return NULL;
  const char *dtype = json_string_value(json_object_get(args, "dtype"));
  int elem = dtype && strcmp(dtype, "uint32") == 0 ? 4 : 1;
  if (dtype && elem == 1 && strcmp(dtype, "uint8") != 0)
    return mpkjs_fail(err, MPK_EINVAL, "options", "/dtype", "dtype must be \"uint8\" or \"uint32\"");
  mpk_image_options o = MPK_IMAGE_OPTIONS_INIT;
  o.ignore_orientation = json_is_true(json_object_get(args, "ignore_orientation"));
  o.max_pixels = (uint64_t)json_integer_value(json_object_get(args, "max_pixels"));
  mpk_image *img = NULL;
  if (mpk_image_from_bytes(data, len, json_string_value(json_object_get(args, "file")), &t, &o, &img, err)) return NULL;
  size_t n = (size_t)img->height * (size_t)img->width * 3 * (size_t)elem;
  void *out = malloc(n ? n : 1);
  json_t *r = NULL;
  if (!out) mpkjs_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory for the tensor");
  else if (mpk_image_tensor_bytes(img, elem, out, n, err) == 0) {
    r = json_pack("{s:I, s:I, s:s, s:s, s:i, s:i, s:i, s:i, s:b, s:i, s:b, s:i, s:i, s:i, s:o, s:s}", "height",
                  (json_int_t)img->height, "width", (json_int_t)img->width, "dtype", elem == 4 ? "uint32" : "uint8",
                  "format", mpk_image_format_name(img->format), "source_width", (int)img->source_width, "source_height",
                  (int)img->source_height, "source_channels", (int)img->source_channels, "source_bits",
                  (int)img->source_bits, "has_alpha", img->has_alpha, "orientation", img->orientation,
                  "orientation_applied", img->orientation_applied, "decoded_width", (int)img->decoded_width,
                  "decoded_height", (int)img->decoded_height, "jpeg_scale_num", img->jpeg_scale_num, "plan",
                  plan_json(&img->plan), "warning", img->warning);
  }
  if (r) {
    mpkjs_blob_free();
    blob = out;
    blob_len = n;
  } else {
    free(out);
  }
  mpk_image_free(img);
  return r;
}
