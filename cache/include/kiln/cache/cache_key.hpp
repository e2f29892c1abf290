#pragma once
// The cache key of a compile: xxHash3-128 over everything that changes the binary (source,
// every option, arch, name expressions, the NVRTC version, kiln's cache format version).
// kernel_name is left out: it changes messages, not code.
//
//   Key k = cache_key(req);
//   k.hex();                                   // "3f9c...": 32 lowercase hex digits
//   std::unordered_map<Key, int, KeyHash> m;
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/cache/compile_request.hpp"
#include "kiln/runtime/hash128.hpp"

namespace kiln::cache {

/// Bump whenever the on-disk entry layout or the key's framing changes: every old key then
/// misses, and old files are never misread as new ones.
inline constexpr std::uint32_t kCacheFormatVersion = 1;

/// A cache key is kiln's one 128-bit hash (hex() names the entry's files).
using Key = kiln::Hash128;
using KeyHash = kiln::Hash128Hash;

/// Key for `req` compiled by the NVRTC loaded in this process (nvrtc_version().full).
Key cache_key(const CompileRequest& req);

/// Key for `req` compiled by NVRTC version `nvrtc_full_version`: lets a cache be keyed for
/// another NVRTC, and lets tests check keys against fixed values.
Key cache_key(const CompileRequest& req, std::string_view nvrtc_full_version);

}  // namespace kiln::cache
