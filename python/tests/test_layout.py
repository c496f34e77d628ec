"""The binding's ctypes structures against the public headers: a C probe compiled against
include/modelpkg.h prints sizeof and every member's offsetof, and each must equal ctypes' (a struct
declared only up to the members the binding reads — `_prefix_` — is compared by offsets alone)."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess

import pytest

from modelpkg import _lib
from modelpkg import tensors as T
from conftest import REPO


def probe_source(structs) -> str:
    lines = ["#include <stddef.h>", "#include <stdio.h>", "#include <modelpkg.h>", "#include <dlpack/dlpack.h>",
             "int main(void) {"]
    for cls in structs:
        c = cls._c_name_
        lines.append(f'  printf("{c} %zu\\n", sizeof({c}));')
        for name, *_ in cls._fields_:
            lines.append(f'  printf("{c}.{name} %zu\\n", offsetof({c}, {name}));')
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


def test_structs_match_the_headers(tmp_path):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("SKIP: a C compiler (cc or gcc) not found: the layout probe cannot be built")
    if not any(os.path.exists(os.path.join(d, "dlpack", "dlpack.h")) for d in ("/usr/include", "/usr/local/include")):
        pytest.skip("SKIP: dlpack/dlpack.h not found (libdlpack-dev, which scripts/setup.sh installs)")
    src = tmp_path / "probe.c"
    structs = _lib.STRUCTS + T.DLPACK_STRUCTS
    src.write_text(probe_source(structs))
    exe = tmp_path / "probe"
    subprocess.run([cc, "-std=c11", "-I", str(REPO / "include"), str(src), "-o", str(exe)], check=True)
    c_values = dict(line.rsplit(" ", 1) for line in subprocess.run([str(exe)], check=True, capture_output=True,
                                                                      text=True).stdout.splitlines())
    checked = 0
    for cls in structs:
        c = cls._c_name_
        if not getattr(cls, "_prefix_", False):
            assert int(c_values[c]) == ctypes.sizeof(cls), f"sizeof({c})"
        for name, *_ in cls._fields_:
            assert int(c_values[f"{c}.{name}"]) == getattr(cls, name).offset, f"offsetof({c}, {name})"
            checked += 1
    assert checked > 200


def test_every_struct_is_probed():
    names = {cls._c_name_ for cls in _lib.STRUCTS}
    for must in ("mpk_error", "mpk_mt_report", "mpk_mlc_report", "mpk_mt_build_result", "mpk_tensor_view",
                 "mpk_mt_handoff_entry", "mpk_mt_gate_report", "mpk_mlc_library", "mpk_mlc_task", "mpk_mlc_input",
                 "mpk_mlc_build_input", "mpk_mlc_build_result", "mpk_mlc_fit_report", "mpk_mlc_fit_options",
                 "mpk_mlc_segments", "mpk_mapped", "mpk_audio", "mpk_audio_target", "mpk_wav_info", "mpk_image",
                 "mpk_image_options", "mpk_mlc_request_model", "mpk_mlc_legacy_item",
                 "mpk_mlc_binding", "mpk_mlc_artifact"):
        assert must in names
    assert {c._c_name_ for c in T.DLPACK_STRUCTS} == {"DLDevice", "DLDataType", "DLTensor", "DLManagedTensor"}
