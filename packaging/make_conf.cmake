# Writes OUT, the commented default /etc/uastack/uaserver.conf of the Debian
# package, from the key tables of DOC (docs/Configuration.md): every
# section, and every key as a comment with its default and meaning, so the
# file documents every key and changes nothing until a line is uncommented.
# The package test runs `uaserver --config OUT --print-config` on it.
cmake_minimum_required(VERSION 3.16)
# One list element per line: ';', '[' and ']' of the text are masked first.
file(READ "${DOC}" text)
string(REPLACE ";" "@SEMI@" text "${text}")
string(REPLACE "[" "@LB@" text "${text}")
string(REPLACE "]" "@RB@" text "${text}")
string(REPLACE "\n" ";" lines "${text}")
set(out "; uastack OPC UA server configuration (uaserver --config).
; Every key is listed with its default, commented out: uncomment a line to
; change it; docs/Configuration.md explains each one. uaserver.service
; starts uaserver with --pki /var/lib/uastack/pki, which overrides pki_dir.
; Apply a change with: systemctl restart uaserver
")
set(section "")
set(nkeys 0)
foreach(line IN LISTS lines)
  string(REPLACE "@SEMI@" ";" line "${line}")
  string(REPLACE "@LB@" "[" line "${line}")
  string(REPLACE "@RB@" "]" line "${line}")
  if(line MATCHES "^### \\[([a-z_]+)\\]")
    set(section "${CMAKE_MATCH_1}")
    string(APPEND out "\n[${section}]\n")
  elseif(line MATCHES "^## " AND NOT line MATCHES "^### ")
    set(section "")
  elseif(NOT section STREQUAL "" AND line MATCHES "^\\| `([a-z_0-9]+)` \\| ([^|]*)\\|(.*)$")
    set(key "${CMAKE_MATCH_1}")
    string(STRIP "${CMAKE_MATCH_2}" def)
    set(meaning "${CMAKE_MATCH_3}")
    string(REGEX REPLACE "\\|[ ]*$" "" meaning "${meaning}")
    string(STRIP "${meaning}" meaning)
    string(REPLACE "`" "" def "${def}")
    string(REPLACE "`" "" meaning "${meaning}")
    # Short comment lines: libinih reads at most 200 bytes a line.
    string(REPLACE ";" "@SEMI@" meaning "${meaning}")
    string(REPLACE " " ";" words "${meaning}")
    set(cur "")
    foreach(w IN LISTS words)
      string(LENGTH "${cur} ${w}" len)
      if(len GREATER 76 AND NOT cur STREQUAL "")
        string(APPEND out ";${cur}\n")
        set(cur "")
      endif()
      string(REPLACE "@SEMI@" ";" w "${w}")
      string(APPEND cur " ${w}")
    endforeach()
    if(NOT cur STREQUAL "")
      string(APPEND out ";${cur}\n")
    endif()
    string(APPEND out ";${key} = ${def}\n")
    math(EXPR nkeys "${nkeys} + 1")
  endif()
endforeach()
if(nkeys LESS 10)
  message(FATAL_ERROR "${DOC}: found only ${nkeys} keys in its tables")
endif()
file(WRITE "${OUT}.tmp" "${out}")
configure_file("${OUT}.tmp" "${OUT}" COPYONLY)
