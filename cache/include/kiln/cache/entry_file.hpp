#pragma once
// The one reader of cache entry files: opens, checks and decodes dir/ab/<hex>.kbin. The disk
// cache loads through it and kiln-cache inspects through it, so an entry kiln-cache calls
// valid is exactly one a program would load.
//
//   EntryRead r = read_entry_file(layout.entry_path(key), key, EntryUse::load);
//   if (r.binary) use(*r.binary);
//   else if (!r.missing) warn(r.problem);     // "payload checksum mismatch", "symbolic link, ..."
#include <filesystem>
#include <optional>
#include <string>

#include "kiln/cache/binary.hpp"
#include "kiln/cache/cache_key.hpp"

namespace kiln::cache {

enum class EntryUse {
  load,  // a program uses the entry: its access time is updated (least-recently-used order)
  look,  // kiln-cache looks at it, or a program reads a read-only cache: nothing is changed
};

struct EntryRead {
  std::optional<Binary> binary;  // set when every check passed
  bool missing = false;          // no file at the path: a plain miss
  std::string problem;           // why the file is not a valid entry (empty when binary is set)
};

/// Checks, in order: a regular file and not a link (a FIFO, device or link is refused, and none
/// is ever opened in a way that could block), owned by a user kiln trusts and writable by nobody
/// else (cache_layout.hpp), at most kMaxEntryBytes, then the bytes (decode_entry: header, key,
/// size, checksum). Never throws for I/O.
EntryRead read_entry_file(const std::filesystem::path& path, const Key& key, EntryUse use);

}  // namespace kiln::cache
