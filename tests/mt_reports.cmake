# ---- mt reports and budgets (issue 16): the manifest's file budget, closed sets, notes, --json.
add_test(NAME test_cli_mt_reports COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_cli_mt_reports.sh
  $<TARGET_FILE:modelpkg_cli> ${PROJECT_SOURCE_DIR} $<IF:$<BOOL:${MPK_SANITIZE}>,sanitize,plain>)
set_tests_properties(test_cli_mt_reports PROPERTIES TIMEOUT 300)
