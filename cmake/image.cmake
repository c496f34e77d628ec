# media: the image frontend (issue 9). Owned by the image work; see src/media/image.h.
pkg_check_modules(LIBJPEG REQUIRED IMPORTED_TARGET libjpeg)
pkg_check_modules(SPNG REQUIRED IMPORTED_TARGET spng)
pkg_check_modules(LIBWEBP REQUIRED IMPORTED_TARGET libwebp)
pkg_check_modules(LIBEXIF REQUIRED IMPORTED_TARGET libexif)
list(APPEND MPK_SOURCES
  src/media/image.c
  src/media/image_decode.c
  src/media/image_probe.c
  src/media/image_plan.c
  src/media/image_resize.c)
list(APPEND MPK_CLI_SOURCES src/cli/cmd_image.c)
list(APPEND MPK_EXTRA_LIBS PkgConfig::LIBJPEG PkgConfig::SPNG PkgConfig::LIBWEBP PkgConfig::LIBEXIF)
list(APPEND MPK_EXTRA_PC LIBJPEG:libjpeg SPNG:spng LIBWEBP:libwebp LIBEXIF:libexif)
