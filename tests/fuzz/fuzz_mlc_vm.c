/* Fuzz target: the Relax VM executable reader (src/mlc/vm.c) and the library built on it.
   Byte 0 chooses: bit 0 the constant numbering the parse starts with (TVM FFI type indices or the
   relax enum); bit 1 whether the rest is an executable from its payload length on (mpk_vm_parse,
   then the _metadata bytecode decode) or a section to search (type key, length, magic: the whole
   mpk_mlc_library_from_obj path — one object, one section, as an ELF .rodata or, with bit 2, as
   WebAssembly memory whose two data segments split the bytes in half). */
#include <stddef.h>
#include <stdint.h>

#include "mlc/mlc.h"
#include "mlc/vm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t mode = data[0];
  const uint8_t *d = data + 1;
  size_t n = size - 1;
  mpk_error err;
  if (!(mode & 2)) {
    mpk_arena *a = mpk_arena_new();
    mpk_vm_exec x;
    if (a && mpk_vm_parse(d, n, mode & 1, "fuzz", 0, a, &x, &err) == 0) {
      int64_t k = mpk_vm_metadata_constant(&x);
      if (k >= (int64_t)x.n_constants) __builtin_trap();
      for (size_t i = 0; i < x.n_constants; i++)
        if (x.constants[i].offset > n || x.constants[i].size > n - x.constants[i].offset) __builtin_trap();
      for (size_t i = 0; i < x.n_functions; i++)
        for (size_t p = 0; p < x.functions[i].n_param_names; p++) (void)x.functions[i].param_names[p][0];
    }
    mpk_arena_free(a);
    return 0;
  }
  bool wasm = mode & 4;
  mpk_obj_section sec = {.name = wasm ? "memory" : ".rodata", .data = d, .size = n, .offset = wasm ? -1 : 64};
  mpk_obj_segment segs[2] = {{.addr = 0, .size = n / 2, .offset = 1000, .active = true},
                             {.addr = n / 2, .size = n - n / 2, .offset = 5000, .active = true}};
  mpk_obj_object o = {.format = wasm ? "WebAssembly module" : "ELF shared object", .bytes = d, .size = n,
                      .sections = &sec, .n_sections = 1, .segments = wasm ? segs : NULL, .n_segments = wasm ? 2 : 0};
  mpk_obj_file f = {.path = "fuzz", .container = o.format, .bytes = d, .size = n, .objects = &o, .n_objects = 1};
  mpk_mlc_library *lib = NULL;
  if (mpk_mlc_library_from_obj(&f, &lib, &err) == 0) {
    if (lib->metadata && lib->metadata->json_len > n) __builtin_trap();
    mpk_mlc_library_free(lib);
  }
  return 0;
}
