# Embeds .cuh files into a C++ source at build time, so the device code kiln ships stays in
# real CUDA files (formatted, readable, seen by CUDA tooling) and never in C++ string literals.
#
# A file is cut into sections at lines of the form `// kiln-section NAME`; each section is
# what follows its marker up to the next one. Text before a file's first marker is the file's
# own documentation and is not embedded. The generated function returns a section's text by
# name:
#
#   kiln_embed_device_sources(kiln_codegen FUNCTION kiln::codegen::device_source
#                             HEADER kiln_codegen_device_sources.hpp FILES device/a.cuh ...)
#   // C++: #include "kiln_codegen_device_sources.hpp"
#   //      std::string_view text = kiln::codegen::device_source("kiln_core");
#
# Run as a script (cmake -P) it does the generating; as an included module it defines the
# function that wires the custom command into a target.

if(CMAKE_SCRIPT_MODE_FILE)
  # -DOUT_CPP= -DOUT_HPP= -DFUNCTION=ns::name -DFILES=a|b
  string(REPLACE "|" ";" FILES "${FILES}")
  string(REGEX MATCH "^(.*)::([A-Za-z_0-9]+)$" _ "${FUNCTION}")
  set(ns "${CMAKE_MATCH_1}")
  set(fn "${CMAKE_MATCH_2}")
  set(delim "kiln_cuh")
  set(rows "")
  set(names "")
  foreach(file IN LISTS FILES)
    file(READ "${file}" text)
    if(text MATCHES "\\)${delim}\"")
      message(FATAL_ERROR "${file} contains the embedding delimiter )${delim}\"")
    endif()
    # Plain string search (no CMake lists: CUDA text holds ';' and '[' that lists mangle).
    set(marker "\n// kiln-section ")
    set(text "\n${text}")
    string(FIND "${text}" "${marker}" pos)
    if(pos EQUAL -1)
      message(FATAL_ERROR "${file} has no '// kiln-section NAME' line: nothing would be embedded")
    endif()
    while(NOT pos EQUAL -1)
      string(LENGTH "${marker}" mlen)
      math(EXPR name_at "${pos} + ${mlen}")
      string(SUBSTRING "${text}" ${name_at} -1 rest)
      string(FIND "${rest}" "\n" eol)
      string(SUBSTRING "${rest}" 0 ${eol} name)
      string(STRIP "${name}" name)
      if(NOT name MATCHES "^[A-Za-z_0-9]+$")
        message(FATAL_ERROR "${file}: bad section name '${name}'")
      endif()
      math(EXPR body_at "${eol} + 1")
      string(SUBSTRING "${rest}" ${body_at} -1 rest)
      string(FIND "${rest}" "${marker}" next)
      if(next EQUAL -1)
        set(body "${rest}")
      else()
        math(EXPR keep "${next} + 1")
        string(SUBSTRING "${rest}" 0 ${keep} body)
      endif()
      string(APPEND rows "    {\"${name}\", R\"${delim}(${body})${delim}\"},\n")
      list(APPEND names "${name}")
      if(next EQUAL -1)
        set(pos -1)
      else()
        set(text "${rest}")
        string(SUBSTRING "${rest}" ${next} -1 text)
        set(pos 0)
      endif()
    endwhile()
  endforeach()
  list(LENGTH names n_all)
  list(REMOVE_DUPLICATES names)
  list(LENGTH names n_unique)
  if(NOT n_all EQUAL n_unique)
    message(FATAL_ERROR "device sources: a section name is used twice in ${FILES}")
  endif()
  get_filename_component(hpp_name "${OUT_HPP}" NAME)
  file(WRITE "${OUT_HPP}.tmp" "#pragma once
// Generated at build time from .cuh files (cmake/embed_device_sources.cmake): do not edit.
#include <string_view>

namespace ${ns} {
/// The text of one section of kiln's shipped device code; throws std::out_of_range naming
/// the section when there is none of that name (a kiln bug, caught by the CPU tests).
std::string_view ${fn}(std::string_view section);
}  // namespace ${ns}
")
  file(WRITE "${OUT_CPP}.tmp" "// Generated at build time from .cuh files (cmake/embed_device_sources.cmake): do not edit.
#include \"${hpp_name}\"

#include <stdexcept>
#include <string>

namespace ${ns} {
namespace {
struct Section {
  std::string_view name, text;
};
constexpr Section kSections[] = {
${rows}};
}  // namespace

std::string_view ${fn}(std::string_view section) {
  for (const auto& s : kSections)
    if (s.name == section) return s.text;
  throw std::out_of_range(\"no device source section '\" + std::string(section) + \"'\");
}
}  // namespace ${ns}
")
  file(COPY_FILE "${OUT_HPP}.tmp" "${OUT_HPP}" ONLY_IF_DIFFERENT)
  file(COPY_FILE "${OUT_CPP}.tmp" "${OUT_CPP}" ONLY_IF_DIFFERENT)
  file(REMOVE "${OUT_HPP}.tmp" "${OUT_CPP}.tmp")
  return()
endif()

set(KILN_EMBED_SCRIPT "${CMAKE_CURRENT_LIST_FILE}")
function(kiln_embed_device_sources target)
  cmake_parse_arguments(E "" "FUNCTION;HEADER" "FILES" ${ARGN})
  set(out_dir "${CMAKE_CURRENT_BINARY_DIR}/embedded")
  get_filename_component(base "${E_HEADER}" NAME_WE)
  set(out_hpp "${out_dir}/${E_HEADER}")
  set(out_cpp "${out_dir}/${base}.cpp")
  set(abs_files "")
  foreach(f IN LISTS E_FILES)
    get_filename_component(a "${f}" ABSOLUTE)
    list(APPEND abs_files "${a}")
  endforeach()
  string(REPLACE ";" "|" files_arg "${abs_files}")  # one argument; the script splits it
  add_custom_command(
    OUTPUT "${out_cpp}" "${out_hpp}"
    COMMAND ${CMAKE_COMMAND} -E make_directory "${out_dir}"
    COMMAND ${CMAKE_COMMAND} "-DOUT_CPP=${out_cpp}" "-DOUT_HPP=${out_hpp}"
            "-DFUNCTION=${E_FUNCTION}" "-DFILES=${files_arg}" -P "${KILN_EMBED_SCRIPT}"
    DEPENDS ${abs_files} "${KILN_EMBED_SCRIPT}"
    COMMENT "Embedding device sources for ${target}"
    VERBATIM)
  target_sources(${target} PRIVATE "${out_cpp}")
  target_include_directories(${target} PRIVATE "${out_dir}")
endfunction()
