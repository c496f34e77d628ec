#!/usr/bin/env python3
"""The README's Quick start sample output is what the tool prints today (issue 16: it had gone stale).
Runs each `$ modelpkg ...` line of the sample block from the repository root and compares its output
with the lines that follow it. usage: test_readme.py MODELPKG SOURCE_DIR"""
import shlex, subprocess, sys

mpk, src = sys.argv[1], sys.argv[2]
text = open(src + "/README.md", encoding="utf-8").read()
start = text.index("```\n$ modelpkg ", text.index("## Quick start")) + 4
block = text[start:text.index("```", start)]
runs, cur = [], None
for line in block.splitlines():
    if line.startswith("$ modelpkg "):
        cur = [shlex.split(line[2:]), []]
        runs.append(cur)
    elif cur is not None:
        cur[1].append(line)
passed = failed = 0
for argv, want in runs:
    while want and not want[-1]:
        want.pop()
    r = subprocess.run([mpk] + argv[1:], cwd=src, capture_output=True, text=True, timeout=60)
    got = (r.stdout + r.stderr).rstrip("\n").splitlines()
    if got == want and r.returncode == 0:
        passed += 1
    else:
        failed += 1
        print("FAIL: README sample of", " ".join(argv), "(exit %d)" % r.returncode)
        for i, (a, b) in enumerate(zip(want + [""] * len(got), got + [""] * len(want))):
            if a != b:
                print("  line %d\n    README: %s\n    tool:   %s" % (i + 1, a, b))
                break
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed or not runs else 0)
