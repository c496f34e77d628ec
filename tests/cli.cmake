# ---- the modelpkg command as a whole
# Which module may include which (docs/ARCHITECTURE.md), and the CLI only the public headers and
# its own (names FILE:LINE of any other include).
mpk_script_test(test_module_deps unit ${MPK_IT}/test_module_deps.sh ${PROJECT_SOURCE_DIR})
# Every command and subcommand: its own --help from its option table, every option documented.
mpk_script_test(test_cli_help integration ${MPK_IT}/test_cli_help.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR})
mpk_script_test(test_cli "integration;slow" ${MPK_IT}/test_cli.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR} ${MPK_SHARED_DIR} REQUIRES mlc mt fetch audio image onnx)
mpk_script_test(test_cli_output integration ${MPK_IT}/test_cli_output.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR} REQUIRES mlc mt fetch audio image onnx)
# A FIFO given as any input, or planted in a package, is refused at once (never a hang).
mpk_script_test(test_fifo_inputs integration ${MPK_IT}/test_fifo_inputs.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR} REQUIRES mlc mt fetch audio image onnx)
# The README's Quick start sample output is what the tool prints (scripts/readme-sample.py --check),
# and its layout table names every module directory.
mpk_script_test(test_readme integration python3 ${MPK_IT}/test_readme.py ${MPK_CLI} ${PROJECT_SOURCE_DIR} REQUIRES mlc mt fetch audio image onnx)
# One --json contract: every reporting command, on success, refusal and usage error (docs/CLI.md).
mpk_script_test(test_json_contract "integration;slow" ${MPK_IT}/test_json_contract.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR} REQUIRES mlc mt fetch audio image onnx)
# Crash safety: kill -9 the package writer (mt reseal) at random points.
mpk_script_test(test_crash integration ${MPK_IT}/test_crash.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR} REQUIRES mt)

# The packaging: install into a temporary prefix, build consumers through pkg-config and
# find_package. An instrumented library cannot be linked by an uninstrumented consumer: plain builds.
if(NOT MPK_SANITIZE AND NOT MPK_FUZZ)
  mpk_script_test(test_install integration ${MPK_IT}/test_install.sh ${PROJECT_BINARY_DIR} REQUIRES mlc)
  # src/cli configured alone, through find_package(modelpkg) from that prefix, built and run.
  mpk_script_test(test_cli_standalone integration ${MPK_IT}/test_cli_standalone.sh ${PROJECT_BINARY_DIR}
    ${PROJECT_SOURCE_DIR} REQUIRES mlc)
endif()
# Start-up: --version loads at most 5 shared objects, dependencies only on first use (docs/startup.md).
# Instrumented builds load their sanitizer runtimes too.
if(MPK_DLOPEN_DEPS AND NOT MPK_SANITIZE AND NOT MPK_FUZZ)
  mpk_script_test(test_startup_libs integration ${MPK_IT}/test_startup_libs.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR}
    $<TARGET_FILE:modelpkg>)
endif()

# The test suite's own hygiene: no pipe into grep -q / head under pipefail (a rare SIGPIPE false
# failure); a test whose tool is absent skips (exit 77, a SKIP line naming the tool), proven by
# running tests with the tool hidden.
mpk_script_test(test_no_pipe_grep unit ${MPK_IT}/test_no_pipe_grep.sh ${PROJECT_SOURCE_DIR})
mpk_script_test(test_skips integration ${MPK_IT}/test_skips.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR} REQUIRES mlc mt fetch audio image onnx)
# mlc urls: where WebLLM finds a model's documents (docs/mlc-urls.md).
mpk_script_test(test_cli_mlc_urls integration ${MPK_IT}/test_cli_mlc_urls.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR} REQUIRES mlc)
# The Python binding's pytest suite (python/, docs/python.md), label `python` too (ctest -L python).
# Host Python loads the plain shared library: not in sanitizer, fuzz or cross builds.
if(NOT MPK_SANITIZE AND NOT MPK_FUZZ AND NOT CMAKE_CROSSCOMPILING)
  mpk_script_test(test_python "integration;python" ${MPK_IT}/test_python.sh $<TARGET_FILE:modelpkg> ${MPK_CLI}
    ${PROJECT_SOURCE_DIR} ${MPK_SHARED_DIR} REQUIRES mlc mt onnx)
  # The JavaScript package's node --test suite (js/, docs/wasm.md) against the module scripts/wasm.sh
  # built into js/dist/ and this build's CLI (the reports it must equal); label `js` too.
  mpk_script_test(test_js "integration;js" ${MPK_IT}/test_js.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR} ${MPK_SHARED_DIR}
    REQUIRES mlc mt)
endif()
