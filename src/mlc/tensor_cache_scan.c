/* Reading tensor-cache.json without a JSON tree. The cache of a 70B model holds 9 500 JSON values;
   building a jansson tree of them and walking it took most of the load time (docs/PERFORMANCE.md,
   section 2). This path reads the JSON events (mpk_json_scan: the same reader and the same rules
   as mpk_json_parse) straight into the records.

   It only takes documents it is sure of: whatever it accepts, the tree path (tensor_cache.c)
   accepts with the same result. Anything else (a field missing or of another type, a real where an
   integer is expected, a dtype or a shard path the checks refuse, invalid JSON) makes it give up,
   and the tree path reads the document again and reports the problem with its own message. */
#include <stdlib.h>
#include <string.h>

#include "core/json_scan.h"
#include "mlc/mlc.h"

enum { GIVE_UP = 1 }; /* any nonzero answer stops the scan */

/* What the container at each depth is. */
typedef enum role { ROOT, META, SHARDS, SHARD, RECORDS, RECORD, SHAPE, OTHER } role;

/* The value that follows the current key. */
typedef enum field {
  F_SKIP, /* unknown: tolerated, not read */
  F_META, F_SHARDS, F_PARAM_SIZE, F_PARAM_BYTES,
  F_DATA_PATH, F_SHARD_FORMAT, F_SHARD_NBYTES, F_MD5, F_RECORDS,
  F_NAME, F_SHAPE, F_DTYPE, F_FORMAT, F_NBYTES, F_BYTE_OFFSET,
} field;

/* Fields an object must have, by bit (1 << field). */
#define BIT(f) (1u << (f))
#define SHARD_REQUIRED (BIT(F_DATA_PATH) | BIT(F_SHARD_FORMAT) | BIT(F_SHARD_NBYTES) | BIT(F_RECORDS))
#define RECORD_REQUIRED \
  (BIT(F_NAME) | BIT(F_SHAPE) | BIT(F_DTYPE) | BIT(F_FORMAT) | BIT(F_NBYTES) | BIT(F_BYTE_OFFSET))

typedef struct scan {
  mpk_arena *arena;
  mpk_mlc_tensor_cache *tc;
  mpk_mlc_shard *shards;
  mpk_mlc_tensor_record *records;
  int64_t *dims;
  size_t n_shards, shards_cap, n_records, records_cap, n_dims, dims_cap;
  role roles[8];  /* roles[d]: the container whose START had depth d */
  field next;     /* set by a key */
  unsigned shard_seen, record_seen; /* fields met in the current shard, record */
  int bits;       /* the current record's dtype */
  bool have_shards;
  size_t skip_to; /* inside a skipped container: its depth + 1; 0 otherwise */
} scan;

static bool grow(void **p, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return true;
  size_t n = *cap ? *cap * 2 : 64;
  while (n < need) n *= 2;
  void *q = realloc(*p, n * size);
  if (!q) return false;
  *p = q;
  *cap = n;
  return true;
}

static field key_field(role r, const char *k, size_t n) {
#define IS(lit) (n == sizeof(lit) - 1 && memcmp(k, lit, n) == 0)
  switch (r) {
    case ROOT: return IS("records") ? F_SHARDS : IS("metadata") ? F_META : F_SKIP;
    case META: return IS("ParamSize") ? F_PARAM_SIZE : IS("ParamBytes") ? F_PARAM_BYTES : F_SKIP;
    case SHARD:
      return IS("dataPath") ? F_DATA_PATH : IS("format") ? F_SHARD_FORMAT : IS("nbytes") ? F_SHARD_NBYTES
           : IS("md5sum") ? F_MD5 : IS("records") ? F_RECORDS : F_SKIP;
    case RECORD:
      return IS("name") ? F_NAME : IS("shape") ? F_SHAPE : IS("dtype") ? F_DTYPE : IS("format") ? F_FORMAT
           : IS("nbytes") ? F_NBYTES : IS("byteOffset") ? F_BYTE_OFFSET : F_SKIP;
    default: return F_SKIP;
  }
#undef IS
}

/* A non-negative integer as mpk_jv_integer(.., 0, ..) reads it; reals give up (the tree path takes
   integral ones). */
static bool count(const mpk_json_event *e, int64_t *out) {
  if (e->kind != MPK_JSON_INTEGER || e->integer < 0 || e->integer > MPK_SAFE_INT_MAX) return false;
  *out = e->integer;
  return true;
}

/* A non-empty string as mpk_jv_string reads it, copied into the arena. */
static bool text(scan *s, const mpk_json_event *e, const char **out) {
  if (e->kind != MPK_JSON_STRING || e->len == 0) return false;
  char *p = mpk_arena_alloc(s->arena, e->len + 1); /* zeroed: the NUL is there */
  if (!p) return false;
  memcpy(p, e->str, e->len);
  *out = p;
  return true;
}

static bool is_md5_hex(const char *p, size_t n) {
  if (n != 32) return false;
  for (size_t i = 0; i < n; i++)
    if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'))) return false;
  return true;
}

/* A scalar or the start of a container, as the value of s->next (in an object) or as an element. */
static int on_value(scan *s, const mpk_json_event *e, role in) {
  bool start = e->kind == MPK_JSON_OBJECT_START || e->kind == MPK_JSON_ARRAY_START;
  role opens = OTHER;
  int64_t x;
  mpk_mlc_shard *sh = s->n_shards ? &s->shards[s->n_shards - 1] : NULL;
  mpk_mlc_tensor_record *r = s->n_records ? &s->records[s->n_records - 1] : NULL;
  if (in == SHARDS || in == RECORDS) { /* an element: a shard or a record object */
    if (e->kind != MPK_JSON_OBJECT_START) return GIVE_UP;
    if (in == SHARDS) {
      s->shard_seen = 0;
      if (!grow((void **)&s->shards, &s->shards_cap, s->n_shards + 1, sizeof *s->shards)) return GIVE_UP;
      s->shards[s->n_shards++] = (mpk_mlc_shard){0};
      opens = SHARD;
    } else {
      if (!grow((void **)&s->records, &s->records_cap, s->n_records + 1, sizeof *s->records)) return GIVE_UP;
      s->records[s->n_records++] = (mpk_mlc_tensor_record){.shard = s->n_shards - 1};
      s->record_seen = 0;
      sh->n_records++;
      opens = RECORD;
    }
  } else if (in == SHAPE) {
    if (!count(e, &x) || !grow((void **)&s->dims, &s->dims_cap, s->n_dims + 1, sizeof *s->dims)) return GIVE_UP;
    s->dims[s->n_dims++] = x;
  } else if (in == ROOT && e->depth == 0) { /* the document itself */
    if (e->kind != MPK_JSON_OBJECT_START) return GIVE_UP;
    opens = ROOT;
  } else {
    field f = s->next;
    if (in == SHARD) s->shard_seen |= BIT(f);
    if (in == RECORD) s->record_seen |= BIT(f);
    switch (f) {
      case F_SKIP: opens = OTHER; break;
      case F_META:
        if (e->kind != MPK_JSON_OBJECT_START) return GIVE_UP;
        opens = META;
        break;
      case F_SHARDS:
        if (e->kind != MPK_JSON_ARRAY_START) return GIVE_UP;
        s->have_shards = true;
        opens = SHARDS;
        break;
      case F_PARAM_SIZE:
        if (!count(e, &s->tc->param_size)) return GIVE_UP;
        s->tc->has_param_size = 1;
        break;
      case F_PARAM_BYTES:
        if (e->kind != MPK_JSON_INTEGER && e->kind != MPK_JSON_REAL) return GIVE_UP;
        s->tc->param_bytes = e->kind == MPK_JSON_INTEGER ? (double)e->integer : e->real;
        s->tc->has_param_bytes = 1;
        break;
      case F_DATA_PATH: {
        const char *why;
        if (!text(s, e, &sh->data_path) || !mpk_path_is_confined(sh->data_path, &why)) return GIVE_UP;
        break;
      }
      case F_SHARD_FORMAT:
        if (!text(s, e, &sh->format)) return GIVE_UP;
        break;
      case F_SHARD_NBYTES:
        if (!count(e, &x)) return GIVE_UP;
        sh->nbytes = (uint64_t)x;
        break;
      case F_MD5:
        if (e->kind != MPK_JSON_STRING || !is_md5_hex(e->str, e->len) || !text(s, e, &sh->md5sum)) return GIVE_UP;
        break;
      case F_RECORDS:
        if (e->kind != MPK_JSON_ARRAY_START) return GIVE_UP;
        sh->first_record = s->n_records;
        opens = RECORDS;
        break;
      case F_NAME:
        if (!text(s, e, &r->name)) return GIVE_UP;
        break;
      case F_SHAPE:
        if (e->kind != MPK_JSON_ARRAY_START) return GIVE_UP;
        s->n_dims = 0;
        opens = SHAPE;
        break;
      case F_DTYPE:
        if (!text(s, e, &r->dtype) || (s->bits = mpk_dtype_bits(r->dtype)) <= 0) return GIVE_UP;
        break;
      case F_FORMAT:
        if (!text(s, e, &r->format)) return GIVE_UP;
        break;
      case F_NBYTES:
        if (!count(e, &x)) return GIVE_UP;
        r->nbytes = (uint64_t)x;
        break;
      case F_BYTE_OFFSET:
        if (!count(e, &x)) return GIVE_UP;
        r->byte_offset = (uint64_t)x;
        break;
    }
    if (opens == OTHER && start) s->skip_to = e->depth + 1; /* an unknown container: skip it */
  }
  if (start && !s->skip_to) s->roles[e->depth] = opens;
  return 0;
}

/* The end of a container whose START had depth d. */
static int on_end(scan *s, size_t d) {
  mpk_mlc_tensor_record *r = s->n_records ? &s->records[s->n_records - 1] : NULL;
  switch (s->roles[d]) {
    case ROOT: return s->have_shards ? 0 : GIVE_UP;
    case SHARD: return (s->shard_seen & SHARD_REQUIRED) == SHARD_REQUIRED ? 0 : GIVE_UP;
    case SHAPE: {
      int64_t *dims = mpk_arena_array(s->arena, s->n_dims ? s->n_dims : 1, sizeof *dims);
      if (!dims) return GIVE_UP;
      if (s->n_dims) memcpy(dims, s->dims, s->n_dims * sizeof *dims);
      r->shape = dims;
      r->ndim = s->n_dims;
      return 0;
    }
    case RECORD: {
      uint64_t want;
      if ((s->record_seen & RECORD_REQUIRED) != RECORD_REQUIRED) return GIVE_UP;
      if (!mpk_mlc_record_bytes(r->shape, r->ndim, s->bits, &want) || want != r->nbytes) return GIVE_UP;
      return 0;
    }
    default: return 0;
  }
}

static int on_event(void *ctx, const mpk_json_event *e) {
  scan *s = ctx;
  bool end = e->kind == MPK_JSON_OBJECT_END || e->kind == MPK_JSON_ARRAY_END;
  if (s->skip_to) { /* inside an unknown value: wait for its end */
    if (end && e->depth + 1 == s->skip_to) s->skip_to = 0;
    return 0;
  }
  if (e->depth >= sizeof s->roles / sizeof s->roles[0]) return GIVE_UP;
  if (end) return on_end(s, e->depth);
  role in = e->depth ? s->roles[e->depth - 1] : ROOT;
  if (e->kind == MPK_JSON_KEY) {
    s->next = key_field(in, e->str, e->len);
    return 0;
  }
  return on_value(s, e, in);
}

int mpk_mlc_tensor_cache_scan(const void *data, size_t len, mpk_arena *arena, mpk_mlc_tensor_cache *tc) {
  scan s = {.arena = arena, .tc = tc};
  int rc = mpk_json_scan(data, len, NULL, NULL, on_event, &s, NULL);
  if (!rc) {
    mpk_mlc_shard *sh = mpk_arena_array(arena, s.n_shards ? s.n_shards : 1, sizeof *sh);
    mpk_mlc_tensor_record *rec = mpk_arena_array(arena, s.n_records ? s.n_records : 1, sizeof *rec);
    if (sh && rec) {
      if (s.n_shards) memcpy(sh, s.shards, s.n_shards * sizeof *sh);
      if (s.n_records) memcpy(rec, s.records, s.n_records * sizeof *rec);
      tc->shards = sh;
      tc->n_shards = s.n_shards;
      tc->records = rec;
      tc->n_records = s.n_records;
    } else {
      rc = GIVE_UP;
    }
  }
  free(s.shards);
  free(s.records);
  free(s.dims);
  return rc;
}
