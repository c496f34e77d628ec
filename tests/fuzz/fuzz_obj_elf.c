/* Fuzz target: objfile's ELF reader (ELF32/64, either byte order) through
   mpk_obj_from_bytes, every field of every object walked (fuzz_obj_walk.h). */
#include "fuzz_obj_walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_obj_one(data, size); }
