# ---- mlc: prompt assembly and prefill planning (issue 10)
mpk_test(test_conf_prefill conformance/test_conf_prefill.c)        # WebLLM's chunks, lengths, errors
mpk_test(test_mlc_prefill unit/test_mlc_prefill.c)                 # properties, context edges, SEGMENTS.json
mpk_test(test_mlc_prefill_exec unit/test_mlc_prefill_exec.c)       # the reference executor
add_test(NAME test_cli_plan COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_cli_plan.sh
  $<TARGET_FILE:modelpkg_cli> ${PROJECT_SOURCE_DIR} ${MPK_SHARED_DIR})
