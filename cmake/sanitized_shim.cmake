# The shim and the CLI under a sanitizer (the sanitizer builds, with clang):
# ASan+UBSan (ATTACHCHECK_SANITIZE), or ThreadSanitizer (ATTACHCHECK_TSAN,
# which sets ATTACHCHECK_SANITIZER_RUNTIME to tsan); and the stand-in driver,
# the scenarios and the transparency cases that run them. The shim is
# preloaded into uninstrumented programs, so it and the CLI take the shared
# sanitizer runtime; the tests preload that runtime first, as a sanitized
# preload library needs (ATTACHCHECK_TEST_ENV, _OPTIONS and _PRELOAD, empty
# in the normal build).
find_package(Threads REQUIRED)
find_package(Python3 REQUIRED COMPONENTS Interpreter)
find_library(CUDA_DRIVER_STUB cuda PATHS ${CUDAToolkit_LIBRARY_DIR}/stubs NO_DEFAULT_PATH REQUIRED)
if(NOT ATTACHCHECK_SANITIZER_RUNTIME)
  set(ATTACHCHECK_SANITIZER_RUNTIME asan)
endif()
# GCC's ThreadSanitizer runtime can be preloaded into a program built without
# it; clang 14's crashes there, before main, even in /bin/true.
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  set(runtime_file lib${ATTACHCHECK_SANITIZER_RUNTIME}.so)
  set(shared_runtime_option "")
else()
  set(runtime_file libclang_rt.${ATTACHCHECK_SANITIZER_RUNTIME}-x86_64.so)
  set(shared_runtime_option -shared-libsan)
endif()
execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=${runtime_file}
                OUTPUT_VARIABLE SANITIZER_RUNTIME OUTPUT_STRIP_TRAILING_WHITESPACE)
get_filename_component(SANITIZER_RUNTIME ${SANITIZER_RUNTIME} REALPATH)
get_filename_component(SANITIZER_RUNTIME_DIR ${SANITIZER_RUNTIME} DIRECTORY)

# What every test that preloads the shim adds to its environment: the
# programs' leaks are not ours to judge, and a program's genuine crash must
# still die by SIGSEGV rather than in the sanitizer's own handler. Under
# ThreadSanitizer a race report fails the test (exitcode), the signal
# handlers' own calls are the guard's business (report_signal_unsafe), and a
# forked child that exits while its parent had threads must not sleep a
# second first (atexit_sleep_ms: the fork storms would take minutes).
set(ATTACHCHECK_TEST_PRELOAD ${SANITIZER_RUNTIME})
if(ATTACHCHECK_SANITIZER_RUNTIME STREQUAL tsan)
  set(ATTACHCHECK_TEST_OPTIONS
      "TSAN_OPTIONS=exitcode=66:report_signal_unsafe=0:handle_segv=0:die_after_fork=0:atexit_sleep_ms=0:suppressions=${PROJECT_SOURCE_DIR}/tests/tsan.supp")
else()
  set(ATTACHCHECK_TEST_OPTIONS
      "ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0:handle_segv=0")
endif()
set(ATTACHCHECK_TEST_ENV ${ATTACHCHECK_TEST_OPTIONS} "LD_PRELOAD=${SANITIZER_RUNTIME}")

# The lock-order checks (shim.h) run here too.
add_compile_definitions(AC_CHECK_LOCKS)
add_subdirectory(shim)
foreach(target attachcheck_shim attachcheck)
  target_link_options(${target} PRIVATE ${shared_runtime_option}
                      -Wl,-rpath,${SANITIZER_RUNTIME_DIR})
endforeach()
# The sanitizer runtime itself calls dlsym while it starts, before its shadow
# memory exists: the shim's dlsym router cannot be instrumented.
set_source_files_properties(shim/doors.c TARGET_DIRECTORY attachcheck_shim PROPERTIES
                            COMPILE_OPTIONS -fno-sanitize=address,thread)
# The published ranges are a seqlock: its readers read while a writer writes
# and throw away what they read unless the sequence stayed, with fences that
# ThreadSanitizer does not model. Its one file stays uninstrumented rather
# than every such read reported as a race.
if(ATTACHCHECK_SANITIZER_RUNTIME STREQUAL tsan)
  set_source_files_properties(shim/guard/published.c TARGET_DIRECTORY attachcheck_shim
                              PROPERTIES COMPILE_OPTIONS -fno-sanitize=thread)
endif()
add_subdirectory(tests/fakecuda)
add_subdirectory(tests/scenarios)
add_subdirectory(tests/transparency)
add_executable(attach_mistakes examples/attach_mistakes.c)
target_include_directories(attach_mistakes PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
target_link_libraries(attach_mistakes PRIVATE ${CUDA_DRIVER_STUB})
set_target_properties(attach_mistakes PROPERTIES ENABLE_EXPORTS ON
                      RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/examples)
