/* Fuzz target: the _metadata.artifact parser, then binding it to a fixed valid package. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "modelpkg.h"

static const char package[] =
    "{\"schema\":\"mlc.model-package\",\"schema_version\":1,\"interface_id\":\"sha256:"
    "1111111111111111111111111111111111111111111111111111111111111111\",\"weights\":{\"manifest\":"
    "\"tensor-cache.json\",\"parameter_schema_id\":\"sha256:"
    "2222222222222222222222222222222222222222222222222222222222222222\"},\"tasks\":{\"chat.completions\":"
    "{\"executor\":\"generation\",\"inputs\":{\"text\":{\"processor\":\"tokenizer\"},\"audio\":{\"processor\":"
    "{\"kind\":\"audio_decode\",\"format\":\"pcm_f32\",\"sample_rate_hz\":16000,\"channels\":1,"
    "\"max_samples\":480000},\"adapter\":\"audio\",\"prompt\":{\"placeholder_token_id\":7}}},\"output\":\"text\"}}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_error err;
  mpk_mlc_artifact *art = NULL;
  if (mpk_mlc_artifact_parse(data, size, NULL, &art, &err) != 0) return 0;
  mpk_mlc_package *pkg = NULL;
  if (mpk_mlc_package_parse(package, strlen(package), NULL, 1, &pkg, &err) == 0) {
    mpk_mlc_binding b;
    mpk_mlc_resolve(pkg, art, &b, &err);
    const char *features[] = {"shader-f16"};
    mpk_mlc_device dev = {.features = features, .n_features = 1, .has_features = 1,
                          .max_storage_buffer_binding_size = 1 << 30};
    mpk_mlc_check_device(art, &dev, &err);
    mpk_mlc_package_free(pkg);
  }
  mpk_mlc_artifact_free(art);
  return 0;
}
