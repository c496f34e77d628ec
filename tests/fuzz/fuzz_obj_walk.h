/* Shared by the objfile fuzz targets: open the input with mpk_obj_from_bytes and walk every field
   of every object, so that a pointer or count outside the input is touched (and caught by the
   sanitizers). A gzip'd input is inflated with a lowered limit first (the same reader as
   mpk_obj_open uses; 1 GiB inflations would only measure memory). */
#ifndef FUZZ_OBJ_WALK_H
#define FUZZ_OBJ_WALK_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "objfile/internal.h"

static volatile uint64_t fuzz_obj_sink;

static void fuzz_obj_touch(const uint8_t *p, uint64_t n) {
  if (n) fuzz_obj_sink += p[0] + p[n - 1];
}

static void fuzz_obj_walk(const mpk_obj_file *f) {
  fuzz_obj_sink += strlen(f->container) + strlen(f->path);
  for (size_t i = 0; i < f->n_objects; i++) {
    const mpk_obj_object *o = &f->objects[i];
    char buf[256];
    fuzz_obj_sink += strlen(mpk_obj_where(o, buf, sizeof buf)) + strlen(o->format) + (o->arch ? strlen(o->arch) : 0);
    fuzz_obj_touch(o->bytes, o->size);
    for (size_t k = 0; k < o->n_sections; k++) {
      const mpk_obj_section *s = &o->sections[k];
      fuzz_obj_sink += strlen(s->name);
      /* a section stored in the object lies inside its bytes; one the reader builds (WebAssembly's
         memory image, offset -1) is owned by the file and only touched */
      if (s->data && s->offset >= 0 &&
          (s->data != o->bytes + s->offset || s->size > o->size || (uint64_t)s->offset > o->size - s->size))
        abort();
      if (s->data) fuzz_obj_touch(s->data, s->size);
    }
    for (size_t k = 0; k < o->n_symbols; k++) {
      const mpk_obj_symbol *s = &o->symbols[k];
      uint64_t avail;
      const uint8_t *b = mpk_obj_symbol_bytes(o, s, &avail);
      if (b) fuzz_obj_touch(b, avail);
      if (mpk_obj_find_symbol(o, s->name) == NULL && s->defined) abort();
    }
    for (size_t k = 0; k < o->n_imports; k++)
      fuzz_obj_sink += strlen(o->imports[k].name) + (o->imports[k].module ? strlen(o->imports[k].module) : 0);
    for (size_t k = 0; k < o->n_exports; k++) fuzz_obj_sink += strlen(o->exports[k]);
    for (size_t k = 0; k < o->n_segments; k++) fuzz_obj_sink += o->segments[k].size;
  }
}

static int fuzz_obj_one(const uint8_t *data, size_t size) {
  mpk_error err;
  uint8_t *inflated = NULL;
  uint64_t n = 0;
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
    if (mpk_obj_gunzip(data, size, 16u << 20, "fuzz", &inflated, &n, &err) != 0) return 0;
    data = inflated;
    size = (size_t)n;
  }
  mpk_obj_file *f = NULL;
  if (mpk_obj_from_bytes(data, size, "fuzz", &f, &err) == 0) {
    fuzz_obj_walk(f);
    mpk_obj_free(f);
  }
  free(inflated);
  return 0;
}

#endif
