/* A compiled model library's _metadata: found inside the library's bytes (TVM stores it as a
   string constant right after its length, u64 little-endian), or read from a JSON file holding
   the whole _metadata object or only its `artifact`. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/endian.h"
#include "mlc/mlc.h"
#include "objfile/objfile.h"

struct mpk_mlc_metadata_priv {
  mpk_arena *arena;            /* the struct, the JSON copy and the strings */
  mpk_mlc_artifact *artifact;  /* owned separately: it has its own arena */
  json_t *root;                /* the JSON text parsed, once, when it was loaded */
};

int mpk_mlc_metadata_tree(const mpk_mlc_metadata *md, const char *file, const json_t **root, json_t **owned,
                          mpk_error *err) {
  *owned = NULL;
  if (md->priv_ && md->priv_->root) {
    *root = md->priv_->root;
    return 0;
  }
  int rc = mpk_json_parse(md->json, md->json_len, NULL, file, owned, err); /* a struct built by hand */
  *root = *owned;
  return rc;
}

/* Libraries are mapped, never read, and scanned whole: the cap bounds that work. MLC's compiled
   libraries are megabytes (the largest published ones tens of MB); 1 GiB leaves room. */
#define MAX_LIBRARY_BYTES \
  (SIZE_MAX > (UINT64_C(1) << 30) ? (size_t)(UINT64_C(1) << 30) : SIZE_MAX)
/* Bytes read to tell what a file is before anything is mapped. */
#define HEADER_BYTES MPK_OBJ_HEADER_BYTES
/* Trailing whitespace tolerated inside a candidate's L bytes; bounded so that a hostile file
   with long whitespace runs cannot make every candidate cost O(L) before parsing. */
#define MAX_TRAILING_WS 64
/* Offsets named in the "several different _metadata" message. */
#define MAX_LISTED_OFFSETS 16

/* The shortest object with both keys, {"model_type":0,"params":0}: shorter candidates cannot
   match, so they are not worth a parse. */
#define MIN_METADATA_LEN 27
#define SHAPE_RULE "a u64 little-endian length followed by a JSON object with \"model_type\" and \"params\""

static bool is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }


static bool is_metadata_object(const json_t *v) {
  return json_is_object(v) && json_object_get(v, "model_type") && json_object_get(v, "params");
}

typedef struct span {
  size_t start, len;
} span;

/* Cheap checks before a strict parse: most '{' bytes in a binary fail one of them. */
static bool plausible(const uint8_t *d, size_t size, size_t i, size_t *len_out) {
  uint64_t L = mpk_load_le64(d + i - 8);
  if (L < MIN_METADATA_LEN || L > (uint64_t)(size - i)) return false; /* i < size: no overflow */
  size_t len = (size_t)L;
  uint8_t next = d[i + 1];
  if (next != '"' && next != '}' && !is_ws(next)) return false; /* '{' must open a key or close */
  size_t last = i + len - 1, lowest = last > MAX_TRAILING_WS ? last - MAX_TRAILING_WS : 0;
  while (last > i && last > lowest && is_ws(d[last])) last--;
  if (last == i || d[last] != '}') return false;
  *len_out = len;
  return true;
}

/* Every distinct _metadata object in d[0, size): exactly one is success. On success *root (when
   asked) holds the parse of the first one. */
static int scan(const uint8_t *d, size_t size, const char *file, size_t *start, size_t *len,
                json_t **root, mpk_error *err) {
  if (root) *root = NULL;
  span *found = NULL;
  size_t n_found = 0, cap = 0;
  json_t *first = NULL;
  int rc = 0;
  for (size_t i = 8; i < size;) {
    const uint8_t *p = memchr(d + i, '{', size - i);
    if (!p) break;
    i = (size_t)(p - d);
    size_t L;
    if (i >= 8 && plausible(d, size, i, &L)) {
      json_t *v = NULL;
      /* errors of non-matching candidates are expected noise: no err */
      if (mpk_json_parse(d + i, L, NULL, file, &v, NULL) == 0 && is_metadata_object(v)) {
        bool dup = false;
        for (size_t k = 0; k < n_found && !dup; k++)
          dup = found[k].len == L && memcmp(d + found[k].start, d + i, L) == 0;
        if (!dup) {
          if (n_found == cap) {
            size_t ncap = cap ? cap * 2 : 4;
            span *nf = realloc(found, ncap * sizeof *nf);
            if (!nf) {
              json_decref(v);
              rc = mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
              break;
            }
            found = nf;
            cap = ncap;
          }
          found[n_found++] = (span){i, L};
          if (!first) {
            first = v;
            v = NULL;
          }
        }
      }
      json_decref(v);
    }
    i++;
  }
  if (!rc && n_found == 0)
    rc = mpk_fail(err, MPK_ENOTFOUND, file, NULL,
                  "no _metadata JSON (u64 length + JSON object with model_type and params) found in %s",
                  file ? file : "the given bytes");
  if (!rc && n_found > 1) {
    char list[320];
    size_t o = 0;
    for (size_t k = 0; k < n_found && k < MAX_LISTED_OFFSETS && o < sizeof list; k++)
      o += (size_t)snprintf(list + o, sizeof list - o, "%s%zu", k ? ", " : "", found[k].start);
    if (n_found > MAX_LISTED_OFFSETS && o < sizeof list) snprintf(list + o, sizeof list - o, ", ...");
    rc = mpk_fail_at(err, MPK_EMALFORMED, file, (int64_t)found[1].start,
                     "found %zu different _metadata objects (%s), at byte offsets %s; "
                     "a library must hold exactly one",
                     n_found, SHAPE_RULE, list);
  }
  if (!rc) {
    *start = found[0].start;
    *len = found[0].len;
    if (root) {
      *root = first;
      first = NULL;
    }
  }
  json_decref(first);
  free(found);
  return rc;
}

int mpk_mlc_metadata_find(const void *data, size_t size, size_t *start, size_t *len,
                          mpk_error *err) {
  if ((!data && size) || !start || !len) return mpk_fail(err, MPK_EINVAL, NULL, NULL, "NULL argument");
  return scan(data, size, NULL, start, len, NULL, err);
}

/* An optional string member: NULL when absent or null. */
static int opt_string(const json_t *obj, const char *key, const char *file, mpk_arena *a,
                      const char **out, mpk_error *err) {
  *out = NULL;
  const json_t *v = json_object_get(obj, key);
  if (!v || json_is_null(v)) return 0;
  char ptr[64];
  snprintf(ptr, sizeof ptr, "/%s", key);
  if (!json_is_string(v)) return mpk_fail(err, MPK_EMALFORMED, file, ptr, "expected a string");
  *out = mpk_arena_strdup(a, json_string_value(v));
  return *out ? 0 : mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
}

/* Build the object from the JSON text d[start, start+len) and its parse `root`, which is either
   a whole _metadata object or (artifact_only) an artifact object. */
static int build(const uint8_t *d, size_t start, size_t len, json_t *root, bool artifact_only,
                 const char *file, mpk_mlc_metadata **out, mpk_error *err) {
  mpk_arena *a = mpk_arena_new();
  mpk_mlc_metadata *md = a ? mpk_arena_alloc(a, sizeof *md) : NULL;
  struct mpk_mlc_metadata_priv *priv = md ? mpk_arena_alloc(a, sizeof *priv) : NULL;
  char *json = priv && len < SIZE_MAX ? mpk_arena_alloc(a, len + 1) : NULL;
  if (!json) {
    mpk_arena_free(a);
    return mpk_fail(err, MPK_ENOMEM, file, NULL, "out of memory");
  }
  priv->arena = a;
  md->priv_ = priv;
  memcpy(json, d + start, len); /* byte-exact; the arena zeroed the NUL after it */
  md->json = json;
  md->json_len = len;
  md->source_offset = (int64_t)start;
  int rc = 0;
  md->artifact_only = artifact_only;
  if (artifact_only) {
    rc = mpk_mlc_artifact_from_json(root, file, &priv->artifact, err);
  } else {
    rc = opt_string(root, "model_type", file, a, &md->model_type, err);
    if (!rc) rc = opt_string(root, "kv_state_kind", file, a, &md->kv_state_kind, err);
    const json_t *art = json_object_get(root, "artifact");
    if (!rc && art) rc = mpk_mlc_artifact_from_json(art, "_metadata.artifact", &priv->artifact, err);
  }
  if (rc) {
    mpk_mlc_artifact_free(priv->artifact);
    mpk_arena_free(a);
    return rc;
  }
  md->artifact = priv->artifact;
  priv->root = json_incref(root);
  *out = md;
  return 0;
}

int mpk_mlc_metadata_from_text(const uint8_t *text, size_t len, int64_t source_offset, const char *file,
                               mpk_mlc_metadata **out, mpk_error *err) {
  *out = NULL;
  json_t *root = NULL;
  int rc = mpk_json_parse(text, len, NULL, file, &root, err);
  if (rc) return rc;
  if (!is_metadata_object(root)) {
    json_decref(root);
    return mpk_fail(err, MPK_EMALFORMED, file, NULL, "the _metadata string is no JSON object with \"model_type\" and \"params\"");
  }
  rc = build(text, 0, len, root, false, file, out, err);
  json_decref(root);
  if (!rc) (*out)->source_offset = source_offset;
  return rc;
}

bool mpk_mlc_is_metadata_text(const uint8_t *text, size_t len) {
  size_t k = 0;
  while (k < len && is_ws(text[k])) k++;
  if (len < MIN_METADATA_LEN || k == len || text[k] != '{') return false;
  json_t *v = NULL;
  bool yes = mpk_json_parse(text, len, NULL, NULL, &v, NULL) == 0 && is_metadata_object(v);
  json_decref(v);
  return yes;
}

int mpk_mlc_metadata_scan(const uint8_t *d, size_t size, const char *file, mpk_mlc_metadata **out, mpk_error *err) {
  *out = NULL;
  size_t start = 0, n = 0;
  json_t *root = NULL;
  int rc = scan(d, size, file, &start, &n, &root, err);
  if (rc) return rc;
  rc = build(d, start, n, root, false, file, out, err);
  json_decref(root);
  return rc;
}

/* A library's bytes in memory through the library reader (mpk_mlc_library_from_bytes), so that
   the _metadata comes from where the format puts it; a container it cannot read is scanned as
   raw bytes, as before the readers existed. */
static int from_library_bytes(const uint8_t *d, size_t len, const char *file, mpk_mlc_metadata **out,
                              mpk_error *err) {
  mpk_mlc_library *lib = NULL;
  mpk_error e;
  mpk_error_clear(&e);
  int rc = mpk_mlc_library_from_bytes(d, len, file, &lib, &e);
  if (rc == MPK_EMALFORMED || rc == MPK_EUNSUPPORTED) return mpk_mlc_metadata_scan(d, len, file, out, err);
  if (!rc) rc = mpk_mlc_library_take_metadata(lib, out, &e);
  mpk_mlc_library_free(lib);
  if (rc && err) *err = e;
  return rc;
}

int mpk_mlc_metadata_from_bytes(const void *data, size_t len, const char *file,
                                mpk_mlc_metadata **out, mpk_error *err) {
  if (!out || (!data && len)) return mpk_fail(err, MPK_EINVAL, file, NULL, "NULL argument");
  *out = NULL;
  static const uint8_t none[1];
  const uint8_t *d = data ? data : none;
  size_t bom = len >= 3 && d[0] == 0xEF && d[1] == 0xBB && d[2] == 0xBF ? 3 : 0;
  size_t k = bom;
  while (k < len && is_ws(d[k])) k++;
  json_t *root = NULL;
  int rc;
  mpk_error json_err;
  mpk_error_clear(&json_err);
  bool looks_json = k < len && d[k] == '{';
  if (looks_json && (rc = mpk_json_parse(d, len, NULL, file, &root, &json_err)) == 0) {
    /* A JSON file: the whole _metadata, or the artifact alone. */
    const json_t *schema = json_object_get(root, "schema");
    bool whole = is_metadata_object(root);
    bool artifact = !whole && json_is_string(schema) &&
                    strcmp(json_string_value(schema), "mlc.compiled-program") == 0;
    if (whole || artifact)
      rc = build(d, bom, len - bom, root, artifact, file, out, err);
    else
      rc = mpk_fail(err, MPK_EMALFORMED, file, "",
                    "a _metadata JSON file must hold an object with \"model_type\" and \"params\" "
                    "(the whole _metadata) or an artifact object with \"schema\": "
                    "\"mlc.compiled-program\"");
    json_decref(root);
    return rc;
  }
  /* Anything else is a library: read as one when its first bytes say so, else scanned. */
  const char *refusal, *kind = mpk_obj_sniff(d, len < MPK_OBJ_HEADER_BYTES ? len : MPK_OBJ_HEADER_BYTES, &refusal);
  if (kind && strcmp(kind, "JSON") != 0 && !looks_json) return from_library_bytes(d, len, file, out, err);
  size_t start = 0, n = 0;
  rc = scan(d, len, file, &start, &n, &root, err);
  /* A text that looked like JSON but did not parse, and holds no embedded _metadata either, is
     most likely a broken JSON file: its parse error says more than "not found". */
  if (rc == MPK_ENOTFOUND && looks_json) {
    if (err) *err = json_err;
    return json_err.code;
  }
  if (rc) return rc;
  rc = build(d, start, n, root, false, file, out, err);
  json_decref(root);
  return rc;
}

#define ACCEPTED_FORMATS                                                                              \
  "WebAssembly (\\0asm), ELF (\\x7fELF), Mach-O (feedface, feedfacf, cafebabe), PE/COFF (MZ, a .dll), an ar "  \
  "archive (!<arch>), a tar archive (ustar at byte 257), gzip-compressed (1f 8b) tar, or a JSON file holding the "  \
  "_metadata object"

int mpk_mlc_metadata_load(const char *path, mpk_mlc_metadata **out, mpk_error *err) {
  if (!path || !out) return mpk_fail(err, MPK_EINVAL, path, NULL, "NULL argument");
  *out = NULL;
  /* Tell what the file is from its header before mapping anything: a file that is no library is
     refused after HEADER_BYTES bytes, however large it is. */
  int fd;
  struct stat st;
  int rc = mpk_open_read(NULL, path, 0, &fd, &st, err);
  if (rc) return rc;
  uint8_t h[HEADER_BYTES];
  ssize_t got = pread(fd, h, sizeof h, 0);
  if (got < 0) {
    close(fd);
    return mpk_fail(err, MPK_EIO, path, NULL, "cannot read: %s", strerror(errno));
  }
  const char *refusal, *kind = mpk_obj_sniff(h, (size_t)got, &refusal);
  if (!kind) {
    close(fd);
    if (refusal) return mpk_fail(err, MPK_EUNSUPPORTED, path, NULL, "not a library: %s; accepted: %s", refusal, ACCEPTED_FORMATS);
    return mpk_fail(err, MPK_EUNSUPPORTED, path, NULL,
                    "not a compiled model library or a _metadata JSON file: its first bytes "
                    "(%02x %02x %02x %02x) are none of the accepted formats: %s",
                    got > 0 ? h[0] : 0, got > 1 ? h[1] : 0, got > 2 ? h[2] : 0, got > 3 ? h[3] : 0, ACCEPTED_FORMATS);
  }
  bool json = strcmp(kind, "JSON") == 0;
  if (!json) {
    /* A library: read through the library reader (its containers, where the format puts the
       _metadata); a container it cannot read is scanned whole, as before the readers existed. */
    close(fd);
    mpk_mlc_library *lib = NULL;
    mpk_error e;
    mpk_error_clear(&e);
    rc = mpk_mlc_library_open(path, &lib, &e);
    if (!rc) rc = mpk_mlc_library_take_metadata(lib, out, &e);
    mpk_mlc_library_free(lib);
    bool raw_scan = (rc == MPK_EMALFORMED || rc == MPK_EUNSUPPORTED) && e.code != 0 && strstr(kind, "gzip") == NULL;
    if (rc && !raw_scan && err) *err = e;
    if (!raw_scan) return rc;
    if ((rc = mpk_open_read(NULL, path, 0, &fd, &st, err))) return rc;
  }
  size_t max = json ? MPK_JSON_DEFAULT_MAX_BYTES : MAX_LIBRARY_BYTES;
  if ((uint64_t)st.st_size > max) {
    close(fd);
    return mpk_fail(err, MPK_ELIMIT, path, NULL, "%s file of %llu bytes exceeds the limit of %zu bytes for %s", kind,
                    (unsigned long long)st.st_size, max, json ? "a JSON document" : "a compiled library (it is scanned whole)");
  }
  mpk_mapped m;
  if ((rc = mpk_map_fd(fd, path, (size_t)st.st_size, &m, err))) return rc;
  rc = json ? mpk_mlc_metadata_from_bytes(m.data, m.size, path, out, err) /* copies what it keeps */
            : mpk_mlc_metadata_scan(m.data, m.size, path, out, err);
  mpk_unmap_file(&m);
  return rc;
}

void mpk_mlc_metadata_free(mpk_mlc_metadata *md) {
  if (!md) return;
  mpk_mlc_artifact_free(md->priv_->artifact);
  json_decref(md->priv_->root);
  mpk_arena_free(md->priv_->arena);
}
