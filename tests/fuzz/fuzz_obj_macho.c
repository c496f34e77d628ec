/* Fuzz target: objfile's Mach-O reader (32/64-bit, either byte order, universal files) through
   mpk_obj_from_bytes, every field of every object walked (fuzz_obj_walk.h). */
#include "fuzz_obj_walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_obj_one(data, size); }
