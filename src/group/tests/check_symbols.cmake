# group_symbols: every symbol the coordinator library defines for the linker
# carries the module's prefix ch_coord_ (ch_coord.h, "Names"); a helper one
# file uses is static, one that several files share is ch_coord_*. Fails
# with the list of offenders.
#   cmake -DNM=nm -DLIB=libch_group.a -P check_symbols.cmake
execute_process(COMMAND ${NM} -g --defined-only ${LIB} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -g --defined-only ${LIB} failed")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(bad "")
set(good 0)
foreach(l ${lines})
  # "<address> <type> <name>": global code, data, bss, read-only, common, weak
  if(l MATCHES "^[0-9a-fA-F]+ [TDBRCVW] (.+)$")
    set(name "${CMAKE_MATCH_1}")
    if(name MATCHES "^ch_coord_")
      math(EXPR good "${good} + 1")
    else()
      list(APPEND bad "${name}")
    endif()
  endif()
endforeach()
if(bad)
  list(JOIN bad " " bad)
  message(FATAL_ERROR "group/ exports names without the ch_coord_ prefix: ${bad}")
endif()
if(good EQUAL 0)
  message(FATAL_ERROR "no ch_coord_ symbol found in ${LIB}: nm output not understood")
endif()
message(STATUS "symbols: all ${good} exported names start with ch_coord_")
