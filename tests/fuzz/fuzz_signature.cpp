// libFuzzer target: the kernel signature parser (codegen::parse_params) and kernel-name check.
// Any input either parses or raises kiln::SignatureError; a crash, hang, sanitizer report or
// any other exception is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kiln/codegen/signature.hpp"
#include "kiln/runtime/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (bool is_output : {false, true}) {
    try {
      const auto params = kiln::codegen::parse_params(text, is_output);
      for (const auto& p : params) {
        // What parsed must print back as a parameter that parses to the same thing.
        const auto again = kiln::codegen::parse_params(p.str(), is_output);
        if (again.size() != 1 || again[0].name != p.name || again[0].raw != p.raw ||
            again[0].placeholder != p.placeholder)
          __builtin_trap();
      }
    } catch (const kiln::SignatureError&) {
    }
  }
  try {
    kiln::codegen::validate_kernel_name(text);
    if (!kiln::codegen::is_identifier(text)) __builtin_trap();
  } catch (const kiln::SignatureError&) {
  }
  return 0;
}
