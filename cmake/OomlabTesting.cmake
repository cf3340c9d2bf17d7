# oomlab_add_gtest(NAME SOURCES ... LIBS ... LABELS ... [GPU])
# One ctest entry per GoogleTest case. A GTEST_SKIP() shows as skipped, not passed; GPU tests
# carry the `gpu` label and claim the one GPU through a resource group so parallel ctest never
# runs two of them at once.
include(GoogleTest)

function(oomlab_add_gtest name)
  cmake_parse_arguments(ARG "GPU" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE oomlab_config GTest::gtest GTest::gtest_main ${ARG_LIBS})
  # gtest_discover_tests passes PROPERTIES through a generated script that splits lists, so a
  # test carries exactly one label: `gpu` when it needs the GPU, else the one given.
  set(label ${ARG_LABELS})
  set(extra_properties "")
  if(ARG_GPU)
    set(label gpu)
    set(extra_properties RESOURCE_GROUPS "gpus:1")
  endif()
  list(LENGTH label label_count)
  if(NOT label_count EQUAL 1)
    message(FATAL_ERROR "oomlab_add_gtest(${name}): give exactly one label (got '${label}')")
  endif()
  # gtest prints "[  SKIPPED ]". The regex has no brackets or backslashes: CMake 3.25 splits
  # lists at unbalanced brackets and CMake 4.x wraps properties in [[bracket arguments]].
  gtest_discover_tests(${name}
    DISCOVERY_MODE PRE_TEST
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${label}" SKIP_REGULAR_EXPRESSION "  SKIPPED " ${extra_properties})
endfunction()
