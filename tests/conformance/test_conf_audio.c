/* Input audio to canonical PCM: every case of audio_decode.json (WebLLM 0.2.86 decodeAudioInput).
   Same accept/reject decision, same message, same output length; without rate conversion the same
   samples bit for bit; with conversion, samples at least as close to the ideal band-limited
   resampling of the (zero-extended) recording as WebLLM's linear interpolation (figures printed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static float *hex_f32(const char *hex, size_t *n) {
  size_t len = strlen(hex);
  assert_int_equal(len % 8, 0);
  *n = len / 8;
  float *out = malloc((*n + 1) * sizeof *out);
  assert_non_null(out);
  for (size_t i = 0; i < *n; i++) {
    uint32_t u = 0;
    for (int b = 0; b < 4; b++) {
      unsigned v;
      assert_int_equal(sscanf(hex + 8 * i + 2 * b, "%2x", &v), 1);
      u |= (uint32_t)v << (8 * b);
    }
    memcpy(&out[i], &u, 4);
  }
  return out;
}

/* The ideal: sum over the recording of x[k] * h(t - k), h the brick-wall low-pass at the lower
   Nyquist (no window: the recordings are short, every tap is taken). */
static double ideal_at(const float *x, size_t n, double src, double dst, size_t i) {
  double t = (double)i * src / dst, fc = (dst < src ? dst / src : 1.0) / 2; /* cycles per sample */
  double sum = 0;
  for (size_t k = 0; k < n; k++) {
    double d = t - (double)k, a = 2 * M_PI * fc * d;
    sum += x[k] * 2 * fc * (d == 0 ? 1 : sin(a) / a);
  }
  return sum;
}

static double rms_error(const float *got, const float *x, size_t n, double src, double dst, size_t len) {
  double s = 0;
  for (size_t i = 0; i < len; i++) {
    double e = got[i] - ideal_at(x, n, src, dst, i);
    s += e * e;
  }
  return sqrt(s / (double)len);
}

static void test_audio_decode(void **state) {
  (void)state;
  json_t *root, *cases = tu_webllm_cases("audio_decode.json", &root);
  size_t i, ran = 0, exact = 0, converted = 0, refused = 0;
  json_t *c;
  json_array_foreach(cases, i, c) {
    const char *name = json_string_value(json_object_get(c, "name"));
    json_t *in = json_object_get(c, "input"), *proc = json_object_get(c, "processor");
    mpk_audio_target t = {json_integer_value(json_object_get(proc, "sample_rate_hz")),
                          json_integer_value(json_object_get(proc, "min_samples")),
                          json_integer_value(json_object_get(proc, "max_samples"))};
    const char *format = json_string_value(json_object_get(in, "format"));
    mpk_audio *a = NULL;
    mpk_error err;
    mpk_error_clear(&err);
    float *pcm = NULL;
    size_t n_pcm = 0;
    double src_rate = 0;
    int rc;
    if (strcmp(format, "pcm_f32") == 0) {
      src_rate = json_number_value(json_object_get(in, "sample_rate"));
      json_t *hex = json_object_get(in, "data_f32_hex");
      if (hex) {
        pcm = hex_f32(json_string_value(hex), &n_pcm);
        rc = mpk_audio_from_pcm_f32(pcm, n_pcm, src_rate, &t, &a, &err);
      } else { /* data that is not a Float32Array: C has only a NULL array to say so */
        json_t *plain = json_object_get(in, "pcm_as_plain_array");
        assert_non_null(plain);
        rc = mpk_audio_from_pcm_f32(NULL, json_array_size(plain), src_rate, &t, &a, &err);
      }
    } else { /* decodeAudioInput takes every other format as WAV */
      const char *data = json_string_value(json_object_get(in, "data"));
      rc = mpk_audio_from_data(data, data ? strlen(data) : 0, &t, &a, &err);
    }
    json_t *expected_error = json_object_get(c, "expected_error");
    if (expected_error) {
      const char *msg = json_string_value(json_object_get(expected_error, "message"));
      if (rc == 0) fail_msg("%s: accepted, WebLLM refuses: %s", name, msg);
      if (strncmp(err.message, msg, strlen(msg)) != 0)
        fail_msg("%s: expected\n  %s\ngot\n  %s", name, msg, err.message);
      assert_null(a);
      refused++;
    } else {
      if (rc != 0) fail_msg("%s: refused (%s), WebLLM accepts", name, tu_err(&err));
      size_t n_exp;
      float *exp = hex_f32(json_string_value(json_object_get(c, "expected_f32_hex")), &n_exp);
      assert_int_equal(n_exp, (size_t)json_integer_value(json_object_get(c, "expected_length")));
      if (a->n_samples != n_exp) fail_msg("%s: %zu samples, WebLLM %zu", name, a->n_samples, n_exp);
      if (!a->resampled) {
        if (memcmp(a->samples, exp, n_exp * sizeof(float)) != 0) fail_msg("%s: samples differ", name);
        exact++;
      } else {
        /* The mono source: the recording itself, or the WAV downmixed at its own rate. */
        float *x = pcm;
        size_t nx = n_pcm;
        mpk_audio *mono = NULL;
        if (!x) {
          const char *data = json_string_value(json_object_get(in, "data"));
          mpk_audio_target same = {(int64_t)a->source_rate, 1, INT64_C(1) << 40};
          assert_int_equal(mpk_audio_from_data(data, strlen(data), &same, &mono, &err), 0);
          x = mono->samples;
          nx = mono->n_samples;
        }
        src_rate = a->source_rate;
        double ours = rms_error(a->samples, x, nx, src_rate, (double)t.sample_rate_hz, n_exp);
        double theirs = rms_error(exp, x, nx, src_rate, (double)t.sample_rate_hz, n_exp);
        printf("  %-44s %6.0f -> %5lld Hz, %3zu samples: RMS error vs ideal: modelpkg %.3g, WebLLM %.3g\n",
               name, src_rate, (long long)t.sample_rate_hz, n_exp, ours, theirs);
        if (!(ours <= theirs * 1.0001 + 1e-7))
          fail_msg("%s: farther from the ideal than WebLLM (%.3g > %.3g)", name, ours, theirs);
        mpk_audio_free(mono);
        converted++;
      }
      free(exp);
    }
    mpk_audio_free(a);
    free(pcm);
    ran++;
  }
  printf("  %zu cases: %zu refused as WebLLM does, %zu bit-exact, %zu resampled\n", ran, refused, exact, converted);
  assert_int_equal(ran, 71);
  json_decref(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_audio_decode)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
