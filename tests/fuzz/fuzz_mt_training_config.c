/* Fuzz target: train/training_config.json (peft_mapping, rank, alpha, trainable_tensor_specs) as
   `mt handoff build` reads it, against the tiny package's real model.onnx (dry run: nothing is
   written but the input itself, into a scratch copy of examples/mt-tiny). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_fixture.h"
#include "modelpkg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *dir = fuzz_fixture("mt-tiny");
  if (fuzz_put(dir, "variants/cpu-fp16/train/training_config.json", data, size)) abort();
  mpk_error err;
  mpk_mt_handoff_build_options o = {.variant = "cpu-fp16", .peft_method = "lora", .dry_run = 1};
  mpk_mt_handoff_build_result r;
  if (mpk_mt_handoff_build(dir, &o, &r, &err) == 0) {
    /* What was built reads back. */
    mpk_mt_handoff *map = NULL;
    if (mpk_mt_handoff_parse(r.map, r.map_len, "built", &map, &err) != 0) __builtin_trap();
    mpk_mt_handoff_free(map);
  }
  mpk_mt_handoff_build_result_free(&r);
  return 0;
}
