/* Helpers shared by the test programs. */
#ifndef MPK_TESTUTIL_H
#define MPK_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>

#include "modelpkg.h"

/* Path of a file under ../shared (MPK_SHARED_DIR); static buffer. */
const char *tu_shared(const char *rel);
/* Read a whole file; aborts the test on failure. Caller frees. */
uint8_t *tu_read_file(const char *path, size_t *len);
/* Replace the first occurrence of `from` in the file with `to` (fails the test when absent). */
void tu_replace_in_file(const char *path, const char *from, const char *to);
/* Load a JSON file (fails the test on error). */
json_t *tu_load_json(const char *path);
/* The `cases` array of a conformance file under shared/conformance/mlc-webllm/. */
json_t *tu_webllm_cases(const char *file, json_t **root);
/* Compact JSON text of a value (insertion order kept). Caller frees. */
char *tu_dumps(const json_t *v);
/* Base64 decode; caller frees. */
uint8_t *tu_b64decode(const char *s, size_t *len);
/* The location of an error the way WebLLM prints it: file then ".key" per pointer segment,
   "[i]" for a numeric segment, " key" for a trailing empty segment. */
void tu_webllm_location(const mpk_error *err, char *out, size_t size);
/* "file: message" of an error, for failure output. */
const char *tu_err(const mpk_error *err);
/* Run a shell command (printf-style); fails the test when it does not exit 0. */
void tu_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Make a fresh temporary directory; static buffer. */
const char *tu_tmpdir(void);

/* The bytes every host must give (docs/cross.md, "Same bytes on every architecture"): fails the
   test, printing both, unless the SHA-256 of [p, p + n) is `want` ("sha256:<hex>", as x86-64 gives
   it). Outputs in host order (floats of an mpk_audio) are stored little-endian before hashing. */
void tu_expect_sha256(const char *what, const void *p, size_t n, const char *want);

/* Tools a test needs (issue 17). Absent, the test is skipped, never passed and never failed: the
   need_ functions print "SKIP: <test>: <tool> not found (scripts/setup.sh --test installs it)" on
   stdout and exit(77), which ctest counts as skipped (SKIP_RETURN_CODE 77). The same line and
   search as tests/integration/expect.sh's need_tool: TOOL on $PATH or in the sbin directories, or
   MPK_TEST_TOOL_PATH alone when it is set; a TOOL with a slash is that file. */
bool mpk_test_have_tool(const char *tool);
void mpk_test_need_tool(const char *tool);
/* /usr/bin/python3 (Debian's, where python3-numpy, -onnx and -pil install) imports MODULE. */
bool mpk_test_have_python_module(const char *module);
void mpk_test_need_python_module(const char *module);
/* Print the SKIP line for WHAT ("nginx", "/usr/bin/python3 module onnx") and exit(77). */
void mpk_test_skip(const char *what) __attribute__((noreturn));

/* The emulator a cross build's tests run under (tests/cross.cmake sets MPK_TEST_EMULATOR, e.g.
   /usr/bin/qemu-aarch64-static), or NULL natively. A test that executes one of the target's
   programs itself execs the emulator on it: qemu-user does not follow execve into a foreign binary. */
const char *mpk_test_emulator(void);

/* execv(PROG, ARGV) of one of the target's programs: natively PROG itself, in a cross build the
   emulator's words (MPK_TEST_EMULATOR is a command: qemu, and for s390x the root's loader and its
   library path) followed by PROG and ARGV[1...]. Returns only on failure (errno set). */
int mpk_test_execv(const char *prog, char *const argv[]);

#endif
