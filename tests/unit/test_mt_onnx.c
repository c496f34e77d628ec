/* The ONNX graph reader (issue 11): the generated graphs (scripts/gen_onnx_graphs.py, run by ctest
   into MPK_ONNX_GRAPHS), the reference test's precision cases, external locations refused without
   being opened, and hostile wire formats built here byte by byte — truncated varints, lengths past
   the end, deep nesting, huge dims, too many initializers — each refused by the pre-scan (a byte
   offset in the error proves no decoding had started) or by the typed checks. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

static char graphs[512];

static const char *g(const char *rel) {
  static char buf[2048];
  snprintf(buf, sizeof buf, "%s/%s", graphs, rel);
  return buf;
}

/* ---------------------------------------------------------------- a tiny protobuf writer */

typedef struct pb {
  uint8_t *d;
  size_t n, cap;
} pb;

static void put(pb *b, const void *p, size_t n) {
  if (b->n + n > b->cap || !b->d) {
    b->cap = (b->n + n) * 2 + 64;
    b->d = realloc(b->d, b->cap);
    assert_non_null(b->d);
  }
  if (n) memcpy(b->d + b->n, p, n);
  b->n += n;
}

static void varint(pb *b, uint64_t v) {
  uint8_t x[10];
  size_t n = 0;
  do {
    x[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) x[n] |= 0x80;
    n++;
  } while (v);
  put(b, x, n);
}

static void vfield(pb *b, unsigned f, uint64_t v) {
  varint(b, (uint64_t)f << 3);
  varint(b, v);
}

static void bfield(pb *b, unsigned f, const void *p, size_t n) {
  varint(b, ((uint64_t)f << 3) | 2);
  varint(b, n);
  put(b, p, n);
}

static void sfield(pb *b, unsigned f, const char *s) { bfield(b, f, s, strlen(s)); }

static void kv(pb *t, const char *k, const char *v) {
  pb e = {0};
  sfield(&e, 1, k);
  sfield(&e, 2, v);
  bfield(t, 13, e.d, e.n);
  free(e.d);
}

/* ModelProto { ir_version 8, graph { initializer... } } around initializer encodings. */
static pb model_of(const pb *inits, size_t n) {
  pb gr = {0}, m = {0};
  for (size_t i = 0; i < n; i++) bfield(&gr, 5, inits[i].d, inits[i].n);
  sfield(&gr, 2, "g");
  vfield(&m, 1, 8);
  bfield(&m, 7, gr.d ? gr.d : (uint8_t *)"", gr.n);
  free(gr.d);
  return m;
}

static pb tensor(const char *name, int dtype, const int64_t *dims, size_t nd) {
  pb t = {0};
  for (size_t i = 0; i < nd; i++) vfield(&t, 1, (uint64_t)dims[i]);
  vfield(&t, 2, (uint64_t)dtype);
  sfield(&t, 8, name);
  return t;
}

static int parse(const pb *m, const mpk_mt_graph_options *o, mpk_mt_graph **out, mpk_error *err) {
  mpk_error_clear(err);
  return mpk_mt_graph_parse(m->d, m->n, "hostile.onnx", o, out, err);
}

static void expect_refused(const pb *m, const mpk_mt_graph_options *o, int code, const char *needle, bool prescan) {
  mpk_mt_graph *gr = NULL;
  mpk_error err;
  int rc = parse(m, o, &gr, &err);
  if (rc != code || !strstr(err.message, needle))
    fail_msg("want %d \"%s\", got %d: %s", code, needle, rc, tu_err(&err));
  assert_null(gr);
  if (prescan) assert_true(err.offset >= 0); /* the pre-scan names a byte: nothing was decoded */
}

/* ---------------------------------------------------------------- generated graphs */

static void test_reference_layout(void **state) {
  (void)state;
  mpk_mt_graph *gr = NULL;
  mpk_error err;
  if (mpk_mt_graph_load(g("ref/inference/model.onnx"), NULL, &gr, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(gr->n_initializers, 7);
  assert_int_equal(gr->n_external, 7);
  assert_int_equal(gr->ir_version, 8);
  assert_int_equal(gr->opset, 17);
  assert_string_equal(gr->producer_name, "gen_onnx_graphs.py");
  const mpk_mt_initializer *v = mpk_mt_graph_find(gr, "model.layers.0.attn.v_proj.MatMul.weight");
  assert_non_null(v);
  assert_string_equal(v->dtype, "float32");
  assert_int_equal(v->data_type, 1);
  assert_int_equal(v->ndim, 2);
  assert_int_equal(v->dims[0], 8);
  assert_int_equal(v->dims[1], 4);
  assert_int_equal(v->numel, 32);
  assert_int_equal(v->nbytes, 128);
  assert_true(v->external);
  assert_string_equal(v->location, "model.layers.0.attn.v_proj.MatMul.weight.bin");
  assert_int_equal(v->offset, 0);
  assert_true(v->has_length);
  assert_int_equal(v->length, 128);
  const mpk_mt_initializer *s = mpk_mt_graph_find(gr, "model.reshape_shape");
  assert_non_null(s);
  assert_string_equal(s->dtype, "int64");
  assert_string_equal(s->location, "frozen_base.onnx.data");
  assert_int_equal(s->offset, 512 + 32 + 16); /* after the embedding, the norm and the bias */
  assert_int_equal(s->length, 16);
  assert_null(mpk_mt_graph_find(gr, "nope"));
  char p[64];
  size_t len = 0;
  assert_int_equal(mpk_mt_graph_precision(gr, p, sizeof p, &len), 0);
  assert_int_equal(len, 7);
  assert_string_equal(p, "float32");
  mpk_mt_graph_free(gr);
}

static void test_quantized_initializers(void **state) {
  (void)state;
  mpk_mt_graph *gr = NULL;
  mpk_error err;
  if (mpk_mt_graph_load(g("quant/inference/model.onnx"), NULL, &gr, &err)) fail_msg("%s", tu_err(&err));
  const mpk_mt_initializer *q = mpk_mt_graph_find(gr, "model.layers.0.attn.q_proj.MatMul.weight_quantized");
  const mpk_mt_initializer *sc = mpk_mt_graph_find(gr, "model.layers.0.attn.q_proj.MatMul.weight_scale");
  const mpk_mt_initializer *zp = mpk_mt_graph_find(gr, "model.layers.0.attn.q_proj.MatMul.weight_zero_point");
  assert_non_null(q);
  assert_non_null(sc);
  assert_non_null(zp);
  assert_string_equal(q->dtype, "uint8");
  assert_int_equal(q->nbytes, 64);
  assert_string_equal(sc->dtype, "float32");
  assert_string_equal(zp->dtype, "uint8");
  char p[64];
  assert_int_equal(mpk_mt_graph_precision(gr, p, sizeof p, NULL), 0);
  assert_string_equal(p, "mixed(float32/uint8)");
  mpk_mt_graph_free(gr);
}

/* The reference test's cases (test_parameter_budget.py), through the generated graphs. */
static void test_precision_cases(void **state) {
  (void)state;
  json_t *want = tu_load_json(g("expected.json"));
  static const struct {
    const char *file, *key, *expected;
  } cases[] = {{"precision/fp32.onnx", "precision/fp32", "float32"},
               {"precision/mixed.onnx", "precision/mixed", "mixed(uint8/float32)"},
               {"precision/shapes.onnx", "precision/shapes", "float32"},
               {"precision/empty.onnx", "precision/empty", "unknown"},
               {"quant/inference/model.onnx", "quant", "mixed(float32/uint8)"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    mpk_mt_graph *gr = NULL;
    mpk_error err;
    if (mpk_mt_graph_load(g(cases[i].file), NULL, &gr, &err)) fail_msg("%s: %s", cases[i].file, tu_err(&err));
    char p[64];
    assert_int_equal(mpk_mt_graph_precision(gr, p, sizeof p, NULL), 0);
    assert_string_equal(p, cases[i].expected);
    assert_string_equal(p, json_string_value(json_object_get(want, cases[i].key)));
    if (strcmp(cases[i].key, "precision/empty") == 0) assert_int_equal(gr->n_initializers, 0);
    mpk_mt_graph_free(gr);
  }
  json_decref(want);
}

static void test_precision_ordering_and_truncation(void **state) {
  (void)state;
  /* float16 [4] first, then uint8 [4] (a tie keeps first-seen order), an empty int8, a bool. */
  int64_t four = 4, zero = 0;
  pb ts[4] = {tensor("a", 10, &four, 1), tensor("b", 2, &four, 1), tensor("c", 3, &zero, 1), tensor("d", 9, &four, 1)};
  for (int i = 0; i < 4; i++) bfield(&ts[i], 9, "\0\0\0\0\0\0\0\0", i == 0 ? 8 : i == 2 ? 0 : 4);
  pb m = model_of(ts, 4);
  mpk_mt_graph *gr = NULL;
  mpk_error err;
  if (parse(&m, NULL, &gr, &err)) fail_msg("%s", tu_err(&err));
  char p[64], small[8];
  size_t n = 0, n2 = 0;
  assert_int_equal(mpk_mt_graph_precision(gr, p, sizeof p, &n), 0);
  assert_string_equal(p, "mixed(float16/uint8/int8)");
  assert_int_equal(n, strlen(p));
  /* too small: cut, NUL-terminated, MPK_ELIMIT (not a length that could be read as an error code) */
  assert_int_equal(mpk_mt_graph_precision(gr, small, sizeof small, &n2), MPK_ELIMIT);
  assert_int_equal(n2, n);
  assert_string_equal(small, "mixed(f");
  assert_int_equal(mpk_mt_graph_precision(gr, NULL, 0, &n2), MPK_ELIMIT);
  assert_int_equal(n2, n);
  mpk_mt_graph_free(gr);
  for (int i = 0; i < 4; i++) free(ts[i].d);
  free(m.d);
}

/* ---------------------------------------------------------------- external locations */

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "an external data file was opened (blocked on a FIFO)\n";
  if (write(2, msg, sizeof msg - 1) < 0) _exit(3);
  _exit(2);
}

/* ../outside.bin and an absolute path are refused by the reader itself; a symbolic link leaving the
   model's directory when the graph is loaded. Each target is a FIFO: opening one would block, and
   the alarm would fail the test. */
static void test_locations_refused_without_opening(void **state) {
  (void)state;
  signal(SIGALRM, on_alarm);
  const char *tmp = tu_tmpdir();
  char dir[600], fifo[700];
  snprintf(dir, sizeof dir, "%s/model", tmp);
  tu_sh("mkdir -p '%s' && mkfifo '%s/outside.bin' '%s/absolute.bin'", dir, tmp, g("cases"));
  snprintf(fifo, sizeof fifo, "%s/outside.bin", tmp);
  static const struct {
    const char *graph, *needle;
  } cases[] = {{"cases/outside.onnx", "external data location \"../outside.bin\" leaves the package"},
               {"cases/absolute.onnx", "is absolute: it must be a relative path inside the model's directory"},
               {"cases/link.onnx", "external data location \"link.bin\" resolves outside the model's directory"}};
  tu_sh("ln -s '%s' '%s/link.bin'", fifo, dir);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tu_sh("cp '%s' '%s/model.onnx'", g(cases[i].graph), dir);
    char model[700];
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    mpk_mt_graph *gr = NULL;
    mpk_error err;
    mpk_error_clear(&err);
    alarm(10);
    int rc = mpk_mt_graph_load(model, NULL, &gr, &err);
    alarm(0);
    if (rc != MPK_EMALFORMED || !strstr(err.message, cases[i].needle))
      fail_msg("%s: want malformed \"%s\", got %d %s", cases[i].graph, cases[i].needle, rc, tu_err(&err));
    assert_string_equal(err.file, model);
    assert_null(gr);
  }
  /* A link that stays inside is fine. */
  tu_sh("rm '%s/link.bin' && ln -s frozen_base.onnx.data '%s/link.bin' && cp '%s' '%s/frozen_base.onnx.data'", dir, dir,
        g("ref/inference/frozen_base.onnx.data"), dir);
  char model[700];
  snprintf(model, sizeof model, "%s/model.onnx", dir);
  mpk_mt_graph *gr = NULL;
  mpk_error err;
  if (mpk_mt_graph_load(model, NULL, &gr, &err)) fail_msg("%s", tu_err(&err));
  mpk_mt_graph_free(gr);
  tu_sh("rm -rf '%s' '%s/absolute.bin'", tmp, g("cases"));
}

static void test_external_data_keys(void **state) {
  (void)state;
  int64_t d = 2;
  static const struct {
    const char *k1, *v1, *k2, *v2;
    int embedded;
    const char *needle;
  } cases[] = {{"location", "a.bin", "offset", "12x", 0, "external data offset \"12x\" is not a decimal integer"},
               {"location", "a.bin", "length", "-1", 0, "external data length \"-1\" is not a decimal integer"},
               {"location", "a.bin", "offset", "99999999999999999999", 0, "is not a decimal integer"},
               {"location", "a.bin", "basepath", "/etc", 0, "external data key \"basepath\" is unknown"},
               {"location", "a.bin", "location", "b.bin", 0, "external data key \"location\" is given twice"},
               {"offset", "0", NULL, NULL, 0, "external data has no location"},
               {"location", "a/../b.bin", NULL, NULL, 0, "leaves the package"},
               {"location", "C:x.bin", NULL, NULL, 0, "drive letter"},
               {"location", "a\\b.bin", NULL, NULL, 0, "backslash"},
               {"location", "", NULL, NULL, 0, "is empty"},
               {"location", "a.bin", NULL, NULL, 1, "data is both embedded and external"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pb t = tensor("w", 1, &d, 1);
    if (cases[i].embedded) bfield(&t, 9, "\0\0\0\0\0\0\0\0", 8);
    kv(&t, cases[i].k1, cases[i].v1);
    if (cases[i].k2) kv(&t, cases[i].k2, cases[i].v2);
    vfield(&t, 14, 1);
    pb m = model_of(&t, 1);
    expect_refused(&m, NULL, MPK_EMALFORMED, cases[i].needle, false);
    free(t.d);
    free(m.d);
  }
  /* external_data without data_location EXTERNAL is ambiguous: refused. */
  pb t = tensor("w", 1, &d, 1);
  kv(&t, "location", "a.bin");
  pb m = model_of(&t, 1);
  expect_refused(&m, NULL, MPK_EMALFORMED, "external_data is given but data_location is not EXTERNAL", false);
  free(t.d);
  free(m.d);
  /* A good one: subdirectories are fine, offset/length read. */
  t = tensor("w", 1, &d, 1);
  kv(&t, "location", "data/w.bin");
  kv(&t, "offset", "4096");
  kv(&t, "length", "8");
  kv(&t, "checksum", "abc");
  vfield(&t, 14, 1);
  m = model_of(&t, 1);
  mpk_mt_graph *gr = NULL;
  mpk_error err;
  if (parse(&m, NULL, &gr, &err)) fail_msg("%s", tu_err(&err));
  assert_string_equal(gr->initializers[0].location, "data/w.bin");
  assert_int_equal(gr->initializers[0].offset, 4096);
  assert_int_equal(gr->initializers[0].length, 8);
  mpk_mt_graph_free(gr);
  free(t.d);
  free(m.d);
}

/* ---------------------------------------------------------------- hostile wire formats */

static void test_truncated_and_invalid_wire(void **state) {
  (void)state;
  static const struct {
    const uint8_t bytes[16];
    size_t n;
    const char *needle;
  } cases[] = {{{0x08, 0x80}, 2, "truncated varint"},
               {{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 12, "varint"},
               {{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, 11, "does not fit 64 bits"},
               {{0x3a, 0x05, 0x00}, 3, "declares 5 bytes but only 1 remain"},
               {{0x3a, 0x80}, 2, "truncated varint"},
               {{0x3a, 0x02, 0x2a, 0x05}, 4, "declares 5 bytes but only 0 remain"},
               {{0x0b}, 1, "groups are not supported"},
               {{0x0f}, 1, "invalid wire type 7"},
               {{0x00}, 1, "field number 0 is out of range"},
               {{0x3d, 0, 0, 0}, 4, "truncated fixed-width value"},
               {{0x3d, 0, 0, 0, 0}, 5, "has wire type 5, its type needs 2"},
               {{0x12, 0x02, 'a', 0}, 4, "contains a NUL byte"},
               {{'O', 'N', 'N', 'X', '_', 'P', 'L', 'A', 'C', 'E', 'H', 'O', 'L', 'D', 'E', 'R'}, 16, "is not an ONNX protobuf (it looks like text: a placeholder?)"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pb m = {0};
    put(&m, cases[i].bytes, cases[i].n);
    expect_refused(&m, NULL, MPK_EMALFORMED, cases[i].needle, true);
    free(m.d);
  }
  /* Empty input is a ModelProto with nothing in it: not a model, most likely a placeholder. */
  pb empty = {0};
  put(&empty, "", 0);
  expect_refused(&empty, NULL, MPK_EMALFORMED, "is not an ONNX protobuf (it is empty: a placeholder?)", false);
  free(empty.d);
}

/* ModelProto.graph -> node -> attribute.g -> graph -> node -> ..., `levels` subgraphs deep. */
static pb nested(size_t levels) {
  pb inner = {0};
  sfield(&inner, 2, "leaf");
  for (size_t i = 0; i < levels; i++) {
    pb attr = {0}, node = {0}, gr = {0};
    sfield(&attr, 1, "body");
    bfield(&attr, 6, inner.d, inner.n);
    bfield(&node, 5, attr.d, attr.n);
    bfield(&gr, 1, node.d, node.n);
    free(inner.d);
    free(attr.d);
    free(node.d);
    inner = gr;
  }
  pb m = {0};
  bfield(&m, 7, inner.d, inner.n);
  free(inner.d);
  return m;
}

static void test_deep_nesting(void **state) {
  (void)state;
  pb ok = nested(20); /* 61 levels: accepted */
  mpk_mt_graph *gr = NULL;
  mpk_error err;
  if (parse(&ok, NULL, &gr, &err)) fail_msg("%s", tu_err(&err));
  mpk_mt_graph_free(gr);
  free(ok.d);
  pb deep = nested(5000); /* 15001 levels */
  expect_refused(&deep, NULL, MPK_ELIMIT, "nested deeper than 64 levels", true);
  free(deep.d);
}

static void test_huge_dims(void **state) {
  (void)state;
  /* Dims are numbers, never allocation sizes: 2^40 x 2^20 float32 reads without allocating. */
  int64_t big[2] = {(int64_t)1 << 40, (int64_t)1 << 20};
  pb t = tensor("w", 1, big, 2);
  kv(&t, "location", "w.bin");
  vfield(&t, 14, 1);
  pb m = model_of(&t, 1);
  mpk_mt_graph *gr = NULL;
  mpk_error err;
  if (parse(&m, NULL, &gr, &err)) fail_msg("%s", tu_err(&err));
  assert_int_equal(gr->initializers[0].numel, (uint64_t)1 << 60);
  assert_false(gr->initializers[0].has_nbytes && gr->initializers[0].nbytes < ((uint64_t)1 << 60));
  mpk_mt_graph_free(gr);
  free(t.d);
  free(m.d);
  /* Past 64 bits: refused. */
  int64_t huge[3] = {(int64_t)1 << 31, (int64_t)1 << 31, (int64_t)1 << 31};
  t = tensor("w", 1, huge, 3);
  m = model_of(&t, 1);
  expect_refused(&m, NULL, MPK_ELIMIT, "dimensions multiply past 64 bits", false);
  free(t.d);
  free(m.d);
  int64_t bytes_overflow[2] = {(int64_t)1 << 62, 2};
  t = tensor("w", 1, bytes_overflow, 2);
  m = model_of(&t, 1);
  expect_refused(&m, NULL, MPK_ELIMIT, "byte length does not fit 64 bits", false);
  free(t.d);
  free(m.d);
  int64_t neg = -3;
  t = tensor("w", 1, &neg, 1);
  m = model_of(&t, 1);
  expect_refused(&m, NULL, MPK_EMALFORMED, "dimension 0 is negative", false);
  free(t.d);
  free(m.d);
  int64_t many[70] = {0};
  t = tensor("w", 1, many, 70);
  m = model_of(&t, 1);
  expect_refused(&m, NULL, MPK_ELIMIT, "70 dimensions (at most 64)", false);
  free(t.d);
  free(m.d);
  /* A packed dims field of a million varints: a whole number of them, counted, not trusted. */
  pb p = {0}, packed = {0};
  for (int i = 0; i < 1000000; i++) varint(&packed, 1);
  bfield(&p, 1, packed.d, packed.n);
  sfield(&p, 8, "w");
  m = model_of(&p, 1);
  expect_refused(&m, NULL, MPK_ELIMIT, "1000000 dimensions", false);
  free(p.d);
  free(packed.d);
  free(m.d);
}

static void test_counts_and_memory_bounded(void **state) {
  (void)state;
  /* 300000 empty initializers: 2 bytes of wire each, a few hundred bytes of struct each once decoded. */
  size_t n = 300000;
  pb gr = {0}, m = {0};
  for (size_t i = 0; i < n; i++) bfield(&gr, 5, "", 0);
  bfield(&m, 7, gr.d, gr.n);
  mpk_mt_graph_options o = {.max_initializers = 1000};
  expect_refused(&m, &o, MPK_ELIMIT, "more than 1000 initializers", true);
  o = (mpk_mt_graph_options){.max_decoded_bytes = 1 << 20};
  expect_refused(&m, &o, MPK_ELIMIT, "more than 1048576 bytes of memory", true);
  /* Under the defaults (64 MiB + 4 x 600 KB) the 300000 structs do not fit either. */
  expect_refused(&m, NULL, MPK_ELIMIT, "bytes of memory", true);
  o = (mpk_mt_graph_options){.max_bytes = 1000};
  expect_refused(&m, &o, MPK_ELIMIT, "exceed the limit of 1000 bytes", false);
  free(gr.d);
  free(m.d);
}

static void test_names_and_embedded_data(void **state) {
  (void)state;
  int64_t two = 2;
  pb a = tensor("w", 1, &two, 1), b = tensor("w", 1, &two, 1);
  pb ts[2] = {a, b};
  pb m = model_of(ts, 2);
  expect_refused(&m, NULL, MPK_EMALFORMED, "initializer name \"w\" is used twice", false);
  free(m.d);
  pb unnamed = {0};
  vfield(&unnamed, 2, 1);
  m = model_of(&unnamed, 1);
  expect_refused(&m, NULL, MPK_EMALFORMED, "an initializer must have a name", false);
  free(m.d);
  free(unnamed.d);
  /* Embedded data: raw_data of the right size, typed values, a short raw_data, none. */
  bfield(&a, 9, "\0\0\0\0\0\0\0\0", 8);     /* complete */
  vfield(&b, 4, 0x3f800000);                  /* float_data packed as fixed32 is wire 5; this varint is refused */
  pb c = tensor("c", 1, &two, 1), d = tensor("d", 1, &two, 1), e = tensor("e", 7, &two, 1);
  bfield(&c, 9, "\0\0\0", 3);                 /* short */
  bfield(&e, 7, "\x01\x02", 2);               /* int64_data packed: two values */
  pb set[4] = {a, c, d, e};
  m = model_of(set, 4);
  mpk_mt_graph *gr = NULL;
  mpk_error err;
  if (parse(&m, NULL, &gr, &err)) fail_msg("%s", tu_err(&err));
  assert_true(gr->initializers[0].has_embedded_data && gr->initializers[0].embedded_complete);
  assert_true(gr->initializers[1].has_embedded_data && !gr->initializers[1].embedded_complete);
  assert_int_equal(gr->initializers[1].embedded_bytes, 3);
  assert_false(gr->initializers[2].has_embedded_data);
  assert_true(gr->initializers[3].embedded_complete);
  mpk_mt_graph_free(gr);
  free(m.d);
  pb bad = model_of(&b, 1);
  expect_refused(&bad, NULL, MPK_EMALFORMED, "has wire type 0, its type needs 5", true);
  free(bad.d);
  free(a.d);
  free(b.d);
  free(c.d);
  free(d.d);
  free(e.d);
}

int main(void) {
  /* The graphs are scripts/gen_onnx_graphs.py's (the gen_onnx_graphs fixture), written with Debian's
     python3-onnx and numpy: without them there are none, a skip; with them, none is a failure. */
  if (access(MPK_ONNX_GRAPHS "/ref", F_OK) != 0) {
    mpk_test_need_python_module("onnx");
    mpk_test_need_python_module("numpy");
  }
  snprintf(graphs, sizeof graphs, "%s", MPK_ONNX_GRAPHS);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_layout),
      cmocka_unit_test(test_quantized_initializers),
      cmocka_unit_test(test_precision_cases),
      cmocka_unit_test(test_precision_ordering_and_truncation),
      cmocka_unit_test(test_locations_refused_without_opening),
      cmocka_unit_test(test_external_data_keys),
      cmocka_unit_test(test_truncated_and_invalid_wire),
      cmocka_unit_test(test_deep_nesting),
      cmocka_unit_test(test_huge_dims),
      cmocka_unit_test(test_counts_and_memory_bounded),
      cmocka_unit_test(test_names_and_embedded_data),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
