/* Fuzz target: the mlc-model-manifest.json parser, with and without the interface_id check. */
#include <stddef.h>
#include <stdint.h>

#include "modelpkg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_error err;
  for (int skip = 0; skip < 2; skip++) {
    mpk_mlc_package *pkg = NULL;
    if (mpk_mlc_package_parse(data, size, NULL, skip, &pkg, &err) == 0) {
      char id[MPK_SHA256_ID_SIZE];
      mpk_mlc_package_interface_id(pkg, id, &err);
      mpk_mlc_package_free(pkg);
    }
  }
  return 0;
}
