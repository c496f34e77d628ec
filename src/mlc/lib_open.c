/* mpk_mlc_library_open: a compiled library as a whole (docs/mlc-library.md). FOUNDATION STUB. */
#include <string.h>

#include "mlc/mlc.h"

int mpk_mlc_library_open(const char *path, mpk_mlc_library **out, mpk_error *err) {
  if (!path || !out) return mpk_fail(err, MPK_EINVAL, path, NULL, "NULL argument");
  *out = NULL;
  return mpk_fail(err, MPK_EUNSUPPORTED, path, NULL, "reading a library's function table is not built yet");
}

void mpk_mlc_library_free(mpk_mlc_library *lib) { (void)lib; }

const mpk_mlc_function *mpk_mlc_library_function(const mpk_mlc_library *lib, const char *name) {
  if (!lib || !name) return NULL;
  for (size_t i = 0; i < lib->n_functions; i++)
    if (strcmp(lib->functions[i].name, name) == 0) return &lib->functions[i];
  return NULL;
}

const char *mpk_mlc_function_kind_name(mpk_mlc_function_kind kind) {
  switch (kind) {
    case MPK_MLC_FUNCTION_PACKED: return "packed";
    case MPK_MLC_FUNCTION_VM: return "vm";
    case MPK_MLC_FUNCTION_VM_TIR: return "vm_tir";
  }
  return "unknown";
}
