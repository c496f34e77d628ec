"""Type hints throughout: the package passes mypy --strict (Debian's python3-mypy)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from conftest import REPO


def test_mypy_strict(tmp_path):
    if importlib.util.find_spec("mypy") is None:
        pytest.skip(f"SKIP: {sys.executable} module mypy not found (python3-mypy)")
    p = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path),
                        "modelpkg"], cwd=REPO / "python", capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Success" in p.stdout
