# cmake/packaging.cmake - `cmake --install` and the Debian package (CPack).
#
# Installed layout (prefix /usr/local by default, /usr in the .deb):
#   bin/attachcheck                       the CLI
#   lib/attachcheck/libattachcheck.so     the shim, in a folder of its own: it is preloaded by
#                                         path, never linked, so it stays off the linker's path
#   share/man/man1/attachcheck.1          the man page, printed by the CLI itself (--man)
#   share/doc/attachcheck/                README, LICENSE (also as Debian's copyright),
#                                         CHANGELOG and docs/ in the source tree's layout, so
#                                         the documents' links between them keep working,
#                                         and the files they link to (below)
# The installed CLI finds the installed shim at ../lib/attachcheck/ beside its own folder (as the
# build tree's finds ../lib/). The copies of libunwind and libdw that the build puts beside the
# shim are not installed: the package depends on the system's.
include(GNUInstallDirs)

add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/man/attachcheck.1
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
  COMMAND attachcheck --man > ${CMAKE_BINARY_DIR}/man/attachcheck.1
  DEPENDS attachcheck
  COMMENT "Writing the man page from the CLI's own --help source")
add_custom_target(man_page ALL DEPENDS ${CMAKE_BINARY_DIR}/man/attachcheck.1)

install(TARGETS attachcheck RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS attachcheck_shim LIBRARY DESTINATION lib/attachcheck)
install(FILES ${CMAKE_BINARY_DIR}/man/attachcheck.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES README.md LICENSE CHANGELOG.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Debian's place for the licence (policy 12.5): the same text.
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright)
install(DIRECTORY docs DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The source files the documents link to, where the links expect them (the
# package test fails on a link that resolves to nothing installed): among
# them the CI examples, which Debian keeps in the documentation too.
foreach(linked base/options.inc shim/driver_api.inc examples/ci/attachcheck.yml
               examples/ctest/attachcheck.cmake examples/ctest/CMakeLists.txt
               examples/ctest/attach_test.c)
  get_filename_component(folder ${linked} DIRECTORY)
  install(FILES ${linked} DESTINATION ${CMAKE_INSTALL_DOCDIR}/${folder})
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME attachcheck)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_CONTACT "attachcheck maintainers <attachcheck@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "checker for CUDA Unified Memory stream attachment (cuStreamAttachMemAsync rules)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# The architecture is the build's target: a cross build for aarch64
# (tools/cross-aarch64.sh) makes the arm64 package.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
else()
  message(FATAL_ERROR "no Debian architecture for ${CMAKE_SYSTEM_PROCESSOR}")
endif()
# jansson is linked; libunwind and libdw (with libelf) are loaded by name at run time.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.34), libjansson4, libunwind8, libdw1")
# Lines after the first: CPack indents them itself.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "attachcheck sits between an unmodified CUDA program and the driver (LD_PRELOAD), keeps a
map of which managed allocation is attached to which stream, and reports every breach of the
cuStreamAttachMemAsync rules, with JSON, SARIF and HTML reports for CI. Apache-2.0.")
include(CPack)
