# s390x Linux (big-endian): gcc-s390x-linux-gnu, qemu-s390x-static, and the target's libraries in a
# root unpacked from Debian's s390x packages (scripts/cross_sysroot.sh, which setup.sh --cross s390x
# runs): multiarch :s390x packages cannot be installed beside the host's here, because the archive
# serves the host security updates that it has no s390x builds of (docs/cross.md).
# scripts/cross.sh s390x uses it. MPK_CROSS_SYSROOT (environment) names another root.
set(CMAKE_SYSTEM_PROCESSOR s390x)
set(MPK_CROSS_TRIPLET s390x-linux-gnu)
include(${CMAKE_CURRENT_LIST_DIR}/cross-multiarch.cmake)
if(DEFINED ENV{MPK_CROSS_SYSROOT})
  set(MPK_CROSS_SYSROOT "$ENV{MPK_CROSS_SYSROOT}")
else()
  get_filename_component(MPK_CROSS_SYSROOT "${CMAKE_CURRENT_LIST_DIR}/../.deps/sysroot-s390x" ABSOLUTE)
endif()
set(CMAKE_SYSROOT "${MPK_CROSS_SYSROOT}")
# The root first; then the host's / (as aarch64's multiarch toolchain has it), where a package
# installed outside the root is found through CMAKE_PREFIX_PATH (test_install, test_cli_standalone).
set(CMAKE_FIND_ROOT_PATH "${MPK_CROSS_SYSROOT}" /)
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${MPK_CROSS_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR}
  "${MPK_CROSS_SYSROOT}/usr/lib/${MPK_CROSS_TRIPLET}/pkgconfig:${MPK_CROSS_SYSROOT}/usr/share/pkgconfig")
# The emulator runs the root's dynamic loader on the program, which loads the program's libraries
# (and dlopen()'s) from the root's library directories. Not qemu's -L ROOT: that prefixes every
# absolute path the program opens when it exists under ROOT, and "/" always does, so
# open("/") gave the root instead of the host's / (a writer's walk of /tmp/... failed, /etc/...
# were the root's). The program sees the host's file system as it is. --library-path replaces the
# loader's LD_LIBRARY_PATH: the script tests' wrappers (tests/cross.cmake) put a caller's in front
# of MPK_CROSS_LIBRARY_PATH, as the loader would search it (test_startup_libs).
set(MPK_CROSS_LIBRARY_PATH "${MPK_CROSS_SYSROOT}/lib/${MPK_CROSS_TRIPLET}:${MPK_CROSS_SYSROOT}/usr/lib/${MPK_CROSS_TRIPLET}")
set(CMAKE_CROSSCOMPILING_EMULATOR ${MPK_CROSS_QEMU} "${MPK_CROSS_SYSROOT}/lib/ld64.so.1" --library-path
  "${MPK_CROSS_LIBRARY_PATH}")
