/* Fuzz target: runtime descriptions (mpk_mlc_runtime_parse, the strict loader of mlc compat's
   --runtime) and, for a description that loads, the comparison with a fixed library and the
   "where" lookups. */
#include <stddef.h>
#include <stdint.h>

#include "mlc/mlc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const mpk_mlc_import imports[] = {{"env", "TVMFFIWasmSafeCall"}, {"env", "x"}, {"wasi_snapshot_preview1", "fd_write"},
                                           {NULL, "elf_symbol"}};
  static const char *const defined[] = {"ffi.ModuleGetFunction", "vm.builtin.tensor_cache.get"};
  static const char *const needed[] = {"vm.builtin.x", "ffi.ModuleGetFunction", "vm.builtin.x"};
  static const char *const exports[] = {"TVMFFIFunctionGetGlobal"};
  static const mpk_mlc_function functions[] = {{"decode", MPK_MLC_FUNCTION_VM, 3, NULL, 0},
                                               {"prefill", MPK_MLC_FUNCTION_VM, 3, NULL, 0},
                                               {"k", MPK_MLC_FUNCTION_PACKED, -2, NULL, 0}};
  mpk_mlc_library lib = {.path = "fuzz.wasm", .container = "WebAssembly module", .arch = "wasm32",
                         .imports = imports, .n_imports = 4, .globals_defined = defined, .n_globals_defined = 2,
                         .globals_needed = needed, .n_globals_needed = 3, .functions = functions, .n_functions = 3,
                         .exports = exports, .n_exports = 1};
  mpk_error err;
  mpk_mlc_runtime *rt = NULL;
  if (mpk_mlc_runtime_parse(data, size, "fuzz.json", &rt, &err) == 0) {
    mpk_mlc_compat_report *r = NULL;
    if (mpk_mlc_compat(&lib, rt, &r, &err) == 0) mpk_mlc_compat_report_free(r);
    (void)mpk_mlc_runtime_where(rt, "provides.imports", "env", "x");
    (void)mpk_mlc_runtime_where(rt, "requires.globals", NULL, "ffi.ModuleGetFunction");
    mpk_mlc_runtime_free(rt);
  }
  return 0;
}
