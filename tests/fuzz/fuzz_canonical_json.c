/* Fuzz target: strict JSON reading and the canonical JSON writer. */
#include <stddef.h>
#include <stdint.h>

#include "modelpkg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_error err;
  char *out = NULL;
  size_t len;
  if (mpk_canonical_json((const char *)data, size, &out, &len, &err) == 0) {
    /* Canonical JSON is a fixed point. */
    char *again = NULL;
    size_t len2;
    if (mpk_canonical_json(out, len, &again, &len2, &err) != 0 || len2 != len) __builtin_trap();
    for (size_t i = 0; i < len; i++)
      if (out[i] != again[i]) __builtin_trap();
    mpk_free(again);
  }
  mpk_free(out);
  return 0;
}
