/* The device a command is asked about: --device-features F,... and --max-binding-size N. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* GPUFeatureName as the WebGPU specification defines it (W3C WebGPU, "Optional Capabilities"):
   a device offers only these, so any other name is a typo. */
static const char *const webgpu_features[] = {
    "core-features-and-limits", "depth-clip-control", "depth32float-stencil8", "texture-compression-bc",
    "texture-compression-bc-sliced-3d", "texture-compression-etc2", "texture-compression-astc",
    "texture-compression-astc-sliced-3d", "timestamp-query", "indirect-first-instance", "shader-f16",
    "rg11b10ufloat-renderable", "bgra8unorm-storage", "float32-filterable", "float32-blendable",
    "clip-distances", "dual-source-blending", "subgroups", "texture-formats-tier1", "texture-formats-tier2",
    "primitive-index", NULL};

static bool known_feature(const char *name) {
  for (size_t i = 0; webgpu_features[i]; i++)
    if (strcmp(webgpu_features[i], name) == 0) return true;
  return false;
}

int mpk_cli_device_init(mpk_cli_device *d, const char *cmd, const char *features, long long max_binding, bool json,
                        const char *const *json_keys) {
  memset(d, 0, sizeof *d);
  d->dev.features = d->names;
  d->dev.max_storage_buffer_binding_size = max_binding;
  d->given = features != NULL || max_binding >= 0;
  if (!features) return MPK_EXIT_OK;
  d->dev.has_features = 1;
  if (!(d->copy = strdup(features))) return MPK_EXIT_FAIL;
  for (char *save = NULL, *tok = strtok_r(d->copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    while (*tok == ' ') tok++;
    if (!*tok) continue;
    if (d->dev.n_features == MPK_CLI_MAX_FEATURES)
      return mpk_cli_usage_json(json, cmd, json_keys, "more than %d device features", MPK_CLI_MAX_FEATURES);
    /* "f16" is shorthand for WebGPU's "shader-f16". */
    const char *name = strcmp(tok, "f16") == 0 ? "shader-f16" : tok;
    if (!known_feature(name)) {
      char list[1024];
      size_t o = 0;
      for (size_t i = 0; webgpu_features[i] && o < sizeof list; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", webgpu_features[i]);
      return mpk_cli_usage_json(json, cmd, json_keys,
                                "--device-features: unknown WebGPU feature \"%s\"; WebGPU's features are: %s "
                                "(and 'f16' for shader-f16)",
                                tok, list);
    }
    d->names[d->dev.n_features++] = name;
  }
  return MPK_EXIT_OK;
}

void mpk_cli_device_free(mpk_cli_device *d) {
  free(d->copy);
  d->copy = NULL;
}
