# Part of `cmake --install`: writes migsched.service (packaging/migsched.service.in) with the
# paths of this install. Run by the install(CODE) of CMakeLists.txt, which sets MIGSCHED_* to
# the install directories (relative to the prefix unless absolute); CMAKE_INSTALL_PREFIX is the
# prefix of this install (--prefix).
function(_migsched_abs out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "${CMAKE_INSTALL_PREFIX}/${dir}" PARENT_SCOPE)
  endif()
endfunction()

_migsched_abs(_unit_dir "${MIGSCHED_UNIT_DIR}")
_migsched_abs(_bin_dir "${MIGSCHED_BINDIR}")
_migsched_abs(_data_dir "${MIGSCHED_DATADIR}")
_migsched_abs(_doc_dir "${MIGSCHED_DOCDIR}")
# GNU convention: the /usr prefix keeps its configuration in /etc.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" AND NOT IS_ABSOLUTE "${MIGSCHED_SYSCONFDIR}")
  set(_etc_dir "/etc")
else()
  _migsched_abs(_etc_dir "${MIGSCHED_SYSCONFDIR}")
endif()

set(MIGSCHED_BIN "${_bin_dir}/migsched")
set(MIGSCHED_CONFIG "${_etc_dir}/migsched/serve.yaml")
set(MIGSCHED_EXAMPLE "${_data_dir}/examples/serve.yaml")
set(MIGSCHED_DOCS "${_doc_dir}")
# Written in place (DESTDIR honoured) and recorded in install_manifest.txt, as file(INSTALL)
# would; nothing is written into the build tree.
set(_unit "$ENV{DESTDIR}${_unit_dir}/migsched.service")
message(STATUS "Installing: ${_unit}")
configure_file("${MIGSCHED_SOURCE_DIR}/packaging/migsched.service.in" "${_unit}" @ONLY)
list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${_unit_dir}/migsched.service")
