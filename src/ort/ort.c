/* Loading ONNX Runtime (docs/ort.md). FOUNDATION STUB: the helper "ort" replaces this file. */
#include <stdlib.h>

#include "core/core.h"
#include "modelpkg/ort.h"

static int not_yet(mpk_error *err) {
  return mpk_fail(err, MPK_EUNSUPPORTED, NULL, NULL, "ONNX Runtime not available: not implemented yet");
}

int mpk_ort_open(const mpk_ort_options *opts, mpk_ort **out, mpk_error *err) {
  (void)opts;
  if (!out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "mpk_ort_open: out is NULL");
  *out = NULL;
  return not_yet(err);
}
const char *mpk_ort_version(const mpk_ort *ort) { (void)ort; return NULL; }
const char *mpk_ort_library(const mpk_ort *ort) { (void)ort; return NULL; }
void mpk_ort_close(mpk_ort *ort) { (void)ort; }
int mpk_ort_session_open(mpk_ort *ort, const char *model_path, const mpk_ort_session_options *opts,
                         mpk_ort_session **out, mpk_error *err) {
  (void)opts;
  if (out) *out = NULL;
  if (!ort || !model_path || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "mpk_ort_session_open: a required argument is NULL");
  return not_yet(err);
}
void mpk_ort_session_close(mpk_ort_session *s) { (void)s; }
int mpk_ort_lm_cross_entropy(mpk_ort_session *s, const int64_t *ids, size_t n, mpk_ort_lm_result *out,
                             mpk_error *err) {
  (void)n;
  if (!s || !ids || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "mpk_ort_lm_cross_entropy: a required argument is NULL");
  return not_yet(err);
}
