/* Device checks: what a compiled artifact requires of a WebGPU device (WebLLM's messages). */
#include <stdio.h>
#include <string.h>

#include "mlc/mlc.h"

int mpk_mlc_check_device(const mpk_mlc_artifact *art, const mpk_mlc_device *dev, mpk_error *err) {
  if (!art || !dev) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  if (dev->has_features) {
    for (size_t i = 0; i < art->n_required_features; i++) {
      bool offered = false;
      for (size_t j = 0; j < dev->n_features && !offered; j++)
        offered = dev->features[j] && strcmp(dev->features[j], art->required_features[i]) == 0;
      if (!offered) {
        char ptr[64];
        snprintf(ptr, sizeof ptr, "/resources/required_features/%zu", i);
        return mpk_fail(err, MPK_EMISMATCH, "_metadata.artifact", ptr,
                        "Compiled artifact requires unsupported WebGPU feature \"%s\"",
                        art->required_features[i]);
      }
    }
  }
  if (dev->max_storage_buffer_binding_size >= 0 &&
      art->max_storage_buffer_binding_size > dev->max_storage_buffer_binding_size)
    return mpk_fail(err, MPK_EMISMATCH, "_metadata.artifact", "/resources/max_storage_buffer_binding_size",
                    "Compiled artifact requires maxStorageBufferBindingSize %lld, but this device exposes %lld",
                    (long long)art->max_storage_buffer_binding_size,
                    (long long)dev->max_storage_buffer_binding_size);
  return 0;
}
