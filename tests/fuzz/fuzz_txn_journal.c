/* Fuzz target: the transaction journal reader (core/txn.c). The input is a journal found in a
   directory: inspected read-only, then recovered (which refuses a corrupt journal and, for a
   well-formed one, can only act on its own temporaries in the scratch directory). An input that
   starts with a NUL byte is the journal's text without its checksum line, which the target appends. */
#include <stddef.h>
#include <stdint.h>

#include "core/txn.h"
#include "fuzz_fixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *dir = fuzz_scratch();
  /* Most inputs would stop at the checksum line: half of them (a first byte 0) get a correct one appended, so the
     JSON behind it is reached too (the first byte chooses). */
  uint8_t *fixed = NULL;
  if (size && data[0] == 0) {
    fixed = malloc(size + 80);
    if (!fixed) return 0;
    memcpy(fixed, data + 1, size - 1);
    size_t n = size - 1;
    if (!n || fixed[n - 1] != '\n') fixed[n++] = '\n';
    uint8_t d[MPK_SHA256_LEN];
    char hex[65];
    mpk_sha256(fixed, n, d);
    mpk_hex(d, sizeof d, hex);
    n += (size_t)snprintf((char *)fixed + n, 80, "sha256:%s\n", hex);
    data = fixed;
    size = n;
  }
  if (fuzz_put(dir, ".fuzz.txn-journal", data, size)) abort();
  free(fixed);
  mpk_error err;
  mpk_txn_state st;
  int inspected = mpk_txn_inspect(dir, "fuzz", &st, &err);
  mpk_txn_outcome out;
  int recovered = mpk_txn_recover(dir, "fuzz", &out, &err);
  /* A journal inspect calls well formed, recovery does not call corrupt. */
  if (inspected == 0 && st.journal && recovered == MPK_EMALFORMED && strstr(err.message, "journal")) __builtin_trap();
  /* Leave the directory empty for the next input. */
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(dirfd(d), e->d_name, 0);
  if (d) closedir(d);
  return 0;
}
