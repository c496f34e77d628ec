/* modelpkg mlc urls MODEL_URL [--manifest FILE] [--no-clean] [--json]: where WebLLM 0.2.86 (and
   `mlc install`) finds a model's documents (docs/mlc-urls.md). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char about[] =
    "Print where a model's documents are, resolved exactly as WebLLM 0.2.86 resolves them (the URLs\n"
    "`mlc install` fetches): MODEL_URL cleaned by cleanModelUrl (a trailing '/', then 'resolve/main/'\n"
    "unless it already has /resolve/<rev>/; serialized as a WHATWG URL), then the chat config and\n"
    "tensor-cache.json relative to it, and the base the shards resolve against. Only http and https;\n"
    "internationalized host names are refused (docs/mlc-urls.md).\n";
static const char more[] = "exit status: 0 ok, 1 refused (the reason on stderr), 2 usage error\n";

static const char *const keys[] = {"model_url", "manifest", "cleaned", "chat_config_url", "tensor_cache_manifest_url",
                                   "tensor_cache_base_url", NULL};

static int run(const char *url, const char *manifest, bool clean, bool json) {
  mpk_error err;
  mpk_error_clear(&err);
  mpk_mlc_package *pkg = NULL;
  char *cleaned = NULL;
  mpk_mlc_resource_urls u = {0};
  int rc = manifest ? mpk_mlc_package_load(manifest, &pkg, &err) : 0;
  if (!rc && clean) rc = mpk_mlc_clean_model_url(url, &cleaned, &err);
  const char *model_url = cleaned ? cleaned : url;
  if (!rc) rc = mpk_mlc_resource_urls_resolve(model_url, pkg, &u, &err);
  mpk_mlc_package_free(pkg);
  if (rc) {
    mpk_cli_error(&err);
    if (json) mpk_cli_json_refuse("mlc urls", keys, &err);
    mpk_free(cleaned);
    return MPK_EXIT_FAIL;
  }
  if (json) {
    json_t *root = mpk_cli_json_begin("mlc urls", true);
    json_object_set_new(root, "model_url", json_string(model_url));
    json_object_set_new(root, "manifest", mpk_cli_json_str(manifest));
    json_object_set_new(root, "cleaned", json_boolean(clean));
    json_object_set_new(root, "chat_config_url", json_string(u.chat_config_url));
    json_object_set_new(root, "tensor_cache_manifest_url", json_string(u.tensor_cache_manifest_url));
    json_object_set_new(root, "tensor_cache_base_url", json_string(u.tensor_cache_base_url));
    mpk_cli_json_end(root, NULL, 0, NULL, 0);
  } else {
    printf("model_url          %s\n", model_url);
    printf("chat_config        %s\n", u.chat_config_url);
    printf("tensor_cache       %s\n", u.tensor_cache_manifest_url);
    printf("tensor_cache_base  %s\n", u.tensor_cache_base_url);
  }
  mpk_mlc_resource_urls_free(&u);
  mpk_free(cleaned);
  return MPK_EXIT_OK;
}

int mpk_cmd_mlc_urls(int argc, char **argv) {
  bool json = false, no_clean = false;
  const char *manifest = NULL;
  const mpk_cli_opt opts[] = {
      {"--manifest", 0, "FILE", "the model's mlc-model-manifest.json (a file, or a directory holding it):\n"
                                "its chat_config and weights.manifest (default: WebLLM's file names)",
       .str = &manifest, .once = true},
      {"--no-clean", 0, NULL, "take MODEL_URL as the model URL, without cleanModelUrl", .flag = &no_clean},
      {"--json", 0, NULL, "print one JSON document (docs/CLI.md)", .flag = &json},
      {0}};
  const mpk_cli_spec spec = {.name = "mlc urls", .usage = "MODEL_URL [--manifest FILE] [--no-clean] [--json]",
                             .about = about, .opts = opts, .more = more, .json_keys = keys, .max_args = 1};
  mpk_cli_args a;
  int st = mpk_cli_parse(&spec, argc, argv, &a);
  if (st != MPK_CLI_GO_ON) return st;
  if (!a.n) return mpk_cli_usage(&spec, a.json, "urls needs a model URL");
  return run(a.arg[0], manifest, !no_clean, a.json);
}
