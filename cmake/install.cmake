# What `cmake --install` puts in place: the `evident` program (src/cli), one static library
# (libevident.a) holding every library of src/ but the test doubles, the public headers, a CMake
# package (find_package(evident) gives evident::evident) and a pkg-config file (evident.pc).
# One archive rather than thirty: a user links one name, and the libraries' order among
# themselves stays ours to keep.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(EVIDENT_INSTALLED_LIBRARIES
  evident_core evident_env evident_json evident_envelope evident_contract evident_compat
  evident_schema evident_adapter evident_config evident_payload evident_store_sqlite
  evident_store_memory evident_store_fault evident_store_postgres evident_source
  evident_jetstream evident_kafka evident_fault_transport evident_registry evident_evidence
  evident_evidence_json evident_consumer evident_outbox evident_relay evident_group
  evident_quarantine evident_compensation evident_effects evident_http_intake evident_serve evident_trace
  evident_stored_contracts evident_stored_consumers evident_retention)
set(evident_objects)
foreach(library IN LISTS EVIDENT_INSTALLED_LIBRARIES)
  list(APPEND evident_objects $<TARGET_OBJECTS:${library}>)
endforeach()
add_library(evident_installed STATIC ${evident_objects})
set_target_properties(evident_installed PROPERTIES OUTPUT_NAME evident EXPORT_NAME evident)
target_include_directories(evident_installed INTERFACE
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

# The libraries' own dependencies, as a user's find_package(evident) finds them again
# (cmake/evidentConfig.cmake.in): the same names, defined here at the top directory.
find_package(CURL REQUIRED)
find_package(OpenSSL REQUIRED)
pkg_check_modules(EVIDENT_MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
pkg_check_modules(EVIDENT_NATS REQUIRED IMPORTED_TARGET libnats)
pkg_check_modules(EVIDENT_RDKAFKA REQUIRED IMPORTED_TARGET rdkafka)
target_link_libraries(evident_installed INTERFACE simdjson::simdjson PkgConfig::RE2
  SQLite::SQLite3 PostgreSQL::PostgreSQL yaml-cpp CURL::libcurl OpenSSL::Crypto
  PkgConfig::EVIDENT_MHD PkgConfig::EVIDENT_NATS PkgConfig::EVIDENT_RDKAFKA Threads::Threads)

install(TARGETS evident_installed EXPORT evidentTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/evident DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set(evident_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/evident)
install(EXPORT evidentTargets NAMESPACE evident:: DESTINATION ${evident_cmake_dir})
configure_package_config_file(cmake/evidentConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/evidentConfig.cmake INSTALL_DESTINATION ${evident_cmake_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/evidentConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/evidentConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/evidentConfigVersion.cmake DESTINATION ${evident_cmake_dir})
# Relative to the .pc file, so that the tree can be installed under any --prefix.
file(RELATIVE_PATH evident_pc_up "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
configure_file(cmake/evident.pc.in ${CMAKE_CURRENT_BINARY_DIR}/evident.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/evident.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
install(DIRECTORY examples/cpp examples/orders examples/python examples/node
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples PATTERN node_modules EXCLUDE)

# Manual pages rendered from the program's own --help (scripts/make-man.sh: help2man, one page
# per command), and the bash completion (it reads the same help when a user presses tab).
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/man/evident.1
  COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/make-man.sh $<TARGET_FILE:evident>
    ${CMAKE_BINARY_DIR}/man ${PROJECT_VERSION}
  DEPENDS evident ${PROJECT_SOURCE_DIR}/scripts/make-man.sh VERBATIM)
add_custom_target(evident_man ALL DEPENDS ${CMAKE_BINARY_DIR}/man/evident.1)
install(DIRECTORY ${CMAKE_BINARY_DIR}/man/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES packaging/bash-completion/evident
  DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)

# The services (packaging/systemd: a user of their own, hardened) and a sample of their settings.
install(FILES packaging/systemd/evident-serve.service packaging/systemd/evident-relay.service
  DESTINATION lib/systemd/system)
install(FILES packaging/default-evident.sample README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES schemas/evident-config.schema.json DESTINATION ${CMAKE_INSTALL_DATADIR}/evident/schemas)

# The Debian package (scripts/package.sh): evident_<version>_amd64.deb, its shared libraries'
# packages found by dpkg-shlibdeps; what building against it needs besides, recommended.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME evident)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "evident maintainers <evident@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "Contracts with evidence for event-driven services: CLI, daemon and C++ library")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libsimdjson-dev, libre2-dev, libsqlite3-dev, libpq-dev, \
libyaml-cpp-dev, libcurl4-openssl-dev, libssl-dev, libmicrohttpd-dev, libnats-dev, \
librdkafka-dev, pkg-config")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "postgresql-15, nats-server")
include(CPack)
