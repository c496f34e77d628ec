/* Runtime descriptions and a library's compatibility with a runtime (docs/mlc-library.md).
   FOUNDATION STUB. */
#include "mlc/mlc.h"

int mpk_mlc_runtime_load(const char *path, mpk_mlc_runtime **out, mpk_error *err) {
  if (!path || !out) return mpk_fail(err, MPK_EINVAL, path, NULL, "NULL argument");
  *out = NULL;
  return mpk_fail(err, MPK_EUNSUPPORTED, path, NULL, "runtime descriptions are not built yet");
}

void mpk_mlc_runtime_free(mpk_mlc_runtime *rt) { (void)rt; }

int mpk_mlc_compat(const mpk_mlc_library *lib, const mpk_mlc_runtime *rt, mpk_mlc_compat_report **out,
                   mpk_error *err) {
  if (!lib || !rt || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = NULL;
  return mpk_fail(err, MPK_EUNSUPPORTED, lib->path, NULL, "compatibility checks are not built yet");
}

void mpk_mlc_compat_report_free(mpk_mlc_compat_report *report) { (void)report; }
