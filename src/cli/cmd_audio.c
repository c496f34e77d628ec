/* modelpkg audio IN.wav --package DIR [-o OUT.f32] [--json]: a recording to the canonical mono
   float32 PCM of the package's audio_decode processor, and a report of what it was and became. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char about[] =
    "Turn a recording into the canonical audio an audio_decode adapter expects: mono float32 PCM at\n"
    "the processor's rate, exactly as many samples as WebLLM 0.2.86 computes, refused where WebLLM\n"
    "refuses (same messages), resampled with libsoxr at very high quality.\n";
static const char more[] = "exit status: 0 converted, 1 refused (the reason on stderr), 2 usage error\n";

/* The audio_decode processor of the package: chat.completions' audio input, else the first. 0 or an
   MPK_E* code with *err set. */
static int package_processor(const char *arg, mpk_audio_target *t, char **input_name, mpk_error *err) {
  char *path = mpk_cli_is_dir(arg) ? mpk_cli_path_join(arg, MPK_MLC_MANIFEST_FILENAME) : strdup(arg);
  if (!path) return mpk_fail(err, MPK_ENOMEM, arg, NULL, "out of memory");
  mpk_mlc_package *pkg = NULL;
  int rc = mpk_mlc_package_load(path, &pkg, err);
  if (rc) {
    free(path);
    return rc;
  }
  const mpk_mlc_input *found = NULL;
  for (size_t i = 0; i < pkg->n_tasks; i++)
    for (size_t k = 0; k < pkg->tasks[i].n_inputs; k++) {
      const mpk_mlc_input *in = &pkg->tasks[i].inputs[k];
      if (in->kind != MPK_MLC_PROCESSOR_AUDIO_DECODE) continue;
      if (!found || strcmp(pkg->tasks[i].name, "chat.completions") == 0) found = in;
    }
  if (!found) {
    rc = mpk_fail(err, MPK_EMALFORMED, path, NULL, "no task input has an audio_decode processor");
  } else {
    t->sample_rate_hz = found->audio.sample_rate_hz;
    t->min_samples = found->audio.min_samples;
    t->max_samples = found->audio.max_samples;
    if (!(*input_name = strdup(found->name))) rc = mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
  }
  mpk_mlc_package_free(pkg);
  free(path);
  return rc;
}

/* 20 log10(v) for the report's two decimals. Not libm's log10: libm is not linked, so that no
   command pays for loading it (docs/startup.md, "libm"). v = m 2^e with m in [sqrt(1/2), sqrt(2)),
   ln m = 2 atanh(t), t = (m - 1) / (m + 1), |t| < 0.172: its series to t^25 is within 1e-19. */
static double dbfs(double v) {
  if (!(v > 0) || !isfinite(v)) return v > 0 ? INFINITY : -INFINITY;
  int e = 0; /* v = m 2^e, m in [0.5, 1), from the bits (frexp would bind to libm's copy) */
  if (v < 0x1p-1022) v *= 0x1p54, e = -54;
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  e += (int)((u >> 52) & 0x7ff) - 1022;
  u = (u & ~(UINT64_C(0x7ff) << 52)) | (UINT64_C(1022) << 52);
  double m;
  memcpy(&m, &u, sizeof m);
  if (m < 0.70710678118654752) m *= 2, e--;
  double t = (m - 1) / (m + 1), t2 = t * t, term = t, ln = 0;
  for (int k = 1; k <= 25; k += 2, term *= t2) ln += term / k;
  return 20 * (2 * ln + e * 0.69314718055994531) / 2.30258509299404568;
}

/* The note a streaming WAV gets (its data size was not filled in). */
static void streaming_note(const mpk_audio *a, char *buf, size_t size) {
  snprintf(buf, size,
           "streaming WAV: the data chunk declares %s bytes (as a writer to a pipe leaves it); read to the end of "
           "the file, %llu bytes of samples%s",
           a->wav.data_declared ? "0xFFFFFFFF" : "0", (unsigned long long)a->wav.data_size,
           a->wav.data_dropped ? ", a partial last frame dropped" : "");
}

static void report_text(FILE *out, const mpk_audio *a, const char *in, const char *input_name) {
  if (a->from_wav) {
    fprintf(out, "source:  %s: WAV %s (%u) %u-bit%s, %u Hz, %u channel%s, %llu frames (%.3f s)\n", in,
            mpk_wav_codec_name(a->wav.codec), a->wav.codec, a->wav.bits_per_sample,
            a->wav.format_tag == MPK_WAV_FORMAT_EXTENSIBLE ? " (extensible)" : "", a->wav.sample_rate,
            a->wav.channels, a->wav.channels == 1 ? "" : "s", (unsigned long long)a->source_frames,
            (double)a->source_frames / a->source_rate);
    if (a->wav.data_to_eof) {
      char note[256];
      streaming_note(a, note, sizeof note);
      fprintf(out, "note:    %s\n", note);
    }
  }
  fprintf(out, "output:  %zu samples, mono float32 at %lld Hz (%.3f s)%s%s%s\n", a->n_samples,
          (long long)a->sample_rate_hz, (double)a->n_samples / (double)a->sample_rate_hz,
          a->resampled ? ", resampled (soxr, very high quality)" : ", copied (rates equal)",
          input_name ? " for input " : "", input_name ? input_name : "");
  fprintf(out, "level:   peak %.6f (%.2f dBFS), RMS %.6f (%.2f dBFS)\n", a->peak, dbfs(a->peak), a->rms,
          dbfs(a->rms));
}

/* The command's own keys of its --json document (docs/CLI.md "JSON reports"). */
static const char *const json_keys[] = {"source", "processor", "output", NULL};

static int report_json(const mpk_audio *a, const char *in, const char *input_name, const mpk_audio_target *t,
                       const char *output) {
  json_t *src = json_pack("{s:s, s:s, s:I, s:s, s:I, s:I, s:I, s:b, s:I, s:I, s:f, s:b}", "file", in, "codec",
                          a->wav.codec == MPK_WAV_FORMAT_IEEE_FLOAT ? "float" : "pcm", "codec_tag",
                          (json_int_t)a->wav.codec, "codec_name", mpk_wav_codec_name(a->wav.codec),
                          "bits_per_sample", (json_int_t)a->wav.bits_per_sample, "sample_rate",
                          (json_int_t)a->wav.sample_rate, "channels", (json_int_t)a->wav.channels, "extensible",
                          a->wav.format_tag == MPK_WAV_FORMAT_EXTENSIBLE, "frames", (json_int_t)a->source_frames,
                          "block_align", (json_int_t)a->wav.block_align, "seconds",
                          (double)a->source_frames / a->source_rate, "streaming", a->wav.data_to_eof != 0);
  json_t *proc = json_pack("{s:o, s:I, s:I, s:I}", "input", mpk_cli_json_str(input_name), "sample_rate_hz",
                           (json_int_t)t->sample_rate_hz, "min_samples", (json_int_t)t->min_samples, "max_samples",
                           (json_int_t)t->max_samples);
  json_t *o = json_pack("{s:I, s:I, s:b, s:f, s:f, s:o}", "samples", (json_int_t)a->n_samples, "sample_rate_hz",
                        (json_int_t)a->sample_rate_hz, "resampled", a->resampled, "peak", a->peak, "rms", a->rms,
                        "file", mpk_cli_json_str(output));
  json_t *root = mpk_cli_json_begin("audio", true);
  if (!root || !src || !proc || !o) {
    json_decref(root), json_decref(src), json_decref(proc), json_decref(o);
    return -1;
  }
  json_object_set_new(root, "source", src);
  json_object_set_new(root, "processor", proc);
  json_object_set_new(root, "output", o);
  char note[256];
  const char *notes[1] = {note};
  if (a->wav.data_to_eof) streaming_note(a, note, sizeof note);
  return mpk_cli_json_end(root, NULL, 0, notes, a->wav.data_to_eof ? 1 : 0);
}

/* The samples as raw little-endian float32 whatever the host's byte order, streamed into the
   output (mpk_output: atomic file, or standard output / a device written through). */
static int sink_f32le(void *ctx, const float *x, size_t n, mpk_error *err) {
  mpk_output *o = ctx;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return mpk_output_write(o, x, n * 4, err);
#else
  uint8_t le[4096];
  while (n) {
    size_t k = n < sizeof le / 4 ? n : sizeof le / 4;
    for (size_t i = 0; i < k; i++) {
      uint32_t u;
      memcpy(&u, &x[i], 4);
      le[4 * i] = (uint8_t)u, le[4 * i + 1] = (uint8_t)(u >> 8), le[4 * i + 2] = (uint8_t)(u >> 16),
      le[4 * i + 3] = (uint8_t)(u >> 24);
    }
    int rc = mpk_output_write(o, le, k * 4, err);
    if (rc) return rc;
    x += k, n -= k;
  }
  return 0;
#endif
}

/* Without -o: the samples are produced (the report measures them) and dropped. */
static int sink_none(void *ctx, const float *x, size_t n, mpk_error *err) {
  (void)ctx, (void)x, (void)n, (void)err;
  return 0;
}

#define usage(json, ...) mpk_cli_usage(&spec, (json), __VA_ARGS__)

/* A positive integer option (an mpk_cli_opt fn). */
static int count_option(void *ctx, const mpk_cli_spec *s, bool json, const char *opt, const char *v) {
  if (!mpk_cli_parse_int(v, 1, MPK_CLI_SAFE_INT_MAX, ctx))
    return mpk_cli_usage(s, json, "%s: expected a positive integer, got '%s'", opt, v);
  return MPK_EXIT_OK;
}

int mpk_cmd_audio(int argc, char **argv) {
  const char *package = NULL, *output = NULL;
  bool json = false, base64 = false;
  long long rate = 0, min_samples = 0, max_samples = 0;
  const mpk_cli_opt opts[] = {
      {"--package", 0, "DIR", "read the processor (sample_rate_hz, min_samples, max_samples) from DIR's\n"
                              "mlc-model-manifest.json (or the manifest file itself)", .str = &package},
      {"--rate", 0, "HZ", "output rate (overrides the package's; needed without --package)", .fn = count_option,
       .ctx = &rate},
      {"--min-samples", 0, "N", "fewest output samples accepted (default: the package's, else 1)",
       .fn = count_option, .ctx = &min_samples},
      {"--max-samples", 0, "N", "most output samples accepted (default: the package's; needed without it)",
       .fn = count_option, .ctx = &max_samples},
      {"--base64", 0, NULL, "IN holds input_audio.data text: base64, or a data:audio/wav;base64, URL", .flag = &base64},
      {"--output", 'o', "FILE", "write the samples as raw little-endian float32, streamed (atomically; - is\n"
                                "standard output, a device or FIFO is written through; the report then\n"
                                "goes to stderr)", .str = &output},
      {"--json", 0, NULL, "print the report as one JSON document (not with -o -)", .flag = &json},
      {0}};
  const mpk_cli_spec spec = {.name = "audio", .usage = "IN.wav (--package DIR | --rate HZ --max-samples N) [options]",
                             .about = about, .opts = opts, .more = more, .json_keys = json_keys, .max_args = 1,
                             .extra = "one input file, got '%s' and '%s'"};
  mpk_cli_args args;
  int st = mpk_cli_parse(&spec, argc, argv, &args);
  if (st != MPK_CLI_GO_ON) return st;
  json = args.json;
  const char *in = args.arg[0];
  if (!in) return usage(json, "no input file");
  if (!package && (!rate || !max_samples)) return usage(json, "give --package DIR, or --rate and --max-samples");
  if (min_samples && max_samples && min_samples > max_samples)
    return usage(json, "--min-samples %lld exceeds --max-samples %lld", min_samples, max_samples);
  /* Where the data go decides where the report goes (docs/CLI.md "Output files"). */
  bool out_stdout = output && mpk_output_is_stdout(output);
  if (json && out_stdout)
    return usage(json, "--json prints its document on standard output, which -o writes the samples to; write the "
                 "samples to a file, or drop --json (the report then goes to standard error)");
  FILE *rep = out_stdout ? stderr : stdout;

  mpk_error err;
  mpk_error_clear(&err);
  mpk_audio_target t = {0, 1, 0};
  char *input_name = NULL;
  int rc = package ? package_processor(package, &t, &input_name, &err) : 0;
  if (!rc) {
    if (rate) t.sample_rate_hz = rate;
    if (min_samples) t.min_samples = min_samples;
    if (max_samples) t.max_samples = max_samples;
    if (t.min_samples > t.max_samples) {
      free(input_name);
      return usage(json, "--min-samples %lld exceeds --max-samples %lld", (long long)t.min_samples,
                   (long long)t.max_samples);
    }
  }
  /* The output is opened before the conversion and the samples stream into it as they are made:
     memory is a fixed working set, not the output (docs/audio.md "Memory"). A refusal found on
     the way removes the temporary file; nothing replaces FILE unless the whole output was made. */
  mpk_output *o = NULL;
  bool opened = false;
  if (!rc && output) opened = !(rc = mpk_output_open(output, &o, &err));
  mpk_audio *a = NULL;
  if (!rc) {
    mpk_audio_sink_fn sink = output ? sink_f32le : sink_none;
    if (base64) {
      mpk_mapped m;
      rc = mpk_map_file(in, MPK_DOCUMENT_MAX_BYTES, &m, &err);
      if (!rc) {
        rc = mpk_audio_stream_data((const char *)m.data, m.size, &t, sink, o, &a, &err);
        mpk_unmap_file(&m);
      }
    } else {
      rc = mpk_audio_stream_wav_file(in, &t, sink, o, &a, &err);
    }
  }
  if (opened) {
    if (rc) mpk_output_abort(o);
    else rc = mpk_output_commit(o, &err);
  }
  int status = MPK_EXIT_OK;
  if (rc) {
    mpk_cli_error(&err);
    if (json) mpk_cli_json_refuse("audio", json_keys, &err);
    status = MPK_EXIT_FAIL;
  } else if (json) {
    if (report_json(a, in, input_name, &t, output)) status = MPK_EXIT_FAIL;
  } else {
    report_text(rep, a, in, input_name);
    if (output)
      fprintf(rep, "written: %s (%zu bytes)\n", strcmp(output, "-") == 0 ? "standard output" : output, a->n_samples * 4);
  }
  mpk_audio_free(a);
  free(input_name);
  return status;
}
