/* The role table and a library's functions against an artifact; the legacy ABI
   (docs/mlc-library.md). FOUNDATION STUB. */
#include "mlc/mlc.h"

int mpk_mlc_role_arity(const char *role, int *min_args, int *max_args, mpk_error *err) {
  if (!role || !min_args || !max_args) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  return mpk_fail(err, MPK_EUNSUPPORTED, NULL, NULL, "the role table is not built yet");
}

int mpk_mlc_check_functions(const mpk_mlc_library *lib, const mpk_mlc_artifact *art, mpk_error *err) {
  if (!lib || !art) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  return mpk_fail(err, MPK_EUNSUPPORTED, lib->path, NULL, "function checks are not built yet");
}

int mpk_mlc_legacy_abi_of(const mpk_mlc_library *lib, mpk_mlc_legacy_abi *out, mpk_error *err) {
  if (!lib || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  *out = (mpk_mlc_legacy_abi){0};
  return mpk_fail(err, MPK_EUNSUPPORTED, lib->path, NULL, "the legacy ABI report is not built yet");
}
