/* libprotobuf-c, opened on first use under MPK_DLOPEN_DEPS (core/dl_table.h, docs/startup.md):
   the functions mt/graph's reader and the code protoc-c generates (onnx.pb-c.c, compiled with this
   header forced in first) call, redirected to their slots; onnx_wire.c holds the table.
   mpk_protobufc_load() before the first: mpk_onnx_prescan(), which every decode starts with. */
#ifndef MPK_MT_GRAPH_PROTOBUFC_DL_H
#define MPK_MT_GRAPH_PROTOBUFC_DL_H

#include <protobuf-c/protobuf-c.h>

#include "core/dl_table.h"

#define MPK_PROTOBUFC_FUNCS(X)                                                                                        \
  X(protobuf_c_message_descriptor_get_field) X(protobuf_c_message_unpack) X(protobuf_c_message_free_unpacked)        \
  X(protobuf_c_message_get_packed_size) X(protobuf_c_message_pack) X(protobuf_c_message_pack_to_buffer)

MPK_DL_TABLE(protobufc, MPK_PROTOBUFC_FUNCS)

#if MPK_DLOPEN_DEPS
#define protobuf_c_message_descriptor_get_field (mpk_protobufc_fn.f.protobuf_c_message_descriptor_get_field)
#define protobuf_c_message_unpack (mpk_protobufc_fn.f.protobuf_c_message_unpack)
#define protobuf_c_message_free_unpacked (mpk_protobufc_fn.f.protobuf_c_message_free_unpacked)
#define protobuf_c_message_get_packed_size (mpk_protobufc_fn.f.protobuf_c_message_get_packed_size)
#define protobuf_c_message_pack (mpk_protobufc_fn.f.protobuf_c_message_pack)
#define protobuf_c_message_pack_to_buffer (mpk_protobufc_fn.f.protobuf_c_message_pack_to_buffer)
#endif

#endif
