/* The dtype registry: every element type the library knows, with each format's spelling of it, in
   one table. Every other file asks here: by the MLC/TVM name (mpk_dtype_by_name), the safetensors
   name, the ONNX TensorProto data type, or the id; no other file spells a dtype name. */
#include <string.h>

#include <dlpack/dlpack.h>

#include "core/core.h"

/* The int4-packing rule, the one place it is stated. Elements narrower than a byte are packed
   8/bits to a byte, low element first, and the byte count is rounded up: 5 int4 elements take 3
   bytes (n/2 + n%2). Wider elements take bits/8 bytes each. This is the layout of a packed tensor
   (a MobileTransformers handoff .bin, an ONNX initializer). MLC's tensor cache and parameter sizes
   store every element in whole bytes instead: (bits + 7) / 8 each (mpk_dtype_unpacked_bytes). */
bool mpk_dtype_packed_bytes(const mpk_dtype *d, uint64_t numel, uint64_t *out) {
  if (!d || d->bits <= 0 || !out) return false;
  if (d->bits < 8) {
    uint64_t per = (uint64_t)(8 / d->bits);
    *out = numel / per + (numel % per != 0);
    return true;
  }
  return !__builtin_mul_overflow(numel, (uint64_t)(d->bits / 8), out);
}

int mpk_dtype_unpacked_bytes(int bits) { return (bits + 7) / 8; }

#define NO_DL 0, 0, 0
#define DL(code, bits) code, bits, 1
#define H MPK_DTYPE_HANDOFF

/* id, name (MLC/TVM; NULL: ONNX only), bits, DLPack code/bits/lanes (lanes 0: none), safetensors
   name, ONNX TensorProto.DataType (0: none), ONNX's numpy name where it is not `name`, flags. */
static const mpk_dtype table[] = {
    {MPK_DT_FLOAT64, "float64", 64, DL(kDLFloat, 64), "F64", 11, NULL, 0},
    {MPK_DT_FLOAT32, "float32", 32, DL(kDLFloat, 32), "F32", 1, NULL, H},
    {MPK_DT_FLOAT16, "float16", 16, DL(kDLFloat, 16), "F16", 10, NULL, H},
    {MPK_DT_BFLOAT16, "bfloat16", 16, DL(kDLBfloat, 16), "BF16", 16, NULL, H},
    {MPK_DT_FLOAT8_E4M3FN, "float8_e4m3fn", 8, NO_DL, "F8_E4M3", 17, NULL, 0},
    {MPK_DT_FLOAT8_E5M2, "float8_e5m2", 8, NO_DL, "F8_E5M2", 19, NULL, 0},
    {MPK_DT_FLOAT8_E4M3FNUZ, "float8_e4m3fnuz", 8, NO_DL, NULL, 18, NULL, 0},
    {MPK_DT_FLOAT8_E5M2FNUZ, "float8_e5m2fnuz", 8, NO_DL, NULL, 20, NULL, 0},
    {MPK_DT_FLOAT8_E8M0FNU, "float8_e8m0fnu", 8, NO_DL, NULL, 0, NULL, 0},
    {MPK_DT_FLOAT4_E2M1FN, "float4_e2m1fn", 4, NO_DL, NULL, 23, "float4_e2m1", 0},
    {MPK_DT_INT64, "int64", 64, DL(kDLInt, 64), "I64", 7, NULL, H},
    {MPK_DT_INT32, "int32", 32, DL(kDLInt, 32), "I32", 6, NULL, H},
    {MPK_DT_INT16, "int16", 16, DL(kDLInt, 16), "I16", 5, NULL, 0},
    {MPK_DT_INT8, "int8", 8, DL(kDLInt, 8), "I8", 3, NULL, H},
    {MPK_DT_INT4, "int4", 4, DL(kDLInt, 4), NULL, 22, NULL, H},
    {MPK_DT_UINT64, "uint64", 64, DL(kDLUInt, 64), "U64", 13, NULL, 0},
    {MPK_DT_UINT32, "uint32", 32, DL(kDLUInt, 32), "U32", 12, NULL, 0},
    {MPK_DT_UINT16, "uint16", 16, DL(kDLUInt, 16), "U16", 4, NULL, 0},
    {MPK_DT_UINT8, "uint8", 8, DL(kDLUInt, 8), "U8", 2, NULL, H},
    {MPK_DT_UINT4, "uint4", 4, DL(kDLUInt, 4), NULL, 21, NULL, H},
    {MPK_DT_BOOL, "bool", 8, NO_DL, "BOOL", 9, NULL, 0},
    /* ONNX data types with no MLC name: an initializer of these is reported, never loaded. */
    {MPK_DT_ONNX_STRING, NULL, 0, NO_DL, NULL, 8, "object", 0},
    {MPK_DT_COMPLEX64, NULL, 64, DL(kDLComplex, 64), NULL, 14, "complex64", 0},
    {MPK_DT_COMPLEX128, NULL, 128, DL(kDLComplex, 128), NULL, 15, "complex128", 0},
};
_Static_assert(sizeof table / sizeof table[0] == MPK_DT_COUNT - 1, "one row per mpk_dtype_id");

size_t mpk_dtype_count(void) { return sizeof table / sizeof table[0]; }

const mpk_dtype *mpk_dtype_at(size_t i) { return i < mpk_dtype_count() ? &table[i] : NULL; }

const mpk_dtype *mpk_dtype_get(mpk_dtype_id id) {
  return id > MPK_DT_UNKNOWN && id < MPK_DT_COUNT ? &table[id - 1] : NULL;
}

const char *mpk_dtype_name(mpk_dtype_id id) {
  const mpk_dtype *d = mpk_dtype_get(id);
  return d ? d->name : NULL;
}

const mpk_dtype *mpk_dtype_by_name(const char *name) {
  for (size_t i = 0; name && i < mpk_dtype_count(); i++)
    if (table[i].name && strcmp(table[i].name, name) == 0) return &table[i];
  return NULL;
}

bool mpk_dtype_is(const char *name, mpk_dtype_id id) {
  const mpk_dtype *d = mpk_dtype_by_name(name);
  return d && d->id == id;
}

const mpk_dtype *mpk_dtype_by_st_name(const char *name) {
  for (size_t i = 0; name && i < mpk_dtype_count(); i++)
    if (table[i].st_name && strcmp(table[i].st_name, name) == 0) return &table[i];
  return NULL;
}

const mpk_dtype *mpk_dtype_by_onnx(int32_t type) {
  for (size_t i = 0; type && i < mpk_dtype_count(); i++)
    if (table[i].onnx_type == type) return &table[i];
  return NULL;
}

const char *mpk_dtype_onnx_name(const mpk_dtype *d) { return !d ? NULL : d->onnx_name ? d->onnx_name : d->name; }

int mpk_dtype_bits(const char *dtype) {
  const mpk_dtype *d = mpk_dtype_by_name(dtype);
  return d ? d->bits : 0; /* every named dtype has bits > 0: 0 never means a size */
}
