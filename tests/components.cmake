# ---- components (docs/components.md): what the build holds, and the stubs of what it does not hold:
# a function of a component that is off returns MPK_EUNSUPPORTED naming it, and so does its command.
mpk_test(test_components unit unit/test_components.c)
mpk_script_test(test_cli_components integration ${MPK_IT}/test_cli_components.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR})
if(MPK_MINIMAL)
  # The minimal library depends on nothing but libc, libm and pthread: it needs the built-in hashes
  # (cmake/hash.cmake sets MPK_HASH_DEFS; MPK_HASH=builtin). Until they are in the tree the minimal
  # build links libcrypto and the test is not registered (the configure output says so).
  if(DEFINED MPK_HASH_DEFS AND MPK_HASH STREQUAL "builtin")
    mpk_script_test(test_minimal_deps unit ${MPK_IT}/test_minimal_deps.sh $<TARGET_FILE:modelpkg>)
  else()
    set_property(GLOBAL APPEND PROPERTY MPK_TESTS_NOT_REGISTERED "test_minimal_deps (the built-in hashes, MPK_HASH=builtin)")
  endif()
endif()
