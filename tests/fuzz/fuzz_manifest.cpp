// libFuzzer target: the kiln-cache manifest reader (JSON object, array or JSON lines) and the
// expansion of every entry into compile requests (no NVRTC runs). Bad input must raise
// kiln::Error (ManifestError, ValueError, TypeError, SignatureError ...), never anything else.
// The first byte chooses keep_going; the rest is the manifest.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kiln/runtime/error.hpp"
#include "manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool keep_going = data[0] & 1;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  kiln::tools::Manifest m;
  try {
    m = kiln::tools::parse_manifest(text, "/nonexistent/fuzz.json", keep_going);
  } catch (const kiln::Error&) {
    return 0;
  }
  (void)kiln::tools::recorded_archs(m);
  for (const auto& e : m.entries) {
    try {
      // One arch keeps each input cheap; which arch does not change the parsing.
      (void)kiln::tools::expand_entry(m, e, 90);
    } catch (const kiln::Error&) {
    }
  }
  return 0;
}
