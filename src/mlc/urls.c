/* Where WebLLM 0.2.86 finds a model's documents: cleanModelUrl and resolveModelPackageResourceURLs
   (docs/mlc-install.md). FOUNDATION STUB: naive string joins until the WHATWG resolver lands. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "modelpkg/mlc.h"

static char *join_dir(const char *base, const char *name) {
  const char *slash = strrchr(base, '/');
  size_t keep = slash ? (size_t)(slash - base) + 1 : strlen(base);
  char *out = malloc(keep + strlen(name) + 1);
  if (!out) return NULL;
  memcpy(out, base, keep);
  strcpy(out + keep, name);
  return out;
}

int mpk_mlc_clean_model_url(const char *model_url, char **out, mpk_error *err) {
  if (out) *out = NULL;
  if (!model_url || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  size_t n = strlen(model_url);
  char *u = malloc(n + sizeof "/resolve/main/");
  if (!u) return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  strcpy(u, model_url);
  if (!n || u[n - 1] != '/') strcat(u, "/");
  if (!strstr(u, "/resolve/")) strcat(u, "resolve/main/");
  *out = u;
  return 0;
}

int mpk_mlc_resource_urls_resolve(const char *model_url, const mpk_mlc_package *package, mpk_mlc_resource_urls *out,
                                  mpk_error *err) {
  if (out) memset(out, 0, sizeof *out);
  if (!model_url || !out) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  const char *cc = package && package->chat_config ? package->chat_config : "mlc-chat-config.json";
  const char *tc = package && package->weights_manifest ? package->weights_manifest : "tensor-cache.json";
  out->chat_config_url = join_dir(model_url, cc);
  out->tensor_cache_manifest_url = join_dir(model_url, tc);
  out->tensor_cache_base_url = out->tensor_cache_manifest_url ? join_dir(out->tensor_cache_manifest_url, "") : NULL;
  if (!out->chat_config_url || !out->tensor_cache_manifest_url || !out->tensor_cache_base_url) {
    mpk_mlc_resource_urls_free(out);
    return mpk_fail(err, MPK_ENOMEM, NULL, NULL, "out of memory");
  }
  return 0;
}

void mpk_mlc_resource_urls_free(mpk_mlc_resource_urls *urls) {
  if (!urls) return;
  free(urls->chat_config_url);
  free(urls->tensor_cache_manifest_url);
  free(urls->tensor_cache_base_url);
  memset(urls, 0, sizeof *urls);
}
