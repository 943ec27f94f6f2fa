# Cross build for 32-bit ARM (armhf) with Debian's cross toolchain:
#   apt-get install gcc-arm-linux-gnueabihf qemu-user-static
#   dpkg --add-architecture armhf && apt-get install libev-dev:armhf
#   cmake -S . -B build/armhf -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armhf.cmake \
#         -DCMAKE_BUILD_TYPE=MinSizeRel -DUA_MINIMAL=ON
# Programs run under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR, so ctest and
# add_test use it too).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(UAS_CROSS_TRIPLE arm-linux-gnueabihf)
set(CMAKE_C_COMPILER ${UAS_CROSS_TRIPLE}-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE ${UAS_CROSS_TRIPLE})
# Debian multiarch: headers in /usr/include, armhf libraries in
# /usr/lib/arm-linux-gnueabihf, the cross C library in /usr/arm-linux-gnueabihf.
set(CMAKE_FIND_ROOT_PATH /usr/${UAS_CROSS_TRIPLE} /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${UAS_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig)
# qemu's -L is the root that the program's loader and libraries are taken
# from, and it must hold ONE C library: with -L /usr/arm-linux-gnueabihf the
# loader came from the cross package (libc6-armhf-cross) while libc.so.6 was
# found in /lib/arm-linux-gnueabihf (libc6:armhf, pulled in by libev-dev:armhf,
# a different build of glibc 2.36), and the two disagree on the loader's
# private data: every pthread_create crashed (SIGSEGV at 0x8), which looked
# like "qemu-user cannot run threads". The multiarch root (/) has the loader,
# libc and libev of the same packages.
if(EXISTS /lib/ld-linux-armhf.so.3)
  set(CMAKE_CROSSCOMPILING_EMULATOR qemu-arm-static -L /)
else()
  set(CMAKE_CROSSCOMPILING_EMULATOR qemu-arm-static -L /usr/${UAS_CROSS_TRIPLE})
endif()
