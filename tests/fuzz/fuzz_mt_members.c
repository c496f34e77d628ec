/* Fuzz target: the adapter membership reader (.modelpkg-adapters.json, docs/mt-merge.md
   "Membership"), then what restore and an update rely on in a document it accepted: every adapter's
   copy is named by its own digest, every kept file is "<tensor>.modelpkg-base", nothing is a path. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mt/merge/merge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_error err;
  json_t *m = NULL;
  if (mpk_mt_members_parse(data, size, NULL, &m, &err) != 0) {
    if (m) __builtin_trap();
    return 0;
  }
  size_t i;
  json_t *a;
  json_array_foreach(json_object_get(m, "adapters"), i, a) {
    char want[128];
    const char *sha = json_string_value(json_object_get(a, "sha256"));
    if (!sha || strlen(sha) != 64) __builtin_trap();
    mpk_mt_adapter_copy_name(sha, want);
    if (strcmp(json_string_value(json_object_get(a, "file")), want) != 0) __builtin_trap();
  }
  const char *name;
  json_t *k;
  json_object_foreach(json_object_get(m, "kept_base"), name, k) {
    char want[300];
    snprintf(want, sizeof want, "%s" MPK_MT_KEPT_SUFFIX, name);
    if (strchr(name, '/') || strcmp(json_string_value(json_object_get(k, "file")), want) != 0) __builtin_trap();
  }
  json_decref(m);
  return 0;
}
