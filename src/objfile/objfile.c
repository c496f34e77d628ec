/* Opening a library file into objects (objfile.h). FOUNDATION STUB: every accepted container is
   one "raw bytes" object with one section, the whole file, until the format readers land. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "objfile/objfile.h"

struct mpk_obj_file_priv {
  mpk_arena *arena;
  mpk_mapped map;
  bool mapped;
};

static bool is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

const char *mpk_obj_sniff(const uint8_t *h, size_t n, const char **refusal) {
  *refusal = NULL;
  static const struct {
    const char *magic;
    size_t len;
    const char *name;
  } kinds[] = {{"\0asm", 4, "WebAssembly module"}, {"\x7f" "ELF", 4, "ELF"},
               {"\xfe\xed\xfa\xce", 4, "Mach-O"},     {"\xfe\xed\xfa\xcf", 4, "Mach-O"},
               {"\xce\xfa\xed\xfe", 4, "Mach-O"},     {"\xcf\xfa\xed\xfe", 4, "Mach-O"},
               {"\xca\xfe\xba\xbe", 4, "Mach-O universal file"}, {"MZ", 2, "PE/COFF"},
               {"!<arch>\n", 8, "ar archive"},        {"\x1f\x8b", 2, "gzip-compressed data"}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (n >= kinds[i].len && memcmp(h, kinds[i].magic, kinds[i].len) == 0) return kinds[i].name;
  if (n >= 262 && memcmp(h + 257, "ustar", 5) == 0) return "tar archive";
  size_t k = n >= 3 && h[0] == 0xEF && h[1] == 0xBB && h[2] == 0xBF ? 3 : 0;
  while (k < n && is_ws(h[k])) k++;
  if (k < n && h[k] == '{') return "JSON";
  if (n == 0) *refusal = "is empty";
  return NULL;
}

static int build(mpk_obj_file *f, const char *name, mpk_error *err) {
  mpk_arena *a = f->priv_->arena;
  const char *refusal = NULL, *kind = mpk_obj_sniff(f->bytes, f->size < MPK_OBJ_HEADER_BYTES ? f->size : MPK_OBJ_HEADER_BYTES, &refusal);
  if (!kind || strcmp(kind, "JSON") == 0)
    return mpk_fail(err, MPK_EUNSUPPORTED, name, NULL, "not a compiled library: %s",
                    kind ? "a JSON file" : refusal ? refusal : "unknown format");
  f->container = kind;
  mpk_obj_object *o = mpk_arena_alloc(a, sizeof *o);
  mpk_obj_section *s = o ? mpk_arena_alloc(a, sizeof *s) : NULL;
  if (!s) return mpk_fail(err, MPK_ENOMEM, name, NULL, "out of memory");
  *s = (mpk_obj_section){.name = "file", .data = f->bytes, .size = f->size, .offset = 0};
  *o = (mpk_obj_object){.format = "raw bytes", .bytes = f->bytes, .size = f->size, .sections = s, .n_sections = 1};
  f->objects = o;
  f->n_objects = 1;
  return 0;
}

static int new_file(const char *name, mpk_obj_file **out, mpk_error *err) {
  mpk_arena *a = mpk_arena_new();
  mpk_obj_file *f = a ? mpk_arena_alloc(a, sizeof *f) : NULL;
  struct mpk_obj_file_priv *p = f ? mpk_arena_alloc(a, sizeof *p) : NULL;
  if (!p) {
    mpk_arena_free(a);
    return mpk_fail(err, MPK_ENOMEM, name, NULL, "out of memory");
  }
  p->arena = a;
  f->priv_ = p;
  f->path = mpk_arena_strdup(a, name ? name : "the given bytes");
  *out = f;
  return f->path ? 0 : mpk_fail(err, MPK_ENOMEM, name, NULL, "out of memory");
}

int mpk_obj_from_bytes(const void *data, size_t size, const char *name, mpk_obj_file **out, mpk_error *err) {
  if (!out || (!data && size)) return mpk_fail(err, MPK_EINVAL, name, NULL, "NULL argument");
  *out = NULL;
  mpk_obj_file *f;
  int rc = new_file(name, &f, err);
  if (rc) return rc;
  f->bytes = data;
  f->size = size;
  if ((rc = build(f, f->path, err))) {
    mpk_obj_free(f);
    return rc;
  }
  *out = f;
  return 0;
}

int mpk_obj_open(const char *path, mpk_obj_file **out, mpk_error *err) {
  if (!path || !out) return mpk_fail(err, MPK_EINVAL, path, NULL, "NULL argument");
  *out = NULL;
  int fd;
  struct stat st;
  int rc = mpk_open_read(NULL, path, 0, &fd, &st, err);
  if (rc) return rc;
  uint8_t h[MPK_OBJ_HEADER_BYTES];
  ssize_t got = pread(fd, h, sizeof h, 0);
  if (got < 0) {
    close(fd);
    return mpk_fail(err, MPK_EIO, path, NULL, "cannot read: %s", strerror(errno));
  }
  const char *refusal, *kind = mpk_obj_sniff(h, (size_t)got, &refusal);
  if (!kind || strcmp(kind, "JSON") == 0) {
    close(fd);
    return mpk_fail(err, MPK_EUNSUPPORTED, path, NULL, "not a compiled library: %s",
                    kind ? "a JSON file" : refusal ? refusal : "unknown format");
  }
  if ((uint64_t)st.st_size > MPK_OBJ_MAX_FILE_BYTES) {
    close(fd);
    return mpk_fail(err, MPK_ELIMIT, path, NULL, "%s of %llu bytes exceeds the limit of %llu bytes for a compiled library",
                    kind, (unsigned long long)st.st_size, (unsigned long long)MPK_OBJ_MAX_FILE_BYTES);
  }
  mpk_obj_file *f;
  if ((rc = new_file(path, &f, err))) {
    close(fd);
    return rc;
  }
  if ((rc = mpk_map_fd(fd, path, (size_t)st.st_size, &f->priv_->map, err))) {
    mpk_obj_free(f);
    return rc;
  }
  f->priv_->mapped = true;
  f->bytes = f->priv_->map.data;
  f->size = f->priv_->map.size;
  if ((rc = build(f, path, err))) {
    mpk_obj_free(f);
    return rc;
  }
  *out = f;
  return 0;
}

void mpk_obj_free(mpk_obj_file *f) {
  if (!f) return;
  if (f->priv_->mapped) mpk_unmap_file(&f->priv_->map);
  mpk_arena_free(f->priv_->arena);
}

const mpk_obj_symbol *mpk_obj_find_symbol(const mpk_obj_object *o, const char *name) {
  for (size_t i = 0; i < o->n_symbols; i++)
    if (o->symbols[i].defined && strcmp(o->symbols[i].name, name) == 0) return &o->symbols[i];
  return NULL;
}

const char *mpk_obj_where(const mpk_obj_object *o, char *buf, size_t cap) {
  if (!o->member) return "";
  snprintf(buf, cap, "member %s: ", o->member);
  return buf;
}
