/* FOUNDATION STUBS: replaced by wasm.c. */
#include "objfile/objfile.h"

int mpk_obj_parse_wasm(mpk_obj_object *o, mpk_arena *a, const char *shown, mpk_error *err) {
  (void)o, (void)a;
  return mpk_fail(err, MPK_EUNSUPPORTED, shown, NULL, "WebAssembly reader not built yet");
}
int mpk_obj_wasm_sections(const uint8_t *d, uint64_t n, const char *shown, mpk_arena *a,
                          mpk_obj_wasm_section **out, size_t *count, mpk_error *err) {
  (void)d, (void)n, (void)a, (void)out, (void)count;
  return mpk_fail(err, MPK_EUNSUPPORTED, shown, NULL, "WebAssembly reader not built yet");
}
int mpk_obj_uleb(const uint8_t *d, uint64_t end, uint64_t *pos, uint64_t *out) {
  uint64_t v = 0;
  for (unsigned shift = 0; shift < 70 && *pos < end; shift += 7) {
    uint8_t b = d[(*pos)++];
    if (shift == 63 && b > 1) return -1;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return 0;
    }
  }
  return -1;
}
