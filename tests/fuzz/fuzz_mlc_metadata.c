/* Fuzz target: the compiled-library _metadata extractor (binary scan and JSON forms). */
#include <stddef.h>
#include <stdint.h>

#include "modelpkg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_error err;
  size_t start, len;
  mpk_mlc_metadata_find(data, size, &start, &len, &err);
  mpk_mlc_metadata *md = NULL;
  if (mpk_mlc_metadata_from_bytes(data, size, "fuzz", &md, &err) == 0) mpk_mlc_metadata_free(md);
  return 0;
}
