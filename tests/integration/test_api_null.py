#!/usr/bin/env python3
"""The NULL-argument rule of the public API (modelpkg/core.h, docs/API.md "NULL arguments"): every
function declared MPK_API, called with NULL for each pointer and 0 for each number (err a real
mpk_error), does not crash; a function returning int returns MPK_EINVAL, except the value-returning
ones listed in core.h; a lookup returns NULL, except the `_name()` functions (static strings). Each call
runs in its own child process. usage: test_api_null.py SOURCE_DIR C_COMPILER LIBRARY [C_COMPILER_FLAGS...]"""
import glob, os, re, subprocess, sys, tempfile

src, cc, lib, cc_flags = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]  # a cross build's --sysroot
text = ""
for h in [src + "/include/modelpkg.h"] + sorted(glob.glob(src + "/include/modelpkg/*.h")):
    text += open(h, encoding="utf-8").read()
# The components each declaration needs (the headers' `/* component: ... */` lines, docs/API.md): a
# function of a component that is off is a stub, whose answer to anything is MPK_EUNSUPPORTED.
needs = {}
for part in re.split(r"/\* component: ([a-z ]+) \*/", text)[1:]:
    if re.fullmatch(r"[a-z ]+", part):
        comps = part.split()
    else:
        for m in re.finditer(r"MPK_API\s+[^;(]*?\b(mpk_[a-z0-9_]+)\s*\(", re.sub(r"/\*.*?\*/", " ", part, flags=re.S)):
            needs[m.group(1)] = comps
text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
protos = re.findall(r"MPK_API\s+([^;(]*?)\b(mpk_[a-z0-9_]+)\s*\(([^)]*)\)\s*;", text, flags=re.S)
# Functions whose int is a value, not 0/MPK_E* (the list in core.h), with what NULL/0 gives.
VALUE = {"mpk_error_format", "mpk_dtype_bits", "mpk_safetensors_dtype_size", "mpk_pattern_matches",
         "mpk_pattern_valid", "mpk_version_number", "mpk_output_is_stdout", "mpk_output_to_stdout",
         "mpk_has_component"}
# NULL arguments that are allowed (a count of 0 with a NULL array), so 0 is right; a length query.
OK_RC = {"mpk_digest_files": "0", "mpk_fetch_plan_check": "0", "mpk_mt_graph_precision": "MPK_ELIMIT"}
calls = []
for ret, name, args in protos:
    ret = " ".join(ret.split())
    args = " ".join(args.split())
    if args == "void":
        continue
    vals = []
    for a in args.split(","):
        a = a.strip()
        if re.search(r"\bmpk_error\s*\*", a):
            vals.append("&err")
        elif "*" in a or "[" in a or a.endswith("_fn") or re.match(r"mpk_[a-z_]+_fn\b", a):
            vals.append("NULL")
        else:
            vals.append("0")
    call = "%s(%s)" % (name, ", ".join(vals))
    built = " && ".join('mpk_has_component("%s")' % c for c in needs.get(name, ["core"]))
    if ret == "int" and name not in VALUE:
        want = OK_RC.get(name, "MPK_EINVAL")
        want = "((%s) ? %s : MPK_EUNSUPPORTED)" % (built, want)
        body = 'int rc = %s; if (rc != %s) { printf("FAIL: %s(NULL...) returned %%d, not %%d\\n", rc, %s); bad = 1; }' % (
            call, want, name, want)
    elif ret.startswith("void"):
        body = "%s;" % call
    elif "*" in ret and not name.endswith("_name") and name not in ("mpk_version", "mpk_code_name"):
        body = 'if ((const void *)%s) { printf("FAIL: %s(NULL...) is not NULL\\n"); bad = 1; }' % (call, name)
    else:
        body = "(void)%s;" % call
    calls.append((name, body))
if len(calls) < 100:
    print("FAIL: only %d functions found in the headers" % len(calls))
    sys.exit(1)
c = ['#include <stdio.h>', '#include <unistd.h>', '#include <sys/wait.h>', '#include <modelpkg.h>',
     'int main(void) {', '  int failed = 0;']
for name, body in calls:
    c.append('  fflush(stdout); { pid_t p = fork(); if (p == 0) { mpk_error err; int bad = 0; %s fflush(stdout); '
             '_exit(bad); } int st = 0; waitpid(p, &st, 0); if (!WIFEXITED(st)) { printf("FAIL: %s crashed on NULL '
             'arguments\\n"); failed = 1; } else if (WEXITSTATUS(st)) failed = 1; }' % (body, name))
c.append('  return failed; }')
with tempfile.TemporaryDirectory() as d:
    open(d + "/t.c", "w").write("\n".join(c) + "\n")
    # A sanitizer build of the library needs its runtime in the caller too.
    nm = subprocess.run(["nm", "-D", lib], capture_output=True, text=True).stdout
    san = ["-fsanitize=address,undefined"] if "__asan" in nm else []
    r = subprocess.run([cc] + cc_flags + ["-std=c11", "-D_XOPEN_SOURCE=700"] + san + ["-I" + src + "/include", d + "/t.c", lib,
                        "-Wl,-rpath," + os.path.dirname(os.path.abspath(lib)), "-o", d + "/t"],
                       capture_output=True, text=True)
    if r.returncode:
        print("FAIL: the generated caller does not compile:\n" + r.stderr[:4000])
        sys.exit(1)
    # A cross build (tests/cross.cmake) runs the caller under its emulator.
    emu = os.environ.get("MPK_TEST_EMULATOR", "").split()
    r = subprocess.run(emu + [d + "/t"], capture_output=True, text=True, timeout=120)
    sys.stdout.write(r.stdout)
    if r.returncode:
        sys.exit(1)
print("ok: %d public functions called with NULL arguments" % len(calls))
