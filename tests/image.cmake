# Image frontend (issue 9): decode stage, hostile files, orientation (test_image_decode); the
# conformance file's rgba_to_rgb and uint32_widening blocks (test_conf_image_px); the CLI.
mpk_test(test_image_decode unit/test_image_decode.c)
mpk_test(test_conf_image_px conformance/test_conf_image_px.c)
add_test(NAME test_cli_image COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_cli_image.sh
  $<TARGET_FILE:modelpkg_cli> ${PROJECT_SOURCE_DIR})
