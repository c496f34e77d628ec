# ---- mlc: WebLLM 0.2.86 conformance vectors
mpk_test(test_conf_identity conformance conformance/test_conf_identity.c)
mpk_test(test_conf_package conformance conformance/test_conf_package.c)
mpk_test(test_conf_program conformance conformance/test_conf_program.c)
mpk_test(test_conf_resolve conformance conformance/test_conf_resolve.c)
mpk_test(test_conf_urls conformance conformance/test_conf_urls.c)     # resource_urls.json, cleanModelUrl
mpk_test(test_conf_request conformance conformance/test_conf_request.c) # request_checks.json, and beyond
# Differential tests against WebLLM's own functions from its bundle, on random cases
# (tests/integration/test_webllm_diff.sh driving util/webllm_eval.c): URL resolution and
# cleanModelUrl (tests/url/url_diff.mjs, docs/mlc-urls.md), the request checks
# (tests/request/request_diff.mjs, docs/mlc-request.md).
add_executable(webllm_eval util/webllm_eval.c)
target_link_libraries(webllm_eval PRIVATE modelpkg_static)
target_include_directories(webllm_eval PRIVATE ${PROJECT_SOURCE_DIR}/src)
foreach(diff url/url_diff request/request_diff)
  get_filename_component(name ${diff} NAME)
  mpk_script_test(test_${name} unit ${MPK_IT}/test_webllm_diff.sh tests/${diff}.mjs $<TARGET_FILE:webllm_eval>
    ${PROJECT_SOURCE_DIR})
endforeach()

# ---- mlc: a library's metadata, weights (tensor caches, parameters, resources), device fit against
# WebLLM's figures, the producer
mpk_test(test_mlc_library unit unit/test_mlc_library.c)
mpk_test(test_mlc_vm unit unit/test_mlc_vm.c)  # the Relax VM executable reader, mpk_mlc_library_open, the six real libraries
mpk_test(test_mlc_weights unit unit/test_mlc_weights.c)
target_link_libraries(test_mlc_weights PRIVATE OpenSSL::Crypto) # its reference MD5s and SHA-256s
mpk_test(test_mlc_fit unit unit/test_mlc_fit.c)
mpk_test(test_mlc_build unit unit/test_mlc_build.c)
# the role table, a library's VM functions against an artifact's roles, the legacy ABI (hand-filled
# libraries: the real ones' tables, every conformance artifact that names roles)
mpk_test(test_mlc_roles unit unit/test_mlc_roles.c)
# mlc install from directory sources: installs that check, refusals before any shard, no-op, changed, verify
mpk_test(test_mlc_install unit unit/test_mlc_install.c REQUIRES fetch)

# ---- mlc: prompt assembly and prefill planning
mpk_test(test_conf_prefill conformance conformance/test_conf_prefill.c)   # WebLLM's chunks, lengths, errors
mpk_test(test_mlc_prefill unit unit/test_mlc_prefill.c)                   # properties, context edges, SEGMENTS.json
mpk_test(test_mlc_prefill_exec unit unit/test_mlc_prefill_exec.c)         # the reference executor
# the library's JSON for the bindings: WebLLM's package/artifact/binding objects, a planner from its
# configuration as JSON, a legacy plan as JSON
mpk_test(test_mlc_webllm_json unit unit/test_mlc_webllm_json.c)
# The WebLLM prefill conformance cases, one per run (was `modelpkg mlc plan --case`).
add_executable(mpk_prefill_case util/prefill_case.c)
target_link_libraries(mpk_prefill_case PRIVATE mpk_testutil)
mpk_script_test(test_cli_plan integration ${MPK_IT}/test_cli_plan.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR} ${MPK_SHARED_DIR}
  $<TARGET_FILE:mpk_prefill_case>)

# Hostile MLC packages and arguments (links out, FIFOs, non-libraries, mismatched libraries, --json refusals).
mpk_script_test(test_realdata_libs integration ${MPK_IT}/test_realdata_libs.sh ${MPK_CLI} ${MPK_SHARED_DIR})  # mlc metadata / functions on the six real libraries
mpk_script_test(test_cli_mlc_hostile "integration;slow" ${MPK_IT}/test_cli_mlc_hostile.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR} ${MPK_SHARED_DIR})

# modelpkg mlc install: directory and (own nginx) HTTP hub-layout installs, no-op, --json, refusals.
mpk_script_test(test_cli_mlc_install integration ${MPK_IT}/test_cli_mlc_install.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR} REQUIRES fetch)

# `modelpkg mlc install` end to end over HTTP (issue 19, docs/mlc-install-e2e.md): its own nginx (a hub
# that 302s to a CDN with a signed query string, ETags, Range, TLS), a generated model with real shards,
# the faults (mlc_fault_http.py), two installers, >= 30 SIGKILLs. Skipped (exit 77) without nginx, curl
# or /usr/bin/python3.
if(MPK_WITH_FETCH)
  mpk_script_test(test_mlc_install_http "e2e;slow" ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_mlc_install_http.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR})
  set_tests_properties(test_mlc_install_http PROPERTIES TIMEOUT 420)
else()
  set_property(GLOBAL APPEND PROPERTY MPK_TESTS_NOT_REGISTERED "test_mlc_install_http (fetch)")
endif()

# Libraries whose function tables we control, in every container (tests/tools/make_tvm_lib.py:
# clang, lld, llvm-ar), read by mlc functions / mlc metadata / check --lib; and the six real
# libraries' tables and legacy ABIs. Skipped (exit 77) without clang, ld.lld, wasm-ld or llvm-ar.
mpk_script_test(test_mlc_libs_built e2e ${CMAKE_CURRENT_SOURCE_DIR}/e2e/test_mlc_libs_built.sh ${MPK_CLI}
  ${PROJECT_SOURCE_DIR} ${MPK_SHARED_DIR})
set_tests_properties(test_mlc_libs_built PROPERTIES TIMEOUT 900)
# ---- mlc: runtime descriptions and `mlc compat` (docs/mlc-library.md "Runtime descriptions")
mpk_test(test_mlc_compat unit unit/test_mlc_compat.c)   # strict loading, each kind of missing name
# The committed data/runtimes/webllm-0.2.86.json is what scripts/runtime_from_webllm.mjs derives
# from WebLLM 0.2.86's bundle, and its import object is the one the bundle really builds (skipped
# without node or the bundle: scripts/deps_node.sh webllm).
mpk_script_test(test_runtime_webllm integration ${MPK_IT}/test_runtime_webllm.sh ${PROJECT_SOURCE_DIR})
# `mlc compat` on the three real WebAssembly libraries against WebLLM 0.2.86 (expected verdicts
# worked out from the files themselves, see the script).
mpk_script_test(test_cli_mlc_compat integration ${MPK_IT}/test_cli_mlc_compat.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR} ${MPK_SHARED_DIR})
