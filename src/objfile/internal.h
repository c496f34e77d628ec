/* objfile's own helpers, shared by the container readers (not part of the objfile.h contract). */
#ifndef MPK_OBJFILE_INTERNAL_H
#define MPK_OBJFILE_INTERNAL_H

#include "objfile/objfile.h"
#include "core/endian.h"

/* ---- bytes in either order (every caller has range-checked the bytes first) */
static inline uint16_t mpk_obj_rd16(const uint8_t *p, bool be) { return be ? mpk_load_be16(p) : mpk_load_le16(p); }
static inline uint32_t mpk_obj_rd32(const uint8_t *p, bool be) { return be ? mpk_load_be32(p) : mpk_load_le32(p); }
static inline uint64_t mpk_obj_rd64(const uint8_t *p, bool be) { return be ? mpk_load_be64(p) : mpk_load_le64(p); }
/* [off, off + len) lies within n bytes (overflow-safe). */
static inline bool mpk_obj_in(uint64_t off, uint64_t len, uint64_t n) { return off <= n && len <= n - off; }

/* A set of strings (deduplicating imports and exports), in the arena. */
typedef struct mpk_obj_strset {
  const char **slot;
  size_t cap, count;
} mpk_obj_strset;
/* Add `s` (kept, not copied): 1 added, 0 already there, -1 out of memory. */
int mpk_obj_strset_add(mpk_obj_strset *set, mpk_arena *a, const char *s);

/* A growing array of objects (the arena holds every version; waste is bounded by 2x). */
typedef struct mpk_obj_list {
  mpk_obj_object *v;
  size_t n, cap;
} mpk_obj_list;
mpk_obj_object *mpk_obj_list_push(mpk_obj_list *l, mpk_arena *a);

/* One member (or slice) of an archive: sniff its bytes and parse it with the right reader (ELF,
   Mach-O, WebAssembly), or keep it a "raw bytes" object. `member` is copied. */
int mpk_obj_add_member(mpk_obj_list *l, mpk_arena *a, const char *path, const char *member, const uint8_t *bytes,
                       uint64_t size, int64_t file_offset, mpk_error *err);
/* `o` as a "raw bytes" object: one section, "file", its whole bytes. */
int mpk_obj_make_raw(mpk_obj_object *o, mpk_arena *a, const char *shown, mpk_error *err);
/* "PATH: member M" (or PATH) in the arena, naming an object in messages. */
const char *mpk_obj_shown(mpk_arena *a, const char *path, const char *member);

/* ---- gzip.c: inflate a whole gzip stream (concatenated members allowed) into a malloc'ed buffer of
   at most `limit` bytes (MPK_ELIMIT beyond). A stream whose first 512 inflated bytes are not a tar
   header is refused there (MPK_EUNSUPPORTED "gzip-compressed, but not a tar archive"). */
int mpk_obj_gunzip(const uint8_t *d, uint64_t n, uint64_t limit, const char *shown, uint8_t **out, uint64_t *out_n,
                   mpk_error *err);

/* ---- tar.c */
/* A 512-byte block is a tar header: its checksum (unsigned, or the historical signed sum) matches. */
bool mpk_obj_tar_header_ok(const uint8_t *block);
/* The members of a tar archive of n bytes at `d` (file_offset of d[0] in the file, -1 inside
   compressed data): one object per regular member. */
int mpk_obj_read_tar(mpk_obj_list *l, mpk_arena *a, const char *path, const uint8_t *d, uint64_t n,
                     int64_t file_offset, mpk_error *err);

/* ---- ar.c: the members of an ar archive; `prefix` (may be NULL) is put before member names
   ("arm64 slice: " for an archive inside a universal file). */
int mpk_obj_read_ar(mpk_obj_list *l, mpk_arena *a, const char *path, const char *prefix, const uint8_t *d,
                    uint64_t n, int64_t file_offset, mpk_error *err);

/* ---- macho.c */
/* The name of a Mach-O cputype/cpusubtype ("arm64", "x86-64", ...), NULL unknown. */
const char *mpk_obj_macho_arch(uint32_t cputype, uint32_t cpusubtype);
/* The slices of a Mach-O universal file: one object per slice ("arm64 slice"); a slice that is an
   ar archive contributes its members ("arm64 slice: x.o"). */
int mpk_obj_read_universal(mpk_obj_list *l, mpk_arena *a, const char *path, const uint8_t *d, uint64_t n,
                           mpk_error *err);
/* The first bytes are a universal file's (not a Java class file's, which shares the magic). */
bool mpk_obj_universal_ok(const uint8_t *d, uint64_t n);

#endif
