# cmake/lto.cmake - the product built with link-time optimisation, where GCC
# has it (included by CMakeLists.txt; the sanitizer builds return before).
#
# The shim's hot paths cross its files: an attach runs through the
# interceptor, the model (rules/) and the page guard, each step a small
# function of another file's - a stream's busy state, the model's generation,
# a class's log - and without the whole program in view every one of them is
# a call. Optimised together at link time they are inlined where they are
# used, and the code a call runs through takes fewer lines: over the
# stand-in, 14% fewer of the shim's instructions an attach, 12% fewer an
# allocation, and 15% fewer lines of code an attach touches
# (docs/gpu-results.md). The static libraries keep ordinary code beside
# their link-time form (fat objects), so what links them without it - the
# unit tests and the CLI - is built as before.
include(CheckIPOSupported)
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  check_ipo_supported(RESULT AC_LTO OUTPUT AC_LTO_WHY LANGUAGES C)
  if(AC_LTO)
    set_property(TARGET ac_base ac_rules ac_report attachcheck_shim
                 PROPERTY INTERPROCEDURAL_OPTIMIZATION ON)
    foreach(lib ac_base ac_rules ac_report)
      target_compile_options(${lib} PRIVATE -ffat-lto-objects)
    endforeach()
  else()
    message(STATUS "link-time optimisation is not available: ${AC_LTO_WHY}")
  endif()
endif()
