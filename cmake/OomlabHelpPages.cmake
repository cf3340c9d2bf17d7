# Writes one plain-text help page per oomlab subcommand, as `oomlab <cmd> --help` prints it, with
# the build folder's path in the usage line replaced by "oomlab". Run by the oomlab_help_pages
# target (OomlabInstall.cmake):
#   cmake -DOOMLAB_BINARY=<built oomlab> -DOUTPUT_DIR=<folder> -P OomlabHelpPages.cmake
# The subcommands are read from `oomlab --help`, so a new one gets its page without a change here.
foreach(required OOMLAB_BINARY OUTPUT_DIR)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "OomlabHelpPages.cmake: -D${required}=... is required")
  endif()
endforeach()

function(oomlab_help_text out_var)
  execute_process(COMMAND "${OOMLAB_BINARY}" ${ARGN} --help
    OUTPUT_VARIABLE text ERROR_VARIABLE error RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "oomlab ${ARGN} --help exited with ${result}: ${error}")
  endif()
  string(REPLACE "${OOMLAB_BINARY}" "oomlab" text "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${OUTPUT_DIR}")
file(MAKE_DIRECTORY "${OUTPUT_DIR}")
oomlab_help_text(main_help)
file(WRITE "${OUTPUT_DIR}/oomlab.txt" "${main_help}")

# The lines after "Subcommands:" start with two spaces and the name.
string(FIND "${main_help}" "Subcommands:" subcommands_at)
if(subcommands_at EQUAL -1)
  message(FATAL_ERROR "oomlab --help lists no subcommands")
endif()
string(SUBSTRING "${main_help}" ${subcommands_at} -1 subcommand_text)
string(REGEX MATCHALL "\n  [a-z][a-z0-9_-]*" subcommand_lines "${subcommand_text}")
foreach(line IN LISTS subcommand_lines)
  string(STRIP "${line}" name)
  oomlab_help_text(page ${name})
  file(WRITE "${OUTPUT_DIR}/oomlab-${name}.txt" "${page}")
endforeach()
