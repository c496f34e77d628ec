# mt install against a hostile cache (planted links), hostile source directories (FIFOs, links out,
# merge journals) and a hostile python3 stdlib server (slow-loris, redirects, header limits).
add_test(NAME test_install_hostile COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_install_hostile.sh
  $<TARGET_FILE:modelpkg_cli> ${MPK_SHARED_DIR})
set_tests_properties(test_install_hostile PROPERTIES TIMEOUT 300)
