/* Fuzz target: the ort module's scan of an ONNX model's initializer declarations
   (src/ort/graph_inits.c: ModelProto.graph -> initializer -> name, data_type, dims), which reads a
   package's model.onnx before ONNX Runtime does. Every name it returns lies inside the input. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "ort/ort_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_mapped m = {.data = data, .size = size};
  mpk_ort_graph_init *g = NULL;
  size_t n = 0;
  if (mpk_ort_graph_inits(&m, &g, &n) == 0) {
    for (size_t i = 0; i < n; i++) {
      const uint8_t *p = (const uint8_t *)g[i].name;
      if (g[i].name_len && (p < data || p + g[i].name_len > data + size)) __builtin_trap();
    }
  }
  free(g);
  return 0;
}
