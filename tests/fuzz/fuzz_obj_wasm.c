/* Fuzz target: the WebAssembly reader (src/objfile/wasm.c): the section list, and a module parsed
   into an object (imports, exports, data segments, the memory image), directly and through
   mpk_obj_from_bytes. Every parsed offset is re-checked against the input here: a segment outside
   the module or a memory image that disagrees with its segments is a finding. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "objfile/objfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mpk_error err;
  mpk_arena *a = mpk_arena_new();
  if (!a) return 0;
  mpk_obj_wasm_section *secs;
  size_t n;
  if (mpk_obj_wasm_sections(data, size, "fuzz", a, &secs, &n, &err) == 0)
    for (size_t i = 0; i < n; i++)
      if (secs[i].body + secs[i].size > size) abort();
  mpk_obj_object o = {.bytes = data, .size = size, .file_offset = 0};
  if (mpk_obj_parse_wasm(&o, a, "fuzz", &err) == 0) {
    for (size_t i = 0; i < o.n_segments; i++) {
      const mpk_obj_segment *g = &o.segments[i];
      if (g->offset < 0 || (uint64_t)g->offset + g->size > size) abort();
    }
    if (o.n_sections) {
      const mpk_obj_section *mem = &o.sections[0];
      for (size_t i = 0; i < o.n_segments; i++) { /* the last segment over a byte is what memory holds */
        const mpk_obj_segment *g = &o.segments[i];
        if (!g->active || g->size == 0) continue;
        if (g->addr + g->size > mem->size) abort();
        bool later = false;
        for (size_t k = i + 1; k < o.n_segments && !later; k++)
          later = o.segments[k].active && o.segments[k].size && o.segments[k].addr < g->addr + g->size &&
                  g->addr < o.segments[k].addr + o.segments[k].size;
        if (!later && memcmp(mem->data + g->addr, data + g->offset, g->size) != 0) abort();
      }
    }
    for (size_t i = 0; i < o.n_imports; i++)
      if (!o.imports[i].module || !o.imports[i].name) abort();
  }
  mpk_arena_free(a);
  mpk_obj_file *f = NULL;
  if (mpk_obj_from_bytes(data, size, "fuzz", &f, &err) == 0) mpk_obj_free(f);
  return 0;
}
