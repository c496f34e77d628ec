/* Internal to mt: every room's internal header, for a file that uses several. Rooms (docs/ARCHITECTURE.md):
   package/ (manifest, check, build, select, plan, locate), tensor/ (handoff map, tensors, load gate,
   safetensors), merge/ (the LoRA merge), graph/ (ONNX), install/ (mt install, a client of fetch/). */
#ifndef MPK_MT_INTERNAL_H
#define MPK_MT_INTERNAL_H

#include "mt/package/package.h"
#include "mt/tensor/tensor.h"

#endif
