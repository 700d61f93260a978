# attachcheck.cmake - runs a project's tests under attachcheck (docs/ci.md, "CTest"). Include it,
# then name the test programs:
#
#   include(attachcheck.cmake)
#   attachcheck_tests(my_test other_test)
#
# Every test whose command is one of those targets (add_test(NAME ... COMMAND my_test ...)) then
# runs as `attachcheck --error-exitcode 1 --strip-paths <source>/ --json <report> -- my_test ...`:
# a finding fails the test, and each run leaves its JSON report in ATTACHCHECK_REPORTS
# (<target>.<pid>.json), for `attachcheck report` to merge into one SARIF or HTML.
#
# CMake 3.29 and later do this with the TEST_LAUNCHER target property. Before (Debian 12 has
# CMake 3.25) the CROSSCOMPILING_EMULATOR property does the same for add_test: CMake puts it in
# front of a test's command when the command names an executable target - also in a build that is
# not cross-compiling, in every CMake before 3.28, and in later ones while the project's
# cmake_minimum_required is below 3.28 (policy CMP0158), which is why this file uses it only
# where TEST_LAUNCHER does not exist. (A cross build that needs an emulator too should use a
# CMake with TEST_LAUNCHER, which runs before the emulator.) A test whose command is a path -
# $<TARGET_FILE:my_test> - is not launched: that is how to run one without attachcheck, or
# under plain LD_PRELOAD with ATTACHCHECK_ERROR_EXITCODE instead (CMakeLists.txt shows it).
#
# ATTACHCHECK is the attachcheck command: found on PATH (a .deb, a pip install), or given
# (-DATTACHCHECK=/path/to/bin/attachcheck). Without it the tests run as they are.
find_program(ATTACHCHECK attachcheck)
set(ATTACHCHECK_REPORTS ${CMAKE_BINARY_DIR}/attachcheck-reports
    CACHE PATH "Where the tests run under attachcheck leave their JSON reports")

function(attachcheck_tests)
  if(NOT ATTACHCHECK)
    message(STATUS "attachcheck not found: the tests run without it")
    return()
  endif()
  file(MAKE_DIRECTORY ${ATTACHCHECK_REPORTS})
  foreach(target IN LISTS ARGN)
    set(launcher ${ATTACHCHECK} --error-exitcode 1 --strip-paths ${CMAKE_SOURCE_DIR}/
        --json ${ATTACHCHECK_REPORTS}/${target}.%p.json --)
    if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.29)
      set_property(TARGET ${target} PROPERTY TEST_LAUNCHER ${launcher})
    else()
      set_property(TARGET ${target} PROPERTY CROSSCOMPILING_EMULATOR ${launcher})
    endif()
  endforeach()
endfunction()
