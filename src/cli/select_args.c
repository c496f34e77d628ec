/* The device and request options of variant selection (--abi --ep --quant --engine --memory-mb
   --api-level --features --prefer-quant --storage-bytes), parsed one way for every command that
   selects a variant (mt select, mt install). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Closed sets (../shared/spec/001: a variant's abi is an Android ABI; supportedEngines a subset of
   native, genai): a typo would filter out every variant, silently. */
static const char *const android_abis[] = {"arm64-v8a", "armeabi-v7a", "x86", "x86_64", "riscv64", NULL};
static const char *const engines[] = {"native", "genai", NULL};

static int closed(const mpk_cli_spec *cmd, bool json, const char *opt, const char *val, const char *const *set) {
  for (size_t i = 0; set[i]; i++)
    if (strcmp(val, set[i]) == 0) return MPK_EXIT_OK;
  char list[256];
  size_t len = 0;
  list[0] = '\0';
  for (size_t i = 0; set[i] && len < sizeof list; i++)
    len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", set[i]);
  return mpk_cli_usage(cmd, json, "%s '%s' is not one of %s", opt, val, list);
}

int mpk_cli_parse_list(const mpk_cli_spec *cmd, bool json, const char *opt, const char *val, mpk_cli_list *l) {
  if (l->given) return mpk_cli_usage(cmd, json, "%s given twice", opt);
  l->given = true;
  if (!(l->copy = strdup(val))) return mpk_cli_usage(cmd, json, "out of memory");
  for (char *p = l->copy;;) {
    char *comma = strchr(p, ',');
    if (comma) *comma = '\0';
    if (!*p) return mpk_cli_usage(cmd, json, "%s '%s' has an empty item", opt, val);
    if (l->n == MPK_CLI_MAX_LIST) return mpk_cli_usage(cmd, json, "%s lists more than %d items", opt, MPK_CLI_MAX_LIST);
    l->items[l->n++] = p;
    if (!comma) break;
    p = comma + 1;
  }
  return MPK_EXIT_OK;
}

static int parse_count(const mpk_cli_spec *cmd, bool json, const char *opt, const char *val, mpk_opt_int *out) {
  long long n;
  if (out->present) return mpk_cli_usage(cmd, json, "%s given twice", opt);
  if (!mpk_cli_parse_int(val, 0, MPK_CLI_SAFE_INT_MAX, &n))
    return mpk_cli_usage(cmd, json, "%s needs a non-negative integer, not '%s'", opt, val);
  out->present = 1;
  out->value = n;
  return MPK_EXIT_OK;
}

static const char *const names[] = {"--abi", "--ep", "--quant", "--engine", "--memory-mb", "--api-level",
                                    "--features", "--prefer-quant", "--storage-bytes"};
enum { N_NAMES = sizeof names / sizeof names[0] };

int mpk_cli_select_option(void *ctx, const mpk_cli_spec *cmd, bool json, const char *opt, const char *val) {
  mpk_cli_select *s = ctx;
  size_t k = 0;
  while (k < N_NAMES && strcmp(opt, names[k]) != 0) k++;
  if (k == N_NAMES) return mpk_cli_usage(cmd, json, "unknown option '%s'", opt);
  mpk_mt_select_options *o = &s->o;
  if (k != 6) s->device_given = true;
  const char **str = k == 1 ? &o->execution_provider : k == 2 ? &o->quantization : k == 3 ? &o->engine : NULL;
  if (str) {
    if (*str) return mpk_cli_usage(cmd, json, "%s given twice", opt);
    if (!*val) return mpk_cli_usage(cmd, json, "%s needs a non-empty value", opt);
    *str = val;
    return k == 3 ? closed(cmd, json, opt, val, engines) : MPK_EXIT_OK;
  }
  if (k == 0) {
    int rc = mpk_cli_parse_list(cmd, json, opt, val, &s->abis);
    for (size_t i = 0; rc == MPK_EXIT_OK && i < s->abis.n; i++)
      rc = closed(cmd, json, opt, s->abis.items[i], android_abis);
    return rc;
  }
  if (k == 6) return mpk_cli_parse_list(cmd, json, opt, val, &s->features);
  if (k == 7) return mpk_cli_parse_list(cmd, json, opt, val, &s->prefer);
  return parse_count(cmd, json, opt, val, k == 4 ? &o->memory_mb : k == 5 ? &o->api_level : &o->free_bytes);
}

int mpk_cli_list_option(void *ctx, const mpk_cli_spec *cmd, bool json, const char *opt, const char *val) {
  return mpk_cli_parse_list(cmd, json, opt, val, ctx);
}

void mpk_cli_select_finish(mpk_cli_select *s) {
  s->o.struct_size = sizeof s->o;
  s->o.abis = s->abis.items;
  s->o.n_abis = s->abis.n;
  s->o.features = s->features.given ? s->features.items : NULL;
  s->o.n_features = s->features.n;
  s->o.prefer_quant = s->prefer.given ? s->prefer.items : NULL;
  s->o.n_prefer_quant = s->prefer.n;
}

void mpk_cli_select_free(mpk_cli_select *s) {
  free(s->abis.copy);
  free(s->features.copy);
  free(s->prefer.copy);
}
