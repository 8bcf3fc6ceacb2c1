# group_pure: the coordinator core reads no clock, draws no randomness and
# writes no log or file of its own (ch_coord.h: those come through
# ch_coord_ops). Fails if the library references any such function.
#   cmake -DNM=nm -DLIB=libch_group.a -P check_pure.cmake
execute_process(COMMAND ${NM} -u ${LIB} OUTPUT_VARIABLE undefined RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -u ${LIB} failed")
endif()
set(forbidden
  clock_gettime gettimeofday time ch_now_wall_ms ch_now_mono_ms
  getrandom getentropy rand random ch_uuid_random
  ch_log ch_log_threshold fprintf printf puts fputs write open fopen socket)
foreach(sym ${forbidden})
  if(undefined MATCHES "(^|\n)[ \t]*U[ \t]+${sym}\n")
    message(FATAL_ERROR "the coordinator core calls ${sym}")
  endif()
endforeach()
message(STATUS "pure: none of ${forbidden}")
