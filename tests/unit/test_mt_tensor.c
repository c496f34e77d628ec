/* Tensor loading (mpk_mt_tensor_open: the size rule, the mapped view, DLPack) and the load gate
   (mpk_mt_load_gate: checksum precedence — the sidecar wins, the map is the fallback, neither is
   refused) on hand-made maps and on the conformance tiny package. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlpack/dlpack.h>

#include "core/endian.h"
#include "testutil.h"

#define LAYER "backbone.model.layers.0.self_attn.q_proj.base_layer"
#define BIN "w.bin"

static char tmp_root[256];
static char inf[512];

static int setup(void **state) {
  (void)state;
  snprintf(tmp_root, sizeof tmp_root, "%s", tu_tmpdir());
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tu_sh("rm -rf '%s'", tmp_root);
  return 0;
}

/* A fresh, empty inference directory. */
static const char *fresh_dir(void) {
  snprintf(inf, sizeof inf, "%s/inference", tmp_root);
  tu_sh("rm -rf '%s' && mkdir -p '%s'", inf, inf);
  return inf;
}

static void write_bytes(const char *name, size_t n) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", inf, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  for (size_t i = 0; i < n; i++) fputc((int)(i * 7 + 1) & 0xff, f);
  fclose(f);
}

static void write_text(const char *name, const char *text) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", inf, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* The SHA-256 hex of INF/name. */
static const char *digest_of(const char *name) {
  static char hex[65];
  char path[700];
  snprintf(path, sizeof path, "%s/%s", inf, name);
  size_t len;
  uint8_t *data = tu_read_file(path, &len);
  char id[MPK_SHA256_ID_SIZE];
  mpk_sha256_id(data, len, id);
  free(data);
  snprintf(hex, sizeof hex, "%s", id + 7);
  return hex;
}

/* A one-entry map with one weight role: `dtype`/`shape` per role, `sha` the map's digest or NULL. */
static mpk_mt_handoff *one_entry(const char *dtype, const char *shape, const char *sha) {
  char json[2048], shas[128] = "{}";
  if (sha) snprintf(shas, sizeof shas, "{\"weight\": \"%s\"}", sha);
  snprintf(json, sizeof json,
           "{\"schemaVersion\": \"1.0\", \"minReaderVersion\": \"1.0\", \"handoffMode\": \"external_initializer\","
           " \"externalDataLayout\": \"one_file_per_tensor\", \"entries\": [{"
           "\"trainingBaseLayerName\": \"" LAYER "\", \"dtype\": \"%s\", \"shape\": %s,"
           " \"tensorDtypes\": {\"weight\": \"%s\"}, \"tensorShapes\": {\"weight\": %s},"
           " \"checkpointNames\": {\"weight\": \"w\"}, \"mergerOutputNames\": {\"weight\": \"merged_weight\"},"
           " \"mergedTensorNames\": {\"weight\": \"W\"}, \"inferenceInitializerNames\": {\"weight\": \"W\"},"
           " \"externalDataLocation\": {\"weight\": \"" BIN "\"}, \"sha256\": %s}]}",
           dtype, shape, dtype, shape, shas);
  mpk_mt_handoff *map = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  if (mpk_mt_handoff_parse(json, strlen(json), "map.json", &map, &err)) fail_msg("parse: %s", tu_err(&err));
  return map;
}

/* ---------------------------------------------------------------- the size rule */

static void test_size_rule_table(void **state) {
  (void)state;
  static const struct {
    const char *dtype;
    int64_t shape[4];
    size_t ndim;
    int code;
    uint64_t bytes;
  } cases[] = {
      {"float32", {4, 3}, 2, 0, 48},
      {"float16", {6, 4}, 2, 0, 48},
      {"bfloat16", {5}, 1, 0, 10},
      {"int4", {3, 3}, 2, 0, 5},          /* logical shape, ceil(9 / 2) */
      {"uint4", {4, 2}, 2, 0, 4},
      {"uint8", {4, 2}, 2, 0, 8},         /* a packed int4 weight declared uint8: its packed shape */
      {"int64", {2}, 1, 0, 16},
      {"float32", {0}, 0, 0, 4},          /* ndim 0: a scalar */
      {"float32", {4, 0}, 2, MPK_EMALFORMED, 0},
      {"float32", {-1, 3}, 2, MPK_EMALFORMED, 0},
      {"float32", {INT64_C(1) << 62, 4}, 2, MPK_ELIMIT, 0},       /* 2^64 elements */
      {"float32", {INT64_C(1) << 31, INT64_C(1) << 31}, 2, MPK_ELIMIT, 0}, /* 2^62 elements × 4 bytes */
      {"int4", {INT64_C(1) << 62, 3}, 2, 0, UINT64_C(3) << 61},  /* 3·2^62 nibbles fit in bytes */
      {"uint8", {INT64_C(1) << 62, 3}, 2, 0, UINT64_C(3) << 62},
      {"float64", {1}, 1, MPK_EUNSUPPORTED, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint64_t n = 0, bytes = 0;
    mpk_error err;
    mpk_error_clear(&err);
    int rc = mpk_tensor_nbytes(cases[i].dtype, cases[i].shape, cases[i].ndim, &n, &bytes, &err);
    if (rc != cases[i].code) fail_msg("case %zu: rc %d, want %d (%s)", i, rc, cases[i].code, err.message);
    if (!rc) assert_int_equal(bytes, cases[i].bytes);
  }
}

/* The file must be exactly the declared size: one byte more or less is refused. */
static void test_open_exact_size(void **state) {
  (void)state;
  static const struct {
    const char *dtype, *shape;
    size_t bytes;
  } cases[] = {{"float32", "[4, 3]", 48}, {"float16", "[6, 4]", 48}, {"int4", "[3, 3]", 5}, {"uint8", "[16, 2]", 32}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mpk_mt_handoff *map = one_entry(cases[i].dtype, cases[i].shape, NULL);
    for (int delta = -1; delta <= 1; delta++) {
      fresh_dir();
      write_bytes(BIN, cases[i].bytes + (size_t)delta);
      mpk_tensor_view v;
      mpk_error err;
      mpk_error_clear(&err);
      int rc = mpk_mt_tensor_open(inf, &map->entries[0], MPK_MT_ROLE_WEIGHT, &v, &err);
      if (delta == 0) {
        if (rc) fail_msg("case %zu: %s", i, tu_err(&err));
        assert_int_equal(v.nbytes, cases[i].bytes);
        assert_string_equal(v.dtype, cases[i].dtype);
        assert_int_equal(v.ndim, 2);
        assert_int_equal(v.strides[1], 1);
        assert_int_equal(v.strides[0], v.shape[1]);
        /* The view's first element is the file's first bytes read little-endian, in host order
           (on a big-endian host the view is a converted copy: docs/cross.md, "Byte order"). */
        const uint8_t *d = v.data;
        if (v.dl_bits == 32) assert_int_equal(*(const uint32_t *)v.data, 0x160f0801u);
        else if (v.dl_bits == 16) assert_int_equal(*(const uint16_t *)v.data, 0x0801u);
        else assert_int_equal(d[1], 8);
      } else {
        assert_int_equal(rc, MPK_EMISMATCH);
        assert_non_null(strstr(err.file, BIN));
        assert_non_null(strstr(err.message, LAYER));
        assert_non_null(strstr(err.message, "is exactly"));
        assert_null(v.data);
      }
      mpk_tensor_view_close(&v);
    }
    mpk_mt_handoff_free(map);
  }
}

static void test_open_refusals(void **state) {
  (void)state;
  fresh_dir();
  mpk_mt_handoff *map = one_entry("float32", "[4, 3]", NULL);
  mpk_tensor_view v;
  mpk_error err;
  mpk_error_clear(&err);
  assert_int_equal(mpk_mt_tensor_open(inf, &map->entries[0], MPK_MT_ROLE_WEIGHT, &v, &err), MPK_ENOTFOUND);
  assert_non_null(strstr(err.file, BIN));
  /* a role the entry does not have */
  assert_int_equal(mpk_mt_tensor_open(inf, &map->entries[0], MPK_MT_ROLE_SCALE, &v, &err), MPK_ENOTFOUND);
  assert_int_equal(mpk_mt_tensor_open(NULL, &map->entries[0], MPK_MT_ROLE_WEIGHT, &v, &err), MPK_EINVAL);
  /* a hand-made entry with a zero and a negative dimension */
  mpk_mt_handoff_entry e = map->entries[0];
  int64_t bad[2] = {4, 0};
  e.tensor_shapes[MPK_MT_ROLE_WEIGHT].dims = bad;
  write_bytes(BIN, 48);
  assert_int_equal(mpk_mt_tensor_open(inf, &e, MPK_MT_ROLE_WEIGHT, &v, &err), MPK_EMALFORMED);
  bad[1] = -3;
  assert_int_equal(mpk_mt_tensor_open(inf, &e, MPK_MT_ROLE_WEIGHT, &v, &err), MPK_EMALFORMED);
  mpk_tensor_view_close(&v);
  mpk_tensor_view_close(NULL);
  mpk_mt_handoff_free(map);
}

static void test_dlpack(void **state) {
  (void)state;
  fresh_dir();
  write_bytes(BIN, 5);
  mpk_mt_handoff *map = one_entry("int4", "[3, 3]", NULL);
  mpk_tensor_view v;
  mpk_error err;
  assert_int_equal(mpk_mt_tensor_open(inf, &map->entries[0], MPK_MT_ROLE_WEIGHT, &v, &err), 0);
  DLTensor t;
  assert_int_equal(mpk_tensor_view_dltensor(&v, &t), 0);
  assert_ptr_equal(t.data, v.data);
  assert_int_equal(t.device.device_type, kDLCPU);
  assert_int_equal(t.ndim, 2);
  assert_int_equal(t.dtype.code, kDLInt);
  assert_int_equal(t.dtype.bits, 4);
  assert_int_equal(t.dtype.lanes, 1);
  assert_int_equal(t.shape[0], 3);
  assert_int_equal(t.shape[1], 3);
  assert_int_equal(t.strides[0], 3);
  assert_int_equal(t.strides[1], 1);
  assert_int_equal(t.byte_offset, 0);
  mpk_tensor_view_close(&v);
  assert_int_equal(mpk_tensor_view_dltensor(&v, &t), MPK_EINVAL); /* closed */
  mpk_mt_handoff_free(map);
}

/* Byte order: tensor files are little-endian; a view holds host-order elements (a plain mapping
   on a little-endian host, converted private pages on a big-endian one), and the file keeps its
   bytes either way (docs/cross.md, "Byte order"). */
static void test_view_host_order(void **state) {
  (void)state;
  static const float want32[6] = {1.5f, -2.0f, 0x1p-149f, 3.0e38f, -0.0f, 1234.5f};
  static const uint16_t want16[6] = {0x3c00, 0xc000, 0x0001, 0x7bff, 0x8000, 0x7e00};
  for (int half = 0; half <= 1; half++) {
    fresh_dir();
    uint8_t file[24];
    size_t size = half ? 12 : 24;
    for (int k = 0; k < 6; k++) {
      if (half) mpk_store_le16(file + 2 * k, want16[k]);
      else mpk_store_le_f32(file + 4 * k, want32[k]);
    }
    char path[700];
    snprintf(path, sizeof path, "%s/%s", inf, BIN);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(file, 1, size, f), size);
    fclose(f);
    mpk_mt_handoff *map = one_entry(half ? "float16" : "float32", "[2, 3]", NULL);
    mpk_tensor_view v;
    mpk_error err;
    mpk_error_clear(&err);
    if (mpk_mt_tensor_open(inf, &map->entries[0], MPK_MT_ROLE_WEIGHT, &v, &err)) fail_msg("%s", tu_err(&err));
    for (int k = 0; k < 6; k++) {
      if (half) assert_int_equal(((const uint16_t *)v.data)[k], want16[k]);
      else assert_memory_equal(&((const float *)v.data)[k], &want32[k], 4);
    }
    /* a zero-copy view exactly when the host is little-endian */
    assert_int_equal(memcmp(v.data, file, size) == 0, !MPK_HOST_BIG_ENDIAN);
    mpk_tensor_view_close(&v);
    size_t n;
    uint8_t *back = tu_read_file(path, &n);
    assert_non_null(back);
    assert_int_equal(n, size);
    assert_memory_equal(back, file, size); /* the file is untouched */
    free(back);
    mpk_mt_handoff_free(map);
  }
}

/* ---------------------------------------------------------------- the load gate: oracle cases */

static mpk_mt_gate_report *gate(const mpk_mt_handoff *map, int presence_only) {
  mpk_mt_gate_options o = {.presence_only = presence_only, .workers = 2};
  mpk_mt_gate_report *g = NULL;
  mpk_error err;
  mpk_error_clear(&err);
  if (mpk_mt_load_gate(inf, map, &o, &g, &err)) fail_msg("gate: %s", tu_err(&err));
  return g;
}

static void test_gate_oracle(void **state) {
  (void)state;
  static const char *stale = "1111111111111111111111111111111111111111111111111111111111111111";
  char good[65], upper[80];
  fresh_dir();
  write_bytes(BIN, 48);
  snprintf(good, sizeof good, "%s", digest_of(BIN));
  for (size_t i = 0; i < 64; i++) upper[i] = (char)(good[i] >= 'a' ? good[i] - 32 : good[i]);
  snprintf(upper + 64, sizeof upper - 64, "  \n");

  /* sidecar alone → ready (first line, trimmed, any case) */
  mpk_mt_handoff *nomap = one_entry("float32", "[4, 3]", NULL);
  write_text(BIN ".sha256", upper);
  mpk_mt_gate_report *g = gate(nomap, 0);
  assert_true(g->ready);
  assert_int_equal(g->n_tensors, 1);
  assert_int_equal(g->n_verified, 1);
  assert_int_equal(g->tensors[0].authority, MPK_MT_AUTH_SIDECAR);
  assert_int_equal(g->tensors[0].status, MPK_MT_TENSOR_VERIFIED);
  assert_true(g->tensors[0].size_ok);
  assert_int_equal(g->tensors[0].declared_bytes, 48);
  mpk_mt_gate_report_free(g);

  /* map digest alone → ready */
  tu_sh("rm -f '%s/" BIN ".sha256'", inf);
  mpk_mt_handoff *mapped = one_entry("float32", "[4, 3]", good);
  g = gate(mapped, 0);
  assert_true(g->ready);
  assert_int_equal(g->tensors[0].authority, MPK_MT_AUTH_MAP);
  mpk_mt_gate_report_free(g);

  /* bytes that are not the shipped ones fail, whatever the sidecar says (shipped bytes are the
     manifest's): a sidecar agreeing with them is no licence, with or without hashing */
  mpk_mt_handoff *stale_map = one_entry("float32", "[4, 3]", stale);
  write_text(BIN ".sha256", good);
  g = gate(stale_map, 0);
  assert_false(g->ready);
  assert_int_equal(g->tensors[0].status, MPK_MT_TENSOR_MISMATCH);
  assert_int_equal(g->tensors[0].authority, MPK_MT_AUTH_MAP);
  assert_non_null(strstr(g->problems[0].message, "does not equal the shipped digest"));
  assert_non_null(strstr(g->problems[0].message, "its sidecar agrees with the bytes, which does not make them shipped"));
  assert_non_null(strstr(g->problems[0].message, ".modelpkg-merge-record.json"));
  mpk_mt_gate_report_free(g);
  g = gate(stale_map, 1);
  assert_false(g->ready);
  assert_non_null(strstr(g->problems[0].message, "its sidecar says"));
  assert_non_null(strstr(g->problems[0].message, "no merge record names it"));
  mpk_mt_gate_report_free(g);

  /* ... unless modelpkg's merge record names the tensor with these bytes (and the shipped digest) */
  char rec[600];
  snprintf(rec, sizeof rec,
           "{\"format\": \"modelpkg-merge-record\", \"tensors\": {\"" BIN "\": {\"sha256\": \"%s\", "
           "\"shipped_sha256\": \"%s\"}}, \"version\": 1}\n", good, stale);
  write_text(".modelpkg-merge-record.json", rec);
  g = gate(stale_map, 0);
  assert_true(g->ready);
  assert_int_equal(g->tensors[0].authority, MPK_MT_AUTH_RECORD);
  assert_true(g->tensors[0].merged);
  mpk_mt_gate_report_free(g);
  g = gate(stale_map, 1);
  assert_true(g->ready);
  mpk_mt_gate_report_free(g);
  /* a record about other shipped weights does not apply */
  g = gate(mapped, 0);
  assert_true(g->ready); /* the bytes are the shipped ones of `mapped`... */
  mpk_mt_gate_report_free(g);
  mpk_mt_handoff *other = one_entry("float32", "[4, 3]", "2222222222222222222222222222222222222222222222222222222222222222");
  g = gate(other, 0);
  assert_false(g->ready);
  assert_non_null(strstr(g->problems[0].message, "the record is not about these shipped weights"));
  mpk_mt_gate_report_free(g);
  mpk_mt_handoff_free(other);
  /* a malformed record is a problem, never trusted */
  write_text(".modelpkg-merge-record.json", "{\"format\": \"modelpkg-merge-record\", \"version\": 1}");
  g = gate(stale_map, 0);
  assert_false(g->ready);
  mpk_mt_gate_report_free(g);
  tu_sh("rm -f '%s/.modelpkg-merge-record.json'", inf);

  /* a stale sidecar fails even when the map matches */
  write_text(BIN ".sha256", stale);
  g = gate(mapped, 0);
  assert_false(g->ready);
  assert_int_equal(g->n_problems, 1);
  assert_int_equal(g->tensors[0].status, MPK_MT_TENSOR_MISMATCH);
  assert_int_equal(g->problems[0].code, MPK_EMISMATCH);
  assert_non_null(strstr(g->problems[0].message, stale));
  assert_non_null(strstr(g->problems[0].message, good));
  assert_non_null(strstr(g->problems[0].message, "a stale sidecar fails"));
  mpk_mt_gate_report_free(g);

  /* a sidecar that is not 64 hex digits is refused, not skipped */
  write_text(BIN ".sha256", "not a digest\n");
  g = gate(mapped, 0);
  assert_false(g->ready);
  assert_int_equal(g->tensors[0].status, MPK_MT_TENSOR_BAD_SIDECAR);
  mpk_mt_gate_report_free(g);

  /* neither source → "no checksum" */
  tu_sh("rm -f '%s/" BIN ".sha256'", inf);
  g = gate(nomap, 0);
  assert_false(g->ready);
  assert_int_equal(g->tensors[0].status, MPK_MT_TENSOR_NO_CHECKSUM);
  assert_non_null(strstr(g->problems[0].message, "no checksum"));
  mpk_mt_gate_report_free(g);

  /* presence query without checksums */
  g = gate(nomap, 1);
  assert_true(g->ready);
  assert_int_equal(g->tensors[0].status, MPK_MT_TENSOR_PRESENT);
  assert_int_equal(g->n_verified, 0);
  mpk_mt_gate_report_free(g);

  /* a missing bin names the layer and the file (with and without checksums) */
  tu_sh("rm -f '%s/" BIN "'", inf);
  for (int presence = 0; presence <= 1; presence++) {
    g = gate(mapped, presence);
    assert_false(g->ready);
    assert_int_equal(g->tensors[0].status, MPK_MT_TENSOR_MISSING);
    assert_non_null(strstr(g->problems[0].message, LAYER));
    assert_non_null(strstr(g->problems[0].message, BIN));
    assert_non_null(strstr(g->problems[0].file, "/inference/" BIN));
    mpk_mt_gate_report_free(g);
  }

  /* no map → "no merged weights: use the base weights", ready */
  g = gate(NULL, 0);
  assert_true(g->ready);
  assert_true(g->no_merged_weights);
  assert_int_equal(g->n_tensors, 0);
  mpk_mt_gate_report_free(g);

  mpk_mt_handoff_free(nomap);
  mpk_mt_handoff_free(mapped);
  mpk_mt_handoff_free(stale_map);
}

static void test_gate_no_entries(void **state) {
  (void)state;
  fresh_dir();
  static const char json[] = "{\"schemaVersion\": \"1.0\", \"minReaderVersion\": \"1.0\", \"entries\": []}";
  mpk_mt_handoff *map = NULL;
  mpk_error err;
  if (mpk_mt_handoff_parse(json, strlen(json), "map.json", &map, &err)) fail_msg("%s", tu_err(&err));
  mpk_mt_gate_report *g = gate(map, 0);
  assert_true(g->ready);
  assert_true(g->no_merged_weights);
  mpk_mt_gate_report_free(g);
  mpk_mt_handoff_free(map);
  assert_int_equal(mpk_mt_load_gate(NULL, map, NULL, &g, &err), MPK_EINVAL);
  assert_string_equal(mpk_mt_authority_name(MPK_MT_AUTH_SIDECAR), "sidecar");
  assert_string_equal(mpk_mt_tensor_status_name(MPK_MT_TENSOR_NO_CHECKSUM), "no checksum");
}

/* ---------------------------------------------------------------- the tiny package */

/* Its sidecars are placeholders (64 zeros): the gate refuses each tensor naming the file and both
   digests; with correct sidecars it passes. */
/* The gate and the tensor view open every file beneath the inference directory's handle: a .bin
   (or a sidecar) that links out of it, or a FIFO, is refused at once — never followed, never
   waited on — naming the file and the rule. */
static void test_gate_confined(void **state) {
  (void)state;
  fresh_dir();
  write_bytes(BIN, 48);
  char good[65];
  snprintf(good, sizeof good, "%s", digest_of(BIN));
  mpk_mt_handoff *map = one_entry("float32", "[4, 3]", good);
  /* the same bytes, outside, through a link: refused */
  tu_sh("cd '%s' && cp " BIN " ../outside.bin && rm " BIN " && ln -s ../outside.bin " BIN, inf);
  mpk_mt_gate_report *g = gate(map, 0);
  assert_false(g->ready);
  assert_int_equal(g->tensors[0].status, MPK_MT_TENSOR_UNREADABLE);
  assert_non_null(strstr(g->problems[0].message, "resolves outside the inference directory"));
  mpk_mt_gate_report_free(g);
  g = gate(map, 1);
  assert_false(g->ready);
  mpk_mt_gate_report_free(g);
  mpk_tensor_view v;
  mpk_error err;
  mpk_error_clear(&err);
  assert_int_equal(mpk_mt_tensor_open(inf, &map->entries[0], MPK_MT_ROLE_WEIGHT, &v, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "resolves outside the inference directory"));
  /* a link inside the directory is followed (it stays beneath the handle) */
  tu_sh("cd '%s' && rm " BIN " && cp ../outside.bin real.bin && ln -s real.bin " BIN, inf);
  g = gate(map, 0);
  assert_true(g->ready);
  mpk_mt_gate_report_free(g);
  /* a sidecar linked out is refused too */
  tu_sh("cd '%s' && echo %s > ../side && ln -s ../side " BIN ".sha256", inf, good);
  g = gate(map, 0);
  assert_false(g->ready);
  assert_int_equal(g->tensors[0].status, MPK_MT_TENSOR_BAD_SIDECAR);
  assert_non_null(strstr(g->problems[0].message, "resolves outside"));
  mpk_mt_gate_report_free(g);
  /* a FIFO: refused at once, with and without hashing, and by the tensor view */
  tu_sh("cd '%s' && rm -f " BIN " " BIN ".sha256 && mkfifo " BIN, inf);
  for (int presence = 0; presence <= 1; presence++) {
    g = gate(map, presence);
    assert_false(g->ready);
    assert_non_null(strstr(g->problems[0].message, "is a FIFO, not a regular file"));
    mpk_mt_gate_report_free(g);
  }
  assert_int_equal(mpk_mt_tensor_open(inf, &map->entries[0], MPK_MT_ROLE_WEIGHT, &v, &err), MPK_EMALFORMED);
  assert_non_null(strstr(err.message, "is a FIFO"));
  mpk_mt_handoff_free(map);
}

static void test_tiny_package_gate(void **state) {
  (void)state;
  static const char *variants[] = {"cpu-int4", "cpu-fp16"};
  static const char zeros[] = "0000000000000000000000000000000000000000000000000000000000000000";
  for (size_t i = 0; i < 2; i++) {
    char src[1024];
    snprintf(src, sizeof src, "%s/%s/inference",
             tu_shared("conformance/mobiletransformers/tiny_package/variants"), variants[i]);
    fresh_dir();
    tu_sh("cp -r '%s/.' '%s' && chmod -R u+w '%s'", src, inf, inf);
    char mapfile[700];
    snprintf(mapfile, sizeof mapfile, "%s/weight_handoff_map.json", inf);
    mpk_mt_handoff *map = NULL;
    mpk_error err;
    if (mpk_mt_handoff_load(mapfile, &map, &err)) fail_msg("%s", tu_err(&err));
    mpk_mt_gate_report *g = gate(map, 0);
    assert_false(g->ready);
    assert_int_equal(g->n_problems, g->n_tensors);
    char actual[65];
    snprintf(actual, sizeof actual, "%s", digest_of(map->entries[0].external_data_location[0]));
    assert_non_null(strstr(g->problems[0].file, map->entries[0].external_data_location[0]));
    assert_non_null(strstr(g->problems[0].message, zeros));
    assert_non_null(strstr(g->problems[0].message, actual));
    mpk_mt_gate_report_free(g);
    /* correct sidecars */
    tu_sh("cd '%s' && for f in *.bin; do sha256sum \"$f\" | cut -c1-64 > \"$f.sha256\"; done", inf);
    g = gate(map, 0);
    assert_true(g->ready);
    assert_int_equal(g->n_verified, g->n_tensors);
    mpk_mt_gate_report_free(g);
    mpk_mt_handoff_free(map);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_size_rule_table),
      cmocka_unit_test(test_open_exact_size),
      cmocka_unit_test(test_open_refusals),
      cmocka_unit_test(test_dlpack),
      cmocka_unit_test(test_view_host_order),
      cmocka_unit_test(test_gate_oracle),
      cmocka_unit_test(test_gate_no_entries),
      cmocka_unit_test(test_gate_confined),
      cmocka_unit_test(test_tiny_package_gate),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
