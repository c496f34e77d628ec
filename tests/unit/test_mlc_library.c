/* The _metadata extractor: the seven real _metadata objects embedded in synthetic libraries (random
   bytes, a type tag, the u64 LE length, the JSON), in memory and as files; decoys, duplicates,
   conflicts, truncations; and the two JSON-file forms. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

typedef struct real_md {
  const char *name;
  const char *model_type;
} real_md;

static const real_md REAL[] = {
    {"Llama-3.2-1B-Instruct-q0f16-ctx4k_cs1k-webgpu.metadata.json", "llama"},
    {"Mistral-7B-Instruct-v0.3-q4f16_1-ctx4k_cs1k-webgpu.metadata.json", "mistral"},
    {"Phi-3-mini-4k-instruct-q4f16_1-ctx4k_cs1k-webgpu.metadata.json", "phi3"},
    {"Qwen2-0.5B-Instruct-q4f32_1-ctx4k_cs1k-webgpu.metadata.json", "qwen2"},
    {"Qwen2-1.5B-Instruct-q4f16_1-ctx4k_cs1k-webgpu.metadata.json", "qwen2"},
    {"gemma-2-2b-it-q4f16_1-ctx4k_cs1k-webgpu.metadata.json", "gemma2"},
    {"snowflake-arctic-embed-s-q0f32-ctx512_cs512_batch4-webgpu.metadata.json", "bert"},
};
#define N_REAL (sizeof REAL / sizeof REAL[0])

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ARTIFACT                                                                              \
  "{\"schema\":\"mlc.compiled-program\",\"schema_version\":1,\"interface_id\":\"sha256:" HEX64 \
  "\",\"parameter_schema_id\":\"sha256:" HEX64                                                \
  "\",\"programs\":{\"generation\":{\"kind\":\"token_generation\",\"exports\":{\"embed_tokens\":" \
  "\"embed\"}}},\"resources\":{\"required_features\":[],\"max_storage_buffer_binding_size\":0,"  \
  "\"estimated_device_memory_bytes\":0}}"

static uint8_t *read_real(size_t k, size_t *len) {
  char rel[512];
  snprintf(rel, sizeof rel, "realdata/mlc-lib-metadata/%s", REAL[k].name);
  return tu_read_file(tu_shared(rel), len);
}

/* ---------------------------------------------------------------- a synthetic library */

typedef struct buf {
  uint8_t *p;
  size_t n, cap;
} buf;

static void put(buf *b, const void *src, size_t n) {
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    assert_non_null(b->p);
  }
  memcpy(b->p + b->n, src, n);
  b->n += n;
}

static uint32_t rng_state;
static void put_random(buf *b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    rng_state = rng_state * 1664525u + 1013904223u; /* fixed-seed LCG: reproducible bytes */
    uint8_t c = (uint8_t)(rng_state >> 24);
    put(b, &c, 1);
  }
}

static void put_u64(buf *b, uint64_t v) {
  uint8_t le[8];
  for (int k = 0; k < 8; k++) le[k] = (uint8_t)(v >> (8 * k));
  put(b, le, 8);
}

/* A type tag (varies by TVM version; the extractor must not depend on it), the length, the JSON.
   Returns the offset of the JSON text. */
static size_t put_embedded(buf *b, const void *json, size_t len, int tag) {
  static const uint8_t tags[][4] = {{0x05, 0, 0, 0}, {0x0b, 0x80, 0x00, 0x01}, {'s', 't', 'r', 0}};
  put(b, tags[tag % 3], 1 + (size_t)tag % 4); /* 1 to 4 bytes */
  put_u64(b, len);
  size_t at = b->n;
  put(b, json, len);
  return at;
}

/* A file in a fresh temporary directory; drop_file() removes both. */
static void tmp_file(char *path, size_t cap, const char *name) {
  snprintf(path, cap, "%s/%s", tu_tmpdir(), name);
}
static void drop_file(char *path) {
  remove(path);
  char *slash = strrchr(path, '/');
  *slash = '\0';
  rmdir(path);
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* find, from_bytes and load (through a temp file) must all give the JSON at `at`, byte-exact. */
static void expect_found(const buf *b, size_t at, const uint8_t *json, size_t len,
                         const char *model_type) {
  mpk_error err;
  mpk_error_clear(&err);
  size_t start = 0, n = 0;
  int rc = mpk_mlc_metadata_find(b->p, b->n, &start, &n, &err);
  assert_int_equal(rc, 0);
  assert_int_equal(start, at);
  assert_int_equal(n, len);
  assert_memory_equal(b->p + start, json, len);

  mpk_mlc_metadata *md = NULL;
  rc = mpk_mlc_metadata_from_bytes(b->p, b->n, "lib.wasm", &md, &err);
  if (rc) fail_msg("%s", tu_err(&err));
  assert_int_equal(md->json_len, len);
  assert_memory_equal(md->json, json, len);
  assert_int_equal(md->json[len], '\0');
  assert_int_equal(md->source_offset, (int64_t)at);
  assert_string_equal(md->model_type, model_type);
  assert_non_null(md->kv_state_kind);
  assert_string_equal(md->kv_state_kind, "kv_cache");
  assert_null(md->artifact);
  mpk_mlc_metadata_free(md);

  /* A file must say it is a library in its first bytes (the cases start with random bytes, and
     the metadata lies past them): WebAssembly's magic in place of the first four. */
  assert_true(at >= 12);
  uint8_t *copy = malloc(b->n);
  assert_non_null(copy);
  memcpy(copy, b->p, b->n);
  memcpy(copy, "\0asm", 4);
  char path[512];
  tmp_file(path, sizeof path, "lib.so");
  write_file(path, copy, b->n);
  free(copy);
  rc = mpk_mlc_metadata_load(path, &md, &err);
  if (rc) fail_msg("%s", tu_err(&err));
  assert_int_equal(md->json_len, len);
  assert_memory_equal(md->json, json, len);
  assert_int_equal(md->source_offset, (int64_t)at);
  assert_string_equal(md->model_type, model_type);
  assert_string_equal(md->kv_state_kind, "kv_cache");
  assert_null(md->artifact);
  mpk_mlc_metadata_free(md);
  drop_file(path);
}

static int expect_fail(const void *data, size_t n, int code, mpk_error *err) {
  mpk_error_clear(err);
  mpk_mlc_metadata *md = (mpk_mlc_metadata *)1;
  int rc = mpk_mlc_metadata_from_bytes(data, n, "lib.wasm", &md, err);
  assert_int_equal(rc, code);
  assert_int_equal(err->code, code);
  assert_null(md);
  return rc;
}

/* ---------------------------------------------------------------- real _metadata, embedded */

static void test_real_embedded(void **state) {
  (void)state;
  for (size_t k = 0; k < N_REAL; k++) {
    size_t len;
    uint8_t *json = read_real(k, &len);
    rng_state = 12345u + (uint32_t)k;
    buf b = {0};
    put_random(&b, 4096 + 37 * k);
    size_t at = put_embedded(&b, json, len, (int)k);
    put_random(&b, 1000 + 13 * k);
    expect_found(&b, at, json, len, REAL[k].model_type);

    /* At the very end of the data too: the length may claim exactly what remains. */
    b.n = at + len;
    expect_found(&b, at, json, len, REAL[k].model_type);
    free(b.p);
    free(json);
  }
}

/* The real files as JSON files: the whole _metadata, source_offset 0. */
static void test_real_json_files(void **state) {
  (void)state;
  for (size_t k = 0; k < N_REAL; k++) {
    size_t len;
    uint8_t *json = read_real(k, &len);
    char rel[512];
    snprintf(rel, sizeof rel, "realdata/mlc-lib-metadata/%s", REAL[k].name);
    mpk_error err;
    mpk_mlc_metadata *md = NULL;
    int rc = mpk_mlc_metadata_load(tu_shared(rel), &md, &err);
    if (rc) fail_msg("%s", tu_err(&err));
    assert_int_equal(md->json_len, len);
    assert_memory_equal(md->json, json, len);
    assert_int_equal(md->source_offset, 0);
    assert_string_equal(md->model_type, REAL[k].model_type);
    assert_string_equal(md->kv_state_kind, "kv_cache");
    assert_null(md->artifact);
    mpk_mlc_metadata_free(md);
    free(json);
  }
}

/* A BOM and leading whitespace: the JSON text starts after the BOM. */
static void test_json_file_bom(void **state) {
  (void)state;
  size_t len;
  uint8_t *json = read_real(3, &len);
  buf b = {0};
  put(&b, "\xEF\xBB\xBF \n", 5);
  put(&b, json, len);
  char path[512];
  tmp_file(path, sizeof path, "md.json");
  write_file(path, b.p, b.n);
  mpk_error err;
  mpk_mlc_metadata *md = NULL;
  int rc = mpk_mlc_metadata_load(path, &md, &err);
  if (rc) fail_msg("%s", tu_err(&err));
  assert_int_equal(md->source_offset, 3);
  assert_int_equal(md->json_len, len + 2);
  assert_memory_equal(md->json, b.p + 3, len + 2);
  assert_string_equal(md->model_type, "qwen2");
  mpk_mlc_metadata_free(md);
  drop_file(path);
  free(b.p);
  free(json);
}

/* ---------------------------------------------------------------- decoys and conflicts */

static void test_decoys_before(void **state) {
  (void)state;
  size_t len;
  uint8_t *json = read_real(0, &len);
  rng_state = 7;
  buf b = {0};
  put_random(&b, 100);
  /* a '{' after a length far too large */
  put_u64(&b, UINT64_MAX);
  put(&b, "{\"model_type\":\"x\",\"params\":[]}", 30);
  /* a '{' after a length whose last byte is not '}' */
  put_u64(&b, 5);
  put(&b, "{\"a\":1}", 7);
  /* the right length, but not valid JSON */
  put_u64(&b, 6);
  put(&b, "{\"a\":}", 6);
  /* the right length, a JSON object, but without "params": ignored */
  const char *noparams = "{\"model_type\":\"llama\",\"kv_state_kind\":\"kv_cache\"}";
  put_u64(&b, strlen(noparams));
  put(&b, noparams, strlen(noparams));
  /* a JSON array, not an object */
  put_u64(&b, 2);
  put(&b, "[]", 2);
  put_random(&b, 50);
  size_t at = put_embedded(&b, json, len, 1);
  put_random(&b, 50);
  expect_found(&b, at, json, len, "llama");
  free(b.p);
  free(json);
}

static void test_identical_copies(void **state) {
  (void)state;
  size_t len;
  uint8_t *json = read_real(4, &len);
  rng_state = 99;
  buf b = {0};
  put_random(&b, 300);
  size_t at = put_embedded(&b, json, len, 0);
  put_random(&b, 300);
  put_embedded(&b, json, len, 2); /* a second copy, e.g. another object in a .tar */
  put_random(&b, 30);
  expect_found(&b, at, json, len, "qwen2");
  free(b.p);
  free(json);
}

static void test_two_different(void **state) {
  (void)state;
  size_t l1, l2;
  uint8_t *j1 = read_real(0, &l1), *j2 = read_real(3, &l2);
  rng_state = 5;
  buf b = {0};
  put_random(&b, 200);
  size_t a1 = put_embedded(&b, j1, l1, 0);
  put_random(&b, 200);
  size_t a2 = put_embedded(&b, j2, l2, 1);
  put_random(&b, 200);
  mpk_error err;
  size_t start, n;
  assert_int_equal(mpk_mlc_metadata_find(b.p, b.n, &start, &n, &err), MPK_EMALFORMED);
  expect_fail(b.p, b.n, MPK_EMALFORMED, &err);
  char o1[32], o2[32];
  snprintf(o1, sizeof o1, "%zu", a1);
  snprintf(o2, sizeof o2, "%zu", a2);
  assert_non_null(strstr(err.message, "2 different _metadata"));
  assert_non_null(strstr(err.message, o1));
  assert_non_null(strstr(err.message, o2));
  assert_string_equal(err.file, "lib.wasm");
  free(b.p);
  free(j1);
  free(j2);
}

static void test_none(void **state) {
  (void)state;
  rng_state = 1;
  buf b = {0};
  put_random(&b, 100000);
  mpk_error err;
  expect_fail(b.p, b.n, MPK_ENOTFOUND, &err);
  assert_non_null(strstr(err.message, "no _metadata JSON"));
  assert_non_null(strstr(err.message, "lib.wasm"));
  size_t start, n;
  assert_int_equal(mpk_mlc_metadata_find(b.p, b.n, &start, &n, &err), MPK_ENOTFOUND);
  /* empty and tiny inputs */
  expect_fail(NULL, 0, MPK_ENOTFOUND, &err);
  expect_fail("{", 1, MPK_EMALFORMED, &err); /* looks like JSON: its parse error */
  expect_fail("\x02\0\0\0\0\0\0\0{}", 10, MPK_ENOTFOUND, &err);
  /* the shortest possible match: {"model_type":0,"params":0}, 27 bytes, at the very end */
  static const char tiny[] = "\x1b\0\0\0\0\0\0\0{\"model_type\":0,\"params\":0}";
  assert_int_equal(mpk_mlc_metadata_find(tiny, sizeof tiny - 1, &start, &n, &err), 0);
  assert_int_equal(start, 8);
  assert_int_equal(n, 27);
  /* ...whose model_type is not a string */
  expect_fail(tiny, sizeof tiny - 1, MPK_EMALFORMED, &err);
  assert_string_equal(err.pointer, "/model_type");
  free(b.p);
}

/* The length claims more than remains: not found, and no read past the end (ASan). */
static void test_length_past_end(void **state) {
  (void)state;
  size_t len;
  uint8_t *json = read_real(6, &len);
  rng_state = 3;
  buf b = {0};
  put_random(&b, 64);
  put_u64(&b, len + 1);
  put(&b, json, len);
  mpk_error err;
  expect_fail(b.p, b.n, MPK_ENOTFOUND, &err);
  /* every truncation of a valid embedding: found only when complete, never a crash */
  b.n = 0;
  put_random(&b, 64);
  size_t at = put_embedded(&b, json, len, 0);
  for (size_t cut = at - 9; cut < b.n; cut += (b.n - cut > 64 ? 997 : 1)) {
    uint8_t *copy = malloc(cut ? cut : 1); /* exact-size copy so ASan sees overreads */
    memcpy(copy, b.p, cut);
    size_t start, n;
    int rc = mpk_mlc_metadata_find(copy, cut, &start, &n, &err);
    assert_int_equal(rc, MPK_ENOTFOUND);
    free(copy);
  }
  size_t start, n;
  assert_int_equal(mpk_mlc_metadata_find(b.p, b.n, &start, &n, &err), 0);
  assert_int_equal(start, at);
  free(b.p);
  free(json);
}

/* A binary that happens to start with '{' is still scanned. */
static void test_binary_starting_with_brace(void **state) {
  (void)state;
  const char *md = "{\"model_type\":\"qwen2\",\"params\":[]}";
  buf b = {0};
  put(&b, "{\x7f\x45LF", 5);
  rng_state = 11;
  put_random(&b, 40);
  size_t at = put_embedded(&b, md, strlen(md), 0);
  mpk_mlc_metadata *m = NULL;
  mpk_error err;
  int rc = mpk_mlc_metadata_from_bytes(b.p, b.n, "x.so", &m, &err);
  if (rc) fail_msg("%s", tu_err(&err));
  assert_int_equal(m->source_offset, (int64_t)at);
  assert_string_equal(m->model_type, "qwen2");
  assert_null(m->kv_state_kind); /* absent: WebLLM reads it as kv_cache */
  mpk_mlc_metadata_free(m);
  free(b.p);
}

/* ---------------------------------------------------------------- JSON-file forms and fields */

static void test_artifact_only_file(void **state) {
  (void)state;
  const char *text = "  " ARTIFACT "\n";
  mpk_error err;
  mpk_mlc_metadata *md = NULL;
  int rc = mpk_mlc_metadata_from_bytes(text, strlen(text), "artifact.json", &md, &err);
  if (rc) fail_msg("%s", tu_err(&err));
  assert_null(md->model_type);
  assert_null(md->kv_state_kind);
  assert_int_equal(md->json_len, strlen(text));
  assert_memory_equal(md->json, text, strlen(text));
  assert_int_equal(md->source_offset, 0);
  assert_non_null(md->artifact);
  assert_int_equal(md->artifact->n_programs, 1);
  assert_string_equal(md->artifact->programs[0].name, "generation");
  mpk_mlc_metadata_free(md);

  char path[512];
  tmp_file(path, sizeof path, "artifact.json");
  write_file(path, text, strlen(text));
  rc = mpk_mlc_metadata_load(path, &md, &err);
  if (rc) fail_msg("%s", tu_err(&err));
  assert_non_null(md->artifact);
  assert_null(md->model_type);
  mpk_mlc_metadata_free(md);
  drop_file(path);
}

static void test_embedded_artifact(void **state) {
  (void)state;
  const char *md_text =
      "{\"model_type\":\"qwen2\",\"kv_state_kind\":null,\"params\":[],\"artifact\":" ARTIFACT "}";
  buf b = {0};
  rng_state = 17;
  put_random(&b, 33);
  size_t at = put_embedded(&b, md_text, strlen(md_text), 2);
  put_random(&b, 33);
  mpk_error err;
  mpk_mlc_metadata *md = NULL;
  int rc = mpk_mlc_metadata_from_bytes(b.p, b.n, "lib.wasm", &md, &err);
  if (rc) fail_msg("%s", tu_err(&err));
  assert_int_equal(md->source_offset, (int64_t)at);
  assert_null(md->kv_state_kind);
  assert_non_null(md->artifact);
  assert_string_equal(md->artifact->interface_id, "sha256:" HEX64);
  mpk_mlc_metadata_free(md);
  free(b.p);
}

static void test_malformed_artifact(void **state) {
  (void)state;
  /* interface_id is not a sha256 id: the artifact parser's error, pointer inside the artifact */
  const char *md_text =
      "{\"model_type\":\"qwen2\",\"params\":[],\"artifact\":{\"schema\":\"mlc.compiled-program\","
      "\"schema_version\":1,\"interface_id\":\"sha256:nope\",\"parameter_schema_id\":\"sha256:" HEX64
      "\",\"programs\":{\"generation\":{\"kind\":\"token_generation\",\"exports\":{\"embed_tokens\":"
      "\"embed\"}}},\"resources\":{\"required_features\":[],\"max_storage_buffer_binding_size\":0,"
      "\"estimated_device_memory_bytes\":0}}}";
  mpk_error err;
  expect_fail(md_text, strlen(md_text), MPK_EMALFORMED, &err);
  assert_string_equal(err.file, "_metadata.artifact");
  assert_string_equal(err.pointer, "/interface_id");

  /* the same embedded in a library */
  buf b = {0};
  rng_state = 23;
  put_random(&b, 64);
  put_embedded(&b, md_text, strlen(md_text), 0);
  expect_fail(b.p, b.n, MPK_EMALFORMED, &err);
  assert_string_equal(err.pointer, "/interface_id");
  free(b.p);

  /* an artifact-only file with a bad artifact names the file itself */
  const char *bad_art = "{\"schema\":\"mlc.compiled-program\",\"schema_version\":1}";
  expect_fail(bad_art, strlen(bad_art), MPK_EMALFORMED, &err);
  assert_string_equal(err.file, "lib.wasm");
}

static void test_kv_state_kind_not_string(void **state) {
  (void)state;
  const char *md_text = "{\"model_type\":\"qwen2\",\"kv_state_kind\":3,\"params\":[]}";
  mpk_error err;
  expect_fail(md_text, strlen(md_text), MPK_EMALFORMED, &err);
  assert_string_equal(err.pointer, "/kv_state_kind");
  assert_non_null(strstr(err.message, "expected a string"));

  buf b = {0};
  rng_state = 29;
  put_random(&b, 64);
  put_embedded(&b, md_text, strlen(md_text), 1);
  expect_fail(b.p, b.n, MPK_EMALFORMED, &err);
  assert_string_equal(err.pointer, "/kv_state_kind");
  free(b.p);
}

static void test_json_neither_shape(void **state) {
  (void)state;
  mpk_error err;
  const char *t1 = "{\"model_type\":\"qwen2\"}";
  expect_fail(t1, strlen(t1), MPK_EMALFORMED, &err);
  assert_non_null(strstr(err.message, "\"params\""));
  const char *t2 = "{\"schema\":\"something-else\"}";
  expect_fail(t2, strlen(t2), MPK_EMALFORMED, &err);
  assert_non_null(strstr(err.message, "mlc.compiled-program"));
  /* a broken JSON file reports its parse error, not "not found" */
  const char *t3 = "{\"model_type\":\"qwen2\",\"params\":[],}";
  expect_fail(t3, strlen(t3), MPK_EMALFORMED, &err);
  assert_non_null(strstr(err.message, "invalid JSON"));
}

static void test_arguments(void **state) {
  (void)state;
  mpk_error err;
  size_t s, n;
  mpk_mlc_metadata *md;
  assert_int_equal(mpk_mlc_metadata_find(NULL, 5, &s, &n, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_metadata_find("x", 1, NULL, &n, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_metadata_from_bytes("x", 1, NULL, NULL, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_metadata_load(NULL, &md, &err), MPK_EINVAL);
  assert_int_equal(mpk_mlc_metadata_load("/nonexistent/lib.wasm", &md, &err), MPK_ENOTFOUND);
  assert_null(md);
  mpk_mlc_metadata_free(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_real_embedded),
      cmocka_unit_test(test_real_json_files),
      cmocka_unit_test(test_json_file_bom),
      cmocka_unit_test(test_decoys_before),
      cmocka_unit_test(test_identical_copies),
      cmocka_unit_test(test_two_different),
      cmocka_unit_test(test_none),
      cmocka_unit_test(test_length_past_end),
      cmocka_unit_test(test_binary_starting_with_brace),
      cmocka_unit_test(test_artifact_only_file),
      cmocka_unit_test(test_embedded_artifact),
      cmocka_unit_test(test_malformed_artifact),
      cmocka_unit_test(test_kv_state_kind_not_string),
      cmocka_unit_test(test_json_neither_shape),
      cmocka_unit_test(test_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
