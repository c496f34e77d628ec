/* Fuzz target: the ONNX graph reader (pre-scan, protobuf-c under a capped allocator, initializer
   extraction) and the precision measure behind it. Limits are small so a run explores refusals
   quickly; what is accepted must be self-consistent: every external location confined, numel the
   product of the dims, byte lengths consistent with the data type, names findable and unique. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/core.h"
#include "modelpkg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_mt_graph_options o = {.max_bytes = 1 << 20, .max_decoded_bytes = 16u << 20, .max_initializers = 4096};
  mpk_mt_graph *g = NULL;
  mpk_error err;
  int rc = mpk_mt_graph_parse(data, size, "fuzz.onnx", &o, &g, &err);
  if (rc) {
    if (g) __builtin_trap();
    if (rc != MPK_EMALFORMED && rc != MPK_ELIMIT && rc != MPK_ENOMEM) __builtin_trap();
    return 0;
  }
  size_t ext = 0;
  for (size_t i = 0; i < g->n_initializers; i++) {
    const mpk_mt_initializer *in = &g->initializers[i];
    if (in->index != i || !in->name || !in->name[0] || mpk_mt_graph_find(g, in->name) != in) __builtin_trap();
    uint64_t n = 1;
    for (size_t d = 0; d < in->ndim; d++) {
      if (in->dims[d] < 0) __builtin_trap();
      n *= (uint64_t)in->dims[d];
    }
    if (n != in->numel || in->ndim > MPK_MT_GRAPH_MAX_DIMS) __builtin_trap();
    if (in->external) {
      ext++;
      if (!in->location || !mpk_path_is_confined(in->location, NULL) || in->has_embedded_data) __builtin_trap();
    }
    if (in->embedded_complete && in->has_nbytes && in->has_embedded_data && in->embedded_bytes != in->nbytes) __builtin_trap();
  }
  if (ext != g->n_external) __builtin_trap();
  char p[64];
  size_t need = 0;
  int prc = mpk_mt_graph_precision(g, p, sizeof p, &need);
  if ((prc && prc != MPK_ELIMIT) || need < strlen(p) || (prc == 0) != (need < sizeof p)) __builtin_trap();
  if (g->n_initializers == 0 && strcmp(p, "unknown") != 0) __builtin_trap();
  mpk_mt_graph_free(g);
  return 0;
}
