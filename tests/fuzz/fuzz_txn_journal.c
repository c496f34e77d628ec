/* Fuzz target: the transaction journal reader (core/txn.c). The input is a merge journal found in a
   directory: inspected read-only, then recovered (which refuses a corrupt journal and, for a
   well-formed one, can only act on its own temporaries in the scratch directory). */
#include <stddef.h>
#include <stdint.h>

#include "core/txn.h"
#include "fuzz_fixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char dir[4096];
  if (!dir[0]) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/mpk-fuzz-txn-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) abort();
  }
  if (fuzz_put(dir, ".fuzz.txn-journal", data, size)) abort();
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
