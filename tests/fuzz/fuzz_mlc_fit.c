/* Fuzz target: the device fit over a library's _metadata (kv_cache, memory_usage, quantization,
   context, named dimensions) and the device check on what it computed. */
#include <stddef.h>
#include <stdint.h>

#include "modelpkg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_error err;
  mpk_mlc_metadata *md = NULL;
  if (mpk_mlc_metadata_from_bytes(data, size, "fuzz", &md, &err)) return 0;
  static const mpk_mlc_named_dim dims[] = {{"vocab_size", 1000}, {"seq_len", 7}};
  static const char *const feats[] = {"shader-f16"};
  const mpk_mlc_device dev = {.features = feats, .n_features = 0, .has_features = 1,
                              .max_storage_buffer_binding_size = 4096};
  const int64_t contexts[] = {0, 4096, INT64_C(9007199254740991)};
  for (size_t i = 0; i < sizeof contexts / sizeof contexts[0]; i++) {
    mpk_mlc_fit fit;
    if (mpk_mlc_fit_compute(md, NULL, dims, 2, contexts[i], &fit, &err) == 0)
      mpk_mlc_fit_check(&fit, md->artifact, &dev, 1 << 20, NULL, NULL, &err);
  }
  mpk_mlc_metadata_free(md);
  return 0;
}
