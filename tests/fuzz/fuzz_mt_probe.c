/* Fuzz target: PROBE.json, the post-merge check's token sequences (src/mt/numeric/probe.c). A
   probe that parses keeps every limit of probe.h. */
#include <stddef.h>
#include <stdint.h>

#include "mt/numeric/probe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_mtn_probe *p = NULL;
  mpk_error err;
  if (mpk_mtn_probe_parse(data, size, "PROBE.json", &p, &err) == 0) {
    size_t total = 0;
    if (p->tokens.n < 1 || p->tokens.n > MPK_MTN_PROBE_MAX_SEQUENCES) __builtin_trap();
    for (size_t i = 0; i < p->tokens.n; i++) {
      if (p->tokens.len[i] < 2 || p->tokens.len[i] > MPK_MTN_PROBE_MAX_LENGTH) __builtin_trap();
      for (size_t k = 0; k < p->tokens.len[i]; k++)
        if (p->tokens.seq[i][k] < 0 || p->tokens.seq[i][k] > MPK_MTN_PROBE_MAX_ID) __builtin_trap();
      total += p->tokens.len[i];
    }
    if (total > MPK_MTN_PROBE_MAX_TOKENS) __builtin_trap();
  }
  mpk_mtn_probe_free(p);
  return 0;
}
