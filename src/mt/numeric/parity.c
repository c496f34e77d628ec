/* The train/inference parity gate (docs/mt-numeric.md). FOUNDATION STUB: the helper "parity"
   replaces this file. */
#include "core/core.h"
#include "modelpkg/mt.h"

int mpk_mt_parity(const char *dir, const mpk_mt_parity_options *opts, mpk_mt_parity_report **out, mpk_error *err) {
  if (out) *out = NULL;
  if (!dir || !opts || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "mpk_mt_parity: a required argument is NULL");
  return mpk_fail(err, MPK_EUNSUPPORTED, NULL, NULL, "mt parity: not implemented yet");
}
void mpk_mt_parity_report_free(mpk_mt_parity_report *r) { (void)r; }
