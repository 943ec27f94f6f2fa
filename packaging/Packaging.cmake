# The Debian package (README.md, "Installing"): `cpack -G DEB` or the
# `package` target in a Release build gives one uastack_<version>_<arch>.deb
# with the tools, the shared and static libraries, the headers, the CMake
# and pkg-config files, and the service: uaserver.service, its system user
# (sysusers.d, made by postinst) and the commented default configuration
# /etc/uastack/uaserver.conf (a conffile). tests/package_test.sh checks it.
#
# The service files are their own install component, left out of a plain
# `cmake --install` (it would write to /etc of the machine).
set(UAS_PKG_DIR ${PROJECT_SOURCE_DIR}/packaging)

# /etc/uastack/uaserver.conf: every key of docs/Configuration.md with its
# default, commented out (packaging/make_conf.cmake).
set(UAS_CONF ${PROJECT_BINARY_DIR}/packaging/uaserver.conf)
add_custom_command(OUTPUT ${UAS_CONF}
  COMMAND ${CMAKE_COMMAND} -DDOC=${PROJECT_SOURCE_DIR}/docs/Configuration.md -DOUT=${UAS_CONF}
          -P ${UAS_PKG_DIR}/make_conf.cmake
  DEPENDS ${PROJECT_SOURCE_DIR}/docs/Configuration.md ${UAS_PKG_DIR}/make_conf.cmake
  COMMENT "Writing the default uaserver.conf from docs/Configuration.md")
add_custom_target(uas_default_conf ALL DEPENDS ${UAS_CONF})

install(FILES ${UAS_PKG_DIR}/uaserver.service DESTINATION lib/systemd/system
        COMPONENT service EXCLUDE_FROM_ALL)
install(FILES ${UAS_PKG_DIR}/uastack.sysusers DESTINATION lib/sysusers.d RENAME uastack.conf
        COMPONENT service EXCLUDE_FROM_ALL)
install(FILES ${UAS_CONF} DESTINATION /etc/uastack COMPONENT service EXCLUDE_FROM_ALL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME uastack)
set(CPACK_PACKAGE_VENDOR "uastack")
set(CPACK_PACKAGE_CONTACT "uastack maintainers <uastack@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "OPC UA stack in C: server, client, PKI tools and libraries")
set(CPACK_PACKAGE_DESCRIPTION
    "uaserver (OPC UA server, systemd unit uaserver.service), uacli (client) and uapki (certificate and user store), with the uastack libraries and headers.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# One package made of every component, the service files included.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_COMPONENTS_ALL runtime dev service)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${UAS_PKG_DIR}/debian/postinst ${UAS_PKG_DIR}/debian/prerm
    ${UAS_PKG_DIR}/debian/postrm ${UAS_PKG_DIR}/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Runtime libraries from dpkg-shlibdeps (libssl3, libev4, libsodium23,
# libinih1, libexpat1, liburing2, libc6) when it is there, else named.
find_program(UAS_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(UAS_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser | systemd")
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "libc6, libev4, libinih1, libexpat1, adduser | systemd")
  if(UA_ENABLE_ENCRYPTION)
    string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libssl3, libsodium23")
  endif()
  if(UAS_HAVE_IO_URING)
    string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", liburing2")
  endif()
endif()
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
include(CPack)
