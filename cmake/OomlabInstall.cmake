# `cmake --install`: what a user of the tool needs, not its tests or benchmarks. The oomlab binary
# (bin/), a plain-text help page per subcommand generated from `oomlab <cmd> --help` at build
# time (share/doc/oomlab/help/), the scenarios' teaching pages (share/doc/oomlab/scenarios/
# <name>.md), README.md and docs/*.md (share/doc/oomlab/). docs/install.md says how to use it.
include(GNUInstallDirs)

install(TARGETS oomlab RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(OOMLAB_HAVE_CUDA)
  # cuBLAS and the CUDA runtime are shared libraries of the toolkit: keep the toolkit's library
  # folder on the installed binary's RUNPATH, so a box with the toolkit in the same place needs
  # no LD_LIBRARY_PATH (a box with the libraries in the loader's path ignores it).
  set_target_properties(oomlab PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
endif()

# Help pages: the built binary prints them, so a cross-compiled binary (which cannot run here)
# ships without them rather than failing the build.
set(OOMLAB_HELP_DIR ${PROJECT_BINARY_DIR}/help)
if(CMAKE_CROSSCOMPILING)
  message(STATUS "oomlab: cross-compiling, so no help pages are generated or installed")
else()
  add_custom_command(OUTPUT ${OOMLAB_HELP_DIR}/oomlab.txt
    COMMAND ${CMAKE_COMMAND} -DOOMLAB_BINARY=$<TARGET_FILE:oomlab>
            -DOUTPUT_DIR=${OOMLAB_HELP_DIR} -P ${PROJECT_SOURCE_DIR}/cmake/OomlabHelpPages.cmake
    DEPENDS oomlab ${PROJECT_SOURCE_DIR}/cmake/OomlabHelpPages.cmake
    COMMENT "Writing oomlab's help pages (oomlab <cmd> --help)"
    VERBATIM)
  add_custom_target(oomlab_help_pages ALL DEPENDS ${OOMLAB_HELP_DIR}/oomlab.txt)
  install(DIRECTORY ${OOMLAB_HELP_DIR}/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/help FILES_MATCHING PATTERN "*.txt")
endif()

install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
file(GLOB OOMLAB_DOC_PAGES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${OOMLAB_DOC_PAGES} DESTINATION ${CMAKE_INSTALL_DOCDIR})
file(GLOB OOMLAB_SCENARIO_PAGES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/scenarios/*/README.md)
foreach(page IN LISTS OOMLAB_SCENARIO_PAGES)
  get_filename_component(scenario_dir ${page} DIRECTORY)
  get_filename_component(scenario ${scenario_dir} NAME)
  install(FILES ${page} DESTINATION ${CMAKE_INSTALL_DOCDIR}/scenarios RENAME ${scenario}.md)
endforeach()

# The installed tree works: binary, help pages, teaching pages (ci/tests/install_tree_test.sh).
add_test(NAME install_tree
  COMMAND bash ${PROJECT_SOURCE_DIR}/ci/tests/install_tree_test.sh ${PROJECT_BINARY_DIR} ${CMAKE_COMMAND})
set_tests_properties(install_tree PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 120)
