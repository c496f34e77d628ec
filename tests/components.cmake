# ---- components (docs/components.md): what the build holds, and the stubs of what it does not hold:
# a function of a component that is off returns MPK_EUNSUPPORTED naming it, and so does its command.
mpk_test(test_components unit unit/test_components.c)
mpk_script_test(test_cli_components integration ${MPK_IT}/test_cli_components.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR})
if(MPK_MINIMAL)
  # The minimal library depends on nothing but libc, libm and pthread (readelf -d's NEEDED entries;
  # its hashes are the built-in ones, MPK_HASH=builtin, cmake/components.cmake).
  mpk_script_test(test_minimal_deps unit ${MPK_IT}/test_minimal_deps.sh $<TARGET_FILE:modelpkg>)
endif()
