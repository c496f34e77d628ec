# Shared by cmake/toolchain-<arch>.cmake: a cross build against Debian's multiarch packages
# (libfoo-dev:<debarch> installs into /usr/lib/<triplet> and /usr/include/<triplet>, beside the
# host's), so the target's root is the host's / seen through the triplet's directories. Test
# programs run under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR; docs/cross.md). The including file
# sets MPK_CROSS_TRIPLET and CMAKE_SYSTEM_PROCESSOR.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER ${MPK_CROSS_TRIPLET}-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE ${MPK_CROSS_TRIPLET})
# Libraries and headers: the cross toolchain's own tree, then the multiarch tree under /.
# Programs (protoc-c, python3, node) are the host's.
set(CMAKE_FIND_ROOT_PATH /usr/${MPK_CROSS_TRIPLET} /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config reads the target's .pc files only (never the host's /usr/lib/x86_64-linux-gnu ones).
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${MPK_CROSS_TRIPLET}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
find_program(MPK_CROSS_QEMU qemu-${CMAKE_SYSTEM_PROCESSOR}-static REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${MPK_CROSS_QEMU})
