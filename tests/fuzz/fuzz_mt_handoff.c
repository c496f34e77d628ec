/* Fuzz target: the weight_handoff_map.json reader, then everything a caller does with a map it
   accepted: each role's dtype and shape, and the canonical writer, whose output must read back and
   be a fixed point (writing what was written gives the same bytes). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "modelpkg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_error err;
  mpk_mt_handoff *m = NULL;
  if (mpk_mt_handoff_parse(data, size, NULL, &m, &err) != 0) return 0;
  for (size_t i = 0; i < m->n_entries; i++)
    for (int r = 0; r < MPK_MT_ROLE_COUNT; r++) {
      const char *dtype;
      const int64_t *shape;
      size_t ndim;
      if (mpk_mt_handoff_role_layout(&m->entries[i], (mpk_mt_role)r, &dtype, &shape, &ndim, &err) == 0) {
        if (!dtype || mpk_dtype_bits(dtype) <= 0) __builtin_trap();
        for (size_t k = 0; k < ndim; k++)
          if (shape[k] < 1) __builtin_trap();
      }
    }
  char *text = NULL, *again_text = NULL;
  size_t len = 0, again_len = 0;
  if (mpk_mt_handoff_json(m, &text, &len, &err) == 0) {
    mpk_mt_handoff *again = NULL;
    if (mpk_mt_handoff_parse(text, len, NULL, &again, &err) != 0) __builtin_trap();
    if (again->n_entries != m->n_entries) __builtin_trap();
    if (mpk_mt_handoff_json(again, &again_text, &again_len, &err) == 0 &&
        (again_len != len || memcmp(again_text, text, len) != 0))
      __builtin_trap();
    mpk_mt_handoff_free(again);
  }
  mpk_free(again_text);
  mpk_free(text);
  mpk_mt_handoff_free(m);
  return 0;
}
