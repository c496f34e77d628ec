"""The package installs with Debian's tools only (pip --no-build-isolation, setuptools from
python3-setuptools; nothing from PyPI) and the installed copy finds the library as documented:
$MODELPKG_LIBRARY, then a libmodelpkg.so next to the package."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

import modelpkg
from conftest import EXAMPLES, REPO

PY = sys.executable


def test_pip_install_no_build_isolation(tmp_path):
    for mod, pkg in (("pip", "python3-pip"), ("setuptools", "python3-setuptools"), ("wheel", "python3-wheel")):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"SKIP: {PY} module {mod} not found ({pkg})")
    src = tmp_path / "src"  # a copy: the build writes build/ and *.egg-info beside pyproject.toml
    shutil.copytree(REPO / "python", src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__",
                                                                       ".pytest_cache"))
    target = tmp_path / "site"
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    p = subprocess.run([PY, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--target", str(target),
                        str(src)], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    installed = target / "modelpkg"
    assert (installed / "py.typed").exists() and (installed / "_lib.py").exists()

    probe = ("import modelpkg, sys; print(modelpkg.__file__); print(modelpkg.library_path()); "
             "print(modelpkg.check(sys.argv[1]).ok)")
    lib = os.path.realpath(modelpkg.library_path())
    base = {k: v for k, v in os.environ.items() if k not in ("MODELPKG_LIBRARY", "PYTHONPATH")}
    # 1. $MODELPKG_LIBRARY
    out = subprocess.run([PY, "-c", probe, str(EXAMPLES / "mt-tiny")], capture_output=True, text=True, cwd=tmp_path,
                         env=dict(base, PYTHONPATH=str(target), MODELPKG_LIBRARY=lib))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == [str(installed / "__init__.py"), lib, "True"]
    # 2. next to the package
    shutil.copy(lib, installed / "libmodelpkg.so")
    out = subprocess.run([PY, "-c", probe, str(EXAMPLES / "mt-tiny")], capture_output=True, text=True, cwd=tmp_path,
                         env=dict(base, PYTHONPATH=str(target)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[1] == str(installed / "libmodelpkg.so")
    # a named library that cannot be loaded is an ImportError naming it, never a silent fallback
    out = subprocess.run([PY, "-c", "import modelpkg"], capture_output=True, text=True, cwd=tmp_path,
                         env=dict(base, PYTHONPATH=str(target), MODELPKG_LIBRARY=str(tmp_path / "none.so")))
    assert out.returncode != 0 and "MODELPKG_LIBRARY=" in out.stderr and "ImportError" in out.stderr
