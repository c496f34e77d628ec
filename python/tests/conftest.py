"""Shared paths of the binding's tests.

The checkout is python/..; the conformance vectors are ../shared/conformance beside it (or
$MPK_SHARED_DIR/conformance, as the C tests read them); the CLI, for comparing reports with
`modelpkg check --json`, is $MODELPKG_CLI or the checkout's build/modelpkg. A test whose input is
absent is skipped with a message naming it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("MPK_SHARED_DIR", REPO.parent / "shared"))
CONFORMANCE = SHARED / "conformance"
WEBLLM = CONFORMANCE / "mlc-webllm"
MT = CONFORMANCE / "mobiletransformers"
TINY = MT / "tiny_package"
EXAMPLES = REPO / "examples"


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} not found (the shared conformance vectors: ../shared, or set MPK_SHARED_DIR)")
    return path


def load_cases(name: str, base: Path = WEBLLM) -> Any:
    return json.loads(need(base / name).read_text(encoding="utf-8"))


@pytest.fixture
def cli() -> str:
    exe = os.environ.get("MODELPKG_CLI") or str(REPO / "build" / "modelpkg")
    if not os.access(exe, os.X_OK):
        pytest.skip(f"{exe} not found (the modelpkg command: build it, or set MODELPKG_CLI)")
    return exe


@pytest.fixture
def tiny_copy(tmp_path: Path) -> Path:
    """A writable copy of the MobileTransformers tiny fixture."""
    dst = tmp_path / "pkg"
    shutil.copytree(need(TINY), dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    return dst
