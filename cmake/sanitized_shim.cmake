# The shim and the CLI under ASan+UBSan (the sanitizer build, with clang), and
# the stand-in driver, the scenarios and the transparency cases that run them.
# The shim is preloaded into uninstrumented programs, so it and the CLI take
# the shared sanitizer runtime; the tests preload that runtime first, as a
# sanitized preload library needs (ATTACHCHECK_TEST_ENV, _OPTIONS and
# _PRELOAD, empty in the normal build).
find_package(Threads REQUIRED)
find_package(Python3 REQUIRED COMPONENTS Interpreter)
find_library(CUDA_DRIVER_STUB cuda PATHS ${CUDAToolkit_LIBRARY_DIR}/stubs NO_DEFAULT_PATH REQUIRED)
execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libclang_rt.asan-x86_64.so
                OUTPUT_VARIABLE ASAN_RUNTIME OUTPUT_STRIP_TRAILING_WHITESPACE)
get_filename_component(ASAN_RUNTIME_DIR ${ASAN_RUNTIME} DIRECTORY)

# What every test that preloads the shim adds to its environment: the
# programs' leaks are not ours to judge, and a program's genuine crash must
# still die by SIGSEGV rather than in the sanitizer's own handler.
set(ATTACHCHECK_TEST_PRELOAD ${ASAN_RUNTIME})
set(ATTACHCHECK_TEST_OPTIONS "ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0:handle_segv=0")
set(ATTACHCHECK_TEST_ENV ${ATTACHCHECK_TEST_OPTIONS} "LD_PRELOAD=${ASAN_RUNTIME}")

# The lock-order checks (shim.h) run here too.
add_compile_definitions(AC_CHECK_LOCKS)
add_subdirectory(shim)
foreach(target attachcheck_shim attachcheck)
  target_link_options(${target} PRIVATE -shared-libasan -Wl,-rpath,${ASAN_RUNTIME_DIR})
endforeach()
# The sanitizer runtime itself calls dlsym while it starts, before its shadow
# memory exists: the shim's dlsym router cannot be instrumented.
set_source_files_properties(shim/doors.c TARGET_DIRECTORY attachcheck_shim PROPERTIES
                            COMPILE_OPTIONS -fno-sanitize=address)
add_subdirectory(tests/fakecuda)
add_subdirectory(tests/scenarios)
add_subdirectory(tests/transparency)
add_executable(attach_mistakes examples/attach_mistakes.c)
target_include_directories(attach_mistakes PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
target_link_libraries(attach_mistakes PRIVATE ${CUDA_DRIVER_STUB})
set_target_properties(attach_mistakes PROPERTIES ENABLE_EXPORTS ON
                      RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/examples)
