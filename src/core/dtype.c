/* Element dtypes by name, as TVM spells them. */
#include <string.h>

#include "core/core.h"

static const struct {
  const char *name;
  int bits;
} dtypes[] = {
    {"float64", 64}, {"float32", 32}, {"float16", 16}, {"bfloat16", 16},
    {"float8_e4m3fn", 8}, {"float8_e5m2", 8}, {"float8_e4m3fnuz", 8}, {"float8_e5m2fnuz", 8},
    {"float8_e8m0fnu", 8}, {"float4_e2m1fn", 4},
    {"int64", 64}, {"int32", 32}, {"int16", 16}, {"int8", 8}, {"int4", 4},
    {"uint64", 64}, {"uint32", 32}, {"uint16", 16}, {"uint8", 8}, {"uint4", 4},
    {"bool", 8},
};

int mpk_dtype_bits(const char *dtype) {
  if (!dtype) return 0;
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (strcmp(dtypes[i].name, dtype) == 0) return dtypes[i].bits;
  return 0;
}
