#pragma once
// The bytes of one on-disk cache entry (format version 1). All integers little-endian.
//
//   header (48 bytes)
//     0  char[8]  magic "KILNBIN\0"
//     8  u32      format version (kCacheFormatVersion)
//    12  u32      header size (48), so a reader can reject a layout it does not know
//    16  u64      key.hi
//    24  u64      key.lo
//    32  u64      payload size in bytes
//    40  u64      XXH3-64 of the payload
//   payload
//     u64 cubin size, cubin bytes,
//     u32 name count, then per name: u32 size, bytes
//
// The file is exactly header + payload: a longer or shorter file is bad.
//
//   std::string bytes = encode_entry(key, bin);
//   std::string why;
//   std::optional<Binary> back = decode_entry(bytes, key, &why);   // == bin
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/cache/binary.hpp"
#include "kiln/cache/cache_key.hpp"

namespace kiln::cache {

inline constexpr char kEntryMagic[8] = {'K', 'I', 'L', 'N', 'B', 'I', 'N', '\0'};
inline constexpr std::size_t kEntryHeaderSize = 48;
/// The largest entry file kiln reads. Entries are kernels, a few MB at most; anything far
/// larger is not one of kiln's, and reading it whole would cost memory for nothing.
inline constexpr std::uint64_t kMaxEntryBytes = std::uint64_t{1} << 30;

/// The complete file contents for `bin` stored under `key`.
std::string encode_entry(const Key& key, const Binary& bin);

/// The Binary in `bytes` if every check passes (magic, version, header size, key == expected,
/// payload size, checksum, payload structure); otherwise nullopt and, if `why` is given, a
/// short reason for the log.
std::optional<Binary> decode_entry(std::string_view bytes, const Key& expected,
                                   std::string* why = nullptr);

}  // namespace kiln::cache
