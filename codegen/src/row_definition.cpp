#include "kiln/codegen/row_definition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "kiln/runtime/error.hpp"

namespace kiln::codegen {

RowDefinition make_row_definition(std::string_view in_params, std::string_view out_params,
                                  std::vector<RowReduction> reductions,
                                  std::vector<std::string> outputs,
                                  std::vector<std::string> divisors,
                                  std::vector<std::uint32_t> leaf_use, std::string_view helpers,
                                  std::string_view name) {
  // The program, spelled once: hashed with the definition and scanned for -D clashes.
  std::string program;
  int phase = 0;
  for (std::size_t r = 0; r < reductions.size(); ++r) {
    const RowReduction& red = reductions[r];
    if (red.phase < phase || red.phase >= kMaxRowPhases)
      throw SignatureError(
          fmt::format("row kernel '{}': reduction {} is in phase {} (phases must be "
                      "in order, below {})",
                      name, r, red.phase, kMaxRowPhases),
          0);
    phase = red.phase;
    fmt::format_to(std::back_inserter(program), "// reduction {} phase {} ddof {}: {}\n", r,
                   red.phase, red.ddof, red.input);
  }
  std::vector<ReductionPart> parts;
  for (const auto& red : reductions) parts.push_back(red.part);
  program += reduction_parts_text(parts);
  for (std::size_t k = 0; k < outputs.size(); ++k)
    fmt::format_to(std::back_inserter(program), "// out{} = {}\n", k, outputs[k]);
  for (std::size_t k = 0; k < divisors.size(); ++k)
    fmt::format_to(std::back_inserter(program), "// kiln_dv{} = {}\n", k, divisors[k]);
  for (std::uint32_t u : leaf_use) fmt::format_to(std::back_inserter(program), "// use {:x}\n", u);
  RowDefinition def;
  static_cast<KernelDefinition&>(def) = make_kernel_definition({.kind = "rows",
                                                                .in_params = in_params,
                                                                .out_params = out_params,
                                                                .name = name,
                                                                .code = {program},
                                                                .preamble = helpers});
  if (def.nout == 0)
    throw SignatureError(fmt::format("row kernel '{}' needs at least one output", name), 0);
  if (leaf_use.size() != std::size_t(def.nin) || outputs.size() != std::size_t(def.nout))
    throw SignatureError(
        fmt::format("row kernel '{}': {} inputs with {} uses, {} outputs with {} expressions", name,
                    def.nin, leaf_use.size(), def.nout, outputs.size()),
        0);
  def.nphases = reductions.empty() ? 0 : reductions.back().phase + 1;
  def.reductions = std::move(reductions);
  def.outputs = std::move(outputs);
  def.divisors = std::move(divisors);
  def.leaf_use = std::move(leaf_use);
  return def;
}

int row_state_words(const RowDefinition& def) {
  int words = 0;
  for (const auto& r : def.reductions)
    words += (r.state_words + 1) * std::max(1, int(r.part.out.itemsize() / 4));
  return words;
}

}  // namespace kiln::codegen
