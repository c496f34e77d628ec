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
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint,
    c_uint8,
    c_uint16,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from typing import Any, List, Optional

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
        ("tasks", c_void_p),
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


class mpk_mlc_input(Structure):
    """Only `name`, the first member, is read (through a pointer)."""

    _c_name_ = "mpk_mlc_input"
    _prefix_ = True
    _fields_ = [("name", c_char_p)]


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

for _name, _res, _args in _PROTOTYPES:
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

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
