/* core/dtype.c: the one dtype registry. Every row is consistent with itself and with the other
   rows (names, safetensors names and ONNX types round-trip and are unique), the int4-packing rule
   gives the byte counts the formats expect (odd element counts round up), and the facts the four
   tables it replaced held are still what the library answers. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <dlpack/dlpack.h>

#include "testutil.h"
#include "core/core.h"

static void test_rows_consistent(void **state) {
  (void)state;
  assert_int_equal(mpk_dtype_count(), MPK_DT_COUNT - 1);
  assert_null(mpk_dtype_at(mpk_dtype_count()));
  assert_null(mpk_dtype_get(MPK_DT_UNKNOWN));
  assert_null(mpk_dtype_get(MPK_DT_COUNT));
  for (size_t i = 0; i < mpk_dtype_count(); i++) {
    const mpk_dtype *d = mpk_dtype_at(i);
    assert_non_null(d);
    assert_ptr_equal(mpk_dtype_get(d->id), d);
    assert_true(d->name || d->onnx_name); /* every row is spelled somewhere */
    if (d->name) {
      assert_ptr_equal(mpk_dtype_by_name(d->name), d); /* name -> row -> name */
      assert_string_equal(mpk_dtype_name(d->id), d->name);
      assert_true(mpk_dtype_is(d->name, d->id));
      assert_int_equal(mpk_dtype_bits(d->name), d->bits);
      assert_true(d->bits == 4 || d->bits % 8 == 0);
      assert_true(d->bits > 0);
    } else {
      assert_int_equal(mpk_dtype_bits(d->onnx_name), 0); /* ONNX-only: not an MLC dtype */
      assert_true(d->onnx_type != 0);
    }
    if (d->st_name) {
      assert_ptr_equal(mpk_dtype_by_st_name(d->st_name), d);
      assert_true(d->bits % 8 == 0);
      assert_int_equal(mpk_safetensors_dtype_size(d->st_name), d->bits / 8);
    }
    if (d->onnx_type) {
      assert_ptr_equal(mpk_dtype_by_onnx(d->onnx_type), d);
      assert_string_equal(mpk_mt_onnx_dtype_name(d->onnx_type), mpk_dtype_onnx_name(d));
    }
    if (d->dl_lanes) {
      assert_int_equal(d->dl_lanes, 1);
      assert_int_equal(d->dl_bits, d->bits);
    }
    if (d->flags & MPK_DTYPE_HANDOFF) {
      assert_non_null(d->name);
      assert_int_equal(d->dl_lanes, 1); /* a handoff tensor can be handed out as a DLTensor */
    }
    for (size_t j = 0; j < i; j++) { /* no spelling twice */
      const mpk_dtype *e = mpk_dtype_at(j);
      assert_true(d->id != e->id);
      if (d->name && e->name) assert_string_not_equal(d->name, e->name);
      if (d->st_name && e->st_name) assert_string_not_equal(d->st_name, e->st_name);
      if (d->onnx_type) assert_true(d->onnx_type != e->onnx_type);
      assert_string_not_equal(mpk_dtype_onnx_name(d), mpk_dtype_onnx_name(e));
    }
  }
  assert_null(mpk_dtype_by_name(NULL));
  assert_null(mpk_dtype_by_name("Float16"));
  assert_null(mpk_dtype_by_st_name("f32"));
  assert_null(mpk_dtype_by_st_name("F8_E4M3FN"));
  assert_null(mpk_dtype_by_onnx(0));
  assert_null(mpk_dtype_by_onnx(99));
  assert_false(mpk_dtype_is(NULL, MPK_DT_FLOAT16));
  assert_int_equal(mpk_dtype_bits("complex64"), 0);
}

/* The int4-packing rule: two to a byte, the byte count rounded up. */
static void test_packing(void **state) {
  (void)state;
  const mpk_dtype *i4 = mpk_dtype_get(MPK_DT_INT4), *u4 = mpk_dtype_get(MPK_DT_UINT4),
                  *f4 = mpk_dtype_get(MPK_DT_FLOAT4_E2M1FN), *f16 = mpk_dtype_get(MPK_DT_FLOAT16),
                  *f64 = mpk_dtype_get(MPK_DT_FLOAT64), *c128 = mpk_dtype_get(MPK_DT_COMPLEX128);
  uint64_t b;
  for (uint64_t n = 0; n < 12; n++) {
    assert_true(mpk_dtype_packed_bytes(i4, n, &b));
    assert_int_equal(b, n / 2 + n % 2);
    assert_true(mpk_dtype_packed_bytes(u4, n, &b));
    assert_int_equal(b, (n + 1) / 2);
    assert_true(mpk_dtype_packed_bytes(f4, n, &b));
    assert_int_equal(b, (n + 1) / 2);
    assert_true(mpk_dtype_packed_bytes(f16, n, &b));
    assert_int_equal(b, 2 * n);
  }
  assert_true(mpk_dtype_packed_bytes(i4, 5, &b));
  assert_int_equal(b, 3);
  assert_true(mpk_dtype_packed_bytes(i4, UINT64_MAX, &b));
  assert_int_equal(b, UINT64_MAX / 2 + 1);
  assert_true(mpk_dtype_packed_bytes(c128, 3, &b));
  assert_int_equal(b, 48);
  assert_false(mpk_dtype_packed_bytes(f64, UINT64_MAX / 4, &b)); /* overflow */
  assert_false(mpk_dtype_packed_bytes(mpk_dtype_get(MPK_DT_ONNX_STRING), 1, &b)); /* no width */
  assert_false(mpk_dtype_packed_bytes(NULL, 1, &b));
  /* Unpacked (MLC's tensor cache): a 4-bit element takes a whole byte. */
  assert_int_equal(mpk_dtype_unpacked_bytes(4), 1);
  assert_int_equal(mpk_dtype_unpacked_bytes(16), 2);
  /* The MT tensor size rule is the registry's: int4 [3, 3] is 5 bytes, uint4 [7] 4. */
  uint64_t numel, nbytes;
  mpk_error err;
  assert_int_equal(mpk_tensor_nbytes("int4", (const int64_t[]){3, 3}, 2, &numel, &nbytes, &err), 0);
  assert_int_equal(numel, 9);
  assert_int_equal(nbytes, 5);
  assert_int_equal(mpk_tensor_nbytes("uint4", (const int64_t[]){7}, 1, &numel, &nbytes, &err), 0);
  assert_int_equal(nbytes, 4);
  assert_int_equal(mpk_tensor_nbytes("float64", (const int64_t[]){1}, 1, &numel, &nbytes, &err), MPK_EUNSUPPORTED);
}

/* What the four tables it replaced said, row by row. */
static void test_old_tables(void **state) {
  (void)state;
  static const struct {
    const char *name;
    int bits;
  } tvm[] = {{"float64", 64}, {"float32", 32}, {"float16", 16}, {"bfloat16", 16}, {"float8_e4m3fn", 8},
             {"float8_e5m2", 8}, {"float8_e4m3fnuz", 8}, {"float8_e5m2fnuz", 8}, {"float8_e8m0fnu", 8},
             {"float4_e2m1fn", 4}, {"int64", 64}, {"int32", 32}, {"int16", 16}, {"int8", 8}, {"int4", 4},
             {"uint64", 64}, {"uint32", 32}, {"uint16", 16}, {"uint8", 8}, {"uint4", 4}, {"bool", 8}};
  for (size_t i = 0; i < sizeof tvm / sizeof tvm[0]; i++) assert_int_equal(mpk_dtype_bits(tvm[i].name), tvm[i].bits);
  assert_int_equal(mpk_dtype_count(), sizeof tvm / sizeof tvm[0] + 3);

  static const struct {
    const char *name;
    uint8_t code, bits;
  } handoff[] = {{"float32", kDLFloat, 32}, {"float16", kDLFloat, 16}, {"bfloat16", kDLBfloat, 16},
                 {"int8", kDLInt, 8},       {"uint8", kDLUInt, 8},     {"int4", kDLInt, 4},
                 {"uint4", kDLUInt, 4},     {"int32", kDLInt, 32},     {"int64", kDLInt, 64}};
  size_t n_handoff = 0;
  for (size_t i = 0; i < mpk_dtype_count(); i++) n_handoff += (mpk_dtype_at(i)->flags & MPK_DTYPE_HANDOFF) != 0;
  assert_int_equal(n_handoff, sizeof handoff / sizeof handoff[0]);
  for (size_t i = 0; i < n_handoff; i++) {
    const mpk_dtype *d = mpk_dtype_by_name(handoff[i].name);
    assert_true(d->flags & MPK_DTYPE_HANDOFF);
    assert_int_equal(d->dl_code, handoff[i].code);
    assert_int_equal(d->dl_bits, handoff[i].bits);
  }

  static const struct {
    const char *st, *name;
  } st[] = {{"BOOL", "bool"},   {"U8", "uint8"},   {"I8", "int8"},   {"F8_E5M2", "float8_e5m2"},
            {"F8_E4M3", "float8_e4m3fn"}, {"I16", "int16"}, {"U16", "uint16"}, {"F16", "float16"},
            {"BF16", "bfloat16"}, {"I32", "int32"}, {"U32", "uint32"}, {"F32", "float32"},
            {"F64", "float64"}, {"I64", "int64"}, {"U64", "uint64"}};
  size_t n_st = 0;
  for (size_t i = 0; i < mpk_dtype_count(); i++) n_st += mpk_dtype_at(i)->st_name != NULL;
  assert_int_equal(n_st, sizeof st / sizeof st[0]);
  for (size_t i = 0; i < n_st; i++) assert_string_equal(mpk_dtype_by_st_name(st[i].st)->name, st[i].name);

  static const struct {
    int32_t type;
    const char *name;
    int bits;
  } onnx[] = {{1, "float32", 32},       {2, "uint8", 8},          {3, "int8", 8},           {4, "uint16", 16},
              {5, "int16", 16},         {6, "int32", 32},         {7, "int64", 64},         {8, "object", 0},
              {9, "bool", 8},           {10, "float16", 16},      {11, "float64", 64},      {12, "uint32", 32},
              {13, "uint64", 64},       {14, "complex64", 64},    {15, "complex128", 128},  {16, "bfloat16", 16},
              {17, "float8_e4m3fn", 8}, {18, "float8_e4m3fnuz", 8}, {19, "float8_e5m2", 8}, {20, "float8_e5m2fnuz", 8},
              {21, "uint4", 4},         {22, "int4", 4},          {23, "float4_e2m1", 4}};
  size_t n_onnx = 0;
  for (size_t i = 0; i < mpk_dtype_count(); i++) n_onnx += mpk_dtype_at(i)->onnx_type != 0;
  assert_int_equal(n_onnx, sizeof onnx / sizeof onnx[0]);
  for (size_t i = 0; i < n_onnx; i++) {
    assert_string_equal(mpk_mt_onnx_dtype_name(onnx[i].type), onnx[i].name);
    assert_int_equal(mpk_dtype_by_onnx(onnx[i].type)->bits, onnx[i].bits);
  }
  assert_null(mpk_mt_onnx_dtype_name(24));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows_consistent),
      cmocka_unit_test(test_packing),
      cmocka_unit_test(test_old_tables),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
