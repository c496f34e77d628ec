/* Fuzz target: the tensor-cache.json parser and what is derived from it. */
#include <stddef.h>
#include <stdint.h>

#include "modelpkg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_error err;
  mpk_mlc_tensor_cache *tc = NULL;
  if (mpk_mlc_tensor_cache_parse(data, size, NULL, &tc, &err) != 0) return 0;
  mpk_mlc_params *p = NULL;
  if (mpk_mlc_params_from_tensor_cache(tc, &p, &err) == 0) {
    char id[MPK_SHA256_ID_SIZE];
    mpk_mlc_resources r;
    mpk_mlc_parameter_schema_id(p, id, &err);
    mpk_mlc_params_resources(p, NULL, 0, &r, &err);
    mpk_mlc_params_free(p);
  }
  mpk_mlc_tensor_cache_free(tc);
  return 0;
}
