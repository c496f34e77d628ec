/* modelpkg audio IN.wav --package DIR [-o OUT.f32] [--json]: a recording to the canonical mono
   float32 PCM of the package's audio_decode processor, and a report of what it was and became. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/core.h"

static const char help[] =
    "usage: modelpkg audio IN.wav (--package DIR | --rate HZ --max-samples N) [options]\n"
    "\n"
    "Turn a recording into the canonical audio an audio_decode adapter expects: mono float32 PCM at\n"
    "the processor's rate, exactly as many samples as WebLLM 0.2.86 computes, refused where WebLLM\n"
    "refuses (same messages), resampled with libsoxr at very high quality.\n"
    "\n"
    "  --package DIR        read the processor (sample_rate_hz, min_samples, max_samples) from DIR's\n"
    "                       mlc-model-manifest.json (or the manifest file itself)\n"
    "  --rate HZ            output rate (overrides the package's; needed without --package)\n"
    "  --min-samples N      fewest output samples accepted (default: the package's, else 1)\n"
    "  --max-samples N      most output samples accepted (default: the package's; needed without it)\n"
    "  --base64             IN holds input_audio.data text: base64, or a data:audio/wav;base64, URL\n"
    "  -o, --output FILE    write the samples as raw little-endian float32 (atomically)\n"
    "  --json               print the report as one JSON document\n"
    "  -h, --help           show this help\n"
    "\n"
    "exit status: 0 converted, 1 refused (the reason on stderr), 2 usage error\n";

/* The audio_decode processor of the package: chat.completions' audio input, else the first. */
static int package_processor(const char *arg, mpk_audio_target *t, char **input_name) {
  char *path = mpk_is_dir(arg) ? mpk_path_join(arg, MPK_MLC_MANIFEST_FILENAME) : strdup(arg);
  if (!path) return MPK_EXIT_FAIL;
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mlc_package *pkg = NULL;
  if (mpk_mlc_package_load(path, &pkg, &err)) {
    mpk_cli_error(&err);
    free(path);
    return MPK_EXIT_FAIL;
  }
  const mpk_mlc_input *found = NULL;
  for (size_t i = 0; i < pkg->n_tasks; i++)
    for (size_t k = 0; k < pkg->tasks[i].n_inputs; k++) {
      const mpk_mlc_input *in = &pkg->tasks[i].inputs[k];
      if (in->kind != MPK_MLC_PROCESSOR_AUDIO_DECODE) continue;
      if (!found || strcmp(pkg->tasks[i].name, "chat.completions") == 0) found = in;
    }
  int status = MPK_EXIT_OK;
  if (!found) {
    fprintf(stderr, "modelpkg: %s: no task input has an audio_decode processor\n", path);
    status = MPK_EXIT_FAIL;
  } else {
    t->sample_rate_hz = found->audio.sample_rate_hz;
    t->min_samples = found->audio.min_samples;
    t->max_samples = found->audio.max_samples;
    *input_name = strdup(found->name);
  }
  mpk_mlc_package_free(pkg);
  free(path);
  return status;
}

static const char *codec_name(const mpk_wav_info *w) {
  return w->codec == MPK_WAV_FORMAT_IEEE_FLOAT ? "float" : "pcm";
}

static double dbfs(double v) { return v > 0 ? 20 * log10(v) : -INFINITY; }

static void report_text(FILE *out, const mpk_audio *a, const char *in, const char *input_name) {
  if (a->from_wav)
    fprintf(out, "source:  %s: WAV %s %u-bit%s, %u Hz, %u channel%s, %llu frames (%.3f s)\n", in,
            codec_name(&a->wav), a->wav.bits_per_sample,
            a->wav.format_tag == MPK_WAV_FORMAT_EXTENSIBLE ? " (extensible)" : "", a->wav.sample_rate,
            a->wav.channels, a->wav.channels == 1 ? "" : "s", (unsigned long long)a->source_frames,
            (double)a->source_frames / a->source_rate);
  fprintf(out, "output:  %zu samples, mono float32 at %lld Hz (%.3f s)%s%s%s\n", a->n_samples,
          (long long)a->sample_rate_hz, (double)a->n_samples / (double)a->sample_rate_hz,
          a->resampled ? ", resampled (soxr, very high quality)" : ", copied (rates equal)",
          input_name ? " for input " : "", input_name ? input_name : "");
  fprintf(out, "level:   peak %.6f (%.2f dBFS), RMS %.6f (%.2f dBFS)\n", a->peak, dbfs(a->peak), a->rms,
          dbfs(a->rms));
}

static int report_json(FILE *out, const mpk_audio *a, const char *in, const char *input_name,
                       const mpk_audio_target *t, const char *output) {
  json_t *src = json_pack("{s:s, s:s, s:I, s:I, s:I, s:b, s:I, s:I, s:f}", "file", in, "codec",
                          codec_name(&a->wav), "bits_per_sample", (json_int_t)a->wav.bits_per_sample,
                          "sample_rate", (json_int_t)a->wav.sample_rate, "channels",
                          (json_int_t)a->wav.channels, "extensible",
                          a->wav.format_tag == MPK_WAV_FORMAT_EXTENSIBLE, "frames",
                          (json_int_t)a->source_frames, "block_align", (json_int_t)a->wav.block_align,
                          "seconds", (double)a->source_frames / a->source_rate);
  json_t *root = json_pack(
      "{s:o, s:{s:o, s:I, s:I, s:I}, s:{s:I, s:I, s:b, s:f, s:f, s:o}}", "source", src, "processor",
      "input", mpk_cli_json_str(input_name), "sample_rate_hz", (json_int_t)t->sample_rate_hz, "min_samples",
      (json_int_t)t->min_samples, "max_samples", (json_int_t)t->max_samples, "output", "samples",
      (json_int_t)a->n_samples, "sample_rate_hz", (json_int_t)a->sample_rate_hz, "resampled", a->resampled,
      "peak", a->peak, "rms", a->rms, "file", mpk_cli_json_str(output));
  return mpk_cli_json_print(out, root);
}

/* Raw little-endian float32 whatever the host's byte order; a little-endian host writes the samples
   as they are (no second copy of the output). */
static int write_f32le(const char *path, const mpk_audio *a, mpk_error *err) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return mpk_output_file(path, a->samples, a->n_samples * 4, err);
#else
  uint8_t *le = malloc(a->n_samples * 4 + 1);
  if (!le) return mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
  for (size_t i = 0; i < a->n_samples; i++) {
    uint32_t u;
    memcpy(&u, &a->samples[i], 4);
    le[4 * i] = (uint8_t)u, le[4 * i + 1] = (uint8_t)(u >> 8), le[4 * i + 2] = (uint8_t)(u >> 16),
    le[4 * i + 3] = (uint8_t)(u >> 24);
  }
  int rc = mpk_output_file(path, le, a->n_samples * 4, err);
  free(le);
  return rc;
#endif
}

int mpk_cmd_audio(int argc, char **argv) {
  const char *in = NULL, *package = NULL, *output = NULL;
  bool json = false, base64 = false;
  long long rate = 0, min_samples = 0, max_samples = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (mpk_cli_is_help(a)) {
      fputs(help, stdout);
      return MPK_EXIT_OK;
    } else if (strcmp(a, "--json") == 0) json = true;
    else if (strcmp(a, "--base64") == 0) base64 = true;
    else if (strcmp(a, "--package") == 0 || strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0 ||
             strcmp(a, "--rate") == 0 || strcmp(a, "--min-samples") == 0 || strcmp(a, "--max-samples") == 0) {
      if (i + 1 >= argc) return mpk_cli_usage_error("audio", "%s needs a value", a);
      const char *v = argv[++i];
      if (strcmp(a, "--package") == 0) package = v;
      else if (a[1] == 'o' || strcmp(a, "--output") == 0) output = v;
      else {
        long long *dst = strcmp(a, "--rate") == 0 ? &rate : strcmp(a, "--min-samples") == 0 ? &min_samples : &max_samples;
        if (!mpk_cli_parse_int(v, 1, MPK_CLI_SAFE_INT_MAX, dst))
          return mpk_cli_usage_error("audio", "%s: expected a positive integer, got '%s'", a, v);
      }
    } else if (a[0] == '-' && a[1] != '\0') return mpk_cli_usage_error("audio", "unknown option '%s'", a);
    else if (in) return mpk_cli_usage_error("audio", "one input file, got '%s' and '%s'", in, a);
    else in = a;
  }
  if (!in) return mpk_cli_usage_error("audio", "no input file");
  bool out_stdout = output && mpk_output_is_stdout(output);
  FILE *rep = out_stdout ? stderr : stdout; /* the data own standard output */
  mpk_audio_target t = {0, 1, 0};
  char *input_name = NULL;
  if (package) {
    int st = package_processor(package, &t, &input_name);
    if (st) return st;
  } else if (!rate || !max_samples)
    return mpk_cli_usage_error("audio", "give --package DIR, or --rate and --max-samples");
  if (rate) t.sample_rate_hz = rate;
  if (min_samples) t.min_samples = min_samples;
  if (max_samples) t.max_samples = max_samples;
  if (t.min_samples > t.max_samples) {
    free(input_name);
    return mpk_cli_usage_error("audio", "--min-samples %lld exceeds --max-samples %lld", (long long)t.min_samples,
                               (long long)t.max_samples);
  }

  mpk_error err;
  mpk_error_clear(&err);
  mpk_audio *a = NULL;
  int rc;
  if (base64) {
    mpk_mapped m;
    rc = mpk_map_file(in, MPK_JSON_DEFAULT_MAX_BYTES, &m, &err);
    if (!rc) {
      rc = mpk_audio_from_data((const char *)m.data, m.size, &t, &a, &err);
      mpk_unmap_file(&m);
    }
  } else {
    rc = mpk_audio_from_wav_file(in, &t, &a, &err);
  }
  if (!rc && output) rc = write_f32le(output, a, &err);
  int status = MPK_EXIT_OK;
  if (rc) {
    mpk_cli_error(&err);
    status = MPK_EXIT_FAIL;
  } else if (json) {
    if (report_json(stdout, a, in, input_name, &t, output)) status = MPK_EXIT_FAIL;
  } else {
    report_text(rep, a, in, input_name);
    if (output)
      fprintf(rep, "written: %s (%zu bytes)\n", strcmp(output, "-") == 0 ? "standard output" : output, a->n_samples * 4);
  }
  mpk_audio_free(a);
  free(input_name);
  return status;
}
