# SPDX-License-Identifier: BSD-3-Clause
# Tidies Doxygen's man3 output (cmake -DMAN3=<dir> -DHEADERS=<include/eddy> -P man3.cmake), run
# by the "docs" target after Doxygen:
# - a header's page is eddy_<header>.3 (eddy_bus.h.3): "bus.h.3" could be another package's;
# - a link page (".so man3/<page>") becomes a symbolic link to its page, so `man -l` reads it
#   from anywhere; links named after a struct member (url, log, remove...) are dropped: they
#   would shadow the C library's pages (log(3), remove(3)) and name nothing of eddy's alone;
# - the directory pages and the docs index (an HTML main page) are dropped;
# - each page's NAME line gets its "\- description" (whatis, apropos): a header's from the
#   first line of its @file comment, a type's names its header;
# - the headers' one non-ASCII character, the em dash, is written \(em (groff needs no preconv),
#   and a text line that starts with a quote (a control line to roff) gets a \& before it.
# Every page left is named eddy_* or EDDY_*.
if(NOT IS_DIRECTORY "${MAN3}")
  message(FATAL_ERROR "man3.cmake: no directory ${MAN3}")
endif()
# Appends " \- what" to the NAME line of a page, and writes the characters above as roff.
function(tidy_page file what)
  file(READ "${file}" text)
  string(REGEX MATCH "\n\\.SH NAME\n[^\n]*\n" name "${text}")
  if(name STREQUAL "" OR name MATCHES "\\\\-")
    message(FATAL_ERROR "man3.cmake: ${file}: no NAME line, or one with a description already")
  endif()
  string(REGEX REPLACE "\n$" " \\\\- ${what}\n" named "${name}")
  string(REPLACE "${name}" "${named}" text "${text}")
  string(REPLACE "—" "\\(em" text "${text}")
  string(REPLACE "\n'" "\n\\&'" text "${text}")
  file(WRITE "${file}" "${text}")
endfunction()

file(GLOB pages RELATIVE "${MAN3}" "${MAN3}/*.3")
set(links "")
foreach(page ${pages})
  file(STRINGS "${MAN3}/${page}" first LIMIT_COUNT 1)
  if(first MATCHES "^\\.so man3/(.+)$")
    set(target "${CMAKE_MATCH_1}")
    file(REMOVE "${MAN3}/${page}")
    if(page MATCHES "^(eddy_|EDDY_)")
      if(target MATCHES "\\.h\\.3$")
        set(target "eddy_${target}")
      endif()
      list(APPEND links "${page}=${target}")
    endif()
  elseif(page MATCHES "\\.h\\.3$")
    string(REGEX REPLACE "\\.3$" "" header "${page}")
    file(STRINGS "${HEADERS}/${header}" intro ENCODING UTF-8 REGEX "^ \\* eddy — " LIMIT_COUNT 1)
    string(REGEX REPLACE "^ \\* eddy — " "" what "${intro}")
    if(what MATCHES "^([^:]*): ")
      set(what "${CMAKE_MATCH_1}")
    elseif(what MATCHES "^(.*)\\.$")
      set(what "${CMAKE_MATCH_1}")
    elseif(what MATCHES "^(.*), ")
      set(what "${CMAKE_MATCH_1}")
    endif()
    if(what STREQUAL "")
      message(FATAL_ERROR "man3.cmake: ${HEADERS}/${header} has no \" * eddy — \" line")
    endif()
    tidy_page("${MAN3}/${page}" "${what}")
    file(RENAME "${MAN3}/${page}" "${MAN3}/eddy_${page}")
  elseif(page MATCHES "^eddy_")
    file(STRINGS "${MAN3}/${page}" include REGEX "^\\\\fC#include <eddy/" LIMIT_COUNT 1)
    if(NOT include MATCHES "<(eddy/[a-z_]+)\\\\&\\.h>")
      message(FATAL_ERROR "man3.cmake: ${page} names no header")
    endif()
    tidy_page("${MAN3}/${page}" "a type of eddy, declared in ${CMAKE_MATCH_1}.h")
  elseif(NOT page MATCHES "^(eddy_|EDDY_)")
    file(REMOVE "${MAN3}/${page}")
  endif()
endforeach()
foreach(link ${links})
  string(REGEX REPLACE "=.*" "" page "${link}")
  string(REGEX REPLACE ".*=" "" target "${link}")
  if(NOT EXISTS "${MAN3}/${target}")
    message(FATAL_ERROR "man3.cmake: ${page} links to ${target}, which is not there")
  endif()
  file(CREATE_LINK "${target}" "${MAN3}/${page}" SYMBOLIC)
endforeach()
