/* Internal declarations of the ONNX graph work (issue 11): the wire pre-scan, the per-variant graph
   report shared by `check`, `mt graph` and `mt inspect`, and small helpers. */
#ifndef MPK_MT_GRAPH_INTERNAL_H
#define MPK_MT_GRAPH_INTERNAL_H

#include "mt/mt.h"

/* What the pre-scan learned about a serialized ModelProto (onnx_wire.c). */
typedef struct mpk_onnx_scan {
  uint64_t decoded_bytes;  /* upper estimate of what protobuf-c will allocate */
  uint64_t initializers;   /* ModelProto.graph.initializer occurrences */
  size_t max_depth;        /* deepest message nesting seen */
} mpk_onnx_scan;

/* Walk `data` as message `desc` (a const ProtobufCMessageDescriptor *), bounded as
   mpk_mt_graph_parse() documents. Fails with MPK_EMALFORMED / MPK_ELIMIT at the byte offset. */
int mpk_onnx_prescan(const void *desc, const uint8_t *data, size_t len, const char *file,
                     const mpk_mt_graph_options *o, mpk_onnx_scan *out, mpk_error *err);

/* A variant's graph report from an already-read manifest (graph_report.c), its files where `tree`
   (a package or an installed model: mpk_mt_tree_path) has them. Used by mpk_mt_check (check.c)
   without reading the manifest twice. */
int mpk_mt_graph_report_variant(const char *dir, const mpk_mt_tree *tree, const mpk_mt_variant *v,
                                const mpk_mt_graph_options *opts, mpk_mt_graph_report **out, mpk_error *err);

#endif
