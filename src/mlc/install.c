/* Installing an MLC model into a cache: a client of the fetch engine (docs/mlc-install.md).
   FOUNDATION STUB: the installer lands in the next commits. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "modelpkg/mlc.h"

int mpk_mlc_install(const char *source, const mpk_mlc_install_options *opts, mpk_mlc_install_result *out,
                    mpk_error *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!source || !opts) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  return mpk_fail(err, MPK_EUNSUPPORTED, source, NULL, "mlc install is not built yet");
}

void mpk_mlc_install_result_free(mpk_mlc_install_result *r) {
  if (!r) return;
  free(r->tree);
  free(r->model_url);
  free(r->library);
  memset(r, 0, sizeof *r);
}
