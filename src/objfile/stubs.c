/* FOUNDATION STUBS: replaced by elf.c and macho.c (wasm.c has landed). */
#include "objfile/objfile.h"

int mpk_obj_parse_elf(mpk_obj_object *o, mpk_arena *a, const char *shown, mpk_error *err) {
  (void)o, (void)a;
  return mpk_fail(err, MPK_EUNSUPPORTED, shown, NULL, "ELF reader not built yet");
}
int mpk_obj_parse_macho(mpk_obj_object *o, mpk_arena *a, const char *shown, mpk_error *err) {
  (void)o, (void)a;
  return mpk_fail(err, MPK_EUNSUPPORTED, shown, NULL, "Mach-O reader not built yet");
}
