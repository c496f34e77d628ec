/* Tensor views (modelpkg/core.h "core: tensor views"): the size rule of a dtype and a shape, a view
   over a mapping, and its DLPack DLTensor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>
#include <sys/mman.h>

#include <dlpack/dlpack.h>

#include "core/core.h"
#include "core/endian.h"

_Static_assert(sizeof(DLDataType) == 4, "DLDataType layout");

/* ---------------------------------------------------------------- dtypes and the size rule */

/* The dtypes a tensor view may hold: those a handoff map may declare, from core's registry
   (MPK_DTYPE_HANDOFF). */
static const mpk_dtype *dtype_find(const char *name) {
  const mpk_dtype *d = mpk_dtype_by_name(name);
  return d && (d->flags & MPK_DTYPE_HANDOFF) ? d : NULL;
}

int mpk_tensor_nbytes(const char *dtype, const int64_t *shape, size_t ndim, uint64_t *numel, uint64_t *nbytes,
                      mpk_error *err) {
  if (!dtype || (ndim && !shape) || !nbytes) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "invalid argument");
  const mpk_dtype *d = dtype_find(dtype);
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
  if (!mpk_dtype_packed_bytes(d, n, &bytes))
    return mpk_fail(err, MPK_ELIMIT, NULL, NULL, "%llu elements of %s overflow 64 bits of bytes",
                    (unsigned long long)n, dtype);
  if (numel) *numel = n;
  *nbytes = bytes;
  return 0;
}

void mpk_tensor_view_fill(mpk_tensor_view *out, mpk_mapped *m, const char *dtype, const int64_t *shape, size_t ndim,
                          uint64_t numel) {
  const mpk_dtype *d = dtype_find(dtype);
  memset(out, 0, sizeof *out);
  out->data = m->data;
  snprintf(out->dtype, sizeof out->dtype, "%s", d->name);
  out->dl_code = d->dl_code;
  out->dl_bits = d->dl_bits;
  out->dl_lanes = d->dl_lanes;
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

int mpk_tensor_view_to_host(mpk_tensor_view *v, const char *shown, mpk_error *err) {
  size_t size = v->dl_bits / 8u;
  if (!MPK_HOST_BIG_ENDIAN || v->dl_bits < 16 || v->dl_lanes != 1 || !v->numel || !v->priv_) return 0;
  mpk_mapped *m = v->priv_;
  /* The mapping is private and page-aligned (mpk_map_fd): writing it copies the pages. */
  void *p = (void *)m->data;
  bool mapped = m->mapped;
  if (!mapped || mprotect(p, m->size, PROT_READ | PROT_WRITE) != 0) {
    int e = errno;
    mpk_tensor_view_close(v);
    return mpk_fail(err, MPK_EIO, shown, NULL, "cannot convert the little-endian tensor to host byte order: %s",
                    mapped ? strerror(e) : "not a private mapping");
  }
  mpk_le_to_host_inplace(p, (size_t)v->numel, size);
  mprotect(p, m->size, PROT_READ); /* read-only again, as the view promises; failing leaves it writable */
  return 0;
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
