/* Tensor views (modelpkg/core.h "core: tensor views"): the size rule of a dtype and a shape, a view
   over a mapping, and its DLPack DLTensor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlpack/dlpack.h>

#include "core/core.h"

_Static_assert(sizeof(DLDataType) == 4, "DLDataType layout");

/* ---------------------------------------------------------------- dtypes and the size rule */

typedef struct dtype_info {
  const char *name;
  uint8_t code, bits;
} dtype_info;

static const dtype_info dtypes[] = {
    {"float32", kDLFloat, 32}, {"float16", kDLFloat, 16}, {"bfloat16", kDLBfloat, 16},
    {"int8", kDLInt, 8},       {"uint8", kDLUInt, 8},     {"int4", kDLInt, 4},
    {"uint4", kDLUInt, 4},     {"int32", kDLInt, 32},     {"int64", kDLInt, 64},
};

static const dtype_info *dtype_find(const char *name) {
  for (size_t i = 0; name && i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (strcmp(dtypes[i].name, name) == 0) return &dtypes[i];
  return NULL;
}

int mpk_tensor_nbytes(const char *dtype, const int64_t *shape, size_t ndim, uint64_t *numel, uint64_t *nbytes,
                      mpk_error *err) {
  if (!dtype || (ndim && !shape) || !nbytes) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "invalid argument");
  const dtype_info *d = dtype_find(dtype);
  if (!d) return mpk_fail(err, MPK_EUNSUPPORTED, NULL, NULL, "dtype \"%.40s\" cannot be loaded", dtype);
  uint64_t n = 1;
  for (size_t i = 0; i < ndim; i++) {
    if (shape[i] < 1)
      return mpk_fail(err, MPK_EMALFORMED, NULL, NULL, "dimension %zu is %lld: every dimension must be at least 1", i,
                      (long long)shape[i]);
    if (__builtin_mul_overflow(n, (uint64_t)shape[i], &n))
      return mpk_fail(err, MPK_ELIMIT, NULL, NULL, "the element count overflows 64 bits");
  }
  uint64_t bytes;
  if (d->bits == 4) bytes = n / 2 + (n & 1);
  else if (__builtin_mul_overflow(n, (uint64_t)(d->bits / 8), &bytes))
    return mpk_fail(err, MPK_ELIMIT, NULL, NULL, "%llu elements of %s overflow 64 bits of bytes",
                    (unsigned long long)n, dtype);
  if (numel) *numel = n;
  *nbytes = bytes;
  return 0;
}

void mpk_tensor_view_fill(mpk_tensor_view *out, mpk_mapped *m, const char *dtype, const int64_t *shape, size_t ndim,
                          uint64_t numel) {
  const dtype_info *d = dtype_find(dtype);
  memset(out, 0, sizeof *out);
  out->data = m->data;
  snprintf(out->dtype, sizeof out->dtype, "%s", d->name);
  out->dl_code = d->code;
  out->dl_bits = d->bits;
  out->dl_lanes = 1;
  out->ndim = (int32_t)ndim;
  int64_t stride = 1;
  for (size_t i = ndim; i-- > 0;) {
    out->shape[i] = shape[i];
    out->strides[i] = stride;
    stride *= shape[i]; /* <= numel: no overflow */
  }
  out->numel = numel;
  out->nbytes = m->size;
  out->priv_ = m;
}

void mpk_tensor_view_close(mpk_tensor_view *v) {
  if (!v) return;
  if (v->priv_) {
    mpk_unmap_file(v->priv_);
    free(v->priv_);
  }
  memset(v, 0, sizeof *v);
}

int mpk_tensor_view_dltensor(const mpk_tensor_view *v, void *dltensor_out) {
  if (!v || !dltensor_out || !v->priv_) return MPK_EINVAL;
  DLTensor *t = dltensor_out;
  memset(t, 0, sizeof *t);
  t->data = (void *)v->data;
  t->device.device_type = kDLCPU;
  t->device.device_id = 0;
  t->ndim = v->ndim;
  t->dtype.code = v->dl_code;
  t->dtype.bits = v->dl_bits;
  t->dtype.lanes = v->dl_lanes;
  t->shape = (int64_t *)v->shape;
  t->strides = (int64_t *)v->strides;
  t->byte_offset = 0;
  return 0;
}
