/* Opening a library file into objects (objfile.h, docs/objfile.md): the file is mapped (never read
   whole), its first bytes say what it is, and each container reader splits it into objects, each
   parsed by its own magic (elf.c, macho.c, wasm.c) or kept as "raw bytes". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "objfile/internal.h"

struct mpk_obj_file_priv {
  mpk_arena *arena;
  mpk_mapped map;
  bool mapped;
  uint8_t *inflated; /* a gzip'd archive's bytes (malloc'ed) */
};

static bool is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

const char *mpk_obj_sniff(const uint8_t *h, size_t n, const char **refusal) {
  if (refusal) *refusal = NULL;
  if (!h) n = 0;
  static const struct {
    const char *magic;
    size_t len;
    const char *name;
  } kinds[] = {{"\0asm", 4, "WebAssembly module"}, {"\x7f" "ELF", 4, "ELF"},
               {"\xfe\xed\xfa\xce", 4, "Mach-O"},     {"\xfe\xed\xfa\xcf", 4, "Mach-O"},
               {"\xce\xfa\xed\xfe", 4, "Mach-O"},     {"\xcf\xfa\xed\xfe", 4, "Mach-O"},
               {"!<arch>\n", 8, "ar archive"},        {"!<thin>\n", 8, "thin ar archive"},
               {"\x1f\x8b", 2, "gzip-compressed data"}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (n >= kinds[i].len && memcmp(h, kinds[i].magic, kinds[i].len) == 0) return kinds[i].name;
  if (n >= 8 && (memcmp(h, "\xca\xfe\xba\xbe", 4) == 0 || memcmp(h, "\xca\xfe\xba\xbf", 4) == 0)) {
    if (mpk_obj_universal_ok(h, n)) return "Mach-O universal file";
    if (refusal) *refusal = "a Java class file (it shares the Mach-O universal magic, but its count is no slice count)";
    return NULL;
  }
  if (n >= 2 && h[0] == 'M' && h[1] == 'Z') return "PE/COFF";
  if (n >= 512 && (memcmp(h + 257, "ustar", 5) == 0 || mpk_obj_tar_header_ok(h))) return "tar archive";
  size_t k = n >= 3 && h[0] == 0xEF && h[1] == 0xBB && h[2] == 0xBF ? 3 : 0;
  while (k < n && is_ws(h[k])) k++;
  if (k < n && h[k] == '{') return "JSON";
  if (refusal && n == 0) *refusal = "is empty";
  return NULL;
}

const char *mpk_obj_shown(mpk_arena *a, const char *path, const char *member) {
  if (!member) return path;
  size_t n = strlen(path) + strlen(member) + 16;
  char *s = mpk_arena_alloc(a, n);
  if (!s) return path;
  snprintf(s, n, "%s: member %s", path, member);
  return s;
}

int mpk_obj_strset_add(mpk_obj_strset *set, mpk_arena *a, const char *s) {
  if (set->count * 2 >= set->cap) {
    size_t cap = set->cap ? set->cap * 2 : 64;
    const char **slot = mpk_arena_array(a, cap, sizeof *slot);
    if (!slot) return -1;
    for (size_t i = 0; i < set->cap; i++) {
      if (!set->slot[i]) continue;
      uint64_t h = 1469598103934665603ull;
      for (const char *p = set->slot[i]; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
      size_t j = (size_t)(h & (cap - 1));
      while (slot[j]) j = (j + 1) & (cap - 1);
      slot[j] = set->slot[i];
    }
    set->slot = slot;
    set->cap = cap;
  }
  uint64_t h = 1469598103934665603ull;
  for (const char *p = s; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
  size_t j = (size_t)(h & (set->cap - 1));
  for (; set->slot[j]; j = (j + 1) & (set->cap - 1))
    if (strcmp(set->slot[j], s) == 0) return 0;
  set->slot[j] = s;
  set->count++;
  return 1;
}

mpk_obj_object *mpk_obj_list_push(mpk_obj_list *l, mpk_arena *a) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 4;
    mpk_obj_object *v = mpk_arena_array(a, cap, sizeof *v);
    if (!v) return NULL;
    if (l->n) memcpy(v, l->v, l->n * sizeof *v);
    l->v = v;
    l->cap = cap;
  }
  mpk_obj_object *o = &l->v[l->n++];
  memset(o, 0, sizeof *o);
  return o;
}

int mpk_obj_make_raw(mpk_obj_object *o, mpk_arena *a, const char *shown, mpk_error *err) {
  mpk_obj_section *s = mpk_arena_alloc(a, sizeof *s);
  if (!s) return mpk_fail(err, MPK_ENOMEM, shown, NULL, "out of memory");
  *s = (mpk_obj_section){.name = "file", .data = o->bytes, .size = o->size, .offset = 0};
  o->format = "raw bytes";
  o->arch = NULL;
  o->sections = s;
  o->n_sections = 1;
  o->symbols = NULL, o->n_symbols = 0;
  o->imports = NULL, o->n_imports = 0;
  o->exports = NULL, o->n_exports = 0;
  o->segments = NULL, o->n_segments = 0;
  return 0;
}

/* Parse one object by its magic. Only ELF, Mach-O and WebAssembly objects are opened; anything
   else (an archive inside an archive included) stays raw bytes. */
static int parse_object(mpk_obj_object *o, mpk_arena *a, const char *shown, mpk_error *err) {
  const char *kind = mpk_obj_sniff(o->bytes, o->size < MPK_OBJ_HEADER_BYTES ? o->size : MPK_OBJ_HEADER_BYTES, NULL);
  if (kind && strcmp(kind, "ELF") == 0) return mpk_obj_parse_elf(o, a, shown, err);
  if (kind && strcmp(kind, "Mach-O") == 0) return mpk_obj_parse_macho(o, a, shown, err);
  if (kind && strcmp(kind, "WebAssembly module") == 0) {
    mpk_error e;
    int rc = mpk_obj_parse_wasm(o, a, shown, &e);
    if (rc != MPK_EUNSUPPORTED) {
      if (rc && err) *err = e;
      return rc;
    }
    /* No WebAssembly reader (or a module it does not open): searched as raw bytes. */
  }
  return mpk_obj_make_raw(o, a, shown, err);
}

int mpk_obj_add_member(mpk_obj_list *l, mpk_arena *a, const char *path, const char *member, const uint8_t *bytes,
                       uint64_t size, int64_t file_offset, mpk_error *err) {
  if (l->n >= MPK_OBJ_MAX_MEMBERS)
    return mpk_fail(err, MPK_ELIMIT, path, NULL, "more than %d members: over the limit for a compiled library",
                    MPK_OBJ_MAX_MEMBERS);
  mpk_obj_object *o = mpk_obj_list_push(l, a);
  const char *m = member ? mpk_arena_strdup(a, member) : NULL;
  if (!o || (member && !m)) return mpk_fail(err, MPK_ENOMEM, path, NULL, "out of memory");
  o->member = m;
  o->bytes = bytes;
  o->size = size;
  o->file_offset = file_offset;
  int rc = parse_object(o, a, mpk_obj_shown(a, path, m), err);
  if (rc) l->n--;
  return rc;
}

/* ---- the container's name: "gzip-compressed tar archive of ELF relocatable objects (AArch64)" */

static void append(char *buf, size_t cap, const char *s) {
  size_t n = strlen(buf);
  if (n + 1 < cap) snprintf(buf + n, cap - n, "%s", s);
}

/* "ELF relocatable objects (AArch64)" for one format among the objects. */
static void describe_format(char *buf, size_t cap, const mpk_obj_file *f, const char *format) {
  if (strcmp(format, "raw bytes") == 0) {
    append(buf, cap, "other files");
  } else {
    append(buf, cap, format);
    append(buf, cap, "s");
  }
  const char *archs[8];
  size_t n_archs = 0;
  for (size_t i = 0; i < f->n_objects; i++) {
    const mpk_obj_object *o = &f->objects[i];
    if (strcmp(o->format, format) != 0 || !o->arch) continue;
    bool seen = false;
    for (size_t k = 0; k < n_archs; k++) seen |= strcmp(archs[k], o->arch) == 0;
    if (!seen && n_archs < 8) archs[n_archs++] = o->arch;
  }
  for (size_t k = 0; k < n_archs; k++) {
    append(buf, cap, k ? ", " : " (");
    append(buf, cap, archs[k]);
  }
  if (n_archs) append(buf, cap, ")");
}

static const char *container_name(mpk_obj_file *f, mpk_arena *a, const char *kind) {
  char buf[512] = "";
  append(buf, sizeof buf, kind);
  if (strcmp(kind, "WebAssembly module") == 0) return kind;
  if (f->n_objects == 1 && !f->objects[0].member) {
    /* The file is the object: "ELF shared object (AArch64)". */
    const mpk_obj_object *o = &f->objects[0];
    if (strcmp(o->format, "raw bytes") == 0) return kind;
    buf[0] = '\0';
    append(buf, sizeof buf, o->format);
    if (o->arch) {
      append(buf, sizeof buf, " (");
      append(buf, sizeof buf, o->arch);
      append(buf, sizeof buf, ")");
    }
  } else {
    const char *formats[8];
    size_t n_formats = 0;
    for (size_t i = 0; i < f->n_objects; i++) {
      bool seen = false;
      for (size_t k = 0; k < n_formats; k++) seen |= strcmp(formats[k], f->objects[i].format) == 0;
      if (!seen && n_formats < 8) formats[n_formats++] = f->objects[i].format;
    }
    for (size_t k = 0; k < n_formats; k++) {
      append(buf, sizeof buf, k == 0 ? " of " : k + 1 == n_formats ? " and " : ", ");
      describe_format(buf, sizeof buf, f, formats[k]);
    }
  }
  const char *s = mpk_arena_strdup(a, buf);
  return s ? s : kind;
}

static int refuse_kind(const char *name, const char *kind, const char *refusal, mpk_error *err) {
  if (!kind) return mpk_fail(err, MPK_EUNSUPPORTED, name, NULL, "not a compiled library: %s", refusal ? refusal : "unknown format");
  if (strcmp(kind, "JSON") == 0) return mpk_fail(err, MPK_EUNSUPPORTED, name, NULL, "not a compiled library: a JSON file");
  if (strcmp(kind, "PE/COFF") == 0)
    return mpk_fail(err, MPK_EUNSUPPORTED, name, NULL,
                    "a PE/COFF file (Windows DLL or executable): not supported yet (MLC publishes no Windows libraries)");
  if (strcmp(kind, "thin ar archive") == 0)
    return mpk_fail(err, MPK_EUNSUPPORTED, name, NULL,
                    "a thin ar archive: its members are other files, named but not held; not supported");
  return 0;
}

static int build(mpk_obj_file *f, const char *name, mpk_error *err) {
  mpk_arena *a = f->priv_->arena;
  const char *refusal = NULL,
             *kind = mpk_obj_sniff(f->bytes, f->size < MPK_OBJ_HEADER_BYTES ? f->size : MPK_OBJ_HEADER_BYTES, &refusal);
  int rc = refuse_kind(name, kind, refusal, err);
  if (rc) return rc;
  mpk_obj_list l = {0};
  const char *outer = kind;
  if (strcmp(kind, "gzip-compressed data") == 0) {
    uint64_t n = 0;
    if ((rc = mpk_obj_gunzip(f->bytes, f->size, MPK_OBJ_MAX_INFLATED, name, &f->priv_->inflated, &n, err))) return rc;
    rc = mpk_obj_read_tar(&l, a, name, f->priv_->inflated, n, -1, err);
    outer = "gzip-compressed tar archive";
  } else if (strcmp(kind, "tar archive") == 0) {
    rc = mpk_obj_read_tar(&l, a, name, f->bytes, f->size, 0, err);
  } else if (strcmp(kind, "ar archive") == 0) {
    rc = mpk_obj_read_ar(&l, a, name, NULL, f->bytes, f->size, 0, err);
  } else if (strcmp(kind, "Mach-O universal file") == 0) {
    rc = mpk_obj_read_universal(&l, a, name, f->bytes, f->size, err);
  } else {
    mpk_obj_object *o = mpk_obj_list_push(&l, a);
    if (!o) return mpk_fail(err, MPK_ENOMEM, name, NULL, "out of memory");
    o->bytes = f->bytes;
    o->size = f->size;
    rc = parse_object(o, a, name, err);
  }
  if (rc) return rc;
  if (l.n == 0)
    return mpk_fail(err, MPK_EUNSUPPORTED, name, NULL, "not a compiled library: a %s with no member objects", outer);
  f->objects = l.v;
  f->n_objects = l.n;
  f->container = container_name(f, a, outer);
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
  /* What it is, from its first bytes only: a file that is no library is refused before more is read. */
  uint8_t h[MPK_OBJ_HEADER_BYTES];
  ssize_t got = pread(fd, h, sizeof h, 0);
  if (got < 0) {
    close(fd);
    return mpk_fail(err, MPK_EIO, path, NULL, "cannot read: %s", strerror(errno));
  }
  const char *refusal, *kind = mpk_obj_sniff(h, (size_t)got, &refusal);
  if ((rc = refuse_kind(path, kind, refusal, err))) {
    close(fd);
    return rc;
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
  free(f->priv_->inflated);
  mpk_arena_free(f->priv_->arena);
}

const mpk_obj_symbol *mpk_obj_find_symbol(const mpk_obj_object *o, const char *name) {
  if (!o || !name) return NULL;
  for (size_t i = 0; i < o->n_symbols; i++)
    if (o->symbols[i].defined && strcmp(o->symbols[i].name, name) == 0) return &o->symbols[i];
  return NULL;
}

const uint8_t *mpk_obj_symbol_bytes(const mpk_obj_object *o, const mpk_obj_symbol *s, uint64_t *avail) {
  if (avail) *avail = 0;
  if (!o || !s || !s->defined || s->section >= o->n_sections) return NULL;
  const mpk_obj_section *sec = &o->sections[s->section];
  if (!sec->data || s->value > sec->size) return NULL;
  if (avail) *avail = sec->size - s->value;
  return sec->data + s->value;
}

const char *mpk_obj_where(const mpk_obj_object *o, char *buf, size_t cap) {
  if (!o->member) return "";
  snprintf(buf, cap, "member %s: ", o->member);
  return buf;
}
