/* MobileTransformers weight_handoff_map.json: the conformance maps (1.1 and the tiny package's 1.0),
   the byte-identical canonical writer, the version gate, every invariant and typed rule, and the
   per-role dtype/shape with its entry-level fallback. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define FEDERATED "conformance/mobiletransformers/android_test_federated_handoff.json"
#define TINY "conformance/mobiletransformers/tiny_package/variants/"

static char *dump_doc(const json_t *doc, size_t *len) {
  char *s = json_dumps(doc, JSON_INDENT(1));
  assert_non_null(s);
  *len = strlen(s);
  return s;
}

/* Parse a document given as a jansson value. */
static int parse_doc(const json_t *doc, mpk_mt_handoff **out, mpk_error *err) {
  size_t len;
  char *s = dump_doc(doc, &len);
  int rc = mpk_mt_handoff_parse(s, len, "map.json", out, err);
  free(s);
  return rc;
}

static json_t *federated(void) { return tu_load_json(tu_shared(FEDERATED)); }

static json_t *entry0(json_t *doc) { return json_array_get(json_object_get(doc, "entries"), 0); }

/* Expect a refusal: the code, the JSON pointer (NULL: any), and a part of the message. */
static void expect_refused(const json_t *doc, int code, const char *pointer, const char *msg) {
  mpk_mt_handoff *m = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  int rc = parse_doc(doc, &m, &err);
  if (rc == 0) {
    mpk_mt_handoff_free(m);
    fail_msg("accepted; expected \"%s\"", msg);
  }
  if (rc != code || (pointer && strcmp(err.pointer, pointer) != 0) || !strstr(err.message, msg))
    fail_msg("got %s at \"%s\": %s; expected %s at \"%s\": %s", mpk_code_name(rc), err.pointer, err.message,
             mpk_code_name(code), pointer ? pointer : "*", msg);
  assert_null(m);
}

/* ---------------------------------------------------------------- conformance maps */

static void test_federated_roundtrip(void **state) {
  (void)state;
  size_t len;
  uint8_t *bytes = tu_read_file(tu_shared(FEDERATED), &len);
  mpk_mt_handoff *m;
  mpk_error err;
  if (mpk_mt_handoff_parse(bytes, len, FEDERATED, &m, &err)) fail_msg("%s", tu_err(&err));
  assert_string_equal(m->schema_version, "1.1");
  assert_string_equal(m->min_reader_version, "1.0");
  assert_string_equal(m->handoff_mode, "external_initializer");
  assert_int_equal(m->n_engines, 2);
  assert_string_equal(m->engines[1], "genai");
  assert_string_equal(m->frozen_base_blob, "frozen_base.onnx.data");
  assert_int_equal(m->n_entries, 2);
  const mpk_mt_handoff_entry *e = &m->entries[1];
  assert_string_equal(e->training_base_layer_name, "backbone.model.layers.1.self_attn.v_proj.base_layer");
  assert_string_equal(e->inference_initializer_names[MPK_MT_ROLE_WEIGHT], "model.layers.1.attn.v_proj.MatMul.weight");
  assert_string_equal(e->external_data_location[MPK_MT_ROLE_WEIGHT], "model.layers.1.attn.v_proj.MatMul.weight.bin");
  assert_null(e->inference_initializer_names[MPK_MT_ROLE_SCALE]);
  assert_int_equal(e->n_checkpoint_names, 3);
  assert_string_equal(e->checkpoint_names[0].key, "adapter_A"); /* sorted by key */
  assert_string_equal(e->checkpoint_names[2].value, "l1.weight");
  assert_int_equal(e->n_adapter_shapes, 2);
  assert_string_equal(e->adapter_shapes[1].key, "adapter_B");
  assert_int_equal(e->adapter_shapes[1].shape.dims[0], 6);
  assert_int_equal(e->transpose_policy, MPK_MT_NO_TRANSPOSE);
  assert_false(e->quantized);
  /* The entry-level fallback: a single non-quantized role. */
  const char *dtype;
  const int64_t *shape;
  size_t ndim;
  if (mpk_mt_handoff_role_layout(e, MPK_MT_ROLE_WEIGHT, &dtype, &shape, &ndim, &err)) fail_msg("%s", tu_err(&err));
  assert_string_equal(dtype, "float32");
  assert_int_equal(ndim, 2);
  assert_int_equal(shape[0], 6);
  assert_int_equal(shape[1], 5);
  assert_int_equal(mpk_mt_handoff_role_layout(e, MPK_MT_ROLE_SCALE, &dtype, &shape, &ndim, &err), MPK_ENOTFOUND);

  char *out;
  size_t out_len;
  if (mpk_mt_handoff_json(m, &out, &out_len, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(out_len, len);
  assert_memory_equal(out, bytes, len);
  mpk_free(out);
  mpk_mt_handoff_free(m);

  /* Entries reversed and keys in another order: the same bytes. */
  json_t *doc = federated(), *entries = json_object_get(doc, "entries");
  json_t *rev = json_array();
  json_array_append(rev, json_array_get(entries, 1));
  json_array_append(rev, json_array_get(entries, 0));
  json_object_set_new(doc, "entries", rev);
  size_t dl;
  char *shuffled = dump_doc(doc, &dl); /* insertion order, indent 1: not the canonical bytes */
  assert_true(dl != len || memcmp(shuffled, bytes, len) != 0);
  if (mpk_mt_handoff_parse(shuffled, dl, NULL, &m, &err)) fail_msg("%s", tu_err(&err));
  assert_string_equal(m->entries[0].training_base_layer_name, "backbone.model.layers.1.self_attn.v_proj.base_layer");
  if (mpk_mt_handoff_json(m, &out, &out_len, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(out_len, len);
  assert_memory_equal(out, bytes, len);

  /* Written atomically, read back, written again: unchanged. */
  char path[600];
  snprintf(path, sizeof path, "%s/weight_handoff_map.json", tu_tmpdir());
  if (mpk_write_file_atomic(path, out, out_len, &err)) fail_msg("%s", tu_err(&err));
  mpk_mt_handoff *again;
  if (mpk_mt_handoff_load(path, &again, &err)) fail_msg("%s", tu_err(&err));
  char *out2;
  size_t out2_len;
  if (mpk_mt_handoff_json(again, &out2, &out2_len, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(out2_len, len);
  assert_memory_equal(out2, bytes, len);
  mpk_free(out2);
  mpk_mt_handoff_free(again);
  mpk_free(out);
  mpk_mt_handoff_free(m);
  free(shuffled);
  json_decref(doc);
  free(bytes);
}

/* The tiny package's maps are the older 1.0 shape: they load, and are written with the fields
   to_json() adds (empty tensorDtypes/tensorShapes/adapterDtypes/adapterShapes). */
static void test_tiny_package_maps(void **state) {
  (void)state;
  const char *maps[] = {TINY "cpu-int4/inference/weight_handoff_map.json", TINY "cpu-int4/train/weight_handoff_map.json",
                        TINY "cpu-fp16/inference/weight_handoff_map.json", TINY "cpu-fp16/train/weight_handoff_map.json"};
  for (size_t i = 0; i < 4; i++) {
    mpk_mt_handoff *m;
    mpk_error err;
    if (mpk_mt_handoff_load(tu_shared(maps[i]), &m, &err)) fail_msg("%s", tu_err(&err));
    assert_string_equal(m->schema_version, "1.0");
    assert_int_equal(m->n_entries, 1);
    assert_int_equal(m->entries[0].n_adapter_dtypes, 0);
    const char *dtype;
    const int64_t *shape;
    size_t ndim;
    if (mpk_mt_handoff_role_layout(&m->entries[0], MPK_MT_ROLE_WEIGHT, &dtype, &shape, &ndim, &err))
      fail_msg("%s", tu_err(&err));
    assert_string_equal(dtype, "float32");
    assert_int_equal(ndim, 2);
    assert_int_equal(shape[0], 4);
    char *out;
    size_t len;
    if (mpk_mt_handoff_json(m, &out, &len, &err)) fail_msg("%s", tu_err(&err));
    assert_non_null(strstr(out, "      \"adapterDtypes\": {},\n      \"adapterShapes\": {},\n"));
    assert_non_null(strstr(out, "      \"tensorDtypes\": {},\n      \"tensorShapes\": {},\n"));
    assert_non_null(strstr(out, "  \"schemaVersion\": \"1.0\"\n}\n"));
    mpk_mt_handoff *again;
    if (mpk_mt_handoff_parse(out, len, NULL, &again, &err)) fail_msg("%s", tu_err(&err));
    char *out2;
    size_t len2;
    if (mpk_mt_handoff_json(again, &out2, &len2, &err)) fail_msg("%s", tu_err(&err));
    assert_int_equal(len2, len);
    assert_memory_equal(out2, out, len);
    mpk_free(out2);
    mpk_mt_handoff_free(again);
    mpk_free(out);
    mpk_mt_handoff_free(m);
  }
}

/* ---------------------------------------------------------------- the writer's defaults */

static void test_writer_defaults_and_unknown_fields(void **state) {
  (void)state;
  json_t *doc = federated();
  json_object_del(doc, "engines");
  json_object_del(doc, "handoffMode");
  json_object_set_new(doc, "futureField", json_pack("{s:i}", "b", 1));
  json_t *e = entry0(doc);
  json_object_del(e, "transposePolicy");
  json_object_del(e, "genaiInputNames");
  json_object_set_new(e, "quantization", json_null());
  json_object_set_new(e, "entryExtra", json_string("caf\xc3\xa9"));
  mpk_mt_handoff *m;
  mpk_error err;
  if (parse_doc(doc, &m, &err)) fail_msg("%s", tu_err(&err));
  char *out;
  size_t len;
  if (mpk_mt_handoff_json(m, &out, &len, &err)) fail_msg("%s", tu_err(&err));
  assert_non_null(strstr(out, "  \"engines\": [\n    \"native\",\n    \"genai\"\n  ],\n"));
  assert_non_null(strstr(out, "  \"futureField\": {\n    \"b\": 1\n  },\n"));
  assert_non_null(strstr(out, "      \"entryExtra\": \"caf\\u00e9\",\n"));
  assert_non_null(strstr(out, "  \"handoffMode\": \"external_initializer\",\n"));
  assert_null(strstr(out, "quantization")); /* a null quantization is left out, as to_dict() does */
  assert_non_null(strstr(out, "      \"transposePolicy\": \"no_transpose\"\n"));
  mpk_free(out);
  mpk_mt_handoff_free(m);
  json_decref(doc);
}

/* ---------------------------------------------------------------- gate and modes */

static void test_version_and_json(void **state) {
  (void)state;
  json_t *doc = federated();
  json_object_set_new(doc, "schemaVersion", json_string("2.0"));
  expect_refused(doc, MPK_EVERSION, "/schemaVersion", "schemaVersion 2.0 is a newer major version");
  json_object_set_new(doc, "schemaVersion", json_string("1.1"));
  json_object_set_new(doc, "minReaderVersion", json_string("1.2"));
  expect_refused(doc, MPK_EVERSION, "/minReaderVersion", "newer than this reader (1.1)");
  json_object_del(doc, "minReaderVersion");
  expect_refused(doc, MPK_EMALFORMED, "/minReaderVersion", "minReaderVersion is missing");
  json_decref(doc);

  mpk_mt_handoff *m = NULL;
  mpk_error err;
  const char *bad[] = {"", "{", "[]", "{\"a\":1,\"a\":2}", "{\"schemaVersion\":\"1.0\",}", "\xff"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = mpk_mt_handoff_parse(bad[i], strlen(bad[i]), NULL, &m, &err);
    assert_int_equal(rc, MPK_EMALFORMED);
    assert_null(m);
  }
  assert_int_equal(mpk_mt_handoff_parse("{", 1, NULL, &m, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "invalid JSON"));
  assert_int_equal(mpk_mt_handoff_load("/nonexistent/weight_handoff_map.json", &m, &err) < 0, 1);
}

static void test_modes_and_layout(void **state) {
  (void)state;
  json_t *doc = federated();
  json_object_set_new(doc, "handoffMode", json_string("model_input"));
  expect_refused(doc, MPK_EUNSUPPORTED, "/handoffMode", "handoffMode \"model_input\" is not supported in v1");
  json_object_set_new(doc, "handoffMode", json_string("adapter"));
  expect_refused(doc, MPK_EUNSUPPORTED, "/handoffMode", "handoffMode \"adapter\" is not supported in v1");
  json_object_set_new(doc, "handoffMode", json_string("magic"));
  expect_refused(doc, MPK_EMALFORMED, "/handoffMode", "is unknown");
  json_object_set_new(doc, "handoffMode", json_integer(1));
  expect_refused(doc, MPK_EMALFORMED, "/handoffMode", "expected a non-empty string");
  json_object_set_new(doc, "handoffMode", json_string("external_initializer"));
  json_object_set_new(doc, "externalDataLayout", json_string("single_file"));
  expect_refused(doc, MPK_EUNSUPPORTED, "/externalDataLayout", "not supported");
  json_object_set_new(doc, "externalDataLayout", json_string("one_file_per_tensor"));
  json_object_set_new(doc, "frozenBaseBlob", json_string("../x.data"));
  expect_refused(doc, MPK_EMALFORMED, "/frozenBaseBlob", "names a subdirectory");
  json_object_set_new(doc, "frozenBaseBlob", json_string("frozen_base.onnx.data"));
  json_object_set_new(doc, "engines", json_pack("[si]", "native", 3));
  expect_refused(doc, MPK_EMALFORMED, "/engines/1", "expected a non-empty string");
  json_object_del(doc, "engines");
  json_object_set_new(doc, "mergerModels", json_pack("{s:s}", "lora", "/abs/merger.onnx"));
  expect_refused(doc, MPK_EMALFORMED, "/mergerModels/lora", "must be a package-relative path");
  json_object_set_new(doc, "mergerModels", json_pack("{s:s}", "lora", "merger_lora.onnx"));
  json_object_del(doc, "entries");
  expect_refused(doc, MPK_EMALFORMED, "/entries", "missing field \"entries\"");
  json_object_set_new(doc, "entries", json_object());
  expect_refused(doc, MPK_EMALFORMED, "/entries", "expected an array");
  json_object_set_new(doc, "entries", json_pack("[i]", 1));
  expect_refused(doc, MPK_EMALFORMED, "/entries/0", "expected an object");
  json_decref(doc);
}

/* ---------------------------------------------------------------- invariants */

static void test_duplicates(void **state) {
  (void)state;
  json_t *doc = federated();
  json_t *e1 = json_array_get(json_object_get(doc, "entries"), 1);
  json_object_set_new(json_object_get(e1, "externalDataLocation"), "weight",
                      json_string("model.layers.0.attn.q_proj.MatMul.weight.bin"));
  expect_refused(doc, MPK_EMALFORMED, "/entries/1/externalDataLocation/weight",
                 "entry \"backbone.model.layers.1.self_attn.v_proj.base_layer\": externalDataLocation "
                 "\"model.layers.0.attn.q_proj.MatMul.weight.bin\" is claimed twice (entry 0");
  json_decref(doc);

  doc = federated();
  e1 = json_array_get(json_object_get(doc, "entries"), 1);
  const char *n0 = "model.layers.0.attn.q_proj.MatMul.weight";
  json_object_set_new(json_object_get(e1, "inferenceInitializerNames"), "weight", json_string(n0));
  json_object_set_new(json_object_get(e1, "mergedTensorNames"), "weight", json_string(n0));
  expect_refused(doc, MPK_EMALFORMED, "/entries/1/inferenceInitializerNames/weight",
                 "inferenceInitializerNames \"model.layers.0.attn.q_proj.MatMul.weight\" is claimed twice");
  json_decref(doc);

  doc = federated();
  e1 = json_array_get(json_object_get(doc, "entries"), 1);
  json_object_set_new(e1, "trainingBaseLayerName", json_string("backbone.model.layers.0.self_attn.q_proj.base_layer"));
  expect_refused(doc, MPK_EMALFORMED, "/entries/1/trainingBaseLayerName", "trainingBaseLayerName is claimed twice");
  json_decref(doc);

  /* Two roles of one entry claiming one file. */
  doc = federated();
  json_object_set_new(json_object_get(entry0(doc), "externalDataLocation"), "scale",
                      json_string("model.layers.0.attn.q_proj.MatMul.weight.bin"));
  expect_refused(doc, MPK_EMALFORMED, "/entries/0/externalDataLocation/scale", "is claimed twice");
  json_decref(doc);
}

static void test_merged_equals_inference(void **state) {
  (void)state;
  json_t *doc = federated();
  json_object_set_new(json_object_get(entry0(doc), "mergedTensorNames"), "weight", json_string("other"));
  expect_refused(doc, MPK_EMALFORMED, "/entries/0/mergedTensorNames/weight",
                 "entry \"backbone.model.layers.0.self_attn.q_proj.base_layer\": mergedTensorNames[\"weight\"] \"other\" != "
                 "inferenceInitializerNames[\"weight\"]");
  json_object_del(json_object_get(entry0(doc), "mergedTensorNames"), "weight");
  expect_refused(doc, MPK_EMALFORMED, "/entries/0/mergedTensorNames", "role \"weight\" has no mergedTensorNames entry");
  json_decref(doc);
}

/* A quantized entry: int4 packed two-per-byte in uint8 [8,2], float16 scales [8,1], uint8 zero points. */
static json_t *quantized_doc(void) {
  json_t *doc = federated();
  json_t *e = entry0(doc);
  const char *q = "model.layers.0.attn.q_proj.MatMul.qweight", *s = "model.layers.0.attn.q_proj.MatMul.scales",
             *z = "model.layers.0.attn.q_proj.MatMul.qzeros";
  json_t *names = json_pack("{s:s,s:s,s:s}", "weight_quantized", q, "scale", s, "zero_point", z);
  json_object_set(e, "inferenceInitializerNames", names);
  json_object_set_new(e, "mergedTensorNames", json_deep_copy(names));
  json_decref(names);
  json_object_set_new(e, "externalDataLocation",
                      json_pack("{s:s,s:s,s:s}", "weight_quantized", "q.bin", "scale", "s.bin", "zero_point", "z.bin"));
  json_object_set_new(e, "quantization", json_pack("{s:s,s:s,s:s}", "weightQuantizedName", q, "scaleName", s,
                                                   "zeroPointName", z));
  json_object_set_new(e, "dtype", json_string("uint8"));
  json_object_set_new(e, "tensorDtypes",
                      json_pack("{s:s,s:s,s:s}", "weight_quantized", "uint8", "scale", "float16", "zero_point", "uint8"));
  json_object_set_new(e, "tensorShapes", json_pack("{s:[ii],s:[ii],s:[ii]}", "weight_quantized", 8, 2, "scale", 8, 1,
                                                   "zero_point", 8, 1));
  return doc;
}

static void test_quantized_roles(void **state) {
  (void)state;
  json_t *doc = quantized_doc();
  mpk_mt_handoff *m;
  mpk_error err;
  if (parse_doc(doc, &m, &err)) fail_msg("%s", tu_err(&err));
  const mpk_mt_handoff_entry *e = &m->entries[0];
  assert_true(e->quantized);
  assert_string_equal(e->scale_name, "model.layers.0.attn.q_proj.MatMul.scales");
  const char *dtype;
  const int64_t *shape;
  size_t ndim;
  if (mpk_mt_handoff_role_layout(e, MPK_MT_ROLE_WEIGHT_QUANTIZED, &dtype, &shape, &ndim, &err)) fail_msg("%s", tu_err(&err));
  assert_string_equal(dtype, "uint8");
  assert_int_equal(ndim, 2);
  assert_int_equal(shape[0], 8);
  assert_int_equal(shape[1], 2);
  if (mpk_mt_handoff_role_layout(e, MPK_MT_ROLE_SCALE, &dtype, &shape, &ndim, &err)) fail_msg("%s", tu_err(&err));
  assert_string_equal(dtype, "float16");
  assert_int_equal(shape[1], 1);
  /* No fallback for a quantized entry: the entry-level pair is the weight-like role's only. */
  assert_int_equal(mpk_mt_handoff_role_layout(e, MPK_MT_ROLE_WEIGHT, &dtype, &shape, &ndim, &err), MPK_ENOTFOUND);
  assert_non_null(strstr(err.message, "single non-quantized weight role"));
  assert_int_equal(mpk_mt_handoff_role_layout(e, MPK_MT_ROLE_COUNT, &dtype, &shape, &ndim, &err), MPK_EINVAL);
  /* The writer sorts by inferenceInitializerNames.weight, else trainingBaseLayerName. */
  char *out;
  size_t len;
  if (mpk_mt_handoff_json(m, &out, &len, &err)) fail_msg("%s", tu_err(&err));
  const char *a = strstr(out, "backbone.model.layers.0"), *b = strstr(out, "backbone.model.layers.1");
  assert_true(a && b && a < b); /* "backbone..." sorts before "model.layers.1..." */
  mpk_free(out);
  mpk_mt_handoff_free(m);

  json_t *e0 = entry0(doc);
  json_object_set_new(json_object_get(e0, "quantization"), "scaleName", json_string("derived.scales"));
  expect_refused(doc, MPK_EMALFORMED, "/entries/0/quantization/scaleName",
                 "quantization.scaleName \"derived.scales\" must equal the observed inference initializer name");
  json_object_del(json_object_get(e0, "quantization"), "scaleName");
  expect_refused(doc, MPK_EMALFORMED, "/entries/0/quantization", "quantized entry missing \"scaleName\"");
  json_decref(doc);

  doc = quantized_doc();
  e0 = entry0(doc);
  json_object_set_new(e0, "tensorDtypes", json_object());
  json_object_set_new(e0, "tensorShapes", json_object());
  expect_refused(doc, MPK_EMALFORMED, "/entries/0/tensorDtypes", "quantized entry must declare per-role tensorDtypes/tensorShapes");
  json_decref(doc);

  doc = quantized_doc();
  e0 = entry0(doc);
  json_object_del(json_object_get(e0, "tensorShapes"), "zero_point");
  expect_refused(doc, MPK_EMALFORMED, "/entries/0/tensorShapes",
                 "role \"zero_point\" has an externalDataLocation but no tensorShapes entry");
  json_decref(doc);

  doc = quantized_doc();
  json_object_del(json_object_get(entry0(doc), "inferenceInitializerNames"), "zero_point");
  json_object_del(json_object_get(entry0(doc), "mergedTensorNames"), "zero_point");
  expect_refused(doc, MPK_EMALFORMED, "/entries/0/inferenceInitializerNames",
                 "quantized entry has no inferenceInitializerNames[\"zero_point\"]");
  json_decref(doc);
}

/* ---------------------------------------------------------------- typed fields */

static void test_typed_rules(void **state) {
  (void)state;
  static const struct {
    const char *key;
    const char *json; /* the new value of entries[0][key] */
    const char *pointer;
    const char *msg;
  } cases[] = {
      {"dtype", "\"float64\"", "/entries/0/dtype", "dtype \"float64\" is not one of float32"},
      {"dtype", "null", "/entries/0/dtype", "expected a dtype string"},
      {"shape", "[4, 0]", "/entries/0/shape/1", "every dimension must be a positive integer"},
      {"shape", "[4, -3]", "/entries/0/shape/1", "every dimension must be a positive integer"},
      {"shape", "[4, 3.0]", "/entries/0/shape/1", "every dimension must be a positive integer"},
      {"shape", "\"4x3\"", "/entries/0/shape", "expected a shape"},
      {"tensorDtypes", "{\"weight\": \"int3\"}", "/entries/0/tensorDtypes/weight", "is not one of"},
      {"tensorShapes", "{\"weight\": [4, \"n\"]}", "/entries/0/tensorShapes/weight/1", "positive integer"},
      {"adapterShapes", "{\"adapter_A\": [0, 3]}", "/entries/0/adapterShapes/adapter_A/0", "positive integer"},
      {"adapterDtypes", "{\"adapter_A\": \"fp32\"}", "/entries/0/adapterDtypes/adapter_A", "is not one of"},
      {"transposePolicy", "\"transpose\"", "/entries/0/transposePolicy",
       "transposePolicy must be \"no_transpose\" or \"already_transposed_for_inference\""},
      {"externalDataLocation", "{\"weight\": \"sub/w.bin\"}", "/entries/0/externalDataLocation/weight",
       "externalDataLocation names a subdirectory: it must be the name of a file in the variant's inference/ directory"},
      {"externalDataLocation", "{\"weight\": \"..\"}", "/entries/0/externalDataLocation/weight", "is a \".\" or \"..\""},
      {"externalDataLocation", "{\"weight\": \"a\\\\b.bin\"}", "/entries/0/externalDataLocation/weight", "backslash"},
      {"externalDataLocation", "{\"weight\": \"/w.bin\"}", "/entries/0/externalDataLocation/weight", "is absolute"},
      {"externalDataLocation", "{\"weight\": 1}", "/entries/0/externalDataLocation/weight", "is not a string"},
      {"sha256", "{\"weight\": \"abc\"}", "/entries/0/sha256/weight", "sha256 must be 64 lowercase hex digits"},
      {"sha256", "{\"weight\": \"F41027621D842764EF7F3B12331CEC51EDE487A823C41B445CC84D1414030147\"}",
       "/entries/0/sha256/weight", "lowercase"},
      {"inferenceInitializerNames", "{\"bias\": \"x\"}", "/entries/0/inferenceInitializerNames/bias",
       "role \"bias\" is not one of weight, weight_quantized, scale, zero_point"},
      {"inferenceInitializerNames", "[]", "/entries/0/inferenceInitializerNames", "expected an object"},
      {"mergerOutputNames", "{\"weight\": \"\"}", "/entries/0/mergerOutputNames/weight", "expected a non-empty string"},
      {"genaiInputNames", "null", "/entries/0/genaiInputNames", "expected an object"},
      {"checkpointNames", "{\"adapter_A\": 7}", "/entries/0/checkpointNames/adapter_A", "expected a non-empty string"},
      {"quantization", "[]", "/entries/0/quantization", "expected an object or null"},
      {"trainingBaseLayerName", "\"\"", "/entries/0/trainingBaseLayerName", "expected a non-empty string"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    json_t *doc = federated();
    json_error_t je;
    json_t *val = json_loads(cases[i].json, JSON_DECODE_ANY, &je);
    if (!val) fail_msg("case %zu: bad test JSON", i);
    json_object_set_new(entry0(doc), cases[i].key, val);
    expect_refused(doc, MPK_EMALFORMED, cases[i].pointer, cases[i].msg);
    json_decref(doc);
  }
  /* The entry is named in the message. */
  json_t *doc = federated();
  json_object_set_new(entry0(doc), "dtype", json_string("float64"));
  expect_refused(doc, MPK_EMALFORMED, NULL, "entry \"backbone.model.layers.0.self_attn.q_proj.base_layer\": dtype");
  json_object_del(entry0(doc), "dtype");
  expect_refused(doc, MPK_EMALFORMED, "/entries/0", "missing field \"dtype\"");
  json_object_del(entry0(doc), "trainingBaseLayerName");
  expect_refused(doc, MPK_EMALFORMED, "/entries/0", "entry 0: missing field \"trainingBaseLayerName\"");
  json_decref(doc);
  /* Every known dtype is accepted, and already_transposed_for_inference. */
  const char *dtypes[] = {"float32", "float16", "bfloat16", "int8", "uint8", "int4", "uint4", "int32", "int64"};
  for (size_t i = 0; i < 9; i++) {
    doc = federated();
    json_object_set_new(entry0(doc), "dtype", json_string(dtypes[i]));
    json_object_set_new(entry0(doc), "transposePolicy", json_string("already_transposed_for_inference"));
    mpk_mt_handoff *m;
    mpk_error err;
    if (parse_doc(doc, &m, &err)) fail_msg("%s: %s", dtypes[i], tu_err(&err));
    assert_int_equal(m->entries[0].transpose_policy, MPK_MT_ALREADY_TRANSPOSED_FOR_INFERENCE);
    mpk_mt_handoff_free(m);
    json_decref(doc);
  }
  assert_string_equal(mpk_mt_role_name(MPK_MT_ROLE_ZERO_POINT), "zero_point");
  assert_null(mpk_mt_role_name(MPK_MT_ROLE_COUNT));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_federated_roundtrip),
      cmocka_unit_test(test_tiny_package_maps),
      cmocka_unit_test(test_writer_defaults_and_unknown_fields),
      cmocka_unit_test(test_version_and_json),
      cmocka_unit_test(test_modes_and_layout),
      cmocka_unit_test(test_duplicates),
      cmocka_unit_test(test_merged_equals_inference),
      cmocka_unit_test(test_quantized_roles),
      cmocka_unit_test(test_typed_rules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
