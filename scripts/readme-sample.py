#!/usr/bin/env python3
"""The README's Quick start sample output, regenerated from the built tool, and its layout table
checked against the tree (issue 17: both had gone stale). Python 3 standard library only.

  scripts/readme-sample.py build/modelpkg            rewrite the sample block of README.md in place
  scripts/readme-sample.py build/modelpkg --check    exit 1, with a diff, when it is stale
  options: --source DIR (the repository; default: this script's parent's parent)

The sample block is the first ``` block after "## Quick start" that starts with "$ modelpkg ".
Its "$ modelpkg ..." lines are the commands, kept as written: each is run from the repository root
(the tool given in place of "modelpkg") and the lines after it become its standard output and error
(an empty line between two commands). A command that does not exit 0 is a failure, never a sample.
The commands must be those scripts/quickstart.sh prints, in its order: the README says the Quick
start ends with these reports.

The layout table (the first table after "## Layout") must name every top-level directory under
src/ and include/ (as `src/NAME/`, or a path beneath it), and every path it names must exist. The
table is written by hand; this only says where it is wrong (both modes exit 1), never rewrites it.
Exit status: 0 up to date (or rewritten), 1 stale or wrong (--check) or a command failed, 2 usage.
"""
import argparse
import difflib
import os
import re
import shlex
import subprocess
import sys


def fail_usage(msg):
    print("readme-sample: " + msg, file=sys.stderr)
    sys.exit(2)


def sample_span(text):
    """(start, end) of the sample block's body: after its opening ``` line, up to its closing ```."""
    qs = text.find("\n## Quick start")
    if qs < 0:
        raise ValueError('README.md has no "## Quick start" section')
    start = text.find("```\n$ modelpkg ", qs)
    if start < 0:
        raise ValueError('README.md\'s Quick start has no ``` block starting with "$ modelpkg "')
    start += 4
    end = text.find("```", start)
    if end < 0:
        raise ValueError("README.md's sample block is not closed")
    return start, end


def commands(block):
    return [line[2:] for line in block.splitlines() if line.startswith("$ modelpkg ")]


def run(tool, src, cmd):
    argv = shlex.split(cmd)
    r = subprocess.run([tool] + argv[1:], cwd=src, capture_output=True, text=True, timeout=120)
    out = (r.stdout + r.stderr).rstrip("\n")
    return r.returncode, out


def quickstart_commands(src):
    """The "$ modelpkg ..." lines scripts/quickstart.sh echoes, in order."""
    path = os.path.join(src, "scripts", "quickstart.sh")
    got = []
    for line in open(path, encoding="utf-8"):
        m = re.match(r'\s*echo "\\\$ (modelpkg .*)"\s*$', line)
        if m:
            got.append(m.group(1))
    return got


def layout_problems(text, src):
    """What the README's layout table misses or names wrongly, one line each."""
    lay = text.find("\n## Layout")
    if lay < 0:
        return ['README.md has no "## Layout" section']
    rows, seen = [], False
    for line in text[lay:].splitlines()[2:]:
        if line.startswith("|"):
            seen = True
            rows.append(line)
        elif seen or line.startswith("#"):
            break
    paths = []
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        paths += re.findall(r"`([^`]+)`", cells[0]) if cells else []
    if not paths:
        return ["README.md's layout table names no path"]
    problems = []
    for top in ("src", "include"):
        d = os.path.join(src, top)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if not os.path.isdir(os.path.join(d, name)):
                continue
            want = "%s/%s/" % (top, name)
            if not any(p == want or p.startswith(want) or p == want[:-1] for p in paths):
                problems.append("README.md: the layout table does not name %s (a directory of the tree)" % want)
    for p in paths:
        if "*" in p or "{" in p:
            continue
        if not os.path.exists(os.path.join(src, p.rstrip("/"))):
            problems.append("README.md: the layout table names %s, which does not exist" % p)
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tool", help="the built modelpkg (build/modelpkg)")
    ap.add_argument("--check", action="store_true", help="exit 1 with a diff when the sample is stale")
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    a = ap.parse_args()
    src, tool = os.path.abspath(a.source), os.path.abspath(a.tool)
    if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
        fail_usage("%s is not an executable (build it: scripts/build.sh tool)" % a.tool)
    readme = os.path.join(src, "README.md")
    text = open(readme, encoding="utf-8").read()
    try:
        start, end = sample_span(text)
    except ValueError as e:
        print("FAIL: %s" % e)
        return 1
    old = text[start:end]
    cmds = commands(old)
    problems = []

    quick = quickstart_commands(src)
    if quick != cmds:
        problems.append("README.md's sample commands are not the ones scripts/quickstart.sh prints:\n"
                        + "".join("  README:        $ %s\n" % c for c in cmds)
                        + "".join("  quickstart.sh: $ %s\n" % c for c in quick))

    parts = []
    for cmd in cmds:
        rc, out = run(tool, src, cmd)
        if rc != 0:
            problems.append("$ %s exited %d (a sample is a run that succeeds):\n%s" % (cmd, rc, out))
        parts.append("$ %s\n%s\n" % (cmd, out))
    new = "\n".join(parts)

    stale = new != old
    if stale and a.check:
        diff = difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                    "README.md (sample)", "the tool's output")
        problems.append("README.md's Quick start sample is stale (regenerate it: scripts/readme-sample.py %s):\n%s"
                        % (a.tool, "".join(diff).rstrip("\n")))
    elif stale and not any(p.startswith("$ ") for p in problems):
        tmp = readme + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text[:start] + new + text[end:])
        os.replace(tmp, readme)
        print("readme-sample: rewrote the Quick start sample of %s (%d commands)" % (readme, len(cmds)))

    problems += layout_problems(text, src)
    for p in problems:
        print("FAIL: " + p)
    if not problems:
        print("ok: README.md's Quick start sample (%d commands) is the tool's output; the layout table names "
              "every directory of src/ and include/" % len(cmds))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
