/* Fuzz target: the safetensors reader, then everything a caller does with a file it accepted. An
   accepted file must hold the reader's promises (docs/safetensors.md): the tensors tile the data
   section exactly, each one's bytes are its dtype × shape, names are sorted and found, metadata is
   sorted and found; every tensor's bytes are read (ASan sees any that lie outside the input) and the
   float ones converted. A refusal must carry one of the documented codes. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "modelpkg.h"

static volatile uint8_t sink;

typedef struct span {
  uint64_t begin, end;
} span;

static int cmp_span(const void *x, const void *y) {
  const span *a = x, *b = y;
  if (a->begin != b->begin) return a->begin < b->begin ? -1 : 1;
  return a->end < b->end ? -1 : a->end > b->end;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_error err;
  mpk_safetensors *st = NULL;
  int rc = mpk_safetensors_parse(data, size, NULL, &st, &err);
  if (rc) {
    if (st || err.code != rc) __builtin_trap();
    if (rc != MPK_EMALFORMED && rc != MPK_ELIMIT && rc != MPK_EUNSUPPORTED && rc != MPK_ENOMEM) __builtin_trap();
    return 0;
  }
  if (size < 8 || 8 + st->header_len + st->data_len != size) __builtin_trap();
  const uint8_t *section = data + 8 + st->header_len;
  span *spans = malloc((st->n_tensors ? st->n_tensors : 1) * sizeof *spans);
  if (!spans) return 0;
  for (size_t i = 0; i < st->n_tensors; i++) {
    const mpk_safetensors_tensor *t = &st->tensors[i];
    if (!t->name[0] || (i && strcmp(st->tensors[i - 1].name, t->name) >= 0)) __builtin_trap();
    if (mpk_safetensors_find(st, t->name) != t) __builtin_trap();
    int es = mpk_safetensors_dtype_size(t->dtype);
    if (es <= 0 || t->ndim < 0 || t->ndim > MPK_TENSOR_MAX_DIMS) __builtin_trap();
    uint64_t numel = 1;
    for (int32_t d = 0; d < t->ndim; d++) {
      if (t->shape[d] < 0) __builtin_trap();
      numel *= (uint64_t)t->shape[d];
    }
    if (numel != t->numel || t->begin > t->end || t->end > st->data_len) __builtin_trap();
    if (t->end - t->begin != numel * (uint64_t)es) __builtin_trap();
    if ((const uint8_t *)t->data != section + t->begin) __builtin_trap();
    spans[i].begin = t->begin;
    spans[i].end = t->end;
    uint8_t x = 0;
    for (uint64_t b = 0; b < t->end - t->begin; b++) x ^= ((const uint8_t *)t->data)[b];
    sink = x;
    float *f = NULL;
    rc = mpk_safetensors_tensor_to_f32(t, &f, &err);
    if (!strcmp(t->dtype, "F32") || !strcmp(t->dtype, "F16") || !strcmp(t->dtype, "BF16")) {
      if (rc || !f) __builtin_trap();
    } else if (!strcmp(t->dtype, "F64")) {
      if (rc && rc != MPK_ELIMIT) __builtin_trap();
    } else if (rc != MPK_EUNSUPPORTED) {
      __builtin_trap();
    }
    if (f && t->numel) sink = ((const uint8_t *)f)[t->numel * sizeof(float) - 1];
    mpk_free(f);
  }
  /* No hole, no overlap, nothing left over: in data order the tensors tile [0, data_len). */
  qsort(spans, st->n_tensors, sizeof *spans, cmp_span);
  uint64_t at = 0;
  for (size_t i = 0; i < st->n_tensors; i++) {
    if (spans[i].begin != at) __builtin_trap();
    at = spans[i].end;
  }
  if (at != st->data_len) __builtin_trap();
  free(spans);
  for (size_t i = 0; i < st->n_metadata; i++) {
    if (i && strcmp(st->metadata[i - 1].key, st->metadata[i].key) >= 0) __builtin_trap();
    if (mpk_safetensors_metadata(st, st->metadata[i].key) != st->metadata[i].value) __builtin_trap();
  }
  mpk_safetensors_free(st);
  return 0;
}
