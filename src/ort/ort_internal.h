/* The ort module's internal structures, shared by ort.c (loading), session.c and lm.c. */
#ifndef MPK_ORT_INTERNAL_H
#define MPK_ORT_INTERNAL_H

#include "core/core.h"
#include "modelpkg/ort.h"
#include "ort/ort_api.h"

struct mpk_ort {
  void *dl;              /* dlopen handle */
  const OrtApi *api;     /* GetApi(MPK_ORT_API_VERSION) */
  OrtEnv *env;           /* the one environment */
  char *version;         /* GetVersionString() */
  char *library;         /* dladdr(OrtGetApiBase)'s dli_fname */
  unsigned threads;      /* intra-op threads of every session (0: ORT's default) */
};

struct mpk_ort_session {
  mpk_ort *ort;
  OrtSession *session;
  OrtMemoryInfo *cpu;    /* CPU memory info of the values below and of the LM inputs */
  OrtValue **values;     /* the caller's initializers as OrtValues over their views: released on close */
  size_t n_values;
  char *model_path;
};

/* 0 when `st` is NULL (success); otherwise fail with `code`, the message "<prefix>: <ORT's message>"
   (`file` named as the error's file), and release the status. */
int mpk_ort_status(const mpk_ort *o, OrtStatus *st, mpk_error *err, int code, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* The same, returning ORT's message in `msg` (a copy, NUL-terminated, truncated to `cap`) instead
   of failing: 0 when `st` is NULL, 1 otherwise. */
int mpk_ort_status_text(const mpk_ort *o, OrtStatus *st, char *msg, size_t cap);

/* An initializer as the model file declares it (graph_inits.c); `name` points into the mapping. */
typedef struct mpk_ort_graph_init {
  const char *name;
  size_t name_len;
  int32_t data_type; /* ONNX TensorProto.DataType */
  size_t ndim;       /* may exceed MPK_TENSOR_MAX_DIMS: then dims holds the first ones */
  int64_t dims[MPK_TENSOR_MAX_DIMS];
} mpk_ort_graph_init;
/* The initializers of the ONNX model in `m` (malloc'ed array, *n entries; free()). -1: not an
   ONNX model this reader understands (no graph, a truncated field). */
int mpk_ort_graph_inits(const mpk_mapped *m, mpk_ort_graph_init **out, size_t *n);

#endif
