# ---- mt: package (manifest, check, build, select), tensor (handoff map, tensors, safetensors),
# merge, install
mpk_test(test_mt_manifest unit unit/test_mt_manifest.c)
mpk_test(test_mt_check unit unit/test_mt_check.c)
mpk_test(test_mt_build unit unit/test_mt_build.c)
mpk_test(test_mt_select unit unit/test_mt_select.c)
mpk_test(test_mt_handoff unit unit/test_mt_handoff.c)
mpk_test(test_mt_tensor unit unit/test_mt_tensor.c)
mpk_test(test_mt_stamp unit unit/test_mt_stamp.c)
mpk_script_test(test_mt_stamp_cli integration ${MPK_IT}/test_mt_stamp_cli.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR} REQUIRES fetch)
mpk_test(test_mt_safetensors unit unit/test_mt_safetensors.c)
mpk_test(test_mt_probe unit unit/test_mt_probe.c)
mpk_test(test_mt_merge_kernel unit unit/test_mt_merge_kernel.c)
mpk_test(test_mt_merge unit unit/test_mt_merge.c)
mpk_test(test_mt_merge_crash unit unit/test_mt_merge_crash.c)
mpk_test(test_mt_adapters unit unit/test_mt_adapters.c)
mpk_test(test_mt_install unit unit/test_mt_install.c REQUIRES fetch)
mpk_test(test_mt_installed unit unit/test_mt_installed.c REQUIRES fetch)
mpk_test(test_mt_cache unit unit/test_mt_cache.c REQUIRES fetch)

# The trust model: swapped weights, shipped journals and records, linked-out directories and
# tensors, FIFOs, the merge record (docs/mt.md "Shipped bytes").
mpk_script_test(test_mt_trust "integration;slow" ${MPK_IT}/test_mt_trust.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR})
# Reports and budgets: the manifest's file budget, closed sets, notes, --json.
mpk_script_test(test_cli_mt_reports "integration;slow" ${MPK_IT}/test_cli_mt_reports.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR}
  $<IF:$<BOOL:${MPK_SANITIZE}>,sanitize,plain> REQUIRES onnx)
if(MPK_WITH_ONNX)
  set_tests_properties(test_cli_mt_reports PROPERTIES TIMEOUT 300)
endif()

# mt install against a real server: the test starts its own nginx (and a python3 stdlib server for
# dropped connections) on 127.0.0.1 and stops them; the same flows from a directory source.
if(MPK_WITH_FETCH)
  mpk_script_test(test_install_http "integration;slow" ${MPK_IT}/test_install_http.sh ${MPK_CLI} ${MPK_SHARED_DIR})
  set_tests_properties(test_install_http PROPERTIES TIMEOUT 600)
  # ... against a hostile cache (planted links), hostile source directories (FIFOs, links out, merge
  # journals) and a hostile python3 stdlib server (slow-loris, redirects, header limits).
  mpk_script_test(test_install_hostile "integration;slow" ${MPK_IT}/test_install_hostile.sh ${MPK_CLI} ${MPK_SHARED_DIR})
  set_tests_properties(test_install_hostile PROPERTIES TIMEOUT 300)
else()
  set_property(GLOBAL APPEND PROPERTY MPK_TESTS_NOT_REGISTERED "test_install_http test_install_hostile (fetch)")
endif()
# mt list / remove / gc: readers holding trees (flock), locked stages, planted links (docs/mt-cache.md).
mpk_script_test(test_cli_mt_cache integration ${MPK_IT}/test_mt_cache.sh ${MPK_CLI} ${MPK_SHARED_DIR} REQUIRES fetch)

# A real client proves the merge: ONNX Runtime (npm onnxruntime-node) runs a model before and after
# `mt merge` (docs/mt-merge-e2e.md). Skipped (exit 77) when node, onnxruntime-node or numpy/onnx are absent.
mpk_script_test(test_merge_onnx e2e ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_merge_onnx.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR} REQUIRES fetch)
# The post-merge check (issue 21, docs/mt-numeric.md): mt merge --verify PROBE.json on
# make_decoder.py's damaged decoder: an improving adapter committed, a destructive one rolled back
# (the tree byte-identical), --force, --dry-run, bad probes; cross-entropies against numpy and
# onnxruntime-node. Skipped (exit 77) without ONNX Runtime, node + onnxruntime-node or numpy/onnx.
mpk_script_test(test_merge_verify e2e ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_merge_verify.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR}
  $<IF:$<BOOL:${MPK_SANITIZE}>,sanitize,plain>)
set_tests_properties(test_merge_verify PROPERTIES TIMEOUT 300 ENVIRONMENT "MPK_ORT_LIBRARY=${MPK_ORT_TEST_LIBRARY}")
# The reference runtime's cache: a tree in ModelPackageInstaller.kt's layout with Gson's
# install_record.json is checked, gated and merged; modelpkg's install writes a record its reader accepts.
mpk_script_test(test_reference_tree e2e ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_reference_tree.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR} REQUIRES fetch onnx)
# The device lifecycle on the installed cache (issue 18, docs/mt-lifecycle-e2e.md): a real nginx serves
# v1 then v2; install, gate, merge, ONNX Runtime, update under a live reader (the adapter re-applied),
# restore, remove, gc. Skipped (exit 77) without nginx, curl, node + onnxruntime-node or numpy/onnx.
# Both need fetch (installs over http) and onnx (graphs).
mpk_script_test(test_lifecycle "e2e;slow" ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_lifecycle.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR}
  REQUIRES fetch onnx)
# SIGKILL at random instants of mt install (an update over a merged install), mt merge, mt restore and
# mt gc, 50 times each: one whole version, merged as recorded, the next run completes.
mpk_script_test(test_lifecycle_crash "e2e;slow" ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_lifecycle_crash.sh ${MPK_CLI}
  ${PROJECT_SOURCE_DIR} REQUIRES fetch onnx)
if(MPK_WITH_FETCH AND MPK_WITH_ONNX)
  set_tests_properties(test_lifecycle PROPERTIES TIMEOUT 300)
  set_tests_properties(test_lifecycle_crash PROPERTIES TIMEOUT 600)
endif()

if(MPK_WITH_ONNX)
  # ---- mt graph: the ONNX inference graph. The graphs are generated at test time by
  # scripts/gen_onnx_graphs.py with Debian's python3-onnx (/usr/bin/python3) into the build tree.
  set(MPK_ONNX_GRAPHS "${CMAKE_CURRENT_BINARY_DIR}/onnx-graphs")
  mpk_script_test(gen_onnx_graphs unit /usr/bin/python3 ${PROJECT_SOURCE_DIR}/scripts/gen_onnx_graphs.py ${MPK_ONNX_GRAPHS})
  set_tests_properties(gen_onnx_graphs PROPERTIES FIXTURES_SETUP onnx_graphs)
  mpk_test(test_mt_onnx unit unit/test_mt_onnx.c)
  mpk_test(test_mt_graph_check unit unit/test_mt_graph_check.c)
  foreach(t test_mt_onnx test_mt_graph_check)
    target_compile_definitions(${t} PRIVATE MPK_ONNX_GRAPHS="${MPK_ONNX_GRAPHS}")
    set_tests_properties(${t} PROPERTIES FIXTURES_REQUIRED onnx_graphs)
  endforeach()
  mpk_script_test(test_cli_mt_graph integration ${MPK_IT}/test_cli_mt_graph.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR} ${MPK_ONNX_GRAPHS})
  set_tests_properties(test_cli_mt_graph PROPERTIES FIXTURES_REQUIRED onnx_graphs)
else()
  set_property(GLOBAL APPEND PROPERTY MPK_TESTS_NOT_REGISTERED "mt graph tests (onnx)")
endif()
