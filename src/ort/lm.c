/* A causal language model's mean next-token cross-entropy (docs/ort.md, "Language model inputs"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/libm_dl.h"
#include "ort/ort_internal.h"

#define MAX_INPUTS 256

typedef struct lm_input {
  char *name;
  int kind; /* 1 ids, 2 mask, 3 positions, 4 past */
  int elem;
  size_t ndim;
  int64_t dims[8];
  OrtValue *value;
} lm_input;

static int starts_with(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, f;
  if (exp == 0) {
    if (man == 0) f = sign;
    else { /* subnormal */
      int e = -1;
      do { e++; man <<= 1; } while (!(man & 0x400u));
      f = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 31) f = sign | 0x7f800000u | (man << 13);
  else f = sign | ((exp + 127 - 15) << 23) | (man << 13);
  float out;
  memcpy(&out, &f, sizeof out);
  return out;
}

/* The element type and dimensions (symbolic names too) of a type info; 0 ok. */
static int tensor_info(const mpk_ort *o, OrtTypeInfo *ti, int *elem, size_t *ndim, int64_t *dims, const char **sym,
                       mpk_error *err, const char *model, const char *what) {
  const OrtApi *api = o->api;
  int onnx_type = 0;
  const OrtTensorTypeAndShapeInfo *tsi = NULL;
  int rc = mpk_ort_status(o, ORT(api, GetOnnxTypeFromTypeInfo)(ti, &onnx_type), err, MPK_EIO, model, "%s", what);
  if (rc) return rc;
  if (onnx_type != MPK_ORT_ONNX_TYPE_TENSOR)
    return mpk_fail(err, MPK_EUNSUPPORTED, model, NULL, "%s is not a tensor (ONNX type %d)", what, onnx_type);
  rc = mpk_ort_status(o, ORT(api, CastTypeInfoToTensorInfo)(ti, &tsi), err, MPK_EIO, model, "%s", what);
  if (!rc) rc = mpk_ort_status(o, ORT(api, GetTensorElementType)(tsi, elem), err, MPK_EIO, model, "%s", what);
  if (!rc) rc = mpk_ort_status(o, ORT(api, GetDimensionsCount)(tsi, ndim), err, MPK_EIO, model, "%s", what);
  if (rc) return rc;
  if (*ndim > 8) return mpk_fail(err, MPK_EUNSUPPORTED, model, NULL, "%s has %zu dimensions (at most 8)", what, *ndim);
  rc = mpk_ort_status(o, ORT(api, GetDimensions)(tsi, dims, *ndim), err, MPK_EIO, model, "%s", what);
  if (!rc && sym) rc = mpk_ort_status(o, ORT(api, GetSymbolicDimensions)(tsi, sym, *ndim), err, MPK_EIO, model, "%s", what);
  return rc;
}

int mpk_ort_lm_cross_entropy(mpk_ort_session *s, const int64_t *ids, size_t n, mpk_ort_lm_result *out,
                             mpk_error *err) {
  if (!s || !ids || !out)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "mpk_ort_lm_cross_entropy: a required argument is NULL");
  memset(out, 0, sizeof *out);
  const char *model = s->model_path;
  if (n < 2) return mpk_fail(err, MPK_EINVAL, model, NULL, "cross-entropy needs at least 2 tokens, got %zu", n);
  if (n > (size_t)1 << 24) return mpk_fail(err, MPK_ELIMIT, model, NULL, "%zu tokens (at most 16777216)", n);
  for (size_t t = 0; t < n; t++)
    if (ids[t] < 0) return mpk_fail(err, MPK_EINVAL, model, NULL, "token id %lld at position %zu is negative", (long long)ids[t], t);
  const mpk_ort *o = s->ort;
  const OrtApi *api = o->api;
  OrtAllocator *alloc = NULL;
  int rc = mpk_libm_load(err); /* exp and log, below */
  if (rc) return rc;
  rc = mpk_ort_status(o, ORT(api, GetAllocatorWithDefaultOptions)(&alloc), err, MPK_EIO, model, "allocator");
  if (rc) return rc;

  size_t n_in = 0, n_out = 0;
  lm_input in[MAX_INPUTS];
  memset(in, 0, sizeof in);
  char *out_name = NULL;
  int64_t vocab_static = -1;
  int64_t *pos = NULL, *mask = NULL;
  OrtValue *logits = NULL;
  OrtTensorTypeAndShapeInfo *lsi = NULL;
  static const int64_t empty_past[1] = {0}; /* a non-NULL pointer for a zero-element tensor */
  int has_ids = 0;

  rc = mpk_ort_status(o, ORT(api, SessionGetInputCount)(s->session, &n_in), err, MPK_EIO, model, "inputs");
  if (!rc && n_in > MAX_INPUTS)
    rc = mpk_fail(err, MPK_EUNSUPPORTED, model, NULL, "%zu inputs (at most %d)", n_in, MAX_INPUTS);
  for (size_t i = 0; !rc && i < n_in; i++) {
    lm_input *x = &in[i];
    OrtTypeInfo *ti = NULL;
    const char *sym[8] = {0};
    rc = mpk_ort_status(o, ORT(api, SessionGetInputName)(s->session, i, alloc, &x->name), err, MPK_EIO, model,
                        "input %zu's name", i);
    if (rc) break;
    rc = mpk_ort_status(o, ORT(api, SessionGetInputTypeInfo)(s->session, i, &ti), err, MPK_EIO, model, "input '%s'", x->name);
    if (!rc) {
      char what[300];
      snprintf(what, sizeof what, "input '%s'", x->name);
      rc = tensor_info(o, ti, &x->elem, &x->ndim, x->dims, sym, err, model, what);
    }
    /* The symbolic names live in the type info: copied before it is released. */
    char symbuf[8][128];
    for (size_t d = 0; d < 8; d++) {
      symbuf[d][0] = 0;
      if (!rc && d < x->ndim && sym[d]) snprintf(symbuf[d], sizeof symbuf[d], "%s", sym[d]);
      sym[d] = symbuf[d][0] ? symbuf[d] : NULL;
    }
    if (ti) ORT(api, ReleaseTypeInfo)(ti);
    if (rc) break;
    if (strcmp(x->name, "input_ids") == 0) x->kind = 1, has_ids = 1;
    else if (strcmp(x->name, "attention_mask") == 0) x->kind = 2;
    else if (strcmp(x->name, "position_ids") == 0) x->kind = 3;
    else if (starts_with(x->name, "past_key_values.") || starts_with(x->name, "past.")) x->kind = 4;
    else {
      rc = mpk_fail(err, MPK_EUNSUPPORTED, model, NULL,
                    "input '%s' is not one a language model is fed here (supported: input_ids, attention_mask, "
                    "position_ids, past_key_values.* / past.* with an empty past)", x->name);
      break;
    }
    if (x->kind <= 3) {
      if (x->elem != MPK_ORT_ELEM_INT64 || x->ndim != 2) {
        rc = mpk_fail(err, MPK_EUNSUPPORTED, model, NULL, "input '%s' must be int64 [batch, sequence] (element type %d, %zu dimensions)", x->name, x->elem, x->ndim);
        break;
      }
      x->dims[0] = 1;
      x->dims[1] = (int64_t)n;
    } else {
      if (x->elem != MPK_ORT_ELEM_FLOAT && x->elem != MPK_ORT_ELEM_FLOAT16) {
        rc = mpk_fail(err, MPK_EUNSUPPORTED, model, NULL, "past input '%s' has element type %d (float32 or float16 supported)", x->name, x->elem);
        break;
      }
      /* An empty past: batch 1, the sequence dimension 0 (the one named like past_sequence_length,
         else the third), every other symbolic dimension must be fixed by the graph. */
      size_t seq = x->ndim >= 3 ? 2 : x->ndim;
      for (size_t d = 0; d < x->ndim; d++)
        if (sym[d] && strstr(sym[d], "past") && strstr(sym[d], "seq")) seq = d;
      if (seq >= x->ndim) {
        rc = mpk_fail(err, MPK_EUNSUPPORTED, model, NULL, "past input '%s' has %zu dimensions: no sequence dimension", x->name, x->ndim);
        break;
      }
      for (size_t d = 0; d < x->ndim; d++) {
        if (d == seq) x->dims[d] = 0;
        else if (d == 0 && x->dims[d] < 0) x->dims[d] = 1;
        else if (x->dims[d] < 0) {
          rc = mpk_fail(err, MPK_EUNSUPPORTED, model, NULL, "past input '%s': dimension %zu ('%s') is symbolic; only the batch "
                        "and past sequence dimensions may be", x->name, d, sym[d] ? sym[d] : "");
          break;
        }
      }
      if (rc) break;
    }
  }
  if (!rc && !has_ids) rc = mpk_fail(err, MPK_EUNSUPPORTED, model, NULL, "the graph has no input 'input_ids'");

  /* The logits output: "logits", else the only float output. */
  if (!rc) rc = mpk_ort_status(o, ORT(api, SessionGetOutputCount)(s->session, &n_out), err, MPK_EIO, model, "outputs");
  {
    size_t n_float = 0;
    char *chosen = NULL;
    int64_t chosen_vocab = -1;
    for (size_t i = 0; !rc && i < n_out; i++) {
      char *name = NULL;
      OrtTypeInfo *ti = NULL;
      int elem = 0;
      size_t nd = 0;
      int64_t dims[8];
      rc = mpk_ort_status(o, ORT(api, SessionGetOutputName)(s->session, i, alloc, &name), err, MPK_EIO, model, "output %zu", i);
      if (rc) break;
      rc = mpk_ort_status(o, ORT(api, SessionGetOutputTypeInfo)(s->session, i, &ti), err, MPK_EIO, model, "output '%s'", name);
      int is_tensor = 0;
      if (!rc) {
        int t = 0;
        OrtStatus *st = ORT(api, GetOnnxTypeFromTypeInfo)(ti, &t);
        if (st) ORT(api, ReleaseStatus)(st);
        else if (t == MPK_ORT_ONNX_TYPE_TENSOR) {
          is_tensor = 1;
          char what[300];
          snprintf(what, sizeof what, "output '%s'", name);
          rc = tensor_info(o, ti, &elem, &nd, dims, NULL, err, model, what);
        }
      }
      if (ti) ORT(api, ReleaseTypeInfo)(ti);
      int is_float = !rc && is_tensor && (elem == MPK_ORT_ELEM_FLOAT || elem == MPK_ORT_ELEM_FLOAT16);
      if (is_float) n_float++;
      if (!rc && is_float && (strcmp(name, "logits") == 0 || !chosen || strcmp(chosen, "logits") != 0)) {
        int named = strcmp(name, "logits") == 0;
        if (named || !chosen) {
          if (chosen) {
            OrtStatus *st = ORT(api, AllocatorFree)(alloc, chosen);
            if (st) ORT(api, ReleaseStatus)(st);
          }
          chosen = name, name = NULL;
          chosen_vocab = nd == 3 ? dims[2] : -1;
        }
      }
      if (name) {
        OrtStatus *st = ORT(api, AllocatorFree)(alloc, name);
        if (st) ORT(api, ReleaseStatus)(st);
      }
    }
    if (!rc && (!chosen || (strcmp(chosen, "logits") != 0 && n_float != 1)))
      rc = mpk_fail(err, MPK_EUNSUPPORTED, model, NULL, "no output named 'logits' and %zu float outputs (one needed)", n_float);
    out_name = chosen;
    vocab_static = chosen_vocab;
  }
  if (!rc && vocab_static > 0)
    for (size_t t = 0; t < n; t++)
      if (ids[t] >= vocab_static) {
        rc = mpk_fail(err, MPK_EINVAL, model, NULL, "token id %lld at position %zu is outside [0, %lld) (the logits' vocabulary)", (long long)ids[t], t, (long long)vocab_static);
        break;
      }

  /* The input tensors over our own buffers. */
  if (!rc) {
    pos = malloc(n * sizeof *pos);
    mask = malloc(n * sizeof *mask);
    if (!pos || !mask) rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
    for (size_t t = 0; !rc && t < n; t++) pos[t] = (int64_t)t, mask[t] = 1;
  }
  const char *names[MAX_INPUTS];
  const OrtValue *vals[MAX_INPUTS];
  for (size_t i = 0; !rc && i < n_in; i++) {
    lm_input *x = &in[i];
    void *data = x->kind == 1 ? (void *)(uintptr_t)ids : x->kind == 2 ? (void *)mask : x->kind == 3 ? (void *)pos : (void *)(uintptr_t)empty_past;
    size_t bytes = x->kind <= 3 ? n * sizeof(int64_t) : 0;
    rc = mpk_ort_status(o, ORT(api, CreateTensorWithDataAsOrtValue)(s->cpu, data, bytes, x->dims, x->ndim, x->elem, &x->value),
                        err, MPK_EIO, model, "input '%s'", x->name);
    names[i] = x->name;
    vals[i] = x->value;
  }
  if (!rc) {
    const char *onames[1] = {out_name};
    rc = mpk_ort_status(o, ORT(api, Run)(s->session, NULL, names, vals, n_in, onames, 1, &logits), err, MPK_EIO, model,
                        "running %zu tokens", n);
  }
  size_t lnd = 0;
  int64_t ld[8] = {0};
  int lelem = 0;
  void *ldata = NULL;
  if (!rc) rc = mpk_ort_status(o, ORT(api, GetTensorTypeAndShape)(logits, &lsi), err, MPK_EIO, model, "logits");
  if (!rc) rc = mpk_ort_status(o, ORT(api, GetTensorElementType)(lsi, &lelem), err, MPK_EIO, model, "logits");
  if (!rc) rc = mpk_ort_status(o, ORT(api, GetDimensionsCount)(lsi, &lnd), err, MPK_EIO, model, "logits");
  if (!rc && lnd != 3) rc = mpk_fail(err, MPK_EUNSUPPORTED, model, NULL, "output '%s' has %zu dimensions ([1, n, vocab] needed)", out_name, lnd);
  if (!rc) rc = mpk_ort_status(o, ORT(api, GetDimensions)(lsi, ld, lnd), err, MPK_EIO, model, "logits");
  if (!rc && (ld[0] != 1 || ld[1] != (int64_t)n || ld[2] < 1))
    rc = mpk_fail(err, MPK_EMISMATCH, model, NULL, "output '%s' is [%lld, %lld, %lld]; [1, %zu, vocab] expected", out_name,
                  (long long)ld[0], (long long)ld[1], (long long)ld[2], n);
  if (!rc && lelem != MPK_ORT_ELEM_FLOAT && lelem != MPK_ORT_ELEM_FLOAT16)
    rc = mpk_fail(err, MPK_EUNSUPPORTED, model, NULL, "output '%s' has element type %d (float32 or float16 supported)", out_name, lelem);
  if (!rc) rc = mpk_ort_status(o, ORT(api, GetTensorMutableData)(logits, &ldata), err, MPK_EIO, model, "logits");
  if (!rc) {
    int64_t vocab = ld[2];
    for (size_t t = 1; t < n; t++)
      if (ids[t] >= vocab) {
        rc = mpk_fail(err, MPK_EINVAL, model, NULL, "token id %lld at position %zu is outside [0, %lld) (the logits' vocabulary)", (long long)ids[t], t, (long long)vocab);
        break;
      }
    double *row = rc ? NULL : malloc((size_t)vocab * sizeof *row);
    if (!rc && !row) rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
    double sum = 0;
    for (size_t t = 0; !rc && t + 1 < n; t++) {
      double m = -INFINITY;
      for (int64_t v = 0; v < vocab; v++) {
        size_t k = t * (size_t)vocab + (size_t)v;
        row[v] = lelem == MPK_ORT_ELEM_FLOAT ? (double)((const float *)ldata)[k] : (double)half_to_float(((const uint16_t *)ldata)[k]);
        if (row[v] > m) m = row[v];
      }
      if (!isfinite(m)) {
        rc = mpk_fail(err, MPK_EMALFORMED, model, NULL, "the logits at position %zu are not finite", t);
        break;
      }
      double z = 0;
      for (int64_t v = 0; v < vocab; v++) z += mpk_exp(row[v] - m);
      sum += m + mpk_log(z) - row[ids[t + 1]];
    }
    free(row);
    if (!rc) {
      mpk_hasher h;
      size_t esz = lelem == MPK_ORT_ELEM_FLOAT ? 4 : 2;
      rc = mpk_hasher_init(&h, MPK_DIGEST_SHA256);
      if (!rc) {
        mpk_hasher_update(&h, ldata, n * (size_t)vocab * esz);
        rc = mpk_hasher_final_hex(&h, out->logits_sha256);
      }
      mpk_hasher_free(&h);
      if (rc) rc = mpk_fail(err, rc, model, NULL, "hashing the logits");
    }
    if (!rc) {
      out->cross_entropy = sum / (double)(n - 1);
      out->uniform_floor = mpk_log((double)vocab);
      out->vocab = vocab;
      out->n_tokens = n;
      out->n_predicted = n - 1;
      snprintf(out->logits_output, sizeof out->logits_output, "%s", out_name);
    }
  }

  if (lsi) ORT(api, ReleaseTensorTypeAndShapeInfo)(lsi);
  if (logits) ORT(api, ReleaseValue)(logits);
  for (size_t i = 0; i < n_in && i < MAX_INPUTS; i++) {
    if (in[i].value) ORT(api, ReleaseValue)(in[i].value);
    if (in[i].name) {
      OrtStatus *st = ORT(api, AllocatorFree)(alloc, in[i].name);
      if (st) ORT(api, ReleaseStatus)(st);
    }
  }
  if (out_name) {
    OrtStatus *st = ORT(api, AllocatorFree)(alloc, out_name);
    if (st) ORT(api, ReleaseStatus)(st);
  }
  free(pos);
  free(mask);
  if (rc) memset(out, 0, sizeof *out);
  return rc;
}
