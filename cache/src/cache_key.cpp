#include "kiln/cache/cache_key.hpp"

#include "kiln/cache/nvrtc_compiler.hpp"

namespace kiln::cache {
Key cache_key(const CompileRequest& req, std::string_view nvrtc_full_version) {
  Hasher128 h;
  h.str("kiln-cache-key");
  h.u32(kCacheFormatVersion);
  h.str(req.source);
  h.u64(req.options.size());
  for (const auto& o : req.options) h.str(o);
  h.u32(static_cast<std::uint32_t>(req.arch));
  h.u64(req.name_expressions.size());
  for (const auto& n : req.name_expressions) h.str(n);
  h.str(nvrtc_full_version);
  // Only when set, so the keys of every request without it stay what they were.
  if (!req.key_extra.empty()) h.str(req.key_extra);
  return h.digest();
}

Key cache_key(const CompileRequest& req) { return cache_key(req, nvrtc_version().full); }

}  // namespace kiln::cache
