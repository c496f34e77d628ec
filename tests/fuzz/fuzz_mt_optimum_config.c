/* Fuzz target: inference/optimum_config.json (inferenceGraphPrecision) as `mt graph` reads it beside
   the tiny package's real model.onnx, in a scratch copy of examples/mt-tiny. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_fixture.h"
#include "modelpkg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *dir = fuzz_fixture("mt-tiny");
  if (fuzz_put(dir, "variants/cpu-fp16/inference/optimum_config.json", data, size)) abort();
  mpk_error err;
  mpk_mt_graph_report *r = NULL;
  if (mpk_mt_graph_report_open(dir, "cpu-fp16", NULL, &r, &err) == 0) {
    for (size_t i = 0; i < r->n_problems; i++)
      if (!r->problems[i].message[0]) __builtin_trap(); /* every problem says why */
  }
  mpk_mt_graph_report_free(r);
  return 0;
}
