# Runs one program and checks its exit code and what it wrote where; ctest's own
# PASS_REGULAR_EXPRESSION reads stdout and stderr together and ignores the exit code.
#   cmake -DPROGRAM=path "-DARGS=--epochs|1.5" -DRC=2 "-DSTDERR=regex" [-DSTDOUT=regex] -P expect_run.cmake
# ARGS separates arguments with | (a ; would be split by add_test before it reaches us).
# An empty STDOUT or STDERR regex means that stream must stay empty.
cmake_minimum_required(VERSION 3.20)  # quoted if() arguments are strings (CMP0054)
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND "${PROGRAM}" ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(failed "")
if(NOT rc STREQUAL "${RC}")
  string(APPEND failed "exit code ${rc}, expected ${RC}\n")
endif()
set(text_STDOUT "${out}")
set(text_STDERR "${err}")
foreach(stream STDOUT STDERR)
  set(text "${text_${stream}}")
  if(DEFINED ${stream})
    if("${${stream}}" STREQUAL "" AND NOT "${text}" STREQUAL "")
      string(APPEND failed "${stream} should be empty\n")
    elseif(NOT "${${stream}}" STREQUAL "" AND NOT "${text}" MATCHES "${${stream}}")
      string(APPEND failed "${stream} does not match '${${stream}}'\n")
    endif()
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "${PROGRAM} ${args}:\n${failed}--- stdout:\n${out}--- stderr:\n${err}")
endif()
