/* mpk_mlc_embed: writing _metadata.artifact into a WebAssembly library (docs/mlc-library.md,
   "Embedding an artifact").

   TVM addresses its module blob by absolute memory addresses, so the _metadata string cannot grow
   or shrink: the new text replaces the old one byte for byte in the data segment that holds it.
   The old text with its insignificant whitespace removed (lexically: strings and numbers are
   copied as they are written, never re-serialized), any old "artifact" member dropped and the new
   one appended, is padded with spaces before its final '}' to exactly the old length. Every byte
   outside the text is copied unchanged; the result is read back with the same extractor
   `mlc metadata` uses before it is written (atomically). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mlc/mlc.h"
#include "objfile/objfile.h"

static bool is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* The end of the JSON string starting at s[i] == '"' (the index after its closing quote); the
   text was already parsed strictly, so it is well formed. */
static size_t string_end(const uint8_t *s, size_t n, size_t i) {
  for (i++; i < n; i++) {
    if (s[i] == '\\') i++;
    else if (s[i] == '"') return i + 1;
  }
  return n;
}

/* Copy a strictly valid JSON text without its insignificant whitespace (a leading BOM dropped). */
static size_t minify(const uint8_t *s, size_t n, uint8_t *out) {
  size_t o = 0, i = n >= 3 && s[0] == 0xEF && s[1] == 0xBB && s[2] == 0xBF ? 3 : 0;
  while (i < n) {
    if (s[i] == '"') {
      size_t e = string_end(s, n, i);
      memcpy(out + o, s + i, e - i);
      o += e - i;
      i = e;
    } else {
      if (!is_ws(s[i])) out[o++] = s[i];
      i++;
    }
  }
  return o;
}

static int hexval(uint8_t c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Whether the JSON string s[i, e) (quotes included) decodes to the ASCII `want`. */
static bool string_is(const uint8_t *s, size_t i, size_t e, const char *want) {
  size_t w = 0, wn = strlen(want);
  for (i++; i + 1 < e; w++) {
    uint32_t c = s[i++];
    if (c == '\\') {
      uint8_t x = s[i++];
      if (x == 'u') {
        if (i + 4 > e) return false;
        c = 0;
        for (int k = 0; k < 4; k++) c = c * 16 + (uint32_t)hexval(s[i++]);
      } else {
        c = x == 'b' ? '\b' : x == 'f' ? '\f' : x == 'n' ? '\n' : x == 'r' ? '\r' : x == 't' ? '\t' : x;
      }
    }
    if (w >= wn || c != (uint8_t)want[w]) return false;
  }
  return w == wn;
}

/* In the minified object m[0, n), the top-level member named `key`: [*from, *to) is what removing
   it takes away (with one adjacent comma). False when there is none. */
static bool find_member(const uint8_t *m, size_t n, const char *key, size_t *from, size_t *to) {
  size_t depth = 0;
  bool expect_key = false;
  for (size_t i = 0; i < n;) {
    uint8_t c = m[i];
    if (c == '"') {
      size_t e = string_end(m, n, i);
      if (depth == 1 && expect_key && string_is(m, i, e, key)) {
        size_t k0 = i, j = e + 1; /* past the ':' */
        size_t d = 0;
        for (; j < n; j++) { /* the value ends at the ',' or '}' closing it at depth 1 */
          uint8_t v = m[j];
          if (v == '"') {
            j = string_end(m, n, j) - 1;
          } else if (v == '{' || v == '[') {
            d++;
          } else if (v == '}' || v == ']') {
            if (d == 0) break;
            d--;
          } else if (v == ',' && d == 0) {
            break;
          }
        }
        if (m[k0 - 1] == ',') {
          *from = k0 - 1, *to = j;
        } else {
          *from = k0, *to = j < n && m[j] == ',' ? j + 1 : j;
        }
        return true;
      }
      expect_key = false;
      i = e;
      continue;
    }
    if (c == '{' || c == '[') depth++;
    else if (c == '}' || c == ']') depth--;
    expect_key = depth == 1 && (c == '{' || c == ','); /* a member of the top-level object begins */
    i++;
  }
  return false;
}

/* The new _metadata text, exactly `len` bytes, into out[len]. */
static int rewrite(const uint8_t *json, size_t len, const uint8_t *art, size_t art_len, const char *lib, uint8_t *out,
                   mpk_error *err) {
  uint8_t *m = malloc(len ? len : 1);
  if (!m) return mpk_fail(err, MPK_ENOMEM, lib, NULL, "out of memory");
  size_t n = minify(json, len, m), from, to;
  if (n < 2 || m[0] != '{' || m[n - 1] != '}') { /* find() returns objects only */
    free(m);
    return mpk_fail(err, MPK_EMALFORMED, lib, NULL, "the _metadata is not a JSON object");
  }
  bool had = find_member(m, n, "artifact", &from, &to);
  if (had) {
    memmove(m + from, m + to, n - to);
    n -= to - from;
  }
  /* m is "{...}": the members, then ,"artifact":ART, then spaces, then '}' */
  static const char member[] = "\"artifact\":";
  bool empty = n == 2;
  size_t need = (n - 1) + (empty ? 0 : 1) + (sizeof member - 1) + art_len + 1;
  if (need > len) {
    free(m);
    return mpk_fail(err, MPK_ELIMIT, lib, NULL,
                    "the _metadata with this artifact needs %zu bytes, and only %zu are available: its text must "
                    "keep its length (%zu bytes%s; the module blob is addressed by absolute memory addresses), "
                    "and without insignificant whitespace%s it takes %zu, which leaves %zu for \"artifact\" "
                    "(%zu bytes of artifact JSON, %zu more than fit); recompile the library with the artifact instead",
                    need, len, len, had ? ", the old artifact included" : "", had ? " and its old artifact" : "", n,
                    len - n, art_len, need - len);
  }
  size_t o = n - 1;
  memcpy(out, m, o);
  if (!empty) out[o++] = ',';
  memcpy(out + o, member, sizeof member - 1);
  o += sizeof member - 1;
  memcpy(out + o, art, art_len);
  o += art_len;
  memset(out + o, ' ', len - 1 - o);
  out[len - 1] = '}';
  free(m);
  return 0;
}

/* What writing an artifact into another container would take (docs/mlc-library.md). */
static int other_container(const char *lib, const char *container, mpk_error *err) {
  const char *why =
      strstr(container, "archive") || strstr(container, "gzip")
          ? "the _metadata sits in the module blob (__tvm_dev_mblob) of the *_devc.o member, which the app's build "
            "links; a same-size rewrite of that member's bytes would work as it does for WebAssembly, but the "
            "archive would have to be re-packed (and re-compressed) and the app rebuilt anyway"
      : strstr(container, "Mach-O")
          ? "the _metadata sits in the module blob (__tvm_dev_mblob, __TEXT/__DATA const); a same-size rewrite of its "
            "bytes would work as it does for WebAssembly, but it invalidates the code signature an iOS/macOS app "
            "requires"
          : "the _metadata sits in the module blob (__tvm_dev_mblob, in .rodata); a same-size rewrite of its bytes "
            "would work as it does for WebAssembly, but a shipped shared object is usually signed or checksummed "
            "by its app package";
  return mpk_fail(err, MPK_EUNSUPPORTED, lib, NULL,
                  "mlc embed writes into WebAssembly libraries only, not into this %s: %s. Recompile it with the "
                  "artifact (mlc_llm compile) instead",
                  container, why);
}

/* OUT must not be LIB, and may exist only with force. */
static int check_output(const char *lib, const char *out, bool force, mpk_error *err) {
  if (mpk_output_is_stdout(out)) return 0;
  struct stat so, sl;
  if (stat(out, &so) != 0) return 0; /* none yet (or the output contract reports why when it opens it) */
  if (stat(lib, &sl) == 0 && so.st_dev == sl.st_dev && so.st_ino == sl.st_ino)
    return mpk_fail(err, MPK_EINVAL, out, NULL,
                    "is the input library %s itself; write to another file (a failed rewrite must not cost the input)",
                    lib);
  if (S_ISREG(so.st_mode) && !force)
    return mpk_fail(err, MPK_EINVAL, out, NULL, "exists; give --force to replace it");
  return 0;
}

/* The artifact: read, validated with WebLLM's rules, minified into *out (malloc'ed). */
static int read_artifact(const char *path, uint8_t **out, size_t *out_len, mpk_error *err) {
  mpk_mapped m = {0};
  int rc = mpk_map_file(path, MPK_DOCUMENT_MAX_BYTES, &m, err);
  if (rc) return rc;
  mpk_mlc_artifact *art = NULL;
  rc = mpk_mlc_artifact_parse(m.data, m.size, path, &art, err);
  mpk_mlc_artifact_free(art);
  if (!rc) {
    *out = malloc(m.size ? m.size : 1);
    if (!*out) rc = mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
    else *out_len = minify(m.data, m.size, *out);
  }
  mpk_unmap_file(&m);
  return rc;
}

int mpk_mlc_embed(const char *lib_path, const char *artifact_path, const char *out_path,
                  const mpk_mlc_embed_options *opts, mpk_error *err) {
  if (!lib_path || !artifact_path || !out_path) return mpk_fail(err, MPK_EINVAL, lib_path, NULL, "NULL argument");
  mpk_mlc_embed_options o;
  int rc = MPK_OPTIONS_READ(mpk_mlc_embed_options, &o, opts, err);
  if (rc) return rc;
  if ((rc = check_output(lib_path, out_path, o.force != 0, err))) return rc;

  uint8_t *art = NULL, *copy = NULL;
  size_t art_len = 0;
  mpk_obj_file *f = NULL;
  mpk_arena *a = NULL;
  mpk_mlc_metadata *back = NULL;
  if ((rc = read_artifact(artifact_path, &art, &art_len, err))) goto done;
  if ((rc = mpk_obj_open(lib_path, &f, err))) goto done;
  if (strcmp(f->container, "WebAssembly module") != 0) {
    rc = other_container(lib_path, f->container, err);
    goto done;
  }
  /* The module read by the WebAssembly reader: by the dispatcher, or here (objfile's stub gave the
     file as raw bytes). */
  mpk_obj_object w = {.bytes = f->bytes, .size = f->size, .file_offset = 0};
  if (f->n_objects == 1 && f->objects[0].format && strcmp(f->objects[0].format, "WebAssembly module") == 0 &&
      f->objects[0].bytes == f->bytes) {
    w = f->objects[0];
  } else if (!(a = mpk_arena_new())) {
    rc = mpk_fail(err, MPK_ENOMEM, lib_path, NULL, "out of memory");
    goto done;
  } else if ((rc = mpk_obj_parse_wasm(&w, a, lib_path, err))) {
    goto done;
  }
  if (!w.n_sections) {
    rc = mpk_fail(err, MPK_ENOTFOUND, lib_path, NULL, "the module has no memory, so no _metadata");
    goto done;
  }
  /* The _metadata in memory, as TVM sees it, then the one segment that puts it there. */
  const mpk_obj_section *mem = &w.sections[0];
  size_t addr, len;
  if ((rc = mpk_mlc_metadata_find(mem->data, (size_t)mem->size, &addr, &len, err))) {
    snprintf(err->file, sizeof err->file, "%s", lib_path);
    goto done;
  }
  size_t seg = SIZE_MAX;
  for (size_t i = 0; i < w.n_segments; i++) {
    const mpk_obj_segment *g = &w.segments[i];
    if (!g->active || g->addr + g->size <= addr - 8 || g->addr >= addr + len) continue; /* disjoint */
    if (g->addr <= addr - 8 && addr + len <= g->addr + g->size) seg = i; /* holds it all (later wins) */
    else seg = SIZE_MAX - 1;                                             /* a part of it */
  }
  if (seg >= SIZE_MAX - 1) {
    rc = mpk_fail(err, MPK_EUNSUPPORTED, lib_path, NULL,
                  "the length-prefixed _metadata at memory address %zu (%zu bytes) is not laid out by one data "
                  "segment alone (%s): a rewrite in place cannot be shown safe",
                  addr - 8, len + 8, seg == SIZE_MAX ? "no segment holds it" : "segments split or overlap it");
    goto done;
  }
  const mpk_obj_segment *g = &w.segments[seg];
  size_t at = (size_t)g->offset + (addr - (size_t)g->addr); /* the text's file offset */
  if (!(copy = malloc(f->size))) {
    rc = mpk_fail(err, MPK_ENOMEM, lib_path, NULL, "out of memory");
    goto done;
  }
  memcpy(copy, f->bytes, f->size);
  if ((rc = rewrite(mem->data + addr, len, art, art_len, lib_path, copy + at, err))) goto done;
  /* Read it back the way `mlc metadata` does: the same place, the new text, byte for byte. */
  if ((rc = mpk_mlc_metadata_from_bytes(copy, f->size, out_path, &back, err))) {
    char why[sizeof err->message];
    snprintf(why, sizeof why, "%s", err->message);
    rc = mpk_fail(err, rc, lib_path, NULL, "the rewritten library would not read back (%s); refused, nothing written", why);
    goto done;
  }
  if ((size_t)back->source_offset != at || back->json_len != len || memcmp(back->json, copy + at, len) != 0 ||
      !back->artifact) {
    rc = mpk_fail(err, MPK_EUNSUPPORTED, lib_path, NULL,
                  "the rewritten library reads back a different _metadata (at byte %lld, %zu bytes) than the one "
                  "written (at byte %zu, %zu bytes): it holds another copy outside its memory; refused",
                  (long long)back->source_offset, back->json_len, at, len);
    goto done;
  }
  rc = mpk_output_file(out_path, copy, f->size, err);
done:
  mpk_mlc_metadata_free(back);
  free(copy);
  free(art);
  mpk_arena_free(a);
  mpk_obj_free(f);
  return rc;
}
