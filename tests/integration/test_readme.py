#!/usr/bin/env python3
"""The README stays true (issues 16 and 17): its Quick start sample output is what the tool prints
today, its sample commands are the ones scripts/quickstart.sh runs, and its layout table names every
top-level directory of src/ and include/. The work is scripts/readme-sample.py --check's, which
also regenerates the sample (scripts/readme-sample.py build/modelpkg).
usage: test_readme.py MODELPKG SOURCE_DIR"""
import os, subprocess, sys

if len(sys.argv) != 3:
    sys.exit("usage: test_readme.py MODELPKG SOURCE_DIR")
mpk, src = sys.argv[1], sys.argv[2]
r = subprocess.run([sys.executable, os.path.join(src, "scripts", "readme-sample.py"), mpk, "--check", "--source", src],
                   timeout=600)
sys.exit(r.returncode)
