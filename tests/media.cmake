# ---- media: the audio frontend (malformed WAV table, resampler tones, WebLLM's audio vectors)
mpk_test(test_audio unit unit/test_audio.c REQUIRES audio)
mpk_test(test_conf_audio conformance conformance/test_conf_audio.c REQUIRES audio)
mpk_script_test(test_cli_audio integration ${MPK_IT}/test_cli_audio.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR} REQUIRES audio)

if(MPK_WITH_IMAGE)
  # ---- media: the image frontend — decode stage, hostile files, orientation; the conformance file's
  # rgba_to_rgb and uint32_widening blocks; the resize plan and the resampler; the CLI
  mpk_test(test_image_decode unit unit/test_image_decode.c)
  mpk_test(test_conf_image_px conformance conformance/test_conf_image_px.c)
  mpk_test(test_conf_image_plan conformance conformance/test_conf_image_plan.c)
  mpk_test(test_image_resize unit unit/test_image_resize.c)
  mpk_script_test(test_cli_image integration ${MPK_IT}/test_cli_image.sh ${MPK_CLI} ${PROJECT_SOURCE_DIR})

  # Pixels against Pillow (docs/image-resize.md): a driver for the resampler on raw rasters and for
  # the whole frontend on files, and the comparison over a generated image set plus tests/data/image.
  add_executable(image_tool util/image_tool.c)
  target_link_libraries(image_tool PRIVATE modelpkg_static)
  target_include_directories(image_tool PRIVATE ${PROJECT_SOURCE_DIR}/src)
  mpk_script_test(test_image_quality "conformance;slow" /usr/bin/python3 ${PROJECT_SOURCE_DIR}/scripts/image_vs_pillow.py
    --tool $<TARGET_FILE:image_tool> --generate)
  set_tests_properties(test_image_quality PROPERTIES TIMEOUT 900)
else()
  set_property(GLOBAL APPEND PROPERTY MPK_TESTS_NOT_REGISTERED "image tests (image)")
endif()
