# cmake/aarch64-toolchain.cmake - cross-builds attachcheck for 64-bit Arm (Jetson,
# Grace) from an x86-64 Debian with gcc-aarch64-linux-gnu and the arm64
# multiarch -dev packages (tools/cross-aarch64.sh uses it; docs/platforms.md).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_ASM_COMPILER aarch64-linux-gnu-gcc)

# Libraries and pkg-config files of the arm64 multiarch packages; programs
# (python3, nvcc for headers) from the build machine.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# Test programs run through qemu-user: binfmt_misc runs the ones started by
# other programs (the CLI, the Python harnesses); ctest uses this directly.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L /)
