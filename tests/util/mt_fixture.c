/* Merge fixtures (mt_fixture.h). */
#include "mt_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/endian.h"
#include "mt/merge/merge_kernel.h"
#include "testutil.h"

static char pkg_buf[512], adapter_buf[512], inf_buf[512];

const char *fx_pkg(const char *root) {
  snprintf(pkg_buf, sizeof pkg_buf, "%s/pkg", root);
  return pkg_buf;
}
const char *fx_adapter(const char *root) {
  snprintf(adapter_buf, sizeof adapter_buf, "%s/adapter.safetensors", root);
  return adapter_buf;
}
const char *fx_inference(const char *root) {
  snprintf(inf_buf, sizeof inf_buf, "%s/pkg/variants/cpu-fp16/inference", root);
  return inf_buf;
}

/* xorshift32 → uniform [-scale, scale) */
static void fill(float *v, size_t n, uint32_t seed, float scale) {
  uint32_t x = seed ? seed : 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    v[i] = scale * ((float)(x >> 8) / 8388608.0f - 1.0f);
  }
}

static float round_to(const char *dtype, float v) {
  if (!strcmp(dtype, "float16")) return mpk_mk_f16_to_f32(mpk_mk_f32_to_f16(v));
  if (!strcmp(dtype, "bfloat16")) return mpk_mk_bf16_to_f32(mpk_mk_f32_to_bf16(v));
  return v;
}

void fx_values(const fx_entry *es, size_t i, const fx_options *o, float **w, float **a, float **b) {
  const fx_entry *e = &es[i];
  size_t nw = (size_t)(e->rows * e->cols);
  *w = malloc(nw * sizeof **w);
  *a = malloc((size_t)(e->rank * e->in) * sizeof **a);
  *b = malloc((size_t)(e->out * e->rank) * sizeof **b);
  assert_non_null(*w);
  fill(*w, nw, o->seed * 7919u + (uint32_t)i * 3u + 1u, 1.0f);
  for (size_t k = 0; k < nw; k++) (*w)[k] = round_to(e->dtype, (*w)[k]);
  fill(*a, (size_t)(e->rank * e->in), o->seed * 7919u + (uint32_t)i * 3u + 2u, 0.5f);
  fill(*b, (size_t)(e->out * e->rank), o->seed * 7919u + (uint32_t)i * 3u + 3u, 0.5f);
}

static void write_bytes(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

void fx_write_safetensors(const char *path, const char *const *names, const float *const *data,
                          const int64_t (*shapes)[2], size_t n) {
  json_t *h = json_object();
  uint64_t at = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t bytes = (uint64_t)(shapes[i][0] * shapes[i][1]) * 4;
    json_object_set_new(h, names[i],
                        json_pack("{s:s, s:[I,I], s:[I,I]}", "dtype", "F32", "shape", (json_int_t)shapes[i][0],
                                  (json_int_t)shapes[i][1], "data_offsets", (json_int_t)at, (json_int_t)(at + bytes)));
    at += bytes;
  }
  char *text = json_dumps(h, JSON_COMPACT);
  json_decref(h);
  size_t hl = strlen(text), padded = (hl + 7) / 8 * 8;
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  uint8_t len8[8];
  for (int k = 0; k < 8; k++) len8[k] = (uint8_t)(padded >> (8 * k));
  fwrite(len8, 1, 8, f);
  fwrite(text, 1, hl, f);
  for (size_t k = hl; k < padded; k++) fputc(' ', f);
  for (size_t i = 0; i < n; i++) /* F32 little-endian, whatever the host */
    for (size_t k = 0; k < (size_t)(shapes[i][0] * shapes[i][1]); k++) {
      uint8_t le[4];
      mpk_store_le_f32(le, data[i][k]);
      fwrite(le, 1, 4, f);
    }
  assert_int_equal(fclose(f), 0);
  free(text);
}

/* base_model.model.model.<module> from backbone.model.<module>.base_layer */
static void peft_module(const char *layer, char *out, size_t size) {
  const char *p = strncmp(layer, "backbone.model.", 15) == 0 ? layer + 15 : layer;
  snprintf(out, size, "base_model.model.model.%s", p);
  size_t n = strlen(out);
  if (n > 11 && strcmp(out + n - 11, ".base_layer") == 0) out[n - 11] = '\0';
}

void fx_build(const char *root, const fx_entry *es, size_t n, const fx_options *o) {
  const char *pkg = fx_pkg(root);
  char inf[600], train[600], path[2048];
  tu_sh("rm -rf '%s' && cp -r '%s/examples/mt-tiny' '%s'", pkg, MPK_SOURCE_DIR, pkg);
  snprintf(inf, sizeof inf, "%s/variants/cpu-fp16/inference", pkg);
  snprintf(train, sizeof train, "%s/variants/cpu-fp16/train", pkg);
  tu_sh("rm -f '%s'/*.bin '%s'/*.bin.sha256", inf, inf);
  if (o->exported_at) {
    snprintf(path, sizeof path, "%s/mobiletransformers_manifest.json", pkg);
    json_t *m = tu_load_json(path);
    json_object_set_new(m, "exportedAt", json_string(o->exported_at));
    assert_int_equal(json_dump_file(m, path, JSON_INDENT(2)), 0);
    json_decref(m);
  }
  json_t *map = tu_load_json(strcat(strcpy(path, inf), "/weight_handoff_map.json"));
  json_t *entries = json_array();
  const char **names = calloc(3 * n, sizeof *names);
  const float **data = calloc(3 * n, sizeof *data);
  int64_t(*shapes)[2] = calloc(3 * n, sizeof *shapes);
  float **owned = calloc(4 * n, sizeof *owned);
  size_t nt = 0;
  /* The package's orientation, as the merge will observe it: a non-square entry stored [in, out]. */
  bool transposed = false;
  for (size_t i = 0; i < n; i++) transposed |= es[i].rows != es[i].cols && es[i].rows == es[i].in;
  for (size_t i = 0; i < n; i++) {
    const fx_entry *e = &es[i];
    float *w, *a, *b;
    fx_values(es, i, o, &w, &a, &b);
    owned[4 * i] = w;
    owned[4 * i + 1] = a;
    owned[4 * i + 2] = b;
    size_t nw = (size_t)(e->rows * e->cols), esz = strcmp(e->dtype, "float32") ? 2 : 4;
    uint8_t *bytes = malloc(nw * esz);
    for (size_t k = 0; k < nw; k++) {
      if (esz == 4) mpk_store_le_f32(bytes + 4 * k, w[k]); /* tensor files are little-endian */
      else mpk_store_le16(bytes + 2 * k, !strcmp(e->dtype, "float16") ? mpk_mk_f32_to_f16(w[k]) : mpk_mk_f32_to_bf16(w[k]));
    }
    char file[160], init[128], hex[65];
    snprintf(init, sizeof init, "t%zu.MatMul.weight", i);
    snprintf(file, sizeof file, "%s.bin", init);
    snprintf(path, sizeof path, "%s/%s", inf, file);
    write_bytes(path, bytes, nw * esz);
    uint8_t d[32];
    mpk_sha256(bytes, nw * esz, d);
    mpk_hex(d, 32, hex);
    free(bytes);
    char side[66];
    snprintf(side, sizeof side, "%s\n", hex);
    strcat(path, ".sha256");
    write_bytes(path, side, 65);

    char a_name[300], b_name[300], w_name[300], module[256];
    peft_module(e->layer, module, sizeof module);
    snprintf(w_name, sizeof w_name, "%.200s.weight", e->layer);
    if (o->peft_names) {
      snprintf(a_name, sizeof a_name, "%s.lora_A.weight", module);
      snprintf(b_name, sizeof b_name, "%s.lora_B.weight", module);
    } else {
      snprintf(a_name, sizeof a_name, "%s.lora_A.default.weight", module);
      snprintf(b_name, sizeof b_name, "%s.lora_B.default.weight", module);
    }
    json_t *cn = json_pack("{s:s}", "weight", w_name);
    if (!o->peft_names) {
      json_object_set_new(cn, "adapter_A", json_string(a_name));
      json_object_set_new(cn, "adapter_B", json_string(b_name));
    }
    json_t *ent = json_pack(
        "{s:{s:s,s:s}, s:{s:[I,I],s:[I,I]}, s:o, s:s, s:{s:s}, s:{}, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, s:[I,I], "
        "s:{s:s}, s:{s:[I,I]}, s:s, s:s}",
        "adapterDtypes", "adapter_A", "float32", "adapter_B", "float32", "adapterShapes", "adapter_A",
        (json_int_t)e->rank, (json_int_t)e->in, "adapter_B", (json_int_t)e->out, (json_int_t)e->rank, "checkpointNames", cn,
        "dtype", e->dtype, "externalDataLocation", "weight", file, "genaiInputNames", "inferenceInitializerNames",
        "weight", init, "mergedTensorNames", "weight", init, "mergerOutputNames", "weight", "merged_weight", "sha256",
        "weight", hex, "shape", (json_int_t)e->rows, (json_int_t)e->cols, "tensorDtypes", "weight", e->dtype,
        "tensorShapes", "weight", (json_int_t)e->rows, (json_int_t)e->cols, "trainingBaseLayerName", e->layer,
        "transposePolicy", e->policy ? e->policy : "no_transpose");
    assert_non_null(ent);
    json_array_append_new(entries, ent);
    names[nt] = strdup(a_name);
    data[nt] = a;
    shapes[nt][0] = e->rank;
    shapes[nt++][1] = e->in;
    names[nt] = strdup(b_name);
    data[nt] = b;
    shapes[nt][0] = e->out;
    shapes[nt++][1] = e->rank;
    if (o->frozen) { /* the checkpoint's [out, in] layout */
      float *f = malloc(nw * sizeof *f);
      bool same = !transposed;
      for (int64_t r = 0; r < e->out; r++)
        for (int64_t c = 0; c < e->in; c++) f[r * e->in + c] = same ? w[r * e->in + c] : w[c * e->out + r];
      owned[4 * i + 3] = f;
      names[nt] = strdup(w_name);
      data[nt] = f;
      shapes[nt][0] = e->out;
      shapes[nt++][1] = e->in;
    }
  }
  json_object_set_new(map, "entries", entries);
  snprintf(path, sizeof path, "%s/weight_handoff_map.json", inf);
  assert_int_equal(json_dump_file(map, path, JSON_INDENT(2) | JSON_SORT_KEYS), 0);
  json_decref(map);
  /* the train map is the same document (the example keeps both) */
  snprintf(path, sizeof path, "cp '%s/weight_handoff_map.json' '%s/weight_handoff_map.json'", inf, train);
  tu_sh("%s", path);
  json_t *tc = json_object();
  if (o->alpha) json_object_set_new(tc, "alpha", json_real(o->alpha));
  if (o->rank) json_object_set_new(tc, "rank", json_integer(o->rank));
  json_object_set_new(tc, "peft_mapping", json_object());
  snprintf(path, sizeof path, "%s/training_config.json", train);
  assert_int_equal(json_dump_file(tc, path, JSON_INDENT(2)), 0);
  json_decref(tc);
  fx_write_safetensors(fx_adapter(root), names, data, (const int64_t(*)[2])shapes, nt);
  for (size_t k = 0; k < nt; k++) free((char *)names[k]);
  for (size_t k = 0; k < 4 * n; k++) free(owned[k]);
  free(names);
  free(data);
  free(shapes);
  free(owned);
}
