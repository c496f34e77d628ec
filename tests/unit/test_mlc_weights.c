/* Weights: tensor caches (real and synthetic with real shard bytes), parameter_schema_id,
   resources, and matching a library's parameters to the weights. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "mlc/mlc.h"
#include "testutil.h"

/* ---------------------------------------------------------------- producer reference vectors */

static mpk_mlc_params *params_of(const json_t *list) {
  char *text = tu_dumps(list);
  mpk_mlc_params *p = NULL;
  mpk_error err;
  if (mpk_mlc_params_parse(text, strlen(text), "params", &p, &err)) fail_msg("params: %s", tu_err(&err));
  free(text);
  return p;
}

static json_t *reference_cases(const char *key, json_t **root) {
  *root = tu_load_json(tu_shared("conformance/mlc-webllm/producer_python_reference.json"));
  json_t *cases = json_object_get(json_object_get(*root, "cases"), key);
  assert_true(json_array_size(cases) > 0);
  return cases;
}

static void test_parameter_schema_vectors(void **state) {
  (void)state;
  json_t *root, *cases = reference_cases("parameter_schema", &root), *c;
  size_t i, ok = 0, refused = 0;
  json_array_foreach(cases, i, c) {
    mpk_mlc_params *p = params_of(json_object_get(c, "params"));
    char id[MPK_SHA256_ID_SIZE];
    mpk_error err;
    int rc = mpk_mlc_parameter_schema_id(p, id, &err);
    if (json_object_get(c, "error")) {
      assert_int_equal(rc, MPK_EMALFORMED);
      assert_non_null(strstr(err.message, json_string_value(json_object_get(c, "message"))));
      refused++;
    } else {
      assert_int_equal(rc, 0);
      assert_string_equal(id, json_string_value(json_object_get(c, "parameter_schema_id")));
      ok++;
    }
    mpk_mlc_params_free(p);
  }
  assert_int_equal(ok, 4);
  assert_int_equal(refused, 1);
  json_decref(root);
}

static void test_resources_vectors(void **state) {
  (void)state;
  json_t *root, *cases = reference_cases("resources", &root), *c;
  size_t i, ran = 0;
  json_array_foreach(cases, i, c) {
    mpk_mlc_params *p = params_of(json_object_get(c, "params"));
    mpk_mlc_named_dim dims[8];
    size_t nd = 0;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(c, "symbolic_sizes"), k, v) dims[nd++] = (mpk_mlc_named_dim){k, json_integer_value(v)};
    mpk_mlc_resources r;
    mpk_error err;
    int rc = mpk_mlc_params_resources(p, dims, nd, &r, &err);
    if (json_object_get(c, "error")) {
      assert_int_not_equal(rc, 0);
      assert_string_equal(err.message, json_string_value(json_object_get(c, "message")));
    } else {
      if (rc) fail_msg("case %zu: %s", i, tu_err(&err));
      json_t *ok = json_object_get(c, "ok");
      assert_int_equal(r.max_storage_buffer_binding_size,
                       json_integer_value(json_object_get(ok, "max_storage_buffer_binding_size")));
      assert_int_equal(r.estimated_device_memory_bytes,
                       json_integer_value(json_object_get(ok, "estimated_device_memory_bytes")));
    }
    mpk_mlc_params_free(p);
    ran++;
  }
  assert_int_equal(ran, 5);
  json_decref(root);
}

/* ---------------------------------------------------------------- real data */

static const struct {
  const char *dir, *index;
} caches[] = {
    {"ReaderLM-v2-q4f16_1-MLC", "tensor-cache.json"},
    {"phi-3-mini-128k-instruct-MLC", "ndarray-cache.json"},
    {"webllm-med-chatbot-model", "tensor-cache.json"},
    {"WizardLM-70B-V1.0-q4f16_1-MLC", "ndarray-cache.json"},
};
#define N_CACHES (sizeof caches / sizeof caches[0])

static const char *const libs[] = {
    "Llama-3.2-1B-Instruct-q0f16-ctx4k_cs1k-webgpu",     "Mistral-7B-Instruct-v0.3-q4f16_1-ctx4k_cs1k-webgpu",
    "Phi-3-mini-4k-instruct-q4f16_1-ctx4k_cs1k-webgpu",  "Qwen2-0.5B-Instruct-q4f32_1-ctx4k_cs1k-webgpu",
    "Qwen2-1.5B-Instruct-q4f16_1-ctx4k_cs1k-webgpu",     "gemma-2-2b-it-q4f16_1-ctx4k_cs1k-webgpu",
    "snowflake-arctic-embed-s-q0f32-ctx512_cs512_batch4-webgpu",
};
#define N_LIBS (sizeof libs / sizeof libs[0])

static mpk_mlc_tensor_cache *load_cache(size_t i) {
  char rel[512];
  snprintf(rel, sizeof rel, "realdata/mlc-packages/%s/%s", caches[i].dir, caches[i].index);
  mpk_mlc_tensor_cache *tc = NULL;
  mpk_error err;
  if (mpk_mlc_tensor_cache_load(tu_shared(rel), &tc, &err)) fail_msg("%s: %s", rel, tu_err(&err));
  return tc;
}

/* A reference computation straight from the JSON: bytes per record from shape and dtype. */
static void reference_resources(size_t i, int64_t *max, int64_t *sum, double *param_bytes) {
  char rel[512];
  snprintf(rel, sizeof rel, "realdata/mlc-packages/%s/%s", caches[i].dir, caches[i].index);
  json_t *root = tu_load_json(tu_shared(rel)), *shard, *rec;
  size_t a, b;
  *max = *sum = 0;
  json_array_foreach(json_object_get(root, "records"), a, shard) {
    json_array_foreach(json_object_get(shard, "records"), b, rec) {
      const char *dt = json_string_value(json_object_get(rec, "dtype"));
      int64_t n = strcmp(dt, "float16") == 0 ? 2 : strcmp(dt, "uint32") == 0 || strcmp(dt, "float32") == 0 ? 4 : -1;
      assert_true(n > 0);
      size_t d;
      json_t *x;
      json_array_foreach(json_object_get(rec, "shape"), d, x) n *= json_integer_value(x);
      *sum += n;
      if (n > *max) *max = n;
    }
  }
  json_t *pb = json_object_get(json_object_get(root, "metadata"), "ParamBytes");
  *param_bytes = pb ? json_number_value(pb) : -1;
  json_decref(root);
}

static void test_realdata_caches(void **state) {
  (void)state;
  for (size_t i = 0; i < N_CACHES; i++) {
    mpk_mlc_tensor_cache *tc = load_cache(i);
    mpk_mlc_params *p;
    mpk_error err;
    assert_int_equal(mpk_mlc_params_from_tensor_cache(tc, &p, &err), 0);
    assert_int_equal(p->n, tc->n_records);
    assert_int_equal(tc->param_size, (int64_t)tc->n_records);
    mpk_mlc_resources r;
    assert_int_equal(mpk_mlc_params_resources(p, NULL, 0, &r, &err), 0);
    int64_t max, sum;
    double pb;
    reference_resources(i, &max, &sum, &pb);
    assert_int_equal(r.max_storage_buffer_binding_size, max);
    assert_int_equal(r.estimated_device_memory_bytes, sum);
    if (pb >= 0) assert_true((double)r.estimated_device_memory_bytes == pb);
    if (i == 0) { /* ReaderLM-v2: the figures the issue anchors */
      assert_int_equal(r.max_storage_buffer_binding_size, 116686848);
      assert_int_equal(r.estimated_device_memory_bytes, 868547584);
    }
    mpk_mlc_params_free(p);
    mpk_mlc_tensor_cache_free(tc);
  }
}

static void test_realdata_library_pairs(void **state) {
  (void)state;
  size_t matched = 0, refused = 0;
  for (size_t l = 0; l < N_LIBS; l++) {
    char rel[512];
    snprintf(rel, sizeof rel, "realdata/mlc-lib-metadata/%s.metadata.json", libs[l]);
    mpk_mlc_metadata *md;
    mpk_error err;
    if (mpk_mlc_metadata_load(tu_shared(rel), &md, &err)) fail_msg("%s", tu_err(&err));
    mpk_mlc_params *lp;
    assert_int_equal(mpk_mlc_params_from_metadata(md, &lp, &err), 0);
    for (size_t c = 0; c < N_CACHES; c++) {
      mpk_mlc_tensor_cache *tc = load_cache(c);
      mpk_mlc_params *wp;
      assert_int_equal(mpk_mlc_params_from_tensor_cache(tc, &wp, &err), 0);
      snprintf(rel, sizeof rel, "realdata/mlc-packages/%s/mlc-chat-config.json", caches[c].dir);
      mpk_mlc_named_dim *dims = NULL;
      size_t nd = 0;
      int drc = mpk_mlc_named_dims_from_chat_config(tu_shared(rel), &dims, &nd, &err);
      assert_true(drc == 0 || drc == MPK_EMALFORMED); /* WizardLM's config has no model_config */
      int rc = mpk_mlc_params_compare(lp, wp, dims, nd, "library", "weights", &err);
      bool should = (l == 4 && c == 0) || (l == 2 && c == 1);
      if (should) {
        if (rc) fail_msg("%s vs %s: %s", libs[l], caches[c].dir, tu_err(&err));
        matched++;
      } else {
        if (rc == 0) fail_msg("%s vs %s: matched, must not", libs[l], caches[c].dir);
        assert_true(rc == MPK_EMISMATCH || rc == MPK_ENOTFOUND);
        assert_non_null(strstr(err.message, "parameter ")); /* names the first differing parameter */
        refused++;
      }
      mpk_free(dims);
      mpk_mlc_params_free(wp);
      mpk_mlc_tensor_cache_free(tc);
    }
    mpk_mlc_params_free(lp);
    mpk_mlc_metadata_free(md);
  }
  assert_int_equal(matched, 2);
  assert_int_equal(refused, N_LIBS * N_CACHES - 2);
}

/* Same names, shapes, dtypes: the same identity from the library and from the weights. */
static void test_realdata_schema_id_agrees(void **state) {
  (void)state;
  mpk_mlc_metadata *md;
  mpk_error err;
  assert_int_equal(mpk_mlc_metadata_load(tu_shared("realdata/mlc-lib-metadata/Qwen2-1.5B-Instruct-q4f16_1-ctx4k_cs1k-webgpu.metadata.json"), &md, &err), 0);
  mpk_mlc_params *lp, *wp;
  assert_int_equal(mpk_mlc_params_from_metadata(md, &lp, &err), 0);
  mpk_mlc_tensor_cache *tc = load_cache(0);
  assert_int_equal(mpk_mlc_params_from_tensor_cache(tc, &wp, &err), 0);
  char a[MPK_SHA256_ID_SIZE], b[MPK_SHA256_ID_SIZE];
  assert_int_equal(mpk_mlc_parameter_schema_id(lp, a, &err), 0);
  assert_int_equal(mpk_mlc_parameter_schema_id(wp, b, &err), 0);
  assert_string_equal(a, b);
  mpk_mlc_params_free(lp);
  mpk_mlc_params_free(wp);
  mpk_mlc_tensor_cache_free(tc);
  mpk_mlc_metadata_free(md);
}

/* ---------------------------------------------------------------- synthetic packages, real bytes */

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  fclose(f);
}

static void md5_hex(const uint8_t *data, size_t n, char out[33]) {
  uint8_t d[16];
  unsigned int len;
  EVP_Digest(data, n, d, &len, EVP_md5(), NULL);
  for (int i = 0; i < 16; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

/* A cache of one 64-byte shard holding "a" float32[8] at 0 and "b" float16[16] at 32; the
   format string lets each case bend one field. */
static char *cache_text(const char *path, const char *md5, const char *b_name, int b_offset, int b_nbytes) {
  static char buf[2048];
  snprintf(buf, sizeof buf,
           "{\"metadata\":{\"ParamSize\":2,\"ParamBytes\":64.0},\"records\":[{\"dataPath\":\"%s\","
           "\"format\":\"raw-shard\",\"nbytes\":64,\"md5sum\":\"%s\",\"records\":["
           "{\"name\":\"a\",\"shape\":[8],\"dtype\":\"float32\",\"format\":\"raw\",\"nbytes\":32,\"byteOffset\":0},"
           "{\"name\":\"%s\",\"shape\":[16],\"dtype\":\"float16\",\"format\":\"raw\",\"nbytes\":%d,\"byteOffset\":%d}]}]}",
           path, md5, b_name, b_nbytes, b_offset);
  return buf;
}

typedef struct {
  char dir[256];
  uint8_t shard[64];
  char md5[33];
} synth;

static void synth_make(synth *s) {
  snprintf(s->dir, sizeof s->dir, "%s", tu_tmpdir());
  for (int i = 0; i < 64; i++) s->shard[i] = (uint8_t)(i * 37 + 11);
  md5_hex(s->shard, 64, s->md5);
  char p[512];
  snprintf(p, sizeof p, "%s/params_shard_0.bin", s->dir);
  write_file(p, s->shard, 64);
}

static void synth_remove(synth *s) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
  assert_int_equal(system(cmd), 0);
}

static int parse_text(const char *text, mpk_mlc_tensor_cache **tc, mpk_error *err) {
  mpk_error_clear(err);
  return mpk_mlc_tensor_cache_parse(text, strlen(text), "tensor-cache.json", tc, err);
}

static int verify(synth *s, const char *text, mpk_error *err) {
  mpk_mlc_tensor_cache *tc;
  if (parse_text(text, &tc, err)) fail_msg("parse: %s", tu_err(err));
  int rc = mpk_mlc_tensor_cache_verify(tc, s->dir, 2, NULL, NULL, NULL, NULL, err);
  mpk_mlc_tensor_cache_free(tc);
  return rc;
}

static void test_synthetic_good(void **state) {
  (void)state;
  synth s;
  synth_make(&s);
  mpk_error err;
  if (verify(&s, cache_text("params_shard_0.bin", s.md5, "b", 32, 32), &err)) fail_msg("%s", tu_err(&err));
  synth_remove(&s);
}

static void test_synthetic_shard_damage(void **state) {
  (void)state;
  synth s;
  synth_make(&s);
  mpk_error err;
  char p[512];
  snprintf(p, sizeof p, "%s/params_shard_0.bin", s.dir);
  const char *text = cache_text("params_shard_0.bin", s.md5, "b", 32, 32);
  write_file(p, s.shard, 60); /* truncated */
  assert_int_equal(verify(&s, text, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.message, "truncated"));
  uint8_t flipped[64];
  memcpy(flipped, s.shard, 64);
  flipped[41] ^= 0x10; /* one flipped bit */
  write_file(p, flipped, 64);
  assert_int_equal(verify(&s, text, &err), MPK_EMISMATCH);
  assert_non_null(strstr(err.message, "does not equal md5sum"));
  assert_int_equal(unlink(p), 0); /* missing */
  assert_int_equal(verify(&s, text, &err), MPK_ENOTFOUND);
  assert_int_equal(symlink("/etc/hostname", p), 0); /* a link out of the package */
  assert_int_equal(verify(&s, text, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "outside the package"));
  synth_remove(&s);
}

static void test_synthetic_bad_layouts(void **state) {
  (void)state;
  mpk_mlc_tensor_cache *tc = NULL;
  mpk_error err;
  const char *md5 = "0123456789abcdef0123456789abcdef";
  static const struct {
    const char *path, *name;
    int offset, nbytes;
    const char *msg, *pointer;
  } cases[] = {
      {"params_shard_0.bin", "b", 16, 32, "overlaps record \"a\"", "/records/0/records/1"},
      {"params_shard_0.bin", "b", 40, 32, "lies outside its shard", "/records/0/records/1"},
      {"params_shard_0.bin", "b", 32, 30, "does not equal elements x 2-byte float16 = 32", "/records/0/records/1/nbytes"},
      {"params_shard_0.bin", "a", 32, 32, "appears more than once", "/records/0/records/1/name"},
      {"../params_shard_0.bin", "b", 32, 32, "leaves the package", "/records/0/dataPath"},
      {"/etc/params_shard_0.bin", "b", 32, 32, "is absolute", "/records/0/dataPath"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int rc = parse_text(cache_text(cases[i].path, md5, cases[i].name, cases[i].offset, cases[i].nbytes), &tc, &err);
    if (rc == 0) fail_msg("case %zu accepted", i);
    if (!strstr(err.message, cases[i].msg)) fail_msg("case %zu: %s", i, tu_err(&err));
    assert_string_equal(err.pointer, cases[i].pointer);
    assert_null(tc);
  }
  /* Unknown dtype and a wrong md5sum format are refused too. */
  char text[2048];
  snprintf(text, sizeof text, "%s", cache_text("s.bin", md5, "b", 32, 32));
  char *dt = strstr(text, "float16");
  memcpy(dt, "float17", 7);
  assert_int_equal(parse_text(text, &tc, &err), MPK_EUNSUPPORTED);
  assert_int_equal(parse_text(cache_text("s.bin", "ABC", "b", 32, 32), &tc, &err), MPK_EMALFORMED);
  assert_string_equal(err.pointer, "/records/0/md5sum");
}

typedef struct {
  uint64_t last, total;
  int calls, cancel_after;
} progress_log;

static int on_progress(void *ctx, uint64_t done, uint64_t total) {
  progress_log *p = ctx;
  assert_true(done >= p->last);
  p->last = done;
  p->total = total;
  p->calls++;
  return p->cancel_after && p->calls >= p->cancel_after;
}

/* Several shards of different sizes, two workers (handed out largest first), results in the
   caller's order, progress monotonic and complete, cancellation honoured. */
static void test_parallel_hash_and_progress(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  enum { N = 5, MAX = 5 << 20 };
  mpk_digest_job jobs[N];
  uint8_t *data = malloc(MAX);
  char paths[N][512], want[N][65];
  uint64_t total = 0;
  for (int f = 0; f < N; f++) {
    size_t size = (size_t)(f % 2 ? N - f : f + 1) << 20; /* 1, 4, 3, 2, 5 MiB: not sorted */
    for (size_t i = 0; i < size; i++) data[i] = (uint8_t)(i * (size_t)(f + 3));
    snprintf(paths[f], sizeof paths[f], "%s/shard%d.bin", dir, f);
    write_file(paths[f], data, size);
    uint8_t d[32];
    unsigned int len;
    EVP_Digest(data, size, d, &len, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++) sprintf(want[f] + 2 * i, "%02x", d[i]);
    jobs[f] = (mpk_digest_job){.path = paths[f], .algo = MPK_DIGEST_SHA256, .expected_size = size};
    total += size;
  }
  progress_log log = {0};
  mpk_error err;
  assert_int_equal(mpk_digest_files(jobs, N, 2, on_progress, &log, &err), 0);
  for (int f = 0; f < N; f++) {
    assert_int_equal(jobs[f].code, 0);
    assert_int_equal(jobs[f].size, jobs[f].expected_size);
    assert_string_equal(jobs[f].hex, want[f]);
  }
  assert_int_equal(log.last, total);
  assert_int_equal(log.total, total);
  progress_log stop = {.cancel_after = 2};
  assert_int_equal(mpk_digest_files(jobs, N, 2, on_progress, &stop, &err), MPK_ECANCELLED);
  assert_true(stop.last < total);
  free(data);
  tu_sh("rm -rf '%s'", dir);
}

static void test_dtypes(void **state) {
  (void)state;
  assert_int_equal(mpk_dtype_bits("float16"), 16);
  assert_int_equal(mpk_dtype_bits("bfloat16"), 16);
  assert_int_equal(mpk_dtype_bits("int4"), 4);
  assert_int_equal(mpk_dtype_bits("float8_e4m3fn"), 8);
  assert_int_equal(mpk_dtype_bits("uint32"), 32);
  assert_int_equal(mpk_dtype_bits("float17"), 0); /* unknown: 0, never a negative that reads as MPK_E* */
  assert_int_equal(mpk_dtype_bits(NULL), 0);
}

/* tensor_cache_scan.c reads the real caches without a tree, and reads what the tree holds. */
static void test_realdata_caches_without_tree(void **state) {
  (void)state;
  for (size_t i = 0; i < N_CACHES; i++) {
    char rel[512];
    snprintf(rel, sizeof rel, "realdata/mlc-packages/%s/%s", caches[i].dir, caches[i].index);
    size_t len;
    char *text = (char *)tu_read_file(tu_shared(rel), &len);
    mpk_arena *a = mpk_arena_new();
    mpk_mlc_tensor_cache tc = {0};
    assert_int_equal(mpk_mlc_tensor_cache_scan(text, len, a, &tc), 0);
    json_t *root = tu_load_json(tu_shared(rel)), *shard, *rec;
    size_t k, j, at = 0;
    assert_int_equal(tc.n_shards, json_array_size(json_object_get(root, "records")));
    json_array_foreach(json_object_get(root, "records"), k, shard) {
      const mpk_mlc_shard *sh = &tc.shards[k];
      assert_string_equal(sh->data_path, json_string_value(json_object_get(shard, "dataPath")));
      assert_string_equal(sh->format, json_string_value(json_object_get(shard, "format")));
      assert_int_equal(sh->nbytes, json_integer_value(json_object_get(shard, "nbytes")));
      json_t *md5 = json_object_get(shard, "md5sum");
      if (md5) assert_string_equal(sh->md5sum, json_string_value(md5));
      else assert_null(sh->md5sum);
      assert_int_equal(sh->first_record, at);
      assert_int_equal(sh->n_records, json_array_size(json_object_get(shard, "records")));
      json_array_foreach(json_object_get(shard, "records"), j, rec) {
        const mpk_mlc_tensor_record *r = &tc.records[at++];
        assert_string_equal(r->name, json_string_value(json_object_get(rec, "name")));
        assert_string_equal(r->dtype, json_string_value(json_object_get(rec, "dtype")));
        assert_string_equal(r->format, json_string_value(json_object_get(rec, "format")));
        assert_int_equal(r->nbytes, json_integer_value(json_object_get(rec, "nbytes")));
        assert_int_equal(r->byte_offset, json_integer_value(json_object_get(rec, "byteOffset")));
        assert_int_equal(r->shard, k);
        json_t *shape = json_object_get(rec, "shape");
        assert_int_equal(r->ndim, json_array_size(shape));
        for (size_t d = 0; d < r->ndim; d++) assert_int_equal(r->shape[d], json_integer_value(json_array_get(shape, d)));
      }
    }
    assert_int_equal(tc.n_records, at);
    json_t *meta = json_object_get(root, "metadata");
    assert_int_equal(tc.has_param_size, json_object_get(meta, "ParamSize") != NULL);
    assert_int_equal(tc.param_size, json_integer_value(json_object_get(meta, "ParamSize")));
    assert_int_equal(tc.has_param_bytes, json_object_get(meta, "ParamBytes") != NULL);
    if (tc.has_param_bytes) assert_true(tc.param_bytes == json_number_value(json_object_get(meta, "ParamBytes")));
    json_decref(root);
    mpk_arena_free(a);
    free(text);
  }
}

/* What the tree-free reader gives up on, the tree path reads: the same result when the document is
   valid, the tree path's error when it is not. */
static void test_cache_reader_gives_up(void **state) {
  (void)state;
  static const char *const head = "{\"metadata\":{\"ParamSize\":%s},\"records\":[{\"dataPath\":\"%s\","
                                  "\"format\":\"raw-shard\",\"nbytes\":64,\"records\":[{\"name\":\"a\",\"shape\":[%s,4],"
                                  "\"dtype\":\"float32\",\"format\":\"raw\",\"nbytes\":%s,\"byteOffset\":0%s}]}]}";
  static const struct {
    const char *size, *path, *dim, *nbytes, *extra;
    int rc;
    const char *pointer, *message;
  } cases[] = {
      {"1", "p.bin", "2", "32", "", 0, NULL, NULL},                /* taken without a tree */
      {"1.0", "p.bin", "2.0", "32", ",\"x\":{\"y\":[1]}", 0, NULL, NULL}, /* integral reals: the tree path */
      {"1", "p.bin", "2", "-32", "", MPK_EMALFORMED, "/records/0/records/0/nbytes",
       "expected an integer greater than or equal to 0"},
      {"1", "p.bin", "2", "31", "", MPK_EMALFORMED, "/records/0/records/0/nbytes", "nbytes 31 does not equal"},
      {"1", "../p.bin", "2", "32", "", MPK_EMALFORMED, "/records/0/dataPath", "shard path \"../p.bin\""},
      {"1", "p.bin", "2", "32", ",\"name\":\"b\"", MPK_EMALFORMED, "", "invalid JSON: duplicate object key"},
      {"\"1\"", "p.bin", "2", "32", "", MPK_EMALFORMED, "/metadata/ParamSize", "expected an integer"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[1024];
    snprintf(text, sizeof text, head, cases[i].size, cases[i].path, cases[i].dim, cases[i].nbytes, cases[i].extra);
    mpk_arena *a = mpk_arena_new();
    mpk_mlc_tensor_cache scanned = {0};
    assert_int_equal(mpk_mlc_tensor_cache_scan(text, strlen(text), a, &scanned) == 0, i == 0);
    mpk_arena_free(a);
    mpk_mlc_tensor_cache *tc = NULL;
    mpk_error err;
    int rc = parse_text(text, &tc, &err);
    assert_int_equal(rc, cases[i].rc);
    if (rc) {
      assert_string_equal(err.pointer, cases[i].pointer);
      if (!strstr(err.message, cases[i].message)) fail_msg("case %zu: %s", i, tu_err(&err));
      continue;
    }
    assert_int_equal(tc->param_size, 1);
    assert_int_equal(tc->n_records, 1);
    assert_int_equal(tc->records[0].ndim, 2);
    assert_int_equal(tc->records[0].shape[0], 2);
    assert_int_equal(tc->records[0].nbytes, 32);
    mpk_mlc_tensor_cache_free(tc);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parameter_schema_vectors),
      cmocka_unit_test(test_resources_vectors),
      cmocka_unit_test(test_realdata_caches),
      cmocka_unit_test(test_realdata_caches_without_tree),
      cmocka_unit_test(test_cache_reader_gives_up),
      cmocka_unit_test(test_realdata_library_pairs),
      cmocka_unit_test(test_realdata_schema_id_agrees),
      cmocka_unit_test(test_synthetic_good),
      cmocka_unit_test(test_synthetic_shard_damage),
      cmocka_unit_test(test_synthetic_bad_layouts),
      cmocka_unit_test(test_parallel_hash_and_progress),
      cmocka_unit_test(test_dtypes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
