"""Loading libmodelpkg.so with ctypes, and the C declarations the binding uses.

Only the public headers (include/modelpkg/*.h) are mirrored here: the binding is a client of the
library like the ``modelpkg`` command. Every structure below carries ``_c_name_``, the C type it
mirrors; its field names are the C member names, so that ``tests/test_layout.py`` can compile a
probe against the headers and compare every offset (and the size, unless ``_prefix_`` says only
the leading members are declared: a struct the library allocates and the binding reads through a
pointer, whose later members it does not need).

Where the library is found, first match wins:

1. ``$MODELPKG_LIBRARY`` (a path to the shared library);
2. next to this package (``modelpkg/libmodelpkg.so``, for a wheel that bundles it);
3. the checkout's ``build/`` directory (``python/../build/libmodelpkg.so``), when this package is
   imported from a source checkout;
4. the system's, through ``ctypes.util.find_library("modelpkg")``.

ctypes releases the GIL around every foreign call (``CDLL``), so a long check or build runs while
other Python threads do; callbacks (progress) take the GIL back while they run.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_double,
    c_float,
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from typing import Any, List, Optional, Set

#: The oldest library release whose public structs this binding mirrors (MPK_VERSION_NUMBER).
MIN_VERSION_NUMBER = 100  # 0.1.0

_HERE = Path(__file__).resolve().parent


def candidate_paths() -> List[str]:
    """Where the library is looked for, in order (the last entry may be a bare soname)."""
    out: List[str] = []
    env = os.environ.get("MODELPKG_LIBRARY")
    if env:
        out.append(env)
    for name in ("libmodelpkg.so", "libmodelpkg.so.0", "libmodelpkg.dylib"):
        p = _HERE / name
        if p.exists():
            out.append(str(p))
    checkout_build = _HERE.parent.parent / "build"
    for name in ("libmodelpkg.so", "libmodelpkg.dylib"):
        p = checkout_build / name
        if p.exists():
            out.append(str(p))
    found = ctypes.util.find_library("modelpkg")
    if found:
        out.append(found)
    return out


def _load() -> ctypes.CDLL:
    tried = candidate_paths()
    env = os.environ.get("MODELPKG_LIBRARY")
    errors = []
    for path in tried:
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            if env and path == env:  # the caller named it: do not fall back silently
                raise ImportError(f"MODELPKG_LIBRARY={env}: {e}") from e
            errors.append(f"{path}: {e}")
    detail = "; ".join(errors) if errors else "no candidate found"
    raise ImportError(
        "modelpkg: cannot find libmodelpkg (set MODELPKG_LIBRARY, put libmodelpkg.so next to the "
        f"package, build the checkout with scripts/build.sh, or install the library): {detail}"
    )


lib = _load()
path: str = getattr(lib, "_name", "")

# ----------------------------------------------------------------------------------------------
# core.h
# ----------------------------------------------------------------------------------------------

MPK_TENSOR_MAX_DIMS = 16
MPK_SHA256_ID_SIZE = 72
MPK_MT_ROLE_COUNT = 4

PROGRESS_FN = CFUNCTYPE(c_int, c_void_p, c_uint64, c_uint64)


class mpk_error(Structure):
    _c_name_ = "mpk_error"
    _fields_ = [
        ("code", c_int),
        ("message", c_char * 512),
        ("file", c_char * 512),
        ("pointer", c_char * 512),
        ("offset", c_int64),
    ]


class mpk_tensor_view(Structure):
    _c_name_ = "mpk_tensor_view"
    _fields_ = [
        ("data", c_void_p),
        ("dtype", c_char * 16),
        ("dl_code", c_uint8),
        ("dl_bits", c_uint8),
        ("dl_lanes", c_uint16),
        ("ndim", c_int32),
        ("shape", c_int64 * MPK_TENSOR_MAX_DIMS),
        ("strides", c_int64 * MPK_TENSOR_MAX_DIMS),
        ("numel", c_uint64),
        ("nbytes", c_uint64),
        ("priv_", c_void_p),
    ]


# ----------------------------------------------------------------------------------------------
# mt.h
# ----------------------------------------------------------------------------------------------


class mpk_opt_int(Structure):
    _c_name_ = "mpk_opt_int"
    _fields_ = [("present", c_int), ("value", c_int64)]


class mpk_mt_pair(Structure):
    _c_name_ = "mpk_mt_pair"
    _fields_ = [("key", c_char_p), ("value", c_char_p)]


class mpk_mt_variant(Structure):
    _c_name_ = "mpk_mt_variant"
    _fields_ = [
        ("id", c_char_p),
        ("execution_provider", c_char_p),
        ("quantization", c_char_p),
        ("supported_engines", POINTER(c_char_p)),
        ("n_supported_engines", c_size_t),
        ("abi_any", c_int),
        ("abi", POINTER(c_char_p)),
        ("n_abi", c_size_t),
        ("features", POINTER(c_char_p)),
        ("n_features", c_size_t),
        ("minimum_android_api", mpk_opt_int),
        ("recommended_device_memory_mb", mpk_opt_int),
        ("weight_handoff", c_char_p),
        ("paths", POINTER(mpk_mt_pair)),
        ("n_paths", c_size_t),
    ]


class mpk_mt_group(Structure):
    _c_name_ = "mpk_mt_group"
    _fields_ = [("name", c_char_p), ("patterns", POINTER(c_char_p)), ("n_patterns", c_size_t)]


class mpk_mt_plan(Structure):
    _c_name_ = "mpk_mt_plan"
    _fields_ = [("variant", c_char_p), ("groups", POINTER(mpk_mt_group)), ("n_groups", c_size_t)]


class mpk_mt_file(Structure):
    _c_name_ = "mpk_mt_file"
    _fields_ = [("path", c_char_p), ("has_size", c_int), ("size", c_uint64), ("sha256", c_char_p)]


class mpk_mt_manifest(Structure):
    _c_name_ = "mpk_mt_manifest"
    _fields_ = [
        ("schema_version", c_char_p),
        ("min_reader_version", c_char_p),
        ("base_model_id", c_char_p),
        ("exported_at", c_char_p),
        ("mobiletransformers_version", c_char_p),
        ("artifact_format_version", mpk_opt_int),
        ("selected_task", c_char_p),
        ("trust_remote_code", c_int),
        ("optimum_onnx_version", c_char_p),
        ("transformers_version", c_char_p),
        ("onnx_runtime_training_version", c_char_p),
        ("onnx_runtime_genai_version", c_char_p),
        ("trainable_parameter_count", mpk_opt_int),
        ("training_parameter_count", mpk_opt_int),
        ("default_variant", c_char_p),
        ("variants", POINTER(mpk_mt_variant)),
        ("n_variants", c_size_t),
        ("plans", POINTER(mpk_mt_plan)),
        ("n_plans", c_size_t),
        ("required_files", POINTER(c_char_p)),
        ("n_required_files", c_size_t),
        ("files", POINTER(mpk_mt_file)),
        ("n_files", c_size_t),
        ("weight_handoff", c_char_p),
        ("android_minimum_api", mpk_opt_int),
        ("android_recommended_memory_mb", mpk_opt_int),
        ("android_required_abis", POINTER(c_char_p)),
        ("n_android_required_abis", c_size_t),
        ("license_framework", c_char_p),
        ("license_base_model_weights", c_char_p),
        ("license_notice_file", c_char_p),
        ("priv_", c_void_p),
    ]


class mpk_mt_check_options(Structure):
    _c_name_ = "mpk_mt_check_options"
    _fields_ = [
        ("struct_size", c_size_t),
        ("variant", c_char_p),
        ("all_variants", c_int),
        ("no_hash", c_int),
        ("no_graph", c_int),
        ("workers", c_uint),
        ("progress", PROGRESS_FN),
        ("progress_ctx", c_void_p),
    ]


class mpk_mt_report(Structure):
    _c_name_ = "mpk_mt_report"
    _fields_ = [
        ("dir", c_char_p),
        ("manifest", POINTER(mpk_mt_manifest)),
        ("variants", POINTER(c_char_p)),
        ("n_variants", c_size_t),
        ("all_variants", c_int),
        ("hashed", c_int),
        ("n_files", c_size_t),
        ("n_files_sized", c_size_t),
        ("n_files_hashed", c_size_t),
        ("n_files_merged", c_size_t),
        ("bytes_hashed", c_uint64),
        ("unlisted", POINTER(c_char_p)),
        ("n_unlisted", c_size_t),
        ("problems", POINTER(mpk_error)),
        ("n_problems", c_size_t),
        ("notes", POINTER(c_char_p)),
        ("n_notes", c_size_t),
        ("n_tensors", c_size_t),
        ("n_tensors_verified", c_size_t),
        ("installed", c_int),
        ("priv_", c_void_p),
    ]


class mpk_mt_build_input(Structure):
    _c_name_ = "mpk_mt_build_input"
    _fields_ = [
        ("describe", c_char_p),
        ("describe_len", c_size_t),
        ("describe_file", c_char_p),
        ("workers", c_uint),
        ("progress", PROGRESS_FN),
        ("progress_ctx", c_void_p),
        ("dry_run", c_int),
        ("parity", c_void_p),
    ]


class mpk_mt_change(Structure):
    _c_name_ = "mpk_mt_change"
    _fields_ = [("path", c_char_p), ("kind", c_int)]


class mpk_mt_build_result(Structure):
    _c_name_ = "mpk_mt_build_result"
    _fields_ = [
        ("had_manifest", c_int),
        ("n_files", c_size_t),
        ("total_bytes", c_uint64),
        ("changes", POINTER(mpk_mt_change)),
        ("n_changes", c_size_t),
        ("written", POINTER(c_char_p)),
        ("n_written", c_size_t),
        ("manifest", POINTER(c_char)),
        ("manifest_len", c_size_t),
        ("priv_", c_void_p),
        ("parity", c_void_p),
    ]


class mpk_mt_dims(Structure):
    _c_name_ = "mpk_mt_dims"
    _fields_ = [("dims", POINTER(c_int64)), ("ndim", c_size_t), ("present", c_int)]


class mpk_mt_named_dims(Structure):
    _c_name_ = "mpk_mt_named_dims"
    _fields_ = [("key", c_char_p), ("shape", mpk_mt_dims)]


_ROLES = c_char_p * MPK_MT_ROLE_COUNT


class mpk_mt_handoff_entry(Structure):
    _c_name_ = "mpk_mt_handoff_entry"
    _fields_ = [
        ("index", c_size_t),
        ("training_base_layer_name", c_char_p),
        ("dtype", c_char_p),
        ("shape", mpk_mt_dims),
        ("tensor_dtypes", _ROLES),
        ("tensor_shapes", mpk_mt_dims * MPK_MT_ROLE_COUNT),
        ("merger_output_names", _ROLES),
        ("merged_tensor_names", _ROLES),
        ("inference_initializer_names", _ROLES),
        ("external_data_location", _ROLES),
        ("sha256", _ROLES),
        ("genai_input_names", _ROLES),
        ("checkpoint_names", POINTER(mpk_mt_pair)),
        ("n_checkpoint_names", c_size_t),
        ("adapter_dtypes", POINTER(mpk_mt_pair)),
        ("n_adapter_dtypes", c_size_t),
        ("adapter_shapes", POINTER(mpk_mt_named_dims)),
        ("n_adapter_shapes", c_size_t),
        ("quantized", c_int),
        ("weight_quantized_name", c_char_p),
        ("scale_name", c_char_p),
        ("zero_point_name", c_char_p),
        ("transpose_policy", c_int),
    ]


class mpk_mt_handoff(Structure):
    _c_name_ = "mpk_mt_handoff"
    _fields_ = [
        ("schema_version", c_char_p),
        ("min_reader_version", c_char_p),
        ("handoff_mode", c_char_p),
        ("engines", POINTER(c_char_p)),
        ("n_engines", c_size_t),
        ("external_data_layout", c_char_p),
        ("frozen_base_blob", c_char_p),
        ("merger_models", POINTER(mpk_mt_pair)),
        ("n_merger_models", c_size_t),
        ("entries", POINTER(mpk_mt_handoff_entry)),
        ("n_entries", c_size_t),
        ("priv_", c_void_p),
    ]


class mpk_mt_gate_tensor(Structure):
    _c_name_ = "mpk_mt_gate_tensor"
    _fields_ = [
        ("entry", c_size_t),
        ("layer", c_char_p),
        ("role", c_int),
        ("file", c_char_p),
        ("status", c_int),
        ("authority", c_int),
        ("sidecar", c_char * 65),
        ("map_sha256", c_char * 65),
        ("actual", c_char * 65),
        ("size", c_uint64),
        ("layout_code", c_int),
        ("dtype", c_char_p),
        ("shape", POINTER(c_int64)),
        ("ndim", c_size_t),
        ("declared_bytes", c_uint64),
        ("size_ok", c_int),
        ("merged", c_int),
    ]


class mpk_mt_gate_report(Structure):
    _c_name_ = "mpk_mt_gate_report"
    _fields_ = [
        ("no_merged_weights", c_int),
        ("ready", c_int),
        ("tensors", POINTER(mpk_mt_gate_tensor)),
        ("n_tensors", c_size_t),
        ("n_verified", c_size_t),
        ("problems", POINTER(mpk_error)),
        ("n_problems", c_size_t),
        ("recovery", c_int),
        ("recovery_files", c_size_t),
        ("priv_", c_void_p),
        ("n_hashed", c_size_t),
        ("n_from_stamp", c_size_t),
        ("stamp_written", c_int),
        ("stamp_ignored", c_char_p),
        ("hashing", c_void_p),
    ]


class mpk_mt_gate_options(Structure):
    _c_name_ = "mpk_mt_gate_options"
    _fields_ = [
        ("struct_size", c_size_t),
        ("presence_only", c_int),
        ("workers", c_uint),
        ("use_stamp", c_int),
        ("rehash", c_int),
    ]


class mpk_mt_variant_gate(Structure):
    _c_name_ = "mpk_mt_variant_gate"
    _fields_ = [
        ("variant", c_char_p),
        ("weight_handoff", c_char_p),
        ("map_absent", c_int),
        ("report", POINTER(mpk_mt_gate_report)),
        ("priv_", c_void_p),
    ]


class mpk_mt_planned_file(Structure):
    _c_name_ = "mpk_mt_planned_file"
    _fields_ = [("path", c_char_p), ("group", c_char_p), ("has_size", c_int), ("size", c_uint64), ("sha256", c_char_p)]


class mpk_mt_plan_options(Structure):
    _c_name_ = "mpk_mt_plan_options"
    _fields_ = [
        ("struct_size", c_size_t),
        ("features", POINTER(c_char_p)),
        ("n_features", c_size_t),
        ("allow_unverifiable", c_int),
    ]


class mpk_mt_download_plan(Structure):
    _c_name_ = "mpk_mt_download_plan"
    _fields_ = [
        ("variant", c_char_p),
        ("features", POINTER(c_char_p)),
        ("n_features", c_size_t),
        ("groups", POINTER(c_char_p)),
        ("n_groups", c_size_t),
        ("files", POINTER(mpk_mt_planned_file)),
        ("n_files", c_size_t),
        ("total_bytes", c_uint64),
        ("includes_manifest", c_int),
        ("n_unverifiable", c_size_t),
        ("problems", POINTER(mpk_error)),
        ("n_problems", c_size_t),
        ("notes", POINTER(c_char_p)),
        ("n_notes", c_size_t),
        ("priv_", c_void_p),
    ]


class mpk_mt_select_options(Structure):
    _c_name_ = "mpk_mt_select_options"
    _fields_ = [
        ("struct_size", c_size_t),
        ("abis", POINTER(c_char_p)),
        ("n_abis", c_size_t),
        ("execution_provider", c_char_p),
        ("quantization", c_char_p),
        ("engine", c_char_p),
        ("memory_mb", mpk_opt_int),
        ("api_level", mpk_opt_int),
        ("free_bytes", mpk_opt_int),
        ("features", POINTER(c_char_p)),
        ("n_features", c_size_t),
        ("prefer_quant", POINTER(c_char_p)),
        ("n_prefer_quant", c_size_t),
    ]


class mpk_mt_candidate(Structure):
    _c_name_ = "mpk_mt_candidate"
    _fields_ = [
        ("variant", POINTER(mpk_mt_variant)),
        ("excluded_by", c_int),
        ("reason", c_char_p),
        ("has_bytes", c_int),
        ("download_bytes", c_uint64),
        ("rank", c_size_t),
        ("chosen", c_int),
    ]


class mpk_mt_selection(Structure):
    _c_name_ = "mpk_mt_selection"
    _fields_ = [
        ("chosen", POINTER(mpk_mt_variant)),
        ("candidates", POINTER(mpk_mt_candidate)),
        ("n_candidates", c_size_t),
        ("features", POINTER(c_char_p)),
        ("n_features", c_size_t),
        ("groups", POINTER(c_char_p)),
        ("n_groups", c_size_t),
        ("prefer_quant", POINTER(c_char_p)),
        ("n_prefer_quant", c_size_t),
        ("preferred_quant", c_char_p),
        ("has_budget", c_int),
        ("free_bytes", c_uint64),
        ("budget_bytes", c_uint64),
        ("fell_back", c_int),
        ("summary", c_char_p),
        ("priv_", c_void_p),
    ]


class mpk_mt_installed(Structure):
    _c_name_ = "mpk_mt_installed"
    _fields_ = [
        ("repo_id", c_char_p),
        ("variant", c_char_p),
        ("features", POINTER(c_char_p)),
        ("n_features", c_size_t),
        ("installed_at_ms", c_int64),
        ("install_id", c_char_p),
        ("source", c_char_p),
        ("record", c_int),
        ("priv_", c_void_p),
    ]


class mpk_mt_install_event(Structure):
    _c_name_ = "mpk_mt_install_event"
    _fields_ = [
        ("kind", c_int),
        ("file", c_char_p),
        ("file_done", c_uint64),
        ("file_size", c_uint64),
        ("done", c_uint64),
        ("total", c_uint64),
        ("files", c_size_t),
        ("message", c_char_p),
    ]


INSTALL_FN = CFUNCTYPE(c_int, c_void_p, POINTER(mpk_mt_install_event))


class mpk_mt_install_options(Structure):
    _c_name_ = "mpk_mt_install_options"
    _fields_ = [
        ("struct_size", c_size_t),
        ("repo_id", c_char_p),
        ("cache_dir", c_char_p),
        ("variant", c_char_p),
        ("select", POINTER(mpk_mt_select_options)),
        ("features", POINTER(c_char_p)),
        ("n_features", c_size_t),
        ("jobs", c_uint),
        ("wait_for_lock", c_int),
        ("attempts", c_uint),
        ("retry_delay_ms", c_uint),
        ("digest_attempts", c_uint),
        ("on_event", INSTALL_FN),
        ("ctx", c_void_p),
        ("timeout_secs", c_uint),
        ("low_speed_bytes", c_uint),
        ("low_speed_secs", c_uint),
        ("connections", c_uint),
        ("ca_file", c_char_p),
    ]


class mpk_mt_install_adapter(Structure):
    _c_name_ = "mpk_mt_install_adapter"
    _fields_ = [("sha256", c_char_p), ("reapplied", c_int), ("reason", c_char_p)]


class mpk_mt_install_result(Structure):
    _c_name_ = "mpk_mt_install_result"
    _fields_ = [
        ("repo_dir", c_char_p),
        ("variant", c_char_p),
        ("files", c_size_t),
        ("total_bytes", c_uint64),
        ("reused_bytes", c_uint64),
        ("retries", c_uint),
        ("restarts", c_uint),
        ("replaced", c_int),
        ("adapters", POINTER(mpk_mt_install_adapter)),
        ("n_adapters", c_size_t),
    ]


class mpk_safetensors_budget(Structure):
    _c_name_ = "mpk_safetensors_budget"
    _fields_ = [("max_header_bytes", c_uint64), ("max_tensors", c_uint64)]


class mpk_mt_merge_options(Structure):
    _c_name_ = "mpk_mt_merge_options"
    _fields_ = [
        ("struct_size", c_size_t),
        ("variant", c_char_p),
        ("adapter", c_char_p),
        ("has_scale", c_int),
        ("scale", c_double),
        ("orientation", c_int),
        ("workers", c_uint),
        ("dry_run", c_int),
        ("adapter_budget", mpk_safetensors_budget),
        ("keep_base", c_int),
        ("ort", c_void_p),
        ("probe", c_char_p),
        ("max_ratio", c_double),
        ("force", c_int),
        ("progress", PROGRESS_FN),
        ("progress_ctx", c_void_p),
    ]


_DIGEST = c_char * 65


class mpk_mt_merge_entry(Structure):
    _c_name_ = "mpk_mt_merge_entry"
    _fields_ = [
        ("entry", c_size_t),
        ("layer", c_char_p),
        ("adapter_a", c_char_p),
        ("adapter_b", c_char_p),
        ("out", c_int64),
        ("in", c_int64),
        ("rank", c_int64),
        ("dtype", c_char_p),
        ("rows", c_int64),
        ("cols", c_int64),
        ("quantized", c_int),
        ("observed", c_int),
        ("scale", c_double),
        ("scale_source", c_char_p),
        ("base_source", c_char_p),
        ("digest", _DIGEST * MPK_MT_ROLE_COUNT),
    ]


class mpk_mt_merge_report(Structure):
    _c_name_ = "mpk_mt_merge_report"
    _fields_ = [
        ("variant", c_char_p),
        ("inference_dir", c_char_p),
        ("orientation", c_int),
        ("evidence", c_char_p),
        ("entries", POINTER(mpk_mt_merge_entry)),
        ("n_entries", c_size_t),
        ("notes", POINTER(c_char_p)),
        ("n_notes", c_size_t),
        ("written", c_int),
        ("priv_", c_void_p),
        ("verified", c_int),
        ("ce_before", c_double),
        ("ce_after", c_double),
        ("ratio", c_double),
        ("max_ratio", c_double),
        ("rolled_back", c_int),
        ("verdict", c_char_p),
    ]


class mpk_mt_handoff_build_options(Structure):
    _c_name_ = "mpk_mt_handoff_build_options"
    _fields_ = [
        ("struct_size", c_size_t),
        ("variant", c_char_p),
        ("peft_method", c_char_p),
        ("attention_module", c_char_p),
        ("dry_run", c_int),
    ]


class mpk_mt_handoff_build_result(Structure):
    _c_name_ = "mpk_mt_handoff_build_result"
    _fields_ = [
        ("path", c_char_p),
        ("map", POINTER(c_char)),
        ("map_len", c_size_t),
        ("changed", c_int),
        ("n_entries", c_size_t),
        ("policy", c_int),
    ]


# ----------------------------------------------------------------------------------------------
# mlc.h
# ----------------------------------------------------------------------------------------------


class mpk_mlc_package(Structure):
    _c_name_ = "mpk_mlc_package"
    _fields_ = [
        ("schema_version", c_int64),
        ("chat_config", c_char_p),
        ("interface_id", c_char_p),
        ("weights_manifest", c_char_p),
        ("parameter_schema_id", c_char_p),
        ("tasks", c_void_p),  # const mpk_mlc_task *: cast to POINTER(mpk_mlc_task)
        ("n_tasks", c_size_t),
        ("priv_", c_void_p),
    ]


class mpk_mlc_artifact(Structure):
    _c_name_ = "mpk_mlc_artifact"
    _fields_ = [
        ("schema_version", c_int64),
        ("interface_id", c_char_p),
        ("parameter_schema_id", c_char_p),
        ("programs", c_void_p),
        ("n_programs", c_size_t),
        ("required_features", POINTER(c_char_p)),
        ("n_required_features", c_size_t),
        ("max_storage_buffer_binding_size", c_int64),
        ("estimated_device_memory_bytes", c_int64),
        ("priv_", c_void_p),
    ]


class mpk_mlc_metadata(Structure):
    _c_name_ = "mpk_mlc_metadata"
    _fields_ = [
        ("json", c_void_p),
        ("json_len", c_size_t),
        ("model_type", c_char_p),
        ("kv_state_kind", c_char_p),
        ("source_offset", c_int64),
        ("artifact_only", c_int),
        ("artifact", POINTER(mpk_mlc_artifact)),
        ("priv_", c_void_p),
    ]


class mpk_mlc_audio_decode(Structure):
    _c_name_ = "mpk_mlc_audio_decode"
    _fields_ = [("sample_rate_hz", c_int64), ("channels", c_int64), ("min_samples", c_int64),
                ("max_samples", c_int64)]


class mpk_mlc_image_decode(Structure):
    _c_name_ = "mpk_mlc_image_decode"
    _fields_ = [("resize_mode", c_int), ("height", c_int64), ("width", c_int64), ("num_embeddings", c_int64)]


class mpk_mlc_input(Structure):
    _c_name_ = "mpk_mlc_input"
    _fields_ = [
        ("name", c_char_p),
        ("kind", c_int),
        ("processor_name", c_char_p),
        ("audio", mpk_mlc_audio_decode),
        ("image", mpk_mlc_image_decode),
        ("adapter", c_char_p),
        ("prompt", c_void_p),
        ("position", c_size_t),
    ]


class mpk_mlc_task(Structure):
    _c_name_ = "mpk_mlc_task"
    _fields_ = [
        ("name", c_char_p),
        ("executor", c_char_p),
        ("output", c_char_p),
        ("inputs", POINTER(mpk_mlc_input)),
        ("n_inputs", c_size_t),
    ]


class mpk_mlc_library(Structure):
    _c_name_ = "mpk_mlc_library"
    _fields_ = [
        ("path", c_char_p),
        ("container", c_char_p),
        ("arch", c_char_p),
        ("metadata", POINTER(mpk_mlc_metadata)),
        ("metadata_problem", c_char_p),
        ("metadata_member", c_char_p),
        ("metadata_where", c_char_p),
        ("metadata_scanned", c_int),
        ("vm_where", c_char_p),
        ("vm_type_key", c_char_p),
        ("vm_version", c_char_p),
        ("functions", c_void_p),
        ("n_functions", c_size_t),
        ("imports", c_void_p),
        ("n_imports", c_size_t),
        ("globals_needed", POINTER(c_char_p)),
        ("n_globals_needed", c_size_t),
        ("globals_defined", POINTER(c_char_p)),
        ("n_globals_defined", c_size_t),
        ("priv_", c_void_p),
        ("exports", POINTER(c_char_p)),
        ("n_exports", c_size_t),
    ]


class mpk_mlc_bound_input(Structure):
    _c_name_ = "mpk_mlc_bound_input"
    _fields_ = [
        ("input", POINTER(mpk_mlc_input)),
        ("adapter", c_char_p),
        ("adapter_function", c_char_p),
        ("dtype", c_char_p),
    ]


class mpk_mlc_binding(Structure):
    _c_name_ = "mpk_mlc_binding"
    _fields_ = [
        ("task", c_void_p),
        ("program", c_void_p),
        ("executor", c_char_p),
        ("generation_inputs", c_int),
        ("embed_tokens", c_char_p),
        ("create_kv_cache", c_char_p),
        ("prefill", c_char_p),
        ("decode", c_char_p),
        ("create_rnn_state", c_char_p),
        ("kv_state_kind_implied", c_int),
        ("text_input", c_void_p),
        ("has_audio", c_int),
        ("audio", mpk_mlc_bound_input),
        ("has_image", c_int),
        ("image", mpk_mlc_bound_input),
    ]


class mpk_mlc_input_kinds(Structure):
    _c_name_ = "mpk_mlc_input_kinds"
    _fields_ = [("declared", c_int), ("audio", c_int), ("image", c_int)]


class mpk_mlc_request_model(Structure):
    _c_name_ = "mpk_mlc_request_model"
    _fields_ = [("model_id", c_char_p), ("model_type", c_char_p), ("kinds", mpk_mlc_input_kinds)]


class mpk_mlc_tensor_cache(Structure):
    _c_name_ = "mpk_mlc_tensor_cache"
    _fields_ = [
        ("has_param_size", c_int),
        ("param_size", c_int64),
        ("has_param_bytes", c_int),
        ("param_bytes", c_double),
        ("shards", c_void_p),
        ("n_shards", c_size_t),
        ("records", c_void_p),
        ("n_records", c_size_t),
        ("priv_", c_void_p),
    ]


class mpk_mlc_resources(Structure):
    _c_name_ = "mpk_mlc_resources"
    _fields_ = [("max_storage_buffer_binding_size", c_int64), ("estimated_device_memory_bytes", c_int64)]


class mpk_mlc_device(Structure):
    _c_name_ = "mpk_mlc_device"
    _fields_ = [
        ("features", POINTER(c_char_p)),
        ("n_features", c_size_t),
        ("has_features", c_int),
        ("max_storage_buffer_binding_size", c_int64),
    ]


class mpk_mlc_check_options(Structure):
    _c_name_ = "mpk_mlc_check_options"
    _fields_ = [
        ("struct_size", c_size_t),
        ("lib_path", c_char_p),
        ("device", POINTER(mpk_mlc_device)),
        ("no_weights", c_int),
        ("workers", c_uint),
        ("progress", PROGRESS_FN),
        ("progress_ctx", c_void_p),
    ]


_ID = c_char * MPK_SHA256_ID_SIZE


class mpk_mlc_report(Structure):
    _c_name_ = "mpk_mlc_report"
    _fields_ = [
        ("dir", c_char_p),
        ("has_manifest", c_int),
        ("package", POINTER(mpk_mlc_package)),
        ("computed_interface_id", _ID),
        ("lib_path", c_char_p),
        ("metadata", POINTER(mpk_mlc_metadata)),
        ("resolved", c_int),
        ("binding", mpk_mlc_binding),
        ("tensor_cache_path", c_char_p),
        ("tensor_cache", POINTER(mpk_mlc_tensor_cache)),
        ("weights_verified", c_int),
        ("weights_parameter_schema_id", _ID),
        ("has_weights_resources", c_int),
        ("weights_resources", mpk_mlc_resources),
        ("problems", POINTER(mpk_error)),
        ("n_problems", c_size_t),
        ("notes", POINTER(c_char_p)),
        ("n_notes", c_size_t),
        ("priv_", c_void_p),
    ]


class mpk_mlc_resource_urls(Structure):
    _c_name_ = "mpk_mlc_resource_urls"
    _fields_ = [
        ("chat_config_url", c_void_p),  # char *, malloc'ed: read, then mpk_mlc_resource_urls_free
        ("tensor_cache_manifest_url", c_void_p),
        ("tensor_cache_base_url", c_void_p),
    ]


class mpk_mlc_named_dim(Structure):
    _c_name_ = "mpk_mlc_named_dim"
    _fields_ = [("name", c_char_p), ("value", c_int64)]


class mpk_mlc_build_input(Structure):
    _c_name_ = "mpk_mlc_build_input"
    _fields_ = [
        ("tasks_json", c_char_p),
        ("tasks_len", c_size_t),
        ("programs_json", c_char_p),
        ("programs_len", c_size_t),
        ("programs_from", POINTER(mpk_mlc_artifact)),
        ("params", c_void_p),
        ("dims", POINTER(mpk_mlc_named_dim)),
        ("n_dims", c_size_t),
        ("required_features", POINTER(c_char_p)),
        ("n_required_features", c_size_t),
    ]


class mpk_mlc_build_result(Structure):
    _c_name_ = "mpk_mlc_build_result"
    _fields_ = [
        ("manifest", POINTER(c_char)),
        ("manifest_len", c_size_t),
        ("artifact", POINTER(c_char)),
        ("artifact_len", c_size_t),
        ("interface_id", _ID),
        ("parameter_schema_id", _ID),
        ("resources", mpk_mlc_resources),
        ("f16_without_shader_f16", c_int),
    ]


class mpk_mlc_fit(Structure):
    _c_name_ = "mpk_mlc_fit"
    _fields_ = [
        ("complete", c_int),
        ("parameter_bytes", c_int64),
        ("max_binding_bytes", c_int64),
        ("max_binding_parameter", c_char * 256),
        ("kv_cache_bytes", c_int64),
        ("kv_bytes_per_token", c_int64),
        ("kv_layers", c_int64),
        ("kv_heads", c_int64),
        ("kv_head_dim", c_int64),
        ("kv_dtype", c_char_p),
        ("quantization", c_char * 64),
        ("context", c_int64),
        ("context_source", c_int),
        ("context_field", c_char_p),
        ("workspace_bytes", c_int64),
        ("workspace_function", c_char * 256),
        ("total_bytes", c_int64),
        ("uses_float16", c_int),
        ("kv_none_reason", c_char_p),
    ]


class mpk_mlc_fit_options(Structure):
    _c_name_ = "mpk_mlc_fit_options"
    _fields_ = [
        ("struct_size", c_size_t),
        ("lib_path", c_char_p),
        ("context", c_int64),
        ("dims", POINTER(mpk_mlc_named_dim)),
        ("n_dims", c_size_t),
        ("device", POINTER(mpk_mlc_device)),
        ("has_device_memory", c_int),
        ("device_memory_bytes", c_int64),
    ]


class mpk_mlc_fit_report(Structure):
    _c_name_ = "mpk_mlc_fit_report"
    _fields_ = [
        ("dir", c_char_p),
        ("lib_path", c_char_p),
        ("chat_config_path", c_char_p),
        ("weights_path", c_char_p),
        ("fit", mpk_mlc_fit),
        ("device_checked", c_int),
        ("refused", c_int),
        ("problems", POINTER(mpk_error)),
        ("n_problems", c_size_t),
        ("notes", POINTER(c_char_p)),
        ("n_notes", c_size_t),
        ("priv_", c_void_p),
    ]


class mpk_mlc_segments(Structure):
    _c_name_ = "mpk_mlc_segments"
    _fields_ = [("filled_kv_cache_length", c_int64), ("segments", c_void_p), ("n", c_size_t), ("priv_", c_void_p)]


class mpk_mlc_legacy_item(Structure):
    _c_name_ = "mpk_mlc_legacy_item"
    _fields_ = [("is_image", c_int), ("length", c_int64)]


class mpk_mapped(Structure):
    _c_name_ = "mpk_mapped"
    _fields_ = [("data", c_void_p), ("size", c_size_t), ("priv_", c_void_p), ("mapped", c_int)]


# ----------------------------------------------------------------------------------------------
# media.h
# ----------------------------------------------------------------------------------------------


class mpk_wav_info(Structure):
    _c_name_ = "mpk_wav_info"
    _fields_ = [
        ("format_tag", c_uint32),
        ("codec", c_uint32),
        ("channels", c_uint32),
        ("sample_rate", c_uint32),
        ("bits_per_sample", c_uint32),
        ("valid_bits", c_uint32),
        ("block_align", c_uint32),
        ("data_offset", c_uint64),
        ("data_size", c_uint64),
        ("frames", c_uint64),
        ("data_to_eof", c_int),
        ("data_declared", c_uint32),
        ("data_dropped", c_uint64),
    ]


class mpk_audio_target(Structure):
    _c_name_ = "mpk_audio_target"
    _fields_ = [("sample_rate_hz", c_int64), ("min_samples", c_int64), ("max_samples", c_int64), ("threads", c_uint)]


class mpk_audio(Structure):
    _c_name_ = "mpk_audio"
    _fields_ = [
        ("samples", POINTER(c_float)),
        ("n_samples", c_size_t),
        ("sample_rate_hz", c_int64),
        ("from_wav", c_int),
        ("wav", mpk_wav_info),
        ("source_rate", c_double),
        ("source_channels", c_uint32),
        ("source_frames", c_uint64),
        ("resampled", c_int),
        ("peak", c_double),
        ("rms", c_double),
    ]


class mpk_image_target(Structure):
    _c_name_ = "mpk_image_target"
    _fields_ = [("mode", c_int), ("height", c_int64), ("width", c_int64)]


class mpk_image_plan(Structure):
    _c_name_ = "mpk_image_plan"
    _fields_ = [("width", c_int64), ("height", c_int64), ("left", c_int64), ("top", c_int64)]


IMAGE_ROWS_FN = CFUNCTYPE(c_int, c_void_p, c_int64, POINTER(c_uint8), c_size_t, POINTER(mpk_error))
AUDIO_SINK_FN = CFUNCTYPE(c_int, c_void_p, POINTER(c_float), c_size_t, POINTER(mpk_error))


class mpk_image_options(Structure):
    _c_name_ = "mpk_image_options"
    _fields_ = [
        ("struct_size", c_size_t),
        ("ignore_orientation", c_int),
        ("max_pixels", c_uint64),
        ("max_decode_bytes", c_uint64),
        ("rows", IMAGE_ROWS_FN),
        ("rows_ctx", c_void_p),
    ]


class mpk_image(Structure):
    _c_name_ = "mpk_image"
    _fields_ = [
        ("pixels", POINTER(c_uint8)),
        ("width", c_int64),
        ("height", c_int64),
        ("format", c_int),
        ("source_width", c_uint32),
        ("source_height", c_uint32),
        ("source_channels", c_uint32),
        ("source_bits", c_uint32),
        ("has_alpha", c_int),
        ("orientation", c_int),
        ("orientation_applied", c_int),
        ("decoded_width", c_uint32),
        ("decoded_height", c_uint32),
        ("jpeg_scale_num", c_int),
        ("plan", mpk_image_plan),
        ("warning", c_char * 256),
    ]


#: Every mirrored structure (tests/test_layout.py checks each against the headers).
STRUCTS = [
    v for v in list(globals().values()) if isinstance(v, type) and issubclass(v, Structure) and hasattr(v, "_c_name_")
]


def options(cls: Any) -> Any:
    """An options struct with every field at its default and struct_size set (MPK_*_OPTIONS_INIT)."""
    o = cls()
    o.struct_size = ctypes.sizeof(cls)
    return o


# ----------------------------------------------------------------------------------------------
# Prototypes: (name, restype, argtypes)
# ----------------------------------------------------------------------------------------------

_E = POINTER(mpk_error)
_P = c_void_p

_PROTOTYPES = [
    # core
    ("mpk_version", c_char_p, []),
    ("mpk_version_number", c_int, []),
    ("mpk_components", c_char_p, []),
    ("mpk_has_component", c_int, [c_char_p]),
    ("mpk_hash_implementation", c_char_p, []),
    ("mpk_code_name", c_char_p, [c_int]),
    ("mpk_error_format", c_int, [_E, c_char_p, c_size_t]),
    ("mpk_canonical_json", c_int, [c_char_p, c_size_t, POINTER(c_void_p), POINTER(c_size_t), _E]),
    ("mpk_sha256_id", c_int, [c_char_p, c_size_t, c_char_p]),
    ("mpk_free", None, [c_void_p]),
    ("mpk_doc_version_check", c_int, [c_char_p, c_char_p, c_char_p, _E]),
    ("mpk_package_kind", c_int, [c_char_p, POINTER(c_int), _E]),
    ("mpk_tensor_view_close", None, [POINTER(mpk_tensor_view)]),
    ("mpk_tensor_view_dltensor", c_int, [POINTER(mpk_tensor_view), c_void_p]),
    ("mpk_map_file", c_int, [c_char_p, c_size_t, POINTER(mpk_mapped), _E]),
    ("mpk_unmap_file", None, [POINTER(mpk_mapped)]),
    ("mpk_write_file_atomic", c_int, [c_char_p, c_void_p, c_size_t, _E]),
    ("mpk_output_file", c_int, [c_char_p, c_void_p, c_size_t, _E]),
    # mlc
    ("mpk_mlc_interface_id", c_int, [c_char_p, c_size_t, c_char_p, _E]),
    ("mpk_mlc_package_parse", c_int, [c_char_p, c_size_t, c_char_p, c_int, POINTER(POINTER(mpk_mlc_package)), _E]),
    ("mpk_mlc_package_load", c_int, [c_char_p, POINTER(POINTER(mpk_mlc_package)), _E]),
    ("mpk_mlc_package_free", None, [POINTER(mpk_mlc_package)]),
    ("mpk_mlc_package_interface_id", c_int, [POINTER(mpk_mlc_package), c_char_p, _E]),
    ("mpk_mlc_clean_model_url", c_int, [c_char_p, POINTER(c_void_p), _E]),
    ("mpk_mlc_resource_urls_resolve", c_int,
     [c_char_p, POINTER(mpk_mlc_package), POINTER(mpk_mlc_resource_urls), _E]),
    ("mpk_mlc_resource_urls_free", None, [POINTER(mpk_mlc_resource_urls)]),
    ("mpk_mlc_check", c_int, [c_char_p, POINTER(mpk_mlc_check_options), POINTER(POINTER(mpk_mlc_report)), _E]),
    ("mpk_mlc_report_free", None, [POINTER(mpk_mlc_report)]),
    ("mpk_mlc_kv_state_kind_name", c_char_p, [c_int]),
    ("mpk_mlc_package_tasks_json", c_int, [POINTER(mpk_mlc_package), POINTER(c_void_p), POINTER(c_size_t), _E]),
    ("mpk_mlc_metadata_load", c_int, [c_char_p, POINTER(POINTER(mpk_mlc_metadata)), _E]),
    ("mpk_mlc_metadata_from_bytes", c_int, [c_char_p, c_size_t, c_char_p, POINTER(POINTER(mpk_mlc_metadata)), _E]),
    ("mpk_mlc_metadata_free", None, [POINTER(mpk_mlc_metadata)]),
    ("mpk_mlc_library_open", c_int, [c_char_p, POINTER(POINTER(mpk_mlc_library)), _E]),
    ("mpk_mlc_library_free", None, [POINTER(mpk_mlc_library)]),
    ("mpk_mlc_resolve", c_int, [POINTER(mpk_mlc_package), POINTER(mpk_mlc_artifact), POINTER(mpk_mlc_binding), _E]),
    ("mpk_mlc_request_check", c_int, [c_char_p, c_size_t, c_char_p, POINTER(mpk_mlc_request_model), _E]),
    ("mpk_mlc_tensor_cache_load", c_int, [c_char_p, POINTER(POINTER(mpk_mlc_tensor_cache)), _E]),
    ("mpk_mlc_tensor_cache_free", None, [POINTER(mpk_mlc_tensor_cache)]),
    ("mpk_mlc_params_from_tensor_cache", c_int, [POINTER(mpk_mlc_tensor_cache), POINTER(c_void_p), _E]),
    ("mpk_mlc_params_from_metadata", c_int, [POINTER(mpk_mlc_metadata), POINTER(c_void_p), _E]),
    ("mpk_mlc_params_parse", c_int, [c_char_p, c_size_t, c_char_p, POINTER(c_void_p), _E]),
    ("mpk_mlc_params_free", None, [c_void_p]),
    ("mpk_mlc_named_dims_from_chat_config", c_int,
     [c_char_p, POINTER(POINTER(mpk_mlc_named_dim)), POINTER(c_size_t), _E]),
    ("mpk_mlc_build", c_int, [POINTER(mpk_mlc_build_input), POINTER(mpk_mlc_build_result), _E]),
    ("mpk_mlc_build_result_free", None, [POINTER(mpk_mlc_build_result)]),
    ("mpk_mlc_fit_package", c_int, [c_char_p, POINTER(mpk_mlc_fit_options), POINTER(POINTER(mpk_mlc_fit_report)), _E]),
    ("mpk_mlc_fit_report_free", None, [POINTER(mpk_mlc_fit_report)]),
    ("mpk_mlc_planner_open", c_int, [c_char_p, c_char_p, POINTER(c_void_p), _E]),
    ("mpk_mlc_planner_free", None, [c_void_p]),
    ("mpk_mlc_segments_parse", c_int, [c_char_p, c_size_t, c_char_p, POINTER(POINTER(mpk_mlc_segments)), _E]),
    ("mpk_mlc_segments_free", None, [POINTER(mpk_mlc_segments)]),
    ("mpk_mlc_prefill_plan_segments", c_int, [c_void_p, c_int64, c_void_p, c_size_t, POINTER(c_void_p), _E]),
    ("mpk_mlc_prefill_plan_free", None, [c_void_p]),
    ("mpk_mlc_prefill_plan_json", c_int, [c_void_p, c_void_p, POINTER(c_void_p), POINTER(c_size_t), _E]),
    ("mpk_mlc_package_json", c_int, [POINTER(mpk_mlc_package), POINTER(c_void_p), POINTER(c_size_t), _E]),
    ("mpk_mlc_artifact_parse", c_int, [c_char_p, c_size_t, c_char_p, POINTER(POINTER(mpk_mlc_artifact)), _E]),
    ("mpk_mlc_artifact_free", None, [POINTER(mpk_mlc_artifact)]),
    ("mpk_mlc_artifact_json", c_int, [POINTER(mpk_mlc_artifact), POINTER(c_void_p), POINTER(c_size_t), _E]),
    ("mpk_mlc_binding_json", c_int, [POINTER(mpk_mlc_binding), POINTER(c_void_p), POINTER(c_size_t), _E]),
    ("mpk_mlc_planner_parse", c_int, [c_char_p, c_size_t, c_char_p, POINTER(c_void_p), _E]),
    ("mpk_mlc_legacy_chunks", c_int, [POINTER(mpk_mlc_legacy_item), c_size_t, c_int64, POINTER(c_void_p), _E]),
    ("mpk_mlc_legacy_plan_free", None, [c_void_p]),
    ("mpk_mlc_legacy_plan_json", c_int, [c_void_p, POINTER(c_void_p), POINTER(c_size_t), _E]),
    # mt
    ("mpk_mt_manifest_parse", c_int, [c_char_p, c_size_t, c_char_p, POINTER(POINTER(mpk_mt_manifest)), _E]),
    ("mpk_mt_manifest_load", c_int, [c_char_p, POINTER(POINTER(mpk_mt_manifest)), _E]),
    ("mpk_mt_manifest_free", None, [POINTER(mpk_mt_manifest)]),
    ("mpk_mt_manifest_json", c_int, [POINTER(mpk_mt_manifest), POINTER(c_void_p), POINTER(c_size_t), _E]),
    ("mpk_mt_plan_files", c_int,
     [POINTER(mpk_mt_manifest), c_char_p, POINTER(c_char_p), c_size_t, POINTER(POINTER(POINTER(mpk_mt_file))),
      POINTER(c_size_t), _E]),
    ("mpk_mt_check", c_int, [c_char_p, POINTER(mpk_mt_check_options), POINTER(POINTER(mpk_mt_report)), _E]),
    ("mpk_mt_report_free", None, [POINTER(mpk_mt_report)]),
    ("mpk_mt_build", c_int, [c_char_p, POINTER(mpk_mt_build_input), POINTER(mpk_mt_build_result), _E]),
    ("mpk_mt_build_result_free", None, [POINTER(mpk_mt_build_result)]),
    ("mpk_mt_handoff_load", c_int, [c_char_p, POINTER(POINTER(mpk_mt_handoff)), _E]),
    ("mpk_mt_handoff_free", None, [POINTER(mpk_mt_handoff)]),
    ("mpk_mt_tensor_open", c_int,
     [c_char_p, POINTER(mpk_mt_handoff_entry), c_int, POINTER(mpk_tensor_view), _E]),
    ("mpk_mt_variant_gate_open", c_int,
     [c_char_p, c_char_p, POINTER(mpk_mt_gate_options), POINTER(POINTER(mpk_mt_variant_gate)), _E]),
    ("mpk_mt_variant_gate_free", None, [POINTER(mpk_mt_variant_gate)]),
    ("mpk_mt_role_name", c_char_p, [c_int]),
    ("mpk_mt_manifest_variant", POINTER(mpk_mt_variant), [POINTER(mpk_mt_manifest), c_char_p]),
    ("mpk_mt_manifest_open_source", c_int, [c_char_p, POINTER(POINTER(mpk_mt_manifest)), _E]),
    ("mpk_mt_storage_budget", c_uint64, [c_uint64]),
    ("mpk_mt_plan_download", c_int,
     [POINTER(mpk_mt_manifest), c_char_p, POINTER(mpk_mt_plan_options), POINTER(POINTER(mpk_mt_download_plan)), _E]),
    ("mpk_mt_download_plan_free", None, [POINTER(mpk_mt_download_plan)]),
    ("mpk_mt_filter_name", c_char_p, [c_int]),
    ("mpk_mt_select", c_int,
     [POINTER(mpk_mt_manifest), POINTER(mpk_mt_select_options), POINTER(POINTER(mpk_mt_selection)), _E]),
    ("mpk_mt_selection_free", None, [POINTER(mpk_mt_selection)]),
    ("mpk_mt_sanitize_repo_id", c_int, [c_char_p, c_char_p, c_size_t, _E]),
    ("mpk_mt_installed_open", c_int, [c_char_p, POINTER(POINTER(mpk_mt_installed)), _E]),
    ("mpk_mt_installed_free", None, [POINTER(mpk_mt_installed)]),
    ("mpk_mt_default_variant", c_char_p, [POINTER(mpk_mt_manifest), POINTER(mpk_mt_installed)]),
    ("mpk_mt_installed_path", c_int, [POINTER(mpk_mt_variant), c_char_p, POINTER(c_void_p), _E]),
    ("mpk_mt_install", c_int, [c_char_p, POINTER(mpk_mt_install_options), POINTER(mpk_mt_install_result), _E]),
    ("mpk_mt_install_result_free", None, [POINTER(mpk_mt_install_result)]),
    ("mpk_mt_handoff_parse", c_int, [c_char_p, c_size_t, c_char_p, POINTER(POINTER(mpk_mt_handoff)), _E]),
    ("mpk_mt_handoff_json", c_int, [POINTER(mpk_mt_handoff), POINTER(c_void_p), POINTER(c_size_t), _E]),
    ("mpk_mt_handoff_role_layout", c_int,
     [POINTER(mpk_mt_handoff_entry), c_int, POINTER(c_char_p), POINTER(POINTER(c_int64)), POINTER(c_size_t), _E]),
    ("mpk_mt_handoff_build", c_int,
     [c_char_p, POINTER(mpk_mt_handoff_build_options), POINTER(mpk_mt_handoff_build_result), _E]),
    ("mpk_mt_handoff_build_result_free", None, [POINTER(mpk_mt_handoff_build_result)]),
    ("mpk_mt_merge", c_int, [c_char_p, POINTER(mpk_mt_merge_options), POINTER(POINTER(mpk_mt_merge_report)), _E]),
    ("mpk_mt_merge_report_free", None, [POINTER(mpk_mt_merge_report)]),
    ("mpk_mt_orientation_name", c_char_p, [c_int]),
    ("mpk_mt_authority_name", c_char_p, [c_int]),
    ("mpk_mt_tensor_status_name", c_char_p, [c_int]),
]

#: The media frontends (components audio and image): a build without them lacks these symbols, and
#: the functions using them raise UnsupportedError (has_media() says whether they are there).
_MEDIA_PROTOTYPES = [
    ("mpk_wav_parse", c_int, [c_void_p, c_size_t, c_char_p, POINTER(mpk_wav_info), _E]),
    ("mpk_wav_codec_name", c_char_p, [c_uint32]),
    ("mpk_audio_data_decode", c_int, [c_char_p, c_size_t, POINTER(c_void_p), POINTER(c_size_t), _E]),
    ("mpk_audio_canonical_length", c_double, [c_uint64, c_double, c_int64]),
    ("mpk_audio_from_wav", c_int,
     [c_void_p, c_size_t, c_char_p, POINTER(mpk_audio_target), POINTER(POINTER(mpk_audio)), _E]),
    ("mpk_audio_from_wav_file", c_int, [c_char_p, POINTER(mpk_audio_target), POINTER(POINTER(mpk_audio)), _E]),
    ("mpk_audio_from_data", c_int,
     [c_char_p, c_size_t, POINTER(mpk_audio_target), POINTER(POINTER(mpk_audio)), _E]),
    ("mpk_audio_from_pcm_f32", c_int,
     [c_void_p, c_size_t, c_double, POINTER(mpk_audio_target), POINTER(POINTER(mpk_audio)), _E]),
    ("mpk_audio_stream_wav_file", c_int,
     [c_char_p, POINTER(mpk_audio_target), AUDIO_SINK_FN, c_void_p, POINTER(POINTER(mpk_audio)), _E]),
    ("mpk_audio_stream_data", c_int,
     [c_char_p, c_size_t, POINTER(mpk_audio_target), AUDIO_SINK_FN, c_void_p, POINTER(POINTER(mpk_audio)), _E]),
    ("mpk_audio_free", None, [POINTER(mpk_audio)]),
    ("mpk_image_format_name", c_char_p, [c_int]),
    ("mpk_image_plan_resize", c_int, [c_int64, c_int64, POINTER(mpk_image_target), POINTER(mpk_image_plan), _E]),
    ("mpk_image_from_bytes", c_int,
     [c_void_p, c_size_t, c_char_p, POINTER(mpk_image_target), POINTER(mpk_image_options),
      POINTER(POINTER(mpk_image)), _E]),
    ("mpk_image_free", None, [POINTER(mpk_image)]),
    ("mpk_image_tensor_bytes", c_int, [POINTER(mpk_image), c_int, c_void_p, c_size_t, _E]),
    ("mpk_image_encode_png", c_int, [POINTER(mpk_image), POINTER(c_void_p), POINTER(c_size_t), _E]),
]

for _name, _res, _args in _PROTOTYPES:
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

MEDIA: Set[str] = set()  # the media symbols this library has
for _name, _res, _args in _MEDIA_PROTOTYPES:
    try:
        _f = getattr(lib, _name)
    except AttributeError:
        continue
    _f.restype = _res
    _f.argtypes = _args
    MEDIA.add(_name)

if lib.mpk_version_number() < MIN_VERSION_NUMBER:
    raise ImportError(
        f"modelpkg: {path} is version {lib.mpk_version().decode()}; this binding needs 0.1.0 or later"
    )


def s(b: Optional[bytes]) -> Optional[str]:
    """A C string (bytes or NULL) as str or None."""
    return None if b is None else b.decode("utf-8", "surrogateescape")


def dec(b: bytes) -> str:
    """A fixed C char array's text."""
    return b.decode("utf-8", "surrogateescape")


def strings(arr: "ctypes._Pointer[c_char_p]", n: int) -> List[str]:
    """A C array of n strings as a list."""
    return [s(arr[i]) or "" for i in range(n)]


def take_buffer(p: c_void_p, n: int) -> bytes:
    """Copy n bytes of a malloc'ed library buffer and give it back with mpk_free()."""
    try:
        return ctypes.string_at(p, n) if p else b""
    finally:
        lib.mpk_free(p)


def read_file(path: bytes, max_size: int = 64 << 20) -> bytes:
    """A file's bytes read as the CLI reads a document (mpk_map_file: regular files only, at most
    ``max_size`` bytes; errors name the path)."""
    from .errors import check as _check

    m = mpk_mapped()
    err = mpk_error()
    _check(lib.mpk_map_file(path, max_size, ctypes.byref(m), ctypes.byref(err)), err)
    try:
        return ctypes.string_at(m.data, m.size) if m.size else b""
    finally:
        lib.mpk_unmap_file(ctypes.byref(m))
