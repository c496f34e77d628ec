/* Fuzz target: the documents the installer reads back from its cache — an install record
   (modelpkg_install.json), the commit marker (commit.json) and a staging record (parts/<file>.json) —
   as mpk_mt_install_parse_ids and mpk_mt_install_parse_part read them. The input's first byte picks
   the staged file's size relative to the declared one; the rest is the document. Invariants: ids are
   NUL-terminated and shorter than their buffers, a resume offset never passes the declared size or
   the bytes staged, and a validator is given only to the source that wrote it. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mt/install/install.h"

#define SHA "3f0a377ba0a4a460ecb616f6507ce0d8cfa3e704025d4fda3ed0c5ca05468728"
#define SOURCE "https://example.org/pkg"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t pick = data[0];
  data++;
  size--;
  char id[65], repo[32];
  memset(id, 'x', sizeof id);
  memset(repo, 'x', sizeof repo);
  mpk_mt_install_parse_ids(data, size, id, repo, sizeof repo);
  if (memchr(id, 0, sizeof id) == NULL || memchr(repo, 0, sizeof repo) == NULL) __builtin_trap();
  mpk_mt_install_parse_ids(data, size, id, NULL, 0);
  if (memchr(id, 0, sizeof id) == NULL) __builtin_trap();

  uint64_t declared = 1000, have = (uint64_t)pick * 8; /* 0..2040: below, at and beyond the size */
  char validator[256];
  memset(validator, 'v', sizeof validator);
  uint64_t off = mpk_mt_install_parse_part(data, size, SHA, declared, SOURCE, have, validator);
  if (memchr(validator, 0, sizeof validator) == NULL) __builtin_trap();
  if (off > declared || off > have) __builtin_trap();
  char other[256];
  uint64_t off2 = mpk_mt_install_parse_part(data, size, SHA, declared, "http://elsewhere/", have, other);
  if (off2 != off) __builtin_trap();             /* the source decides the validator, not the offset */
  if (validator[0] && other[0]) __builtin_trap(); /* a record names one source */
  return 0;
}
