/* mpk_mlc_embed: writing _metadata.artifact into a WebAssembly library (docs/mlc-library.md,
   "Embedding"). FOUNDATION STUB. */
#include "mlc/mlc.h"

int mpk_mlc_embed(const char *lib_path, const char *artifact_path, const char *out_path,
                  const mpk_mlc_embed_options *opts, mpk_error *err) {
  (void)opts;
  if (!lib_path || !artifact_path || !out_path) return mpk_fail(err, MPK_EINVAL, lib_path, NULL, "NULL argument");
  return mpk_fail(err, MPK_EUNSUPPORTED, lib_path, NULL, "embedding an artifact is not built yet");
}
