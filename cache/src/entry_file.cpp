#include "kiln/cache/entry_file.hpp"

#include "kiln/cache/cache_layout.hpp"
#include "kiln/cache/entry_format.hpp"
#include "kiln/runtime/regular_file.hpp"

namespace kiln::cache {

EntryRead read_entry_file(const std::filesystem::path& path, const Key& key, EntryUse use) {
  EntryRead r;
  // An entry is kiln's own file: a link there is refused, never followed to what it names.
  RegularFile f =
      RegularFile::open(path, {.follow_links = false, .keep_atime = use == EntryUse::look});
  if (!f.ok()) {
    r.missing = f.missing();
    r.problem = f.problem();
    return r;
  }
  if (auto why = trust_problem(f.stat())) {
    r.problem = "refused, " + *why;
    return r;
  }
  auto bytes = f.read_all(kMaxEntryBytes);
  if (!bytes) {
    r.problem = f.problem();
    return r;
  }
  r.binary = decode_entry(*bytes, key, &r.problem);
  // relatime mounts update the access time at most daily; pruning by use needs better.
  if (r.binary && use == EntryUse::load) f.touch_atime();
  return r;
}

}  // namespace kiln::cache
