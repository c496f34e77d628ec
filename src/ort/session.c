/* Sessions (docs/ort.md, "Sessions"): a model file, and optionally initializers the caller supplies
   as tensor views that ONNX Runtime reads where they are (AddInitializer of an OrtValue made by
   CreateTensorWithDataAsOrtValue over the view's bytes), with graph optimization and weight
   prepacking off so that no transformed second copy of them is made. Each supplied initializer is
   checked against the model file's declaration first (graph_inits.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ort/ort_internal.h"

static void layout(const mpk_tensor_view *v, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "%s[", v->dtype);
  for (int32_t i = 0; i < v->ndim && n < cap; i++) n += (size_t)snprintf(buf + n, cap - n, i ? ",%lld" : "%lld", (long long)v->shape[i]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
}

void mpk_ort_session_close(mpk_ort_session *s) {
  if (!s) return;
  const OrtApi *api = s->ort->api;
  if (s->session) ORT(api, ReleaseSession)(s->session);
  /* After the session: it reads the values' memory until it is released. */
  for (size_t i = 0; i < s->n_values; i++)
    if (s->values[i]) ORT(api, ReleaseValue)(s->values[i]);
  free(s->values);
  if (s->cpu) ORT(api, ReleaseMemoryInfo)(s->cpu);
  free(s->model_path);
  free(s);
}

/* Session options (threads; with initializers or no_copies: no graph optimization, no prepacking;
   the initializers `names`/`values`) and a session of `path` over them. 0: *out is the session;
   1: ONNX Runtime refused, its message in `msg`; < 0: an error set in `err` (options). */
static int create(mpk_ort *ort, const char *path, int no_copies, const char *const *names, OrtValue *const *values,
                  size_t n, OrtSession **out, char *msg, size_t cap, mpk_error *err) {
  const OrtApi *api = ort->api;
  OrtSessionOptions *so = NULL;
  *out = NULL;
  int rc = mpk_ort_status(ort, ORT(api, CreateSessionOptions)(&so), err, MPK_EIO, path, "session options");
  if (!rc && ort->threads)
    rc = mpk_ort_status(ort, ORT(api, SetIntraOpNumThreads)(so, (int)ort->threads), err, MPK_EINVAL, path,
                        "%u intra-op threads", ort->threads);
  if (!rc && (no_copies || n)) {
    rc = mpk_ort_status(ort, ORT(api, SetSessionGraphOptimizationLevel)(so, MPK_ORT_DISABLE_ALL), err, MPK_EIO, path,
                        "disabling graph optimization");
    if (!rc)
      rc = mpk_ort_status(ort, ORT(api, AddSessionConfigEntry)(so, "session.disable_prepacking", "1"), err, MPK_EIO,
                          path, "disabling weight prepacking");
  }
  /* AddInitializer, not AddExternalInitializers: the latter copies the bytes into the graph
     (measured: RssAnon grows by the weights' size); the former makes the session use the OrtValue
     over the caller's memory as the initializer itself (docs/ort.md, "Zero-copy, measured"). */
  for (size_t i = 0; !rc && i < n; i++)
    rc = mpk_ort_status(ort, ORT(api, AddInitializer)(so, names[i], values[i]), err, MPK_EIO, path,
                        "handing over initializer '%s'", names[i]);
  if (!rc && mpk_ort_status_text(ort, ORT(api, CreateSession)(ort->env, path, so, out), msg, cap)) rc = 1;
  if (so) ORT(api, ReleaseSessionOptions)(so);
  return rc;
}

static void graph_layout(const mpk_ort_graph_init *g, char *buf, size_t cap) {
  const mpk_dtype *d = mpk_dtype_by_onnx(g->data_type);
  size_t n = (size_t)snprintf(buf, cap, "%s[", d ? mpk_dtype_onnx_name(d) : "?");
  for (size_t i = 0; i < g->ndim && i < MPK_TENSOR_MAX_DIMS && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, i ? ",%lld" : "%lld", (long long)g->dims[i]);
  if (n < cap) snprintf(buf + n, cap - n, g->ndim > MPK_TENSOR_MAX_DIMS ? ",...]" : "]");
}

/* Every supplied initializer must be one the model file declares, with the same data type and
   dims: ONNX Runtime's AddInitializer would ignore an unknown name and not compare the layout. */
static int check_supplied(const char *model_path, const mpk_ort_initializer *inits, size_t n, mpk_error *err) {
  mpk_mapped m;
  int rc = mpk_map_file(model_path, 0, &m, err);
  if (rc) return rc;
  mpk_ort_graph_init *g = NULL;
  size_t ng = 0;
  if (mpk_ort_graph_inits(&m, &g, &ng)) {
    mpk_unmap_file(&m);
    return mpk_fail(err, MPK_EMALFORMED, model_path, NULL,
                    "not an ONNX model whose initializers can be read (ModelProto.graph.initializer): supplied "
                    "initializers cannot be checked against it");
  }
  for (size_t i = 0; !rc && i < n; i++) {
    const mpk_ort_initializer *in = &inits[i];
    char sup[256], gl[256];
    layout(in->view, sup, sizeof sup);
    const mpk_ort_graph_init *hit = NULL;
    size_t len = strlen(in->name);
    for (size_t j = 0; j < ng && !hit; j++)
      if (g[j].name_len == len && memcmp(g[j].name, in->name, len) == 0) hit = &g[j];
    if (!hit) {
      rc = mpk_fail(err, MPK_EMISMATCH, model_path, NULL, "the graph has no initializer '%s' (supplied %s)", in->name, sup);
      break;
    }
    const mpk_dtype *d = mpk_dtype_by_name(in->view->dtype);
    int same = d && d->onnx_type == hit->data_type && hit->ndim == (size_t)in->view->ndim;
    for (size_t k = 0; same && k < hit->ndim; k++) same = hit->dims[k] == in->view->shape[k];
    if (!same) {
      graph_layout(hit, gl, sizeof gl);
      rc = mpk_fail(err, MPK_EMISMATCH, model_path, NULL, "initializer '%s': supplied %s, the graph's is %s", in->name, sup, gl);
    }
  }
  free(g);
  mpk_unmap_file(&m);
  return rc;
}

int mpk_ort_session_open(mpk_ort *ort, const char *model_path, const mpk_ort_session_options *given,
                         mpk_ort_session **out, mpk_error *err) {
  if (out) *out = NULL;
  if (!ort || !model_path || !out)
    return mpk_fail(err, MPK_EINVAL, NULL, NULL, "mpk_ort_session_open: a required argument is NULL");
  mpk_ort_session_options opts;
  int rc = MPK_OPTIONS_READ(mpk_ort_session_options, &opts, given, err);
  if (rc) return rc;
  if (opts.n_initializers && !opts.initializers)
    return mpk_fail(err, MPK_EINVAL, model_path, NULL, "n_initializers is %zu but initializers is NULL", opts.n_initializers);
  const OrtApi *api = ort->api;
  mpk_ort_session *s = calloc(1, sizeof *s);
  if (!s || !(s->model_path = strdup(model_path))) {
    free(s);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  s->ort = ort;
  const char **names = NULL;
  rc = mpk_ort_status(ort, ORT(api, CreateCpuMemoryInfo)(MPK_ORT_ARENA_ALLOCATOR, MPK_ORT_MEM_TYPE_DEFAULT, &s->cpu), err,
                      MPK_EIO, model_path, "CPU memory info");
  if (!rc && opts.n_initializers) {
    s->values = calloc(opts.n_initializers, sizeof *s->values);
    names = calloc(opts.n_initializers, sizeof *names);
    if (!s->values || !names) rc = mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
    for (size_t i = 0; !rc && i < opts.n_initializers; i++) {
      const mpk_ort_initializer *in = &opts.initializers[i];
      if (!in->name || !in->view || !in->view->data) {
        rc = mpk_fail(err, MPK_EINVAL, model_path, NULL, "initializer %zu has no name, view or data", i);
        break;
      }
      const mpk_tensor_view *v = in->view;
      const mpk_dtype *d = mpk_dtype_by_name(v->dtype);
      uint64_t numel = 0, nbytes = 0;
      if (!d || !d->onnx_type || d->bits < 8) {
        rc = mpk_fail(err, MPK_EUNSUPPORTED, model_path, NULL,
                      "initializer '%s': dtype %s cannot be handed to ONNX Runtime without a copy", in->name, v->dtype);
        break;
      }
      if (v->ndim < 0 || v->ndim > MPK_TENSOR_MAX_DIMS) {
        rc = mpk_fail(err, MPK_EINVAL, model_path, NULL, "initializer '%s': bad ndim %d", in->name, (int)v->ndim);
        break;
      }
      if ((rc = mpk_tensor_nbytes(v->dtype, v->shape, (size_t)v->ndim, &numel, &nbytes, err)) != 0) break;
      if (nbytes > v->nbytes) {
        char lay[256];
        layout(v, lay, sizeof lay);
        rc = mpk_fail(err, MPK_EMISMATCH, model_path, NULL, "initializer '%s': %s needs %llu bytes, the view has %llu",
                      in->name, lay, (unsigned long long)nbytes, (unsigned long long)v->nbytes);
        break;
      }
      /* ORT's API takes void*: the tensor is read-only to it (an initializer is never written). */
      rc = mpk_ort_status(ort,
                          ORT(api, CreateTensorWithDataAsOrtValue)(s->cpu, (void *)(uintptr_t)v->data, (size_t)nbytes,
                                                                   v->shape, (size_t)v->ndim, d->onnx_type, &s->values[i]),
                          err, MPK_EINVAL, model_path, "initializer '%s'", in->name);
      s->n_values = i + 1;
      names[i] = in->name;
    }
  }
  if (!rc && opts.n_initializers) rc = check_supplied(model_path, opts.initializers, opts.n_initializers, err);
  char msg[2048] = "";
  if (!rc) rc = create(ort, model_path, opts.no_copies, names, s->values, opts.n_initializers, &s->session, msg, sizeof msg, err);
  if (rc == 1) {
    /* A supplied initializer the graph does not have, or whose dtype/shape differs: ONNX Runtime
       refuses it at load, not always by name; find which one (one at a time) and name it with the
       supplied layout beside ONNX Runtime's words. */
    const mpk_ort_initializer *bad = NULL;
    for (size_t i = 0; i < opts.n_initializers && !bad; i++)
      if (strstr(msg, opts.initializers[i].name)) bad = &opts.initializers[i];
    int model_loads = 0;
    if (!bad && opts.n_initializers) { /* the model alone, from its files: does it load at all? */
      OrtSession *none = NULL;
      char msg0[2048];
      mpk_error e0 = {0};
      model_loads = create(ort, model_path, 1, NULL, NULL, 0, &none, msg0, sizeof msg0, &e0) == 0;
      if (none) ORT(api, ReleaseSession)(none);
    }
    for (size_t i = 0; i < opts.n_initializers && !bad && model_loads; i++) {
      OrtSession *one = NULL;
      char msg1[2048];
      mpk_error e1 = {0};
      int r1 = create(ort, model_path, 1, &names[i], &s->values[i], 1, &one, msg1, sizeof msg1, &e1);
      if (one) ORT(api, ReleaseSession)(one);
      if (r1 == 1) bad = &opts.initializers[i];
    }
    if (bad) {
      char lay[256];
      layout(bad->view, lay, sizeof lay);
      rc = mpk_fail(err, MPK_EMISMATCH, model_path, NULL,
                    "the supplied initializer '%s' (%s) does not match the graph's: ONNX Runtime: %s", bad->name, lay, msg);
    } else {
      rc = mpk_fail(err, access(model_path, R_OK) != 0 ? MPK_ENOTFOUND : MPK_EMALFORMED, model_path, NULL,
                    "ONNX Runtime cannot load the model: %s", msg);
    }
  }
  free(names);
  if (rc) {
    mpk_ort_session_close(s);
    return rc;
  }
  *out = s;
  return 0;
}
