/* The on-device LoRA merge (mpk_mt_merge, docs/mt-merge.md): the orientation table of the
   reference tests and the exportedAt rule, the merged values against a float64 computation in both
   orientations and three dtypes, the scale's sources, factors by PEFT names, refusing a second merge,
   the frozen base giving the same bytes, and check / the load gate after a merge. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/endian.h"
#include "core/txn.h"
#include "mt/merge/merge_kernel.h"
#include "mt/mt.h"
#include "mt_fixture.h"
#include "testutil.h"

static const char *const L0 = "backbone.model.layers.0.self_attn.q_proj.base_layer";
static const char *const L1 = "backbone.model.layers.0.self_attn.v_proj.base_layer";

static mpk_mt_merge_options opts_for(const char *root) {
  return (mpk_mt_merge_options){.adapter = fx_adapter(root), .workers = 2};
}

static int merge(const char *root, const mpk_mt_merge_options *o, mpk_mt_merge_report **r, mpk_error *err) {
  mpk_error_clear(err);
  *r = NULL;
  return mpk_mt_merge(fx_pkg(root), o, r, err);
}

static uint8_t *read_bin(const char *root, size_t i, size_t *len) {
  char path[600];
  snprintf(path, sizeof path, "%s/t%zu.MatMul.weight.bin", fx_inference(root), i);
  return tu_read_file(path, len);
}

/* ---------------------------------------------------------------- orientation */

static void expect_orientation(const fx_entry *es, size_t n, const fx_options *fo, mpk_mt_orientation forced,
                               int want_rc, mpk_mt_orientation want, const char *want_msg) {
  const char *root = tu_tmpdir();
  fx_build(root, es, n, fo);
  mpk_mt_merge_options o = opts_for(root);
  o.dry_run = 1;
  o.orientation = forced;
  mpk_mt_merge_report *r;
  mpk_error err;
  int rc = merge(root, &o, &r, &err);
  if (rc != want_rc) fail_msg("rc %d, want %d: %s", rc, want_rc, tu_err(&err));
  if (want_rc == 0) {
    assert_int_equal(r->orientation, want);
    assert_non_null(strstr(r->evidence, want_msg));
    assert_int_equal(r->written, 0);
  } else if (!strstr(err.message, want_msg)) {
    fail_msg("message \"%s\" lacks \"%s\"", err.message, want_msg);
  }
  mpk_mt_merge_report_free(r);
  tu_sh("rm -rf '%s'", root);
}

static void test_orientation_table(void **state) {
  (void)state;
  fx_options fo = {.alpha = 16, .rank = 8, .seed = 1};
  /* (576,192) on disk with A(8,576), B(192,8): the delta is [192,576], the disk its transpose */
  fx_entry t[] = {{L0, "float32", 576, 192, 192, 576, 8, NULL}};
  expect_orientation(t, 1, &fo, 0, 0, MPK_MT_ORIENT_ALREADY_TRANSPOSED, "on disk [576, 192], delta B @ A [192, 576]");
  fx_entry nt[] = {{L0, "float32", 192, 576, 192, 576, 8, NULL}};
  expect_orientation(nt, 1, &fo, 0, 0, MPK_MT_ORIENT_NO_TRANSPOSE, "1 non-square entry");
  /* mixed non-square entries: refused */
  fx_entry mixed[] = {{L0, "float32", 576, 192, 192, 576, 8, NULL}, {L1, "float32", 192, 576, 192, 576, 8, NULL}};
  expect_orientation(mixed, 2, &fo, 0, MPK_EMISMATCH, 0, "mixed orientations");
  /* (10,20) against those factors: refused */
  fx_entry bad[] = {{L0, "float32", 10, 20, 192, 576, 8, NULL}};
  expect_orientation(bad, 1, &fo, 0, MPK_EMISMATCH, 0, "do not belong to this weight");
  /* --orientation contradicting the tensors: refused */
  expect_orientation(t, 1, &fo, MPK_MT_ORIENT_NO_TRANSPOSE, MPK_EMISMATCH, 0, "contradicts the tensors");
  /* a non-square entry decides for the square ones */
  fx_entry sq_and[] = {{L0, "float32", 64, 64, 64, 64, 8, NULL}, {L1, "float32", 48, 64, 64, 48, 8, NULL}};
  expect_orientation(sq_and, 2, &fo, 0, 0, MPK_MT_ORIENT_ALREADY_TRANSPOSED, "1 non-square entry");
}

static void test_square_exported_at(void **state) {
  (void)state;
  fx_entry sq[] = {{L0, "float32", 64, 64, 64, 64, 4, "already_transposed_for_inference"}};
  /* before 2026-08-14 the declaration cannot be trusted: undecidable without --orientation */
  fx_options before = {.alpha = 8, .rank = 4, .seed = 2, .exported_at = "2026-08-13T23:59:59Z"};
  expect_orientation(sq, 1, &before, 0, MPK_EUNSUPPORTED, 0, "give --orientation");
  expect_orientation(sq, 1, &before, MPK_MT_ORIENT_NO_TRANSPOSE, 0, MPK_MT_ORIENT_NO_TRANSPOSE, "as given");
  fx_options empty = {.alpha = 8, .rank = 4, .seed = 2, .exported_at = ""};
  expect_orientation(sq, 1, &empty, 0, MPK_EUNSUPPORTED, 0, "without an exportedAt");
  fx_options garbage = {.alpha = 8, .rank = 4, .seed = 2, .exported_at = "soon"};
  expect_orientation(sq, 1, &garbage, 0, MPK_EUNSUPPORTED, 0, "give --orientation");
  /* on or after: the declared policy is used */
  fx_options after = {.alpha = 8, .rank = 4, .seed = 2, .exported_at = "2026-08-14T00:00:00Z"};
  expect_orientation(sq, 1, &after, 0, 0, MPK_MT_ORIENT_ALREADY_TRANSPOSED, "declared transposePolicy");
  /* square entries that declare different policies: refused without --orientation */
  fx_entry two[] = {{L0, "float32", 64, 64, 64, 64, 4, "already_transposed_for_inference"},
                    {L1, "float32", 32, 32, 32, 32, 4, "no_transpose"}};
  expect_orientation(two, 2, &after, 0, MPK_EMISMATCH, 0, "different transposePolicy");
}

/* ---------------------------------------------------------------- values */

/* The merged weight in its on-disk layout, against W + s·(B @ A) in float64. */
static void check_values(const char *root, const fx_entry *es, size_t i, const fx_options *fo, double s,
                         bool transposed) {
  const fx_entry *e = &es[i];
  float *w, *a, *b;
  fx_values(es, i, fo, &w, &a, &b);
  size_t len;
  uint8_t *got = read_bin(root, i, &len);
  size_t esz = strcmp(e->dtype, "float32") ? 2 : 4;
  assert_int_equal(len, (size_t)(e->rows * e->cols) * esz);
  double rel = !strcmp(e->dtype, "float32") ? 1e-6 : !strcmp(e->dtype, "float16") ? 1.0 / 1024 : 1.0 / 128;
  double max_err = 0;
  for (int64_t r = 0; r < e->rows; r++)
    for (int64_t c = 0; c < e->cols; c++) {
      int64_t o = transposed ? c : r, in = transposed ? r : c;
      double d = 0;
      for (int64_t k = 0; k < e->rank; k++) d += (double)b[o * e->rank + k] * (double)a[k * e->in + in];
      double want = (double)w[r * e->cols + c] + s * d;
      size_t at = (size_t)(r * e->cols + c);
      float v;
      if (esz == 4) v = mpk_load_le_f32(got + 4 * at); /* tensor files are little-endian */
      else {
        uint16_t h = mpk_load_le16(got + 2 * at);
        v = !strcmp(e->dtype, "float16") ? mpk_mk_f16_to_f32(h) : mpk_mk_bf16_to_f32(h);
      }
      double errv = fabs((double)v - want);
      if (errv > rel * fabs(want) + 1e-6)
        fail_msg("%s [%lld,%lld]: got %.9g, want %.9g", e->dtype, (long long)r, (long long)c, (double)v, want);
      if (errv > max_err) max_err = errv;
    }
  /* the delta is not negligible: a merge that wrote the base back would fail above */
  free(got);
  free(w);
  free(a);
  free(b);
}

static void test_values(void **state) {
  (void)state;
  static const char *const dtypes[] = {"float32", "float16", "bfloat16"};
  for (int t = 0; t < 2; t++)
    for (int d = 0; d < 3; d++) {
      const char *root = tu_tmpdir();
      /* two entries, different shapes; transposed: on disk [in, out] */
      fx_entry es[] = {{L0, dtypes[d], t ? 40 : 24, t ? 24 : 40, 24, 40, 4, NULL},
                       {L1, dtypes[d], t ? 17 : 33, t ? 33 : 17, 33, 17, 3, NULL}};
      fx_options fo = {.alpha = 6, .rank = 0, .seed = (uint32_t)(10 + 3 * t + d)};
      fx_build(root, es, 2, &fo);
      mpk_mt_merge_options o = opts_for(root);
      o.has_scale = 1;
      o.scale = 1.5;
      mpk_mt_merge_report *r;
      mpk_error err;
      if (merge(root, &o, &r, &err)) fail_msg("%s", tu_err(&err));
      assert_int_equal(r->written, 1);
      assert_int_equal(r->n_entries, 2);
      assert_int_equal(r->orientation, t ? MPK_MT_ORIENT_ALREADY_TRANSPOSED : MPK_MT_ORIENT_NO_TRANSPOSE);
      for (size_t i = 0; i < 2; i++) {
        check_values(root, es, i, &fo, 1.5, t);
        /* the sidecar is "<sha256 of the new bytes>\n", and the report says the same */
        size_t len, slen;
        uint8_t *bin = read_bin(root, i, &len);
        uint8_t dg[32];
        char hex[65], path[700];
        mpk_sha256(bin, len, dg);
        mpk_hex(dg, 32, hex);
        snprintf(path, sizeof path, "%s/t%zu.MatMul.weight.bin.sha256", fx_inference(root), i);
        char *side = (char *)tu_read_file(path, &slen);
        assert_int_equal(slen, 65);
        assert_memory_equal(side, hex, 64);
        assert_int_equal(side[64], '\n');
        assert_string_equal(r->entries[i].digest[MPK_MT_ROLE_WEIGHT], hex);
        free(bin);
        free(side);
      }
      mpk_mt_merge_report_free(r);
      tu_sh("rm -rf '%s'", root);
    }
}

/* ---------------------------------------------------------------- twice, frozen base */

static void test_twice_refused_frozen_allowed(void **state) {
  (void)state;
  const char *r1 = strdup(tu_tmpdir()), *r2 = strdup(tu_tmpdir());
  fx_entry es[] = {{L0, "float16", 20, 12, 12, 20, 4, NULL}, {L1, "float16", 12, 12, 12, 12, 2, NULL}};
  fx_options fo = {.alpha = 8, .rank = 4, .seed = 5};
  fx_build(r1, es, 2, &fo);
  /* the same package and factors, and an adapter that also holds the frozen base */
  fx_options ff = fo;
  ff.frozen = 1;
  fx_build(r2, es, 2, &ff);
  mpk_mt_merge_options o = opts_for(r1);
  o.has_scale = 1;
  o.scale = 2;
  mpk_mt_merge_report *r;
  mpk_error err;
  if (merge(r1, &o, &r, &err)) fail_msg("%s", tu_err(&err));
  mpk_mt_merge_report_free(r);
  size_t l0, l1;
  uint8_t *first0 = read_bin(r1, 0, &l0), *first1 = read_bin(r1, 1, &l1);
  /* again with the same adapter: refused, nothing changes */
  assert_int_equal(merge(r1, &o, &r, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.message, "already merged"));
  assert_null(r);
  size_t n0;
  uint8_t *again0 = read_bin(r1, 0, &n0);
  assert_memory_equal(again0, first0, l0);
  free(again0);
  /* with the frozen base: allowed, and the same bytes as the first merge */
  o.adapter = fx_adapter(r2);
  if (merge(r1, &o, &r, &err)) fail_msg("%s", tu_err(&err));
  assert_non_null(strstr(r->entries[0].base_source, "frozen weight"));
  mpk_mt_merge_report_free(r);
  size_t m0, m1;
  uint8_t *second0 = read_bin(r1, 0, &m0), *second1 = read_bin(r1, 1, &m1);
  assert_int_equal(m0, l0);
  assert_memory_equal(second0, first0, l0);
  assert_memory_equal(second1, first1, l1);
  /* A second merge updates the merge record: a frozen-base merge with another scale replaces each
     tensor's post-merge digest and keeps its shipped digest (the map's), and the gate verifies the
     new bytes against it. */
  char rec_path[600];
  snprintf(rec_path, sizeof rec_path, "%s/" MPK_MT_MERGE_RECORD, fx_inference(r1));
  json_error_t je;
  json_t *rec1 = json_load_file(rec_path, 0, &je);
  assert_non_null(rec1);
  o.scale = 3;
  if (merge(r1, &o, &r, &err)) fail_msg("%s", tu_err(&err));
  json_t *rec2 = json_load_file(rec_path, 0, &je);
  assert_non_null(rec2);
  const json_t *t1 = json_object_get(rec1, "tensors"), *t2 = json_object_get(rec2, "tensors");
  assert_int_equal(json_object_size(t2), 2);
  for (size_t i = 0; i < 2; i++) {
    char name[64];
    snprintf(name, sizeof name, "t%zu.MatMul.weight.bin", i);
    const json_t *a = json_object_get(t1, name), *b = json_object_get(t2, name);
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(json_string_value(json_object_get(b, "shipped_sha256")),
                        json_string_value(json_object_get(a, "shipped_sha256")));
    assert_string_equal(json_string_value(json_object_get(b, "sha256")), r->entries[i].digest[MPK_MT_ROLE_WEIGHT]);
    assert_string_not_equal(json_string_value(json_object_get(b, "sha256")),
                            json_string_value(json_object_get(a, "sha256")));
  }
  mpk_mt_merge_report_free(r);
  json_decref(rec1);
  json_decref(rec2);
  mpk_mt_handoff *hm = NULL;
  char map_path[600];
  snprintf(map_path, sizeof map_path, "%s/weight_handoff_map.json", fx_inference(r1));
  if (mpk_mt_handoff_load(map_path, &hm, &err)) fail_msg("%s", tu_err(&err));
  mpk_mt_gate_report *g = NULL;
  if (mpk_mt_load_gate(fx_inference(r1), hm, NULL, &g, &err)) fail_msg("%s", tu_err(&err));
  assert_true(g->ready);
  assert_int_equal(g->n_verified, 2);
  assert_int_equal(g->tensors[0].authority, MPK_MT_AUTH_RECORD);
  mpk_mt_gate_report_free(g);
  mpk_mt_handoff_free(hm);
  free(first0);
  free(first1);
  free(second0);
  free(second1);
  tu_sh("rm -rf '%s' '%s'", r1, r2);
  free((char *)r1);
  free((char *)r2);
}

/* ---------------------------------------------------------------- the scale */

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void test_scale_sources(void **state) {
  (void)state;
  const char *root = tu_tmpdir();
  fx_entry es[] = {{L0, "float32", 8, 6, 8, 6, 2, NULL}};
  fx_options none = {.seed = 3};
  fx_build(root, es, 1, &none);
  mpk_mt_merge_options o = opts_for(root);
  o.dry_run = 1;
  mpk_mt_merge_report *r;
  mpk_error err;
  /* no source: an error, never a default */
  assert_int_equal(merge(root, &o, &r, &err), MPK_ENOTFOUND);
  assert_non_null(strstr(err.message, "no usable scale"));
  /* a PEFT adapter_config.json beside the adapter */
  char cfg[600], tc[700];
  snprintf(cfg, sizeof cfg, "%s/adapter_config.json", root);
  write_text(cfg, "{\"lora_alpha\": 16, \"r\": 2, \"peft_type\": \"LORA\"}");
  if (merge(root, &o, &r, &err)) fail_msg("%s", tu_err(&err));
  assert_true(r->entries[0].scale == 8.0);
  assert_non_null(strstr(r->entries[0].scale_source, "adapter_config.json"));
  mpk_mt_merge_report_free(r);
  write_text(cfg, "{\"lora_alpha\": 16, \"r\": 4}");
  assert_int_equal(merge(root, &o, &r, &err), MPK_EMISMATCH); /* r 4 vs the factors' rank 2 */
  assert_non_null(strstr(err.message, "rank"));
  write_text(cfg, "{\"lora_alpha\": 4, \"r\": 2, \"use_rslora\": true}");
  if (merge(root, &o, &r, &err)) fail_msg("%s", tu_err(&err));
  assert_true(fabs(r->entries[0].scale - 4 / sqrt(2.0)) < 1e-12);
  mpk_mt_merge_report_free(r);
  write_text(cfg, "{\"lora_alpha\": 4, \"r\": 2, \"alpha_pattern\": {\"q_proj\": 8}}");
  assert_int_equal(merge(root, &o, &r, &err), MPK_EUNSUPPORTED);
  /* training_config.json and adapter_config.json disagree: refused */
  write_text(cfg, "{\"lora_alpha\": 4, \"r\": 2}");
  snprintf(tc, sizeof tc, "%s/variants/cpu-fp16/train/training_config.json", fx_pkg(root));
  write_text(tc, "{\"alpha\": 6, \"rank\": 2, \"peft_mapping\": {}}");
  assert_int_equal(merge(root, &o, &r, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.message, "--scale"));
  /* ... and --scale settles it */
  o.has_scale = 1;
  o.scale = 0.25;
  if (merge(root, &o, &r, &err)) fail_msg("%s", tu_err(&err));
  assert_true(r->entries[0].scale == 0.25);
  mpk_mt_merge_report_free(r);
  o.has_scale = 0;
  /* they agree: fine; a per-layer alpha in peft_mapping (any spelling of the layer) wins */
  write_text(tc, "{\"alpha\": 4, \"rank\": 2, \"peft_mapping\": {}}");
  if (merge(root, &o, &r, &err)) fail_msg("%s", tu_err(&err));
  assert_true(r->entries[0].scale == 2.0);
  mpk_mt_merge_report_free(r);
  write_text(tc, "{\"alpha\": 4, \"rank\": 2, \"peft_mapping\": {\"base_model.model.model.layers.0.self_attn.q_proj\": "
                 "{\"alpha\": 0.75}}}");
  if (merge(root, &o, &r, &err)) fail_msg("%s", tu_err(&err));
  assert_true(r->entries[0].scale == 0.75);
  assert_non_null(strstr(r->entries[0].scale_source, "per layer"));
  mpk_mt_merge_report_free(r);
  tu_sh("rm -rf '%s'", root);
}

/* ---------------------------------------------------------------- factors */

static void test_peft_names_and_missing(void **state) {
  (void)state;
  const char *root = tu_tmpdir();
  fx_entry es[] = {{L0, "float32", 10, 6, 10, 6, 2, NULL}};
  fx_options fo = {.alpha = 2, .rank = 2, .seed = 4, .peft_names = 1};
  fx_build(root, es, 1, &fo);
  mpk_mt_merge_options o = opts_for(root);
  mpk_mt_merge_report *r;
  mpk_error err;
  if (merge(root, &o, &r, &err)) fail_msg("%s", tu_err(&err));
  assert_string_equal(r->entries[0].adapter_a, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight");
  mpk_mt_merge_report_free(r);
  check_values(root, es, 0, &fo, 1.0, false);
  /* an adapter without this entry's factors: refused, naming the entry; nothing written */
  fx_build(root, es, 1, &fo);
  const char *names[] = {"unrelated.lora_A.weight"};
  float v[4] = {1, 2, 3, 4};
  const float *data[] = {v};
  const int64_t shapes[][2] = {{2, 2}};
  fx_write_safetensors(fx_adapter(root), names, data, shapes, 1);
  size_t before_len;
  uint8_t *before = read_bin(root, 0, &before_len);
  assert_int_equal(merge(root, &o, &r, &err), MPK_ENOTFOUND);
  assert_non_null(strstr(err.message, L0));
  size_t after_len;
  uint8_t *after = read_bin(root, 0, &after_len);
  assert_memory_equal(after, before, before_len);
  free(before);
  free(after);
  tu_sh("rm -rf '%s'", root);
}

/* ---------------------------------------------------------------- quantized entries */

static void write_file(const char *dir, const char *name, const void *data, size_t len, char hex[65]) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, len, f), len);
  fclose(f);
  uint8_t d[32];
  mpk_sha256(data, len, d);
  mpk_hex(d, 32, hex);
  char side[66];
  snprintf(side, sizeof side, "%s\n", hex);
  strcat(path, ".sha256");
  f = fopen(path, "wb");
  fputs(side, f);
  fclose(f);
}

/* One uint8 per-group entry ([out 16, in 32] stored [out, in], groups of 8 inputs): the three roles
   are rewritten with their sidecars, the merged weight dequantizes to base + scale·(B @ A) within
   half a step of its group, and the gate accepts the result. */
static void test_quantized_entry(void **state) {
  (void)state;
  const char *root = tu_tmpdir();
  enum { OUT = 16, IN = 32, G = 8, R = 2 };
  fx_entry es[] = {{L0, "float32", OUT, IN, OUT, IN, R, NULL}};
  fx_options fo = {.alpha = 2, .rank = R, .seed = 8};
  fx_build(root, es, 1, &fo);
  /* turn the dense entry into a quantized one */
  uint8_t q[OUT * IN], zp[OUT * IN / G];
  float sc[OUT * IN / G];
  uint32_t x = 99;
  for (int i = 0; i < OUT * IN; i++) q[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 24);
  for (int g = 0; g < OUT * IN / G; g++) {
    sc[g] = 0.01f + 0.001f * (float)(g % 7);
    zp[g] = (uint8_t)(120 + g % 16);
  }
  char hq[65], hs[65], hz[65], path[700];
  const char *inf = fx_inference(root);
  write_file(inf, "q.bin", q, sizeof q, hq);
  uint8_t scb[sizeof sc]; /* tensor files are little-endian */
  for (int g = 0; g < OUT * IN / G; g++) mpk_store_le_f32(scb + 4 * g, sc[g]);
  write_file(inf, "s.bin", scb, sizeof scb, hs);
  write_file(inf, "z.bin", zp, sizeof zp, hz);
  snprintf(path, sizeof path, "%s/weight_handoff_map.json", inf);
  json_t *map = tu_load_json(path);
  json_t *e = json_array_get(json_object_get(map, "entries"), 0);
  const char *nq = "t0.qweight", *ns = "t0.scales", *nz = "t0.qzeros";
  json_t *names = json_pack("{s:s,s:s,s:s}", "weight_quantized", nq, "scale", ns, "zero_point", nz);
  json_object_set_new(e, "inferenceInitializerNames", json_deep_copy(names));
  json_object_set_new(e, "mergedTensorNames", names);
  json_object_set_new(e, "mergerOutputNames", json_pack("{s:s,s:s,s:s}", "weight_quantized", "merged_weight_quantized",
                                                        "scale", "merged_scale", "zero_point", "merged_zero_point"));
  json_object_set_new(e, "externalDataLocation",
                      json_pack("{s:s,s:s,s:s}", "weight_quantized", "q.bin", "scale", "s.bin", "zero_point", "z.bin"));
  json_object_set_new(e, "sha256", json_pack("{s:s,s:s,s:s}", "weight_quantized", hq, "scale", hs, "zero_point", hz));
  json_object_set_new(e, "quantization",
                      json_pack("{s:s,s:s,s:s}", "weightQuantizedName", nq, "scaleName", ns, "zeroPointName", nz));
  json_object_set_new(e, "dtype", json_string("uint8"));
  json_object_set_new(e, "tensorDtypes",
                      json_pack("{s:s,s:s,s:s}", "weight_quantized", "uint8", "scale", "float32", "zero_point", "uint8"));
  json_object_set_new(e, "tensorShapes", json_pack("{s:[ii],s:[ii],s:[ii]}", "weight_quantized", OUT, IN, "scale", OUT,
                                                   IN / G, "zero_point", OUT, IN / G));
  assert_int_equal(json_dump_file(map, path, JSON_INDENT(2)), 0);
  json_decref(map);
  tu_sh("rm -f '%s/t0.MatMul.weight.bin' '%s/t0.MatMul.weight.bin.sha256'", inf, inf);

  mpk_mt_merge_options o = opts_for(root);
  mpk_mt_merge_report *r;
  mpk_error err;
  if (merge(root, &o, &r, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(r->entries[0].quantized, 1);
  for (int role = MPK_MT_ROLE_WEIGHT_QUANTIZED; role <= MPK_MT_ROLE_ZERO_POINT; role++)
    assert_int_equal(strlen(r->entries[0].digest[role]), 64);
  mpk_mt_merge_report_free(r);
  size_t lq, ls, lz;
  snprintf(path, sizeof path, "%s/q.bin", inf);
  uint8_t *q2 = tu_read_file(path, &lq);
  snprintf(path, sizeof path, "%s/s.bin", inf);
  float *s2 = (float *)tu_read_file(path, &ls);
  snprintf(path, sizeof path, "%s/z.bin", inf);
  uint8_t *z2 = tu_read_file(path, &lz);
  assert_int_equal(lq, sizeof q);
  assert_int_equal(ls, sizeof sc);
  assert_int_equal(lz, sizeof zp);
  mpk_le_to_host_inplace(s2, ls / 4, 4);
  float *w, *a, *b;
  fx_values(es, 0, &fo, &w, &a, &b);
  for (int o_ = 0; o_ < OUT; o_++)
    for (int i = 0; i < IN; i++) {
      int g = o_ * (IN / G) + i / G;
      double base = ((double)q[o_ * IN + i] - zp[g]) * sc[g], d = 0;
      for (int k = 0; k < R; k++) d += (double)b[o_ * R + k] * a[k * IN + i];
      double want = base + 1.0 * d, got = ((double)q2[o_ * IN + i] - z2[g]) * s2[g];
      if (fabs(got - want) > 0.5 * s2[g] * 1.0001 + 1e-6)
        fail_msg("[%d,%d]: dequantized %.6g, want %.6g (step %.4g)", o_, i, got, want, (double)s2[g]);
    }
  free(q2);
  free(s2);
  free(z2);
  free(w);
  free(a);
  free(b);
  /* the gate: all three roles verified against their new sidecars */
  snprintf(path, sizeof path, "%s/weight_handoff_map.json", inf);
  mpk_mt_handoff *hm = NULL;
  if (mpk_mt_handoff_load(path, &hm, &err)) fail_msg("%s", tu_err(&err));
  mpk_mt_gate_report *g = NULL;
  if (mpk_mt_load_gate(inf, hm, NULL, &g, &err)) fail_msg("%s", tu_err(&err));
  assert_true(g->ready);
  assert_int_equal(g->n_verified, 3);
  mpk_mt_gate_report_free(g);
  mpk_mt_handoff_free(hm);
  /* and a second merge is refused */
  assert_int_equal(merge(root, &o, &r, &err), MPK_EMISMATCH);
  tu_sh("rm -rf '%s'", root);
}

/* ---------------------------------------------------------------- check after a merge */

static void test_check_after_merge(void **state) {
  (void)state;
  const char *root = tu_tmpdir();
  fx_entry es[] = {{L0, "float32", 12, 8, 12, 8, 2, NULL}, {L1, "bfloat16", 12, 8, 12, 8, 2, NULL}};
  fx_options fo = {.alpha = 2, .rank = 2, .seed = 6};
  fx_build(root, es, 2, &fo);
  mpk_mt_build_result res = {0};
  mpk_error err;
  mpk_error_clear(&err);
  if (mpk_mt_build(fx_pkg(root), &(mpk_mt_build_input){0}, &res, &err)) fail_msg("reseal: %s", tu_err(&err));
  mpk_mt_build_result_free(&res);
  mpk_mt_report *rep = NULL;
  /* The fixture's map describes its own synthetic layers, not the example's model.onnx: the graph
     is not read here (the graph checks have their own tests: test_mt_graph_check). */
  mpk_mt_check_options co = {.no_graph = 1};
  if (mpk_mt_check(fx_pkg(root), &co, &rep, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(rep->n_problems, 0);
  mpk_mt_report_free(rep);
  mpk_mt_merge_options o = opts_for(root);
  mpk_mt_merge_report *r;
  if (merge(root, &o, &r, &err)) fail_msg("%s", tu_err(&err));
  mpk_mt_merge_report_free(r);
  /* the manifest keeps the shipped digests; the merged tensors answer to their sidecars */
  if (mpk_mt_check(fx_pkg(root), &co, &rep, &err)) fail_msg("%s", tu_err(&err));
  for (size_t i = 0; i < rep->n_problems; i++) print_error("problem: %s\n", tu_err(&rep->problems[i]));
  assert_int_equal(rep->n_problems, 0);
  assert_int_equal(rep->n_files_merged, 4); /* two .bin and their sidecars */
  assert_int_equal(rep->n_tensors_verified, 2);
  mpk_mt_report_free(rep);
  /* a merged tensor whose bytes change afterwards still fails: the sidecar is the authority */
  char path[700];
  snprintf(path, sizeof path, "%s/t0.MatMul.weight.bin", fx_inference(root));
  tu_sh("printf 'x' | dd of='%s' bs=1 seek=3 conv=notrunc 2>/dev/null", path);
  if (mpk_mt_check(fx_pkg(root), &co, &rep, &err)) fail_msg("%s", tu_err(&err));
  assert_true(rep->n_problems >= 1);
  mpk_mt_report_free(rep);
  tu_sh("rm -rf '%s'", root);
}

/* ---------------------------------------------------------------- readers hold against merges */

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  char *out = malloc(2 * n + 1); /* hex, so that bytes compare as a string */
  for (size_t i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", (unsigned char)buf[i]);
  out[2 * n] = '\0';
  return out;
}

static int gate_open(const char *inf, mpk_mt_gate_report **g, mpk_error *err) {
  char path[700];
  snprintf(path, sizeof path, "%s/weight_handoff_map.json", inf);
  mpk_mt_handoff *hm = NULL;
  int rc = mpk_mt_handoff_load(path, &hm, err);
  if (!rc) rc = mpk_mt_load_gate(inf, hm, NULL, g, err);
  mpk_mt_handoff_free(hm);
  return rc;
}

/* While a load gate's report lives, no merge can begin (the tensors a runtime opens after the gate
   are the ones it verified); several gates hold at once; a merge in progress fails the gate. */
static void test_gate_holds_against_merge(void **state) {
  (void)state;
  const char *root = tu_tmpdir();
  fx_entry es[] = {{L0, "float32", 12, 8, 12, 8, 2, NULL}};
  fx_options fo = {.alpha = 2, .rank = 2, .seed = 9};
  fx_build(root, es, 1, &fo);
  const char *inf = fx_inference(root);
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mt_gate_report *g1 = NULL, *g2 = NULL;
  if (gate_open(inf, &g1, &err)) fail_msg("%s", tu_err(&err));
  if (gate_open(inf, &g2, &err)) fail_msg("second gate: %s", tu_err(&err));
  assert_true(g1->ready && g2->ready);
  char bin[700];
  snprintf(bin, sizeof bin, "%s/t0.MatMul.weight.bin", inf);
  char *before = slurp(bin);
  mpk_mt_merge_options o = opts_for(root);
  mpk_mt_merge_report *r = NULL;
  assert_int_equal(merge(root, &o, &r, &err), MPK_EIO);
  assert_non_null(strstr(err.message, "a reader holds it"));
  assert_null(r);
  mpk_mt_gate_report_free(g1);
  assert_int_equal(merge(root, &o, &r, &err), MPK_EIO); /* one holder is enough */
  mpk_mt_gate_report_free(g2);
  char *same = slurp(bin);
  assert_string_equal(before, same); /* nothing was replaced while held */
  if (merge(root, &o, &r, &err)) fail_msg("after release: %s", tu_err(&err));
  mpk_mt_merge_report_free(r);
  /* A transaction in progress (here: begun and not finished) makes the gate fail at once. */
  mpk_txn *t = NULL;
  if (mpk_txn_begin(inf, MPK_MT_MERGE_TXN, NULL, &t, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(gate_open(inf, &g1, &err), MPK_EIO);
  assert_non_null(strstr(err.message, "in progress"));
  assert_null(g1);
  mpk_txn_abort(t);
  if (gate_open(inf, &g1, &err)) fail_msg("after abort: %s", tu_err(&err));
  mpk_mt_gate_report_free(g1);
  free(before);
  free(same);
  tu_sh("rm -rf '%s'", root);
}

/* ---------------------------------------------------------------- the post-merge check's options */

/* The inference directory's names, sizes, modes and mtimes, and every file's SHA-256, into `out`. */
static void snapshot(const char *root, const char *out) {
  tu_sh("cd '%s' && { find . -printf '%%y %%m %%s %%T@ %%p\\n' | LC_ALL=C sort; find . -type f -print0 | LC_ALL=C sort -z "
        "| xargs -0 sha256sum; } > '%s'",
        fx_inference(root), out);
}

/* Refused before anything is written (docs/mt-numeric.md): the check's options without a probe, a
   bound that is not a positive finite number, a bad probe, no ONNX Runtime. The end-to-end check
   itself (ONNX Runtime, rollback, force, dry run) is test_merge_verify. */
static void test_verify_refusals(void **state) {
  (void)state;
  const char *root = tu_tmpdir();
  fx_entry es[] = {{L0, "float32", 24, 40, 24, 40, 4, NULL}};
  fx_options fo = {.alpha = 6, .rank = 0, .seed = 3};
  fx_build(root, es, 1, &fo);
  char before[600], after[600], probe[600], bad_probe[600];
  snprintf(before, sizeof before, "%s/snap.before", root);
  snprintf(after, sizeof after, "%s/snap.after", root);
  snprintf(probe, sizeof probe, "%s/probe.json", root);
  snprintf(bad_probe, sizeof bad_probe, "%s/bad-probe.json", root);
  write_text(probe, "{\"sequences\": [[1, 2, 3]]}");
  write_text(bad_probe, "{\"sequences\": [[1, 2], [3]]}");
  snapshot(root, before);
  mpk_mt_merge_report *r;
  mpk_error err;
  mpk_mt_merge_options o = opts_for(root);
  o.has_scale = 1;
  o.scale = 1;
  /* force, max_ratio or ort without a probe */
  o.force = 1;
  assert_int_equal(merge(root, &o, &r, &err), MPK_EINVAL);
  assert_null(r);
  assert_non_null(strstr(err.message, "give a probe"));
  o.force = 0;
  o.max_ratio = 3;
  assert_int_equal(merge(root, &o, &r, &err), MPK_EINVAL);
  /* a bound that is not a positive finite number */
  o.probe = probe;
  static const double bounds[] = {-1, INFINITY, NAN};
  for (size_t i = 0; i < 3; i++) {
    o.max_ratio = bounds[i];
    assert_int_equal(merge(root, &o, &r, &err), MPK_EINVAL);
    assert_null(r);
    assert_non_null(strstr(err.message, "max_ratio"));
  }
  o.max_ratio = 0;
  /* a bad probe, named with its JSON pointer */
  o.probe = bad_probe;
  assert_int_equal(merge(root, &o, &r, &err), MPK_EMALFORMED);
  assert_null(r);
  assert_string_equal(err.file, bad_probe);
  assert_string_equal(err.pointer, "/sequences/1");
  /* no ONNX Runtime (opts->ort NULL: opened from $MPK_ORT_LIBRARY, which names nothing) */
  o.probe = probe;
  const char *was = getenv("MPK_ORT_LIBRARY");
  char *saved = was ? strdup(was) : NULL;
  setenv("MPK_ORT_LIBRARY", "/nonexistent/libonnxruntime.so.1", 1);
  int rc = merge(root, &o, &r, &err);
  if (saved) setenv("MPK_ORT_LIBRARY", saved, 1);
  else unsetenv("MPK_ORT_LIBRARY");
  free(saved);
  assert_int_not_equal(rc, 0);
  assert_null(r);
  if (rc == MPK_EUNSUPPORTED) assert_non_null(strstr(err.message, "ONNX Runtime not available"));
  snapshot(root, after);
  tu_sh("cmp -s '%s' '%s'", before, after); /* nothing changed, not even an mtime */
  tu_sh("rm -rf '%s'", root);
}

/* Progress and cancellation (options grown past 0.1): a call before the first entry and after
   each; a non-zero answer aborts the transaction with nothing changed; the 0.1 layout (struct_size
   0) reads no progress. */
typedef struct seen {
  uint64_t calls[8][2];
  size_t n;
  uint64_t cancel_at; /* UINT64_MAX: never */
} seen;

static int on_progress(void *ctx, uint64_t done, uint64_t total) {
  seen *s = ctx;
  if (s->n < 8) s->calls[s->n][0] = done, s->calls[s->n][1] = total;
  s->n++;
  return done == s->cancel_at;
}

static void test_progress_and_cancel(void **state) {
  (void)state;
  const char *root = tu_tmpdir();
  fx_entry es[] = {{L0, "float16", 20, 12, 12, 20, 4, NULL}, {L1, "float16", 12, 12, 12, 12, 2, NULL}};
  fx_options fo = {.alpha = 8, .rank = 4, .seed = 5};
  fx_build(root, es, 2, &fo);
  char before[600], after[600];
  snprintf(before, sizeof before, "%s/snap.before", root);
  snprintf(after, sizeof after, "%s/snap.after", root);
  snapshot(root, before);
  mpk_mt_merge_options o = MPK_MT_MERGE_OPTIONS_INIT;
  o.adapter = fx_adapter(root);
  o.workers = 2;
  o.has_scale = 1;
  o.scale = 2;
  seen s = {.cancel_at = 1};
  o.progress = on_progress;
  o.progress_ctx = &s;
  mpk_mt_merge_report *r;
  mpk_error err;
  /* cancelled after the first of two entries: every file, name, size, mode and mtime unchanged (the
     inference directory's own mtime aside: the aborted transaction's temporaries came and went) */
  if (merge(root, &o, &r, &err) != MPK_ECANCELLED) fail_msg("not cancelled: %s", tu_err(&err));
  assert_null(r);
  assert_non_null(strstr(err.message, "cancelled after 1 of 2 entries"));
  assert_int_equal(s.n, 2);
  snapshot(root, after);
  tu_sh("grep -v ' [.]$' '%s' > '%s.x' && grep -v ' [.]$' '%s' > '%s.x' && cmp -s '%s.x' '%s.x'", before, before, after,
        after, before, after);
  /* a dry run: one call, nothing staged */
  s = (seen){.cancel_at = UINT64_MAX};
  o.dry_run = 1;
  assert_int_equal(merge(root, &o, &r, &err), 0);
  mpk_mt_merge_report_free(r);
  assert_int_equal(s.n, 1);
  assert_true(s.calls[0][0] == 0 && s.calls[0][1] == 2);
  /* the 0.1 layout has no progress fields: not called */
  s = (seen){.cancel_at = 0};
  o.dry_run = 0;
  o.struct_size = 0;
  assert_int_equal(merge(root, &o, &r, &err), 0);
  mpk_mt_merge_report_free(r);
  assert_int_equal(s.n, 0);
  tu_sh("rm -rf '%s'", root);
  /* a whole merge: (0, 2), (1, 2), (2, 2) */
  root = tu_tmpdir();
  fx_build(root, es, 2, &fo);
  o = (mpk_mt_merge_options)MPK_MT_MERGE_OPTIONS_INIT;
  o.adapter = fx_adapter(root);
  o.has_scale = 1;
  o.scale = 2;
  s = (seen){.cancel_at = UINT64_MAX};
  o.progress = on_progress;
  o.progress_ctx = &s;
  assert_int_equal(merge(root, &o, &r, &err), 0);
  assert_int_equal(r->written, 1);
  mpk_mt_merge_report_free(r);
  assert_int_equal(s.n, 3);
  for (size_t i = 0; i < 3; i++) assert_true(s.calls[i][0] == i && s.calls[i][1] == 2);
  tu_sh("rm -rf '%s'", root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_progress_and_cancel),
      cmocka_unit_test(test_gate_holds_against_merge),
      cmocka_unit_test(test_orientation_table),
      cmocka_unit_test(test_square_exported_at),
      cmocka_unit_test(test_values),
      cmocka_unit_test(test_twice_refused_frozen_allowed),
      cmocka_unit_test(test_scale_sources),
      cmocka_unit_test(test_peft_names_and_missing),
      cmocka_unit_test(test_quantized_entry),
      cmocka_unit_test(test_check_after_merge),
      cmocka_unit_test(test_verify_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
