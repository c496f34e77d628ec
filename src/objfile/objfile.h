/* objfile: the containers compiled model libraries ship in, read as data (docs/objfile.md).

   A library file is opened into a list of objects: the file itself (a WebAssembly module, an ELF
   or Mach-O file), or each member of an archive (tar, optionally gzip-compressed; ar) and each
   slice of a Mach-O universal file. Each object exposes what readers of compiled libraries need,
   in one shape whatever the format:
   - sections: named byte ranges ("ELF .rodata", "__TEXT,__const", and for WebAssembly one
     "memory" section: the linear memory its active data segments initialize, zero-filled between
     them — TVM's data is addressed by memory address, and wasm-opt splits it at zero runs);
   - symbols: named places in a section (defined) or names the host must provide (undefined);
   - imports: the functions the host provides (WebAssembly imports with their module; undefined
     function symbols of ELF and Mach-O);
   - for WebAssembly, the data segments themselves (where each lies in memory and in the file), so
     that a writer can rewrite bytes in place.

   Everything is bounded (docs/SECURITY.md): a file that is no container is refused from its first
   bytes, counts and sizes are checked against the bytes that hold them before anything is
   allocated, a gzip stream is inflated to at most MPK_OBJ_MAX_INFLATED bytes, archives nest at
   most one level (a member that is itself an archive is not opened), and no offset read from a
   file is trusted before it is range-checked. Malformed input is MPK_EMALFORMED naming the file,
   the member, the structure and the byte offset; an unknown format is MPK_EUNSUPPORTED. */
#ifndef MPK_OBJFILE_H
#define MPK_OBJFILE_H

#include "core/core.h"

/* Compiled libraries are megabytes (the largest published ones tens of MB). */
#define MPK_OBJ_MAX_FILE_BYTES ((uint64_t)1 << 30)     /* a library file, mapped */
#define MPK_OBJ_MAX_INFLATED ((uint64_t)1 << 30)       /* a gzip'd archive, inflated */
#define MPK_OBJ_MAX_MEMBERS 4096                       /* archive members */
#define MPK_OBJ_MAX_WASM_MEMORY ((uint64_t)1 << 30)    /* the memory image of a module's data */
#define MPK_OBJ_HEADER_BYTES 512                       /* read to tell what a file is */

typedef struct mpk_obj_section {
  const char *name;      /* ".rodata", "__DATA,__const", "memory" (WebAssembly), "file" (raw) */
  const uint8_t *data;   /* its bytes (borrowed from the file's mapping or owned by the file) */
  uint64_t size;
  uint64_t addr;         /* its address (ELF sh_addr, Mach-O addr, 0 for WebAssembly memory) */
  int64_t offset;        /* where data[0] is in the object's bytes; -1: nowhere contiguous (memory) */
} mpk_obj_section;

typedef struct mpk_obj_symbol {
  const char *name;      /* as the format stores it, except Mach-O's leading '_' removed */
  size_t section;        /* index in the object's sections; SIZE_MAX: none (undefined, absolute) */
  uint64_t value;        /* offset in that section (not the address) */
  uint64_t size;         /* 0 when the format does not say (Mach-O) */
  bool defined;
  bool function;         /* STT_FUNC, N_SECT in a text section, a wasm function */
} mpk_obj_symbol;

typedef struct mpk_obj_import {
  const char *module;    /* WebAssembly's import module ("env"); NULL for ELF and Mach-O */
  const char *name;
  bool function;         /* WebAssembly: kind 0; ELF/Mach-O: always (undefined function symbols) */
} mpk_obj_import;

/* A WebAssembly data segment: `size` bytes at memory address `addr` (active segments of memory 0
   with a constant i32 offset; others are listed with active = false), stored at file offset
   `offset` (of the object's bytes). */
typedef struct mpk_obj_segment {
  uint64_t addr, size;
  int64_t offset;
  bool active;
} mpk_obj_segment;

typedef struct mpk_obj_object {
  const char *member;    /* NULL: the file itself; else the archive member's name, or
                            "arm64 slice" for a universal file ("arm64 slice: x.o" for a member of
                            a universal static library's slice) */
  const char *format;    /* "WebAssembly module", "ELF shared object", "ELF relocatable object",
                            "ELF executable", "Mach-O dylib", "Mach-O object", "Mach-O bundle",
                            "raw bytes" (an object that is none of these, searched as one section) */
  const char *arch;      /* "wasm32", "x86-64", "AArch64", "arm64", "x86", "ARM", ...; NULL unknown */
  bool big_endian;       /* ELF/Mach-O data encoding (TVM's blobs are little-endian regardless) */
  const uint8_t *bytes;  /* the object's bytes */
  uint64_t size;
  int64_t file_offset;   /* where bytes[0] is in the library file; -1 inside compressed data */
  mpk_obj_section *sections;
  size_t n_sections;
  mpk_obj_symbol *symbols;
  size_t n_symbols;
  mpk_obj_import *imports;
  size_t n_imports;
  const char *const *exports; /* WebAssembly exports (functions), ELF/Mach-O defined functions */
  size_t n_exports;
  mpk_obj_segment *segments;  /* WebAssembly only */
  size_t n_segments;
} mpk_obj_object;

typedef struct mpk_obj_file {
  const char *path;      /* as given (messages) */
  const char *container; /* what the file is and holds (docs/objfile.md): "WebAssembly module",
                            "ELF shared object (AArch64)", "Mach-O dylib (arm64)", "gzip-compressed
                            tar archive of ELF relocatable objects (AArch64)", "ar archive of Mach-O
                            objects (arm64, x86-64)", "Mach-O universal file of Mach-O dylibs
                            (x86-64, arm64)", "tar archive of ... and other files" (raw bytes) */
  const uint8_t *bytes;  /* the whole file (mapped) */
  uint64_t size;
  mpk_obj_object *objects;
  size_t n_objects;
  struct mpk_obj_file_priv *priv_;
} mpk_obj_file;

/* Open `path` (mapped, never read whole into memory) and split it into objects. MPK_EUNSUPPORTED
   when its first bytes are no accepted container (then nothing past MPK_OBJ_HEADER_BYTES was
   read), MPK_ELIMIT beyond the bounds above, MPK_EMALFORMED for a broken structure. A JSON file is
   MPK_EUNSUPPORTED with a message saying so (callers that accept a _metadata JSON check first). */
int mpk_obj_open(const char *path, mpk_obj_file **out, mpk_error *err);
/* The same over bytes the caller keeps alive until mpk_obj_free (`name` in messages). */
int mpk_obj_from_bytes(const void *data, size_t size, const char *name, mpk_obj_file **out, mpk_error *err);
void mpk_obj_free(mpk_obj_file *f);

/* What the first bytes say a file is: a container name ("WebAssembly module", "ELF", "Mach-O",
   "Mach-O universal file", "ar archive", "tar archive", "gzip-compressed data", "PE/COFF", "JSON"),
   or NULL (then *refusal may say why: empty, ...). */
const char *mpk_obj_sniff(const uint8_t *head, size_t n, const char **refusal);

/* The defined symbol `name` of `o` (exact match after Mach-O's '_' is removed), or NULL. */
const mpk_obj_symbol *mpk_obj_find_symbol(const mpk_obj_object *o, const char *name);

/* The bytes of a defined symbol: a pointer to its first byte in its section and, in *avail, how
   many bytes of that section follow (from there to the section's end; compare with the symbol's
   size when the format gives one). NULL (and *avail 0) when the symbol has no bytes: undefined,
   absolute, in a section without bytes (ELF SHT_NOBITS, Mach-O zerofill), or placed past its
   section's end. */
const uint8_t *mpk_obj_symbol_bytes(const mpk_obj_object *o, const mpk_obj_symbol *s, uint64_t *avail);

/* "member M: " or "" — the prefix naming an object in messages and in "where" strings. */
const char *mpk_obj_where(const mpk_obj_object *o, char *buf, size_t cap);

/* The format parsers (one file each), called by mpk_obj_open on an object whose bytes, member,
   file_offset are set: each fills format, arch, sections, symbols, imports, exports (and
   segments), allocating in `a`. `shown` names the object in errors ("lib.tar: member x.o"). */
int mpk_obj_parse_wasm(mpk_obj_object *o, mpk_arena *a, const char *shown, mpk_error *err);
int mpk_obj_parse_elf(mpk_obj_object *o, mpk_arena *a, const char *shown, mpk_error *err);
int mpk_obj_parse_macho(mpk_obj_object *o, mpk_arena *a, const char *shown, mpk_error *err);

/* WebAssembly in detail, for writers (embed): the byte range of each section in the module and
   the LEB128 helpers. */
typedef struct mpk_obj_wasm_section {
  uint8_t id;
  const char *name;      /* custom sections' name, else NULL */
  uint64_t offset;       /* of the section's id byte in the module */
  uint64_t body;         /* of its contents (after the size) */
  uint64_t size;         /* of its contents */
} mpk_obj_wasm_section;
int mpk_obj_wasm_sections(const uint8_t *d, uint64_t n, const char *shown, mpk_arena *a,
                          mpk_obj_wasm_section **out, size_t *count, mpk_error *err);
/* Unsigned LEB128 at d[*pos] (at most 10 bytes, < end): 0, or -1 when malformed. */
int mpk_obj_uleb(const uint8_t *d, uint64_t end, uint64_t *pos, uint64_t *out);

#endif
