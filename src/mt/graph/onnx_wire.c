/* The pre-scan of a serialized ONNX ModelProto, before protobuf-c decodes anything. protobuf-c
   unpacks a whole message at once, recursing without a depth limit and allocating a struct per
   sub-message however small its encoding (two bytes of wire can cost a few hundred bytes of memory),
   so a hostile file could exhaust the stack or the heap before any of our checks ran. This walk,
   guided by the generated descriptors, bounds all of that from the wire alone: tags, varints and
   lengths inside their parent, the nesting depth, the initializer count, and the memory the decoded
   message will take. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mt/graph/graph.h"
#include "mt/graph/protobufc_dl.h"
#include "onnx.pb-c.h"

MPK_DL_DEFINE(protobufc, "libprotobuf-c", MPK_SONAME_PROTOBUFC, MPK_PROTOBUFC_FUNCS)

typedef struct scan {
  const uint8_t *base;
  const char *file;
  uint64_t max_decoded, max_init;
  mpk_onnx_scan *out;
  mpk_error *err;
} scan;

/* A scanned member of protobuf-c's unpacker, plus slab growth: a generous per-field cost. */
#define PER_FIELD 64u
/* malloc bookkeeping is not ours to count, but every allocation is rounded as if it had some. */
#define PER_ALLOC 16u

static int at(scan *s, const uint8_t *p, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int at(scan *s, const uint8_t *p, int code, const char *fmt, ...) {
  char msg[300];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* Malformed protobuf means the file is not an ONNX model (a placeholder, another format, a
     truncated download): say so first, then the byte-level reason. */
  if (code == MPK_EMALFORMED)
    return mpk_fail_at(s->err, code, s->file, (int64_t)(p - s->base), "not a valid ONNX model: %s", msg);
  return mpk_fail_at(s->err, code, s->file, (int64_t)(p - s->base), "%s", msg);
}

static int add(scan *s, const uint8_t *p, uint64_t bytes) {
  uint64_t d = s->out->decoded_bytes + bytes + PER_ALLOC;
  if (d < s->out->decoded_bytes || d > s->max_decoded)
    return at(s, p, MPK_ELIMIT, "decoding this model would take more than %llu bytes of memory (the limit)",
              (unsigned long long)s->max_decoded);
  s->out->decoded_bytes = d;
  return 0;
}

static int varint(scan *s, const uint8_t **pp, const uint8_t *end, uint64_t *v) {
  const uint8_t *p = *pp;
  uint64_t r = 0;
  for (int i = 0; i < 10; i++) {
    if (p >= end) return at(s, *pp, MPK_EMALFORMED, "truncated varint (the data ends inside it)");
    uint8_t b = *p++;
    if (i == 9 && b > 1) return at(s, *pp, MPK_EMALFORMED, "varint does not fit 64 bits");
    r |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *v = r;
      *pp = p;
      return 0;
    }
  }
  return at(s, *pp, MPK_EMALFORMED, "varint longer than 10 bytes");
}

static int wire_of(ProtobufCType t) {
  switch (t) {
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT: return 5;
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE: return 1;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE: return 2;
    default: return 0;
  }
}

/* Bytes one element of a repeated field takes in protobuf-c's array. */
static size_t elem_size(ProtobufCType t) {
  switch (t) {
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_UINT64: return 8;
    case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE: return sizeof(void *);
    default: return 4;
  }
}

static int message(scan *s, const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end, size_t depth,
                   bool main_graph);

/* A packed repeated scalar: a whole number of elements. */
static int packed(scan *s, const ProtobufCFieldDescriptor *f, const uint8_t *p, const uint8_t *end, uint64_t *count) {
  int w = wire_of(f->type);
  uint64_t n = 0;
  if (w == 5 || w == 1) {
    size_t width = w == 5 ? 4 : 8;
    if ((size_t)(end - p) % width)
      return at(s, p, MPK_EMALFORMED, "packed field %u holds %zu bytes, not a whole number of %zu-byte values", f->id,
                (size_t)(end - p), width);
    n = (uint64_t)(end - p) / width;
  } else {
    while (p < end) {
      uint64_t v;
      int rc = varint(s, &p, end, &v);
      if (rc) return rc;
      n++;
    }
  }
  *count = n;
  return 0;
}

static int field(scan *s, const ProtobufCMessageDescriptor *d, const uint8_t **pp, const uint8_t *end, size_t depth,
                 bool main_graph) {
  const uint8_t *start = *pp, *p = *pp;
  uint64_t tag;
  int rc = varint(s, &p, end, &tag);
  if (rc) return rc;
  uint32_t wire = (uint32_t)(tag & 7);
  uint64_t number = tag >> 3;
  if (number == 0 || number > 536870911u) return at(s, start, MPK_EMALFORMED, "field number %llu is out of range",
                                                    (unsigned long long)number);
  if (wire == 3 || wire == 4) return at(s, start, MPK_EMALFORMED, "protobuf groups are not supported (field %llu)",
                                        (unsigned long long)number);
  if (wire > 5) return at(s, start, MPK_EMALFORMED, "invalid wire type %u (field %llu)", wire, (unsigned long long)number);
  const uint8_t *payload = p;
  uint64_t len = 0;
  switch (wire) {
    case 0: {
      uint64_t v;
      if ((rc = varint(s, &p, end, &v))) return rc;
      break;
    }
    case 1:
    case 5: {
      size_t w = wire == 1 ? 8 : 4;
      if ((size_t)(end - p) < w) return at(s, start, MPK_EMALFORMED, "truncated fixed-width value (field %llu)",
                                           (unsigned long long)number);
      p += w;
      break;
    }
    case 2:
      if ((rc = varint(s, &p, end, &len))) return rc;
      if (len > (uint64_t)(end - p))
        return at(s, start, MPK_EMALFORMED, "field %llu declares %llu bytes but only %zu remain in its message",
                  (unsigned long long)number, (unsigned long long)len, (size_t)(end - p));
      payload = p;
      p += len;
      break;
  }
  *pp = p;
  if ((rc = add(s, start, PER_FIELD))) return rc;

  const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(d, (unsigned)number);
  if (!f) /* an unknown field: protobuf-c keeps a copy of it */
    return add(s, start, sizeof(ProtobufCMessageUnknownField) + (uint64_t)(p - payload));
  bool repeated = f->label == PROTOBUF_C_LABEL_REPEATED;
  int want = wire_of(f->type);
  if (wire == 2 && want != 2 && repeated) { /* packed scalars */
    uint64_t n = 0;
    if ((rc = packed(s, f, payload, payload + len, &n))) return rc;
    return add(s, start, n * elem_size(f->type));
  }
  if ((int)wire != want)
    return at(s, start, MPK_EMALFORMED, "field %s.%s (%u) has wire type %u, its type needs %d", d->short_name, f->name,
              f->id, wire, want);
  if (repeated && (rc = add(s, start, elem_size(f->type)))) return rc;
  switch (f->type) {
    case PROTOBUF_C_TYPE_STRING:
      if (memchr(payload, 0, len)) return at(s, payload, MPK_EMALFORMED, "string %s.%s contains a NUL byte", d->short_name, f->name);
      return add(s, start, len + 1);
    case PROTOBUF_C_TYPE_BYTES: return add(s, start, len);
    case PROTOBUF_C_TYPE_MESSAGE: {
      const ProtobufCMessageDescriptor *sub = f->descriptor;
      if (depth + 1 > MPK_MT_GRAPH_MAX_DEPTH)
        return at(s, start, MPK_ELIMIT, "messages are nested deeper than %d levels", MPK_MT_GRAPH_MAX_DEPTH);
      bool initializer = main_graph && d == &onnx__graph_proto__descriptor && f->id == 5;
      if (initializer && ++s->out->initializers > s->max_init)
        return at(s, start, MPK_ELIMIT, "the graph has more than %llu initializers (the limit)",
                  (unsigned long long)s->max_init);
      bool sub_main = depth == 0 && d == &onnx__model_proto__descriptor && f->id == 7;
      return message(s, sub, payload, payload + len, depth + 1, sub_main);
    }
    default: return 0;
  }
}

static int message(scan *s, const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end, size_t depth,
                   bool main_graph) {
  if (depth > s->out->max_depth) s->out->max_depth = depth;
  int rc = add(s, p, d->sizeof_message);
  while (!rc && p < end) rc = field(s, d, &p, end, depth, main_graph);
  return rc;
}

int mpk_onnx_prescan(const void *desc, const uint8_t *data, size_t len, const char *file,
                     const mpk_mt_graph_options *o, mpk_onnx_scan *out, mpk_error *err) {
  memset(out, 0, sizeof *out);
  int rc = mpk_protobufc_load(err); /* every decode starts here: protobuf-c is opened by the first */
  if (rc) return rc;
  scan s = {.base = data,
            .file = file,
            .max_decoded = o->max_decoded_bytes,
            .max_init = o->max_initializers,
            .out = out,
            .err = err};
  return message(&s, desc, data, data + len, 0, false);
}
