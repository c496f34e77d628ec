/* The strict safetensors reader (mpk_safetensors_parse/open/find, mpk_safetensors_tensor_to_f32): files built
   byte by byte for every rule of docs/safetensors.md, the byte vectors of the reference library's own
   tests (huggingface/safetensors, safetensors/src/tensor.rs: written by its serializer, or its
   accept/refuse cases), and exact float conversions (every binary16 value). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* ---------------------------------------------------------------- building files */

/* 8-byte little-endian `n`, then `header` (its first `hlen` bytes), then `dlen` data bytes (byte i
   is `data[i]` when given, else i * 7 + 1). Caller frees. */
static uint8_t *build_n(uint64_t n, const char *header, size_t hlen, const uint8_t *data, size_t dlen, size_t *len) {
  uint8_t *p = malloc(8 + hlen + dlen + 1);
  assert_non_null(p);
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(n >> (8 * i));
  memcpy(p + 8, header, hlen);
  for (size_t i = 0; i < dlen; i++) p[8 + hlen + i] = data ? data[i] : (uint8_t)(i * 7 + 1);
  *len = 8 + hlen + dlen;
  return p;
}

static uint8_t *build(const char *header, size_t dlen, size_t *len) {
  return build_n(strlen(header), header, strlen(header), NULL, dlen, len);
}

static mpk_safetensors *parse_ok(const uint8_t *p, size_t len) {
  mpk_error err;
  mpk_error_clear(&err);
  mpk_safetensors *st = NULL;
  int rc = mpk_safetensors_parse(p, len, "t.safetensors", &st, &err);
  if (rc) fail_msg("refused: %s", tu_err(&err));
  assert_non_null(st);
  return st;
}

/* Refused with `code`; the message contains `needle`; the pointer is `pointer` (NULL: not checked). */
static void expect_refused(const uint8_t *p, size_t len, int code, const char *needle, const char *pointer) {
  mpk_error err;
  mpk_error_clear(&err);
  mpk_safetensors *st = (mpk_safetensors *)&err; /* must be reset to NULL */
  int rc = mpk_safetensors_parse(p, len, "t.safetensors", &st, &err);
  if (rc != code)
    fail_msg("expected %s, got %s: %s (needle \"%s\")", mpk_code_name(code), mpk_code_name(rc), tu_err(&err), needle);
  assert_null(st);
  assert_int_equal(err.code, code);
  assert_string_equal(err.file, "t.safetensors");
  if (!strstr(err.message, needle)) fail_msg("message \"%s\" lacks \"%s\"", err.message, needle);
  if (pointer) assert_string_equal(err.pointer, pointer);
}

static void refuse_header(const char *header, size_t dlen, int code, const char *needle, const char *pointer) {
  size_t len;
  uint8_t *p = build(header, dlen, &len);
  expect_refused(p, len, code, needle, pointer);
  free(p);
}

static void accept_header(const char *header, size_t dlen) {
  size_t len;
  uint8_t *p = build(header, dlen, &len);
  mpk_safetensors_free(parse_ok(p, len));
  free(p);
}

#define T(name, dtype, shape, b, e) "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

/* ---------------------------------------------------------------- valid files */

static void test_valid_several_dtypes(void **state) {
  (void)state;
  /* Declared out of data order, with metadata and the writer's 0x20 padding. */
  const char *h = "{\"__metadata__\":{\"format\":\"pt\",\"b\":\"\",\"a\":\"x\\ny\"},"
                  T("z.f16", "F16", "[3]", 16, 22) "," T("a.f32", "F32", "[2,2]", 0, 16) ","
                  T("m.bf16", "BF16", "[1,2]", 22, 26) "," T("scalar", "F64", "[]", 26, 34) ","
                  T("empty", "I8", "[0,5]", 34, 34) "," T("u8", "U8", "[3]", 34, 37) "}      ";
  size_t len;
  uint8_t *p = build(h, 37, &len);
  mpk_safetensors *st = parse_ok(p, len);
  assert_string_equal(st->file, "t.safetensors");
  assert_int_equal(st->header_len, strlen(h));
  assert_int_equal(st->data_len, 37);
  assert_int_equal(st->n_tensors, 6);
  const char *sorted[] = {"a.f32", "empty", "m.bf16", "scalar", "u8", "z.f16"};
  for (size_t i = 0; i < 6; i++) {
    assert_string_equal(st->tensors[i].name, sorted[i]);
    assert_ptr_equal(mpk_safetensors_find(st, sorted[i]), &st->tensors[i]);
  }
  assert_null(mpk_safetensors_find(st, "a.f3"));
  assert_null(mpk_safetensors_find(st, "zz"));
  assert_null(mpk_safetensors_find(st, ""));
  const uint8_t *data = p + 8 + strlen(h);
  const mpk_safetensors_tensor *t = mpk_safetensors_find(st, "a.f32");
  assert_string_equal(t->dtype, "F32");
  assert_int_equal(t->ndim, 2);
  assert_int_equal(t->shape[0], 2);
  assert_int_equal(t->shape[1], 2);
  assert_int_equal(t->numel, 4);
  assert_int_equal(t->begin, 0);
  assert_int_equal(t->end, 16);
  assert_ptr_equal(t->data, data);
  t = mpk_safetensors_find(st, "z.f16");
  assert_int_equal(t->numel, 3);
  assert_ptr_equal(t->data, data + 16);
  t = mpk_safetensors_find(st, "scalar");
  assert_int_equal(t->ndim, 0);
  assert_int_equal(t->numel, 1);
  assert_ptr_equal(t->data, data + 26);
  t = mpk_safetensors_find(st, "empty");
  assert_int_equal(t->numel, 0);
  assert_int_equal(t->shape[1], 5);
  assert_int_equal(t->begin, t->end);
  t = mpk_safetensors_find(st, "u8");
  assert_ptr_equal(t->data, data + 34);
  assert_int_equal(((const uint8_t *)t->data)[2], (uint8_t)(36 * 7 + 1));
  /* Metadata sorted by key, values as written (escapes decoded, empty allowed). */
  assert_int_equal(st->n_metadata, 3);
  assert_string_equal(st->metadata[0].key, "a");
  assert_string_equal(st->metadata[0].value, "x\ny");
  assert_string_equal(st->metadata[1].key, "b");
  assert_string_equal(st->metadata[1].value, "");
  assert_string_equal(st->metadata[2].key, "format");
  assert_string_equal(mpk_safetensors_metadata(st, "format"), "pt");
  assert_null(mpk_safetensors_metadata(st, "formats"));
  mpk_safetensors_free(st);
  free(p);
}

static void test_every_dtype(void **state) {
  (void)state;
  static const struct {
    const char *name;
    int size;
  } d[] = {{"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F64", 8}, {"I8", 1},   {"U8", 1},      {"I16", 2},      {"U16", 2},
           {"I32", 4}, {"U32", 4}, {"I64", 8},  {"U64", 8}, {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  char h[4096] = "{";
  size_t at = 0;
  for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
    assert_int_equal(mpk_safetensors_dtype_size(d[i].name), d[i].size);
    char one[200];
    snprintf(one, sizeof one, "%s\"t%02zu\":{\"dtype\":\"%s\",\"shape\":[3],\"data_offsets\":[%zu,%zu]}", i ? "," : "",
             i, d[i].name, at, at + 3 * (size_t)d[i].size);
    strcat(h, one);
    at += 3 * (size_t)d[i].size;
  }
  strcat(h, "}");
  size_t len;
  uint8_t *p = build(h, at, &len);
  mpk_safetensors *st = parse_ok(p, len);
  assert_int_equal(st->n_tensors, sizeof d / sizeof d[0]);
  for (size_t i = 0; i < st->n_tensors; i++) assert_string_equal(st->tensors[i].dtype, d[i].name);
  mpk_safetensors_free(st);
  free(p);
  assert_int_equal(mpk_safetensors_dtype_size("f32"), 0);
  assert_int_equal(mpk_safetensors_dtype_size("F8_E4M3FN"), 0);
  assert_int_equal(mpk_safetensors_dtype_size(NULL), 0);
}

/* The tiling rule is over data order, not header order; empty tensors may sit anywhere inside. */
static void test_unsorted_but_contiguous(void **state) {
  (void)state;
  accept_header("{" T("c", "U8", "[4]", 8, 12) "," T("a", "U8", "[4]", 0, 4) "," T("b", "U8", "[4]", 4, 8) "}", 12);
  accept_header("{" T("e1", "F32", "[0]", 4, 4) "," T("a", "U8", "[4]", 0, 4) "," T("b", "U8", "[4]", 4, 8) ","
                T("e0", "F32", "[0,3]", 0, 0) "," T("e2", "U8", "[0]", 8, 8) "}",
                8);
  /* No tensors at all, and a header that is only metadata. */
  accept_header("{}", 0);
  accept_header("{\"__metadata__\":{}}", 0);
  /* JSON whitespace inside, and after the object (the reference reads serde_json, which allows it). */
  accept_header("{ \"a\" : { \"dtype\" : \"U8\" , \"shape\" : [ 1 ] , \"data_offsets\" : [ 0 , 1 ] } }\r\n\t ", 1);
  /* Unicode names. */
  accept_header("{\"caf\\u00e9\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},\"\xf0\x9f\x9a\x80\":"
                "{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
                2);
}

/* Files the reference serializer wrote, and its own accept/refuse cases, as bytes. */
static const uint8_t ref_attn0[] = {
    64,  0,   0,   0,   0,   0,   0,   0,   123, 34,  97,  116, 116, 110, 46,  48,  34,  58,  123, 34,  100,
    116, 121, 112, 101, 34,  58,  34,  70,  51,  50,  34,  44,  34,  115, 104, 97,  112, 101, 34,  58,  91,
    49,  44,  50,  44,  51,  93,  44,  34,  100, 97,  116, 97,  95,  111, 102, 102, 115, 101, 116, 115, 34,
    58,  91,  48,  44,  50,  52,  93,  125, 125, 0,   0,   0,   0,   0,   0,   128, 63,  0,   0,   0,   64,
    0,   0,   64,  64,  0,   0,   128, 64,  0,   0,   160, 64};
static const uint8_t ref_aligned[] = {
    72,  0,   0,   0,   0,   0,   0,   0,   123, 34,  97,  116, 116, 110, 48,  34,  58,  123, 34,  100, 116,
    121, 112, 101, 34,  58,  34,  70,  51,  50,  34,  44,  34,  115, 104, 97,  112, 101, 34,  58,  91,  49,
    44,  49,  44,  50,  44,  51,  93,  44,  34,  100, 97,  116, 97,  95,  111, 102, 102, 115, 101, 116, 115,
    34,  58,  91,  48,  44,  50,  52,  93,  125, 125, 32,  32,  32,  32,  32,  32,  32,  0,   0,   0,   0,
    0,   0,   128, 63,  0,   0,   0,   64,  0,   0,   64,  64,  0,   0,   128, 64,  0,   0,   160, 64};
static const uint8_t ref_empty[] = {8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32};
static const uint8_t ref_empty_meta[] = {40,  0,   0,   0,   0,   0,   0,   0,   123, 34,  95,  95,  109, 101,
                                         116, 97,  100, 97,  116, 97,  95,  95,  34,  58,  123, 34,  102, 114,
                                         97,  109, 101, 119, 111, 114, 107, 34,  58,  34,  112, 116, 34,  125,
                                         125, 32,  32,  32,  32,  32};

static void check_attn(const uint8_t *bytes, size_t len, const char *name, int32_t ndim) {
  mpk_safetensors *st = parse_ok(bytes, len);
  assert_int_equal(st->n_tensors, 1);
  const mpk_safetensors_tensor *t = mpk_safetensors_find(st, name);
  assert_non_null(t);
  assert_int_equal(t->ndim, ndim);
  assert_int_equal(t->numel, 6);
  float *f;
  mpk_error err;
  assert_int_equal(mpk_safetensors_tensor_to_f32(t, &f, &err), 0);
  for (int i = 0; i < 6; i++) assert_true(f[i] == (float)i);
  mpk_free(f);
  mpk_safetensors_free(st);
}

static void test_reference_vectors(void **state) {
  (void)state;
  check_attn(ref_attn0, sizeof ref_attn0, "attn.0", 3);
  check_attn(ref_aligned, sizeof ref_aligned, "attn0", 4);
  mpk_safetensors *st = parse_ok(ref_empty, sizeof ref_empty);
  assert_int_equal(st->n_tensors, 0);
  assert_int_equal(st->n_metadata, 0);
  mpk_safetensors_free(st);
  st = parse_ok(ref_empty_meta, sizeof ref_empty_meta);
  assert_int_equal(st->n_tensors, 0);
  assert_string_equal(mpk_safetensors_metadata(st, "framework"), "pt");
  mpk_safetensors_free(st);

  const char *i32 = "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}";
  size_t len;
  static const uint8_t zeros[64];
  uint8_t *p = build_n(60, i32, 60, zeros, 16, &len); /* test_deserialization */
  st = parse_ok(p, len);
  assert_int_equal(mpk_safetensors_find(st, "test")->numel, 4);
  mpk_safetensors_free(st);
  free(p);
  /* test_metadata_incomplete_buffer: bytes after the last tensor, and 2 bytes missing. */
  p = build_n(60, i32, 60, zeros, 16 + 34, &len);
  expect_refused(p, len, MPK_EMALFORMED, "belong to no tensor", "");
  free(p);
  p = build_n(60, i32, 60, zeros, 14, &len);
  expect_refused(p, len, MPK_EMALFORMED, "run past the end of the data section (14 bytes)", "/test/data_offsets");
  free(p);
  /* test_header_too_large: N = 0xffffffff0000003c. */
  p = build_n(UINT64_C(0xffffff000000003c), i32, 60, zeros, 16, &len);
  expect_refused(p, len, MPK_ELIMIT, "exceeds the limit of 100000000 bytes", NULL);
  free(p);
  /* test_header_too_small, test_invalid_header_length. */
  expect_refused(zeros, 0, MPK_EMALFORMED, "starts with an 8-byte header length", NULL);
  p = build_n(60, "", 0, NULL, 0, &len);
  expect_refused(p, len, MPK_EMALFORMED, "runs past the end of the file", NULL);
  free(p);
  /* test_invalid_header_non_utf8 (also not '{'), test_invalid_header_not_json. */
  p = build_n(1, "\xff", 1, NULL, 0, &len);
  expect_refused(p, len, MPK_EMALFORMED, "must begin with '{'", NULL);
  free(p);
  p = build_n(1, "{", 1, NULL, 0, &len);
  expect_refused(p, len, MPK_EMALFORMED, "header: invalid JSON", NULL);
  free(p);
  /* test_whitespace_padded_header: accepted. */
  p = build_n(6, "{}\r \t\n", 6, NULL, 0, &len);
  mpk_safetensors_free(parse_ok(p, len));
  free(p);
  /* test_zero_sized_tensor, test_empty_shapes_allowed. */
  p = build_n(60, "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,0],\"data_offsets\":[0, 0]}}", 60, NULL, 0, &len);
  st = parse_ok(p, len);
  assert_int_equal(st->tensors[0].numel, 0);
  mpk_safetensors_free(st);
  free(p);
  p = build_n(56, "{\"test\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[0,4]}}", 56, zeros, 4, &len);
  st = parse_ok(p, len);
  assert_int_equal(st->tensors[0].ndim, 0);
  assert_int_equal(st->tensors[0].numel, 1);
  mpk_safetensors_free(st);
  free(p);
  /* test_invalid_info: [2,2] I32 in 4 bytes. */
  p = build_n(60, "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0, 4]}}", 60, zeros, 4, &len);
  expect_refused(p, len, MPK_EMALFORMED, "hold 4 bytes, but I32 [2, 2] is 16 bytes", "/test/data_offsets");
  free(p);
  /* test_validation_overflow: a dimension beyond int64 is refused by the JSON reader; numel × 4 beyond
     2^63 by the size rule. */
  const char *o1 = "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,18446744073709551614],\"data_offsets\":[0,16]}}";
  p = build_n(79, o1, 79, zeros, 16, &len);
  expect_refused(p, len, MPK_EMALFORMED, "too big integer", NULL);
  free(p);
  const char *o2 = "{\"test\":{\"dtype\":\"I32\",\"shape\":[2,9223372036854775807],\"data_offsets\":[0,16]}}";
  p = build_n(78, o2, 78, zeros, 16, &len);
  expect_refused(p, len, MPK_ELIMIT, "exceeds 2^63 - 1", "/test/shape");
  free(p);
  /* test_json_attack: ten tensors all claiming [0, 16]. */
  char h[2048] = "{";
  for (int i = 0; i < 10; i++) {
    char one[128];
    snprintf(one, sizeof one, "%s\"weight_%d\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}", i ? "," : "", i);
    strcat(h, one);
  }
  strcat(h, "}");
  refuse_header(h, 16, MPK_EMALFORMED, "overlaps tensor \"weight_0\" [0, 16]", "/weight_1/data_offsets");
}

/* ---------------------------------------------------------------- the framing */

static void test_truncated(void **state) {
  (void)state;
  uint8_t seven[7] = {2, 0, 0, 0, 0, 0, 0};
  for (size_t n = 0; n < 8; n++) {
    mpk_error err;
    mpk_safetensors *st;
    assert_int_equal(mpk_safetensors_parse(seven, n < 7 ? n : 7, "x", &st, &err), MPK_EMALFORMED);
    assert_int_equal(err.offset, 0);
  }
  /* A good file cut anywhere is refused. */
  const char *h = "{" T("a", "F32", "[2]", 0, 8) "}";
  size_t len;
  uint8_t *p = build(h, 8, &len);
  for (size_t cut = 0; cut < len; cut++) {
    mpk_error err;
    mpk_safetensors *st = NULL;
    int rc = mpk_safetensors_parse(p, cut, "x", &st, &err);
    assert_int_equal(rc, MPK_EMALFORMED);
    assert_null(st);
  }
  /* One byte too many is refused too. */
  uint8_t *q = build(h, 9, &len);
  expect_refused(q, len, MPK_EMALFORMED, "1 bytes after tensor \"a\"", "");
  free(q);
  free(p);
}

static void test_header_length(void **state) {
  (void)state;
  size_t len;
  uint8_t *p = build_n(3, "{}", 2, NULL, 0, &len);
  expect_refused(p, len, MPK_EMALFORMED, "the header length 3 runs past the end of the file (2 bytes", NULL);
  free(p);
  p = build_n(UINT64_MAX, "{}", 2, NULL, 0, &len);
  expect_refused(p, len, MPK_ELIMIT, "exceeds the limit", NULL);
  free(p);
  /* The bound is inclusive: 100,000,000 is past this file, 100,000,001 is over the limit. */
  p = build_n(100000000, "{}", 2, NULL, 0, &len);
  expect_refused(p, len, MPK_EMALFORMED, "runs past the end", NULL);
  free(p);
  p = build_n(100000001, "{}", 2, NULL, 0, &len);
  expect_refused(p, len, MPK_ELIMIT, "the header length 100000001 exceeds the limit of 100000000 bytes", NULL);
  free(p);
  /* N = 0: nothing to begin with '{'. A header shorter than its JSON is cut JSON. */
  p = build_n(0, "", 0, NULL, 0, &len);
  expect_refused(p, len, MPK_EMALFORMED, "must begin with '{'", NULL);
  free(p);
  const char *h = "{" T("a", "U8", "[1]", 0, 1) "}";
  p = build_n(strlen(h) - 1, h, strlen(h), NULL, 1, &len);
  expect_refused(p, len, MPK_EMALFORMED, "header: invalid JSON", NULL);
  free(p);
}

static void test_not_json(void **state) {
  (void)state;
  refuse_header("{abc}", 0, MPK_EMALFORMED, "header: invalid JSON", NULL);
  refuse_header("[]", 0, MPK_EMALFORMED, "must begin with '{'", NULL);
  refuse_header(" {}", 0, MPK_EMALFORMED, "must begin with '{'", NULL);
  refuse_header("\xef\xbb\xbf{}", 0, MPK_EMALFORMED, "must begin with '{'", NULL);
  refuse_header("{}{}", 0, MPK_EMALFORMED, "header: invalid JSON", NULL);
  refuse_header("{},", 0, MPK_EMALFORMED, "header: invalid JSON", NULL);
  /* Invalid UTF-8 in a name, and an escaped NUL. */
  refuse_header("{\"a\xc3\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, MPK_EMALFORMED,
                "header: invalid JSON", NULL);
  refuse_header("{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, MPK_EMALFORMED,
                "header: invalid JSON", NULL);
  /* NUL padding (a known broken writer) is not whitespace. */
  size_t len;
  uint8_t *p = build_n(4, "{}\0\0", 4, NULL, 0, &len);
  expect_refused(p, len, MPK_EMALFORMED, "header: invalid JSON", NULL);
  free(p);
  /* The error offset is in the file, not in the header. */
  mpk_error err;
  mpk_safetensors *st;
  p = build("{abc}", 0, &len);
  assert_int_equal(mpk_safetensors_parse(p, len, "f", &st, &err), MPK_EMALFORMED);
  assert_true(err.offset >= 9);
  free(p);
}

static void test_duplicate_keys(void **state) {
  (void)state;
  refuse_header("{" T("a", "U8", "[1]", 0, 1) "," T("a", "U8", "[1]", 1, 2) "}", 2, MPK_EMALFORMED, "duplicate", NULL);
  refuse_header("{\"a\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, MPK_EMALFORMED,
                "duplicate", NULL);
  refuse_header("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, MPK_EMALFORMED, "duplicate", NULL);
}

/* ---------------------------------------------------------------- the tensor entries */

static void test_entry_keys(void **state) {
  (void)state;
  refuse_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"extra\":1}}", 1, MPK_EMALFORMED,
                "tensor \"a\": unknown field \"extra\"", "/a");
  refuse_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", 0, MPK_EMALFORMED,
                "tensor \"a\": missing field \"data_offsets\"", "/a");
  refuse_header("{\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,1]}}", 1, MPK_EMALFORMED, "missing field \"shape\"", "/a");
  refuse_header("{\"a\":[1]}", 0, MPK_EMALFORMED, "tensor \"a\" must be an object", "/a");
  refuse_header("{\"a\":null}", 0, MPK_EMALFORMED, "tensor \"a\" must be an object", "/a");
  refuse_header("{" T("", "U8", "[1]", 0, 1) "}", 1, MPK_EMALFORMED, "a tensor name must not be empty", "/");
  /* A name with '/' and '~' gets an escaped pointer. */
  refuse_header("{\"a/b~c\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,1]}}", 1, MPK_EMALFORMED,
                "tensor \"a/b~c\"", "/a~1b~0c/data_offsets");
}

static void test_bad_dtype(void **state) {
  (void)state;
  refuse_header("{" T("w", "F17", "[1]", 0, 1) "}", 1, MPK_EUNSUPPORTED, "tensor \"w\": unknown dtype \"F17\"",
                "/w/dtype");
  refuse_header("{" T("w", "f32", "[1]", 0, 4) "}", 4, MPK_EUNSUPPORTED, "unknown dtype \"f32\"", "/w/dtype");
  refuse_header("{" T("w", "", "[1]", 0, 4) "}", 4, MPK_EUNSUPPORTED, "unknown dtype \"\"", "/w/dtype");
  refuse_header("{\"w\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, MPK_EMALFORMED,
                "dtype must be a string", "/w/dtype");
}

static void test_bad_shape(void **state) {
  (void)state;
  refuse_header("{" T("w", "U8", "[-1]", 0, 0) "}", 0, MPK_EMALFORMED,
                "tensor \"w\": shape[0] must be a non-negative integer", "/w/shape/0");
  refuse_header("{" T("w", "U8", "[1,2.0]", 0, 2) "}", 2, MPK_EMALFORMED, "shape[1] must be a non-negative integer",
                "/w/shape/1");
  refuse_header("{" T("w", "U8", "[\"1\"]", 0, 1) "}", 1, MPK_EMALFORMED, "shape[0]", "/w/shape/0");
  refuse_header("{" T("w", "U8", "2", 0, 2) "}", 2, MPK_EMALFORMED, "shape must be an array", "/w/shape");
  refuse_header("{" T("w", "U8", "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]", 0, 1) "}", 1, MPK_ELIMIT,
                "17 dimensions (at most 16)", "/w/shape");
  accept_header("{" T("w", "U8", "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,2]", 0, 2) "}", 2);
  /* Overflow is refused even when a zero makes the tensor empty (strides would overflow). */
  refuse_header("{" T("w", "U8", "[0,4294967296,4294967296]", 0, 0) "}", 0, MPK_ELIMIT, "exceeds 2^63 - 1",
                "/w/shape");
  /* numel fits, numel × 8 does not. */
  refuse_header("{" T("w", "F64", "[2305843009213693952]", 0, 0) "}", 0, MPK_ELIMIT, "more than 2^63 bytes",
                "/w/shape");
  accept_header("{" T("w", "U8", "[0,4294967296]", 0, 0) "}", 0);
}

static void test_size_mismatch(void **state) {
  (void)state;
  refuse_header("{" T("w", "F32", "[2,2]", 0, 12) "}", 12, MPK_EMALFORMED,
                "tensor \"w\": data_offsets [0, 12] hold 12 bytes, but F32 [2, 2] is 16 bytes", "/w/data_offsets");
  refuse_header("{" T("w", "F16", "[3]", 0, 8) "}", 8, MPK_EMALFORMED, "hold 8 bytes, but F16 [3] is 6 bytes",
                "/w/data_offsets");
  refuse_header("{" T("w", "F32", "[0]", 0, 4) "}", 4, MPK_EMALFORMED, "hold 4 bytes, but F32 [0] is 0 bytes", NULL);
  refuse_header("{" T("w", "F64", "[]", 0, 4) "}", 4, MPK_EMALFORMED, "but F64 [] is 8 bytes", NULL);
}

static void test_bad_offsets(void **state) {
  (void)state;
  refuse_header("{" T("w", "U8", "[0]", 4, 0) "}", 0, MPK_EMALFORMED, "data_offsets [4, 0] end before they begin",
                "/w/data_offsets");
  refuse_header("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}", 1, MPK_EMALFORMED,
                "array of two integers", "/w/data_offsets");
  refuse_header("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1]}}", 1, MPK_EMALFORMED,
                "array of two integers", "/w/data_offsets");
  refuse_header("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":{\"0\":0}}}", 1, MPK_EMALFORMED,
                "array of two integers", "/w/data_offsets");
  refuse_header("{" T("w", "U8", "[1]", -1, 0) "}", 1, MPK_EMALFORMED, "two non-negative integers", "/w/data_offsets");
  refuse_header("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1.0]}}", 1, MPK_EMALFORMED,
                "two non-negative integers", "/w/data_offsets");
}

static void test_overlap(void **state) {
  (void)state;
  refuse_header("{" T("a", "U8", "[8]", 0, 8) "," T("b", "U8", "[8]", 4, 12) "}", 12, MPK_EMALFORMED,
                "tensor \"b\" [4, 12] overlaps tensor \"a\" [0, 8]", "/b/data_offsets");
  /* The same range twice; a tensor inside another. */
  refuse_header("{" T("a", "U8", "[4]", 0, 4) "," T("b", "U8", "[4]", 0, 4) "}", 4, MPK_EMALFORMED,
                "tensor \"b\" [0, 4] overlaps tensor \"a\" [0, 4]", NULL);
  refuse_header("{" T("a", "U8", "[8]", 0, 8) "," T("b", "U8", "[2]", 2, 4) "}", 8, MPK_EMALFORMED,
                "tensor \"b\" [2, 4] overlaps tensor \"a\" [0, 8]", NULL);
  /* An empty tensor strictly inside another one overlaps it too. */
  refuse_header("{" T("a", "U8", "[8]", 0, 8) "," T("e", "U8", "[0]", 3, 3) "}", 8, MPK_EMALFORMED,
                "tensor \"e\" [3, 3] overlaps tensor \"a\" [0, 8]", NULL);
}

static void test_hole(void **state) {
  (void)state;
  refuse_header("{" T("a", "U8", "[4]", 0, 4) "," T("b", "U8", "[4]", 8, 12) "}", 12, MPK_EMALFORMED,
                "tensor \"b\" begins at 8, but tensor \"a\" ends at 4: a hole of 4 bytes", "/b/data_offsets");
  refuse_header("{" T("a", "U8", "[4]", 2, 6) "}", 6, MPK_EMALFORMED,
                "tensor \"a\" begins at 2: the first tensor must begin at 0", "/a/data_offsets");
  /* An empty tensor at 0 does not cover a hole after it. */
  refuse_header("{" T("e", "U8", "[0]", 0, 0) "," T("a", "U8", "[2]", 1, 3) "}", 3, MPK_EMALFORMED,
                "tensor \"a\" begins at 1, but tensor \"e\" ends at 0: a hole of 1 bytes", "/a/data_offsets");
}

static void test_past_the_end(void **state) {
  (void)state;
  refuse_header("{" T("a", "U8", "[8]", 0, 8) "," T("b", "U8", "[8]", 8, 16) "}", 12, MPK_EMALFORMED,
                "tensor \"b\": data_offsets [8, 16] run past the end of the data section (12 bytes)",
                "/b/data_offsets");
  refuse_header("{" T("a", "U8", "[0]", 100, 100) "}", 0, MPK_EMALFORMED, "run past the end", "/a/data_offsets");
  /* Huge offsets, no wrap-around. */
  refuse_header("{" T("a", "U8", "[1]", 9223372036854775806, 9223372036854775807) "}", 1, MPK_EMALFORMED,
                "run past the end", "/a/data_offsets");
  /* Bytes nobody claims, after the last tensor or with no tensor at all. */
  refuse_header("{" T("a", "U8", "[4]", 0, 4) "}", 6, MPK_EMALFORMED,
                "2 bytes after tensor \"a\" (which ends at 4) belong to no tensor", "");
  refuse_header("{}", 3, MPK_EMALFORMED, "the header declares no tensor, but 3 data bytes follow it", "");
}

static void test_metadata(void **state) {
  (void)state;
  refuse_header("{\"__metadata__\":{\"format\":\"pt\",\"n\":1}}", 0, MPK_EMALFORMED,
                "__metadata__ \"n\" must be a string", "/__metadata__/n");
  refuse_header("{\"__metadata__\":{\"o\":{}}}", 0, MPK_EMALFORMED, "must be a string", "/__metadata__/o");
  refuse_header("{\"__metadata__\":{\"z\":null}}", 0, MPK_EMALFORMED, "must be a string", "/__metadata__/z");
  refuse_header("{\"__metadata__\":[\"pt\"]}", 0, MPK_EMALFORMED, "__metadata__ must be an object", "/__metadata__");
  refuse_header("{\"__metadata__\":null}", 0, MPK_EMALFORMED, "__metadata__ must be an object", "/__metadata__");
  refuse_header("{\"__metadata__\":\"pt\"}", 0, MPK_EMALFORMED, "__metadata__ must be an object", "/__metadata__");
}

/* ---------------------------------------------------------------- conversion to float32 */

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* One tensor of `dtype`/`count` elements from raw little-endian `data` at an odd offset (the data
   section has no alignment guarantee). */
static float *convert(const char *dtype, const void *data, size_t size, size_t count, int *rc, mpk_error *err) {
  char h[256];
  /* "{"... padded by one space so the data starts at an odd address offset from the buffer. */
  snprintf(h, sizeof h, "{\"t\":{\"dtype\":\"%s\",\"shape\":[%zu],\"data_offsets\":[0,%zu]}} ", dtype, count, size);
  if ((8 + strlen(h)) % 2 == 0) strcat(h, " ");
  size_t len;
  uint8_t *p = build_n(strlen(h), h, strlen(h), data, size, &len);
  mpk_safetensors *st = parse_ok(p, len);
  float *f = NULL;
  *rc = mpk_safetensors_tensor_to_f32(&st->tensors[0], &f, err);
  mpk_safetensors_free(st);
  free(p);
  return f;
}

/* binary16 by its definition, independently of the bit-level conversion. */
static double half_value(uint16_t h) {
  int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
  return s ? -v : v;
}

static void test_f16_exhaustive(void **state) {
  (void)state;
  uint8_t *raw = malloc(65536 * 2);
  assert_non_null(raw);
  for (unsigned i = 0; i < 65536; i++) {
    raw[2 * i] = (uint8_t)i;
    raw[2 * i + 1] = (uint8_t)(i >> 8);
  }
  int rc;
  mpk_error err;
  float *f = convert("F16", raw, 65536 * 2, 65536, &rc, &err);
  assert_int_equal(rc, 0);
  for (unsigned i = 0; i < 65536; i++) {
    if ((i & 0x7c00) == 0x7c00) {
      uint32_t want = (uint32_t)(i & 0x8000) << 16 | 0x7f800000u | (uint32_t)(i & 0x3ff) << 13;
      if (bits(f[i]) != want) fail_msg("half 0x%04x: bits 0x%08x, want 0x%08x", i, bits(f[i]), want);
      continue;
    }
    if ((double)f[i] != half_value((uint16_t)i) || (signbit(f[i]) != 0) != ((i & 0x8000) != 0))
      fail_msg("half 0x%04x: %a, want %a", i, (double)f[i], half_value((uint16_t)i));
  }
  /* Landmarks, by value. */
  assert_true(f[0x0001] == 0x1p-24f);   /* smallest subnormal */
  assert_true(f[0x03ff] == 0x1.ff8p-15f); /* largest subnormal */
  assert_true(f[0x0400] == 0x1p-14f);   /* smallest normal */
  assert_true(f[0x3c00] == 1.0f);
  assert_true(f[0xc000] == -2.0f);
  assert_true(f[0x7bff] == 65504.0f);
  assert_true(isinf(f[0x7c00]) && f[0x7c00] > 0);
  assert_true(isinf(f[0xfc00]) && f[0xfc00] < 0);
  assert_true(isnan(f[0x7e00]));
  assert_int_equal(bits(f[0x7e00]), 0x7fc00000u);
  assert_true(isnan(f[0x7c01])); /* signalling NaN keeps its payload */
  assert_int_equal(bits(f[0x7c01]), 0x7f802000u);
  assert_int_equal(bits(f[0x8000]), 0x80000000u); /* -0 */
  mpk_free(f);
  free(raw);
}

static void test_bf16_f32_f64(void **state) {
  (void)state;
  int rc;
  mpk_error err;
  /* BF16: the high half of a float32. */
  static const uint8_t bf[] = {0x80, 0x3f, 0x01, 0x00, 0x80, 0x7f, 0xc1, 0xff, 0x49, 0x40, 0x00, 0x80};
  float *f = convert("BF16", bf, sizeof bf, 6, &rc, &err);
  assert_int_equal(rc, 0);
  assert_true(f[0] == 1.0f);
  assert_int_equal(bits(f[1]), 0x00010000u); /* a subnormal */
  assert_true(isinf(f[2]));
  assert_int_equal(bits(f[3]), 0xffc10000u);
  assert_true(f[4] == 3.140625f);
  assert_int_equal(bits(f[5]), 0x80000000u);
  mpk_free(f);

  /* F32: bits copied, NaN payloads included. */
  uint32_t w[] = {0x3f800000u, 0x00000001u, 0x7fa00001u, 0xff800000u, 0xc2f6e979u};
  uint8_t raw32[sizeof w];
  for (size_t i = 0; i < 5; i++)
    for (int b = 0; b < 4; b++) raw32[4 * i + b] = (uint8_t)(w[i] >> (8 * b));
  f = convert("F32", raw32, sizeof raw32, 5, &rc, &err);
  assert_int_equal(rc, 0);
  for (size_t i = 0; i < 5; i++) assert_int_equal(bits(f[i]), w[i]);
  mpk_free(f);

  /* F64: rounded to nearest; inf and NaN kept; a finite value beyond float32 refused. */
  double d[] = {1.0, 0.1, 1e-40, 1e-50, -INFINITY, NAN, 3.4028234663852886e38, -2.5};
  uint8_t raw64[sizeof d];
  for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
    uint64_t u;
    memcpy(&u, &d[i], 8);
    for (int b = 0; b < 8; b++) raw64[8 * i + b] = (uint8_t)(u >> (8 * b));
  }
  f = convert("F64", raw64, sizeof raw64, 8, &rc, &err);
  assert_int_equal(rc, 0);
  assert_true(f[0] == 1.0f);
  assert_int_equal(bits(f[1]), bits(0.1f));
  assert_true(f[2] == 1e-40f); /* the nearest float32 subnormal */
  assert_true(fpclassify(f[2]) == FP_SUBNORMAL);
  assert_true(f[3] == 0.0f);
  assert_true(isinf(f[4]) && f[4] < 0);
  assert_true(isnan(f[5]));
  assert_true(f[6] == 3.4028234663852886e38f);
  assert_true(f[7] == -2.5f);
  mpk_free(f);
  double big[] = {1.0, -1e39};
  uint8_t rawbig[16];
  for (size_t i = 0; i < 2; i++) {
    uint64_t u;
    memcpy(&u, &big[i], 8);
    for (int b = 0; b < 8; b++) rawbig[8 * i + b] = (uint8_t)(u >> (8 * b));
  }
  mpk_error_clear(&err);
  f = convert("F64", rawbig, 16, 2, &rc, &err);
  assert_int_equal(rc, MPK_ELIMIT);
  assert_null(f);
  assert_non_null(strstr(err.message, "tensor \"t\": element 1"));
  assert_non_null(strstr(err.message, "beyond the float32 range"));

  /* Other dtypes are refused; an empty tensor gives a valid pointer. */
  static const uint8_t i32[4] = {1, 0, 0, 0};
  f = convert("I32", i32, 4, 1, &rc, &err);
  assert_int_equal(rc, MPK_EUNSUPPORTED);
  assert_null(f);
  assert_non_null(strstr(err.message, "dtype I32 cannot be read as float32"));
  f = convert("F16", NULL, 0, 0, &rc, &err);
  assert_int_equal(rc, 0);
  assert_non_null(f);
  mpk_free(f);
  assert_int_equal(mpk_safetensors_tensor_to_f32(NULL, &f, &err), MPK_EINVAL);
}

/* ---------------------------------------------------------------- files */

static void write_file(const char *path, const uint8_t *p, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(p, 1, len, f), len);
  fclose(f);
}

static void test_open(void **state) {
  (void)state;
  const char *dir = tu_tmpdir();
  char path[600];
  snprintf(path, sizeof path, "%s/adapter.safetensors", dir);
  write_file(path, ref_aligned, sizeof ref_aligned);
  mpk_error err;
  mpk_safetensors *st = NULL;
  assert_int_equal(mpk_safetensors_open(path, &st, &err), 0);
  assert_string_equal(st->file, path);
  const mpk_safetensors_tensor *t = mpk_safetensors_find(st, "attn0");
  assert_non_null(t);
  assert_int_equal(((uintptr_t)t->data) % 4, 0); /* the writer's padding aligns the data */
  float *f;
  assert_int_equal(mpk_safetensors_tensor_to_f32(t, &f, &err), 0);
  assert_true(f[5] == 5.0f);
  mpk_free(f);
  mpk_safetensors_free(st);

  /* A refused file names its path; a missing one is not found; a directory is not a file. */
  write_file(path, ref_aligned, sizeof ref_aligned - 1);
  st = (mpk_safetensors *)&err;
  assert_int_equal(mpk_safetensors_open(path, &st, &err), MPK_EMALFORMED);
  assert_null(st);
  assert_string_equal(err.file, path);
  assert_non_null(strstr(err.message, "attn0"));
  write_file(path, ref_aligned, 0);
  assert_int_equal(mpk_safetensors_open(path, &st, &err), MPK_EMALFORMED);
  snprintf(path, sizeof path, "%s/missing.safetensors", dir);
  assert_int_equal(mpk_safetensors_open(path, &st, &err), MPK_ENOTFOUND);
  assert_int_not_equal(mpk_safetensors_open(dir, &st, &err), 0);
  assert_int_equal(mpk_safetensors_open(NULL, &st, &err), MPK_EINVAL);
  assert_int_equal(mpk_safetensors_parse(NULL, 8, "x", &st, &err), MPK_EINVAL);
  mpk_safetensors_free(NULL);
  assert_null(mpk_safetensors_find(NULL, "a"));
  tu_sh("rm -rf '%s'", dir);
}

/* Without a file name, errors name "safetensors"; without an error struct nothing breaks. */
static void test_names_and_null_err(void **state) {
  (void)state;
  size_t len;
  uint8_t *p = build("{" T("a", "U8", "[4]", 0, 4) "}", 3, &len);
  mpk_error err;
  mpk_safetensors *st;
  assert_int_equal(mpk_safetensors_parse(p, len, NULL, &st, &err), MPK_EMALFORMED);
  assert_string_equal(err.file, "safetensors");
  assert_int_equal(mpk_safetensors_parse(p, len, NULL, &st, NULL), MPK_EMALFORMED);
  free(p);
}

/* The memory budget (docs/safetensors.md "Memory budget"): header bytes and tensor count, checked
   before the header is parsed, the budget named in the error; commas inside strings and nested
   arrays are not members. */
static void test_budget(void **state) {
  (void)state;
  const char *h = "{\"a,b\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[0,4]},"
                  "\"c\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
  size_t len;
  uint8_t *p = build(h, 8, &len);
  mpk_safetensors *st = NULL;
  mpk_error err;
  mpk_safetensors_budget two = {.max_tensors = 2}, one = {.max_tensors = 1}, small = {.max_header_bytes = 16};
  mpk_error_clear(&err);
  assert_int_equal(mpk_safetensors_parse_budget(p, len, "x", &two, &st, &err), 0);
  assert_int_equal(st->n_tensors, 2);
  mpk_safetensors_free(st);
  assert_int_equal(mpk_safetensors_parse_budget(p, len, "x", &one, &st, &err), MPK_ELIMIT);
  assert_null(st);
  assert_non_null(strstr(err.message, "more than 1 tensors, over the safetensors reader's memory budget of 1 tensors"));
  assert_int_equal(mpk_safetensors_parse_budget(p, len, "x", &small, &st, &err), MPK_ELIMIT);
  assert_non_null(strstr(err.message, "over the safetensors reader's memory budget of 16 header bytes"));
  assert_string_equal(err.file, "x");
  /* the default budget: 16 MiB of header */
  free(p);
  size_t big = MPK_SAFETENSORS_DEFAULT_HEADER_BUDGET + 1;
  char *hdr = malloc(big + 1);
  assert_non_null(hdr);
  memset(hdr, ' ', big);
  hdr[0] = '{';
  hdr[1] = '}';
  hdr[big] = '\0';
  p = build_n(big, hdr, big, NULL, 0, &len);
  assert_int_equal(mpk_safetensors_parse(p, len, "y", &st, &err), MPK_ELIMIT);
  assert_non_null(strstr(err.message, "memory budget of 16777216 header bytes"));
  free(p);
  free(hdr);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid_several_dtypes),
      cmocka_unit_test(test_every_dtype),
      cmocka_unit_test(test_unsorted_but_contiguous),
      cmocka_unit_test(test_reference_vectors),
      cmocka_unit_test(test_truncated),
      cmocka_unit_test(test_header_length),
      cmocka_unit_test(test_not_json),
      cmocka_unit_test(test_duplicate_keys),
      cmocka_unit_test(test_entry_keys),
      cmocka_unit_test(test_bad_dtype),
      cmocka_unit_test(test_bad_shape),
      cmocka_unit_test(test_size_mismatch),
      cmocka_unit_test(test_bad_offsets),
      cmocka_unit_test(test_overlap),
      cmocka_unit_test(test_hole),
      cmocka_unit_test(test_past_the_end),
      cmocka_unit_test(test_metadata),
      cmocka_unit_test(test_f16_exhaustive),
      cmocka_unit_test(test_bf16_f32_f64),
      cmocka_unit_test(test_open),
      cmocka_unit_test(test_names_and_null_err),
      cmocka_unit_test(test_budget),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
