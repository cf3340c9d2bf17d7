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

# oomlab_add_fuzzer(NAME SOURCES ... LIBS ...)
# A libFuzzer target under ASan + UBSan, built only with OOMLAB_FUZZ and clang (gcc has no
# -fsanitize=fuzzer). The code under test is passed as SOURCES, not linked from its library, so
# it carries the coverage instrumentation libFuzzer steers by. Each fuzz/run_fuzz.sh builds and
# runs its target.
function(oomlab_add_fuzzer name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  if(NOT OOMLAB_FUZZ)
    return()
  endif()
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(STATUS "oomlab: OOMLAB_FUZZ is ON but ${CMAKE_CXX_COMPILER_ID} has no libFuzzer; "
                   "${name} is not built (configure with clang++)")
    return()
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE oomlab_config ${ARG_LIBS})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
endfunction()
