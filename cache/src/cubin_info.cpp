#include "kiln/cache/cubin_info.hpp"

#include <elf.h>

#include <cstring>

namespace kiln::cache {
namespace {

// NVIDIA's ELF OS ABI, and the st_other bit marking a __global__ function.
constexpr unsigned char kCudaOsAbi = 0x41;
constexpr unsigned char kCudaEntry = 0x10;

template <class T>
bool read_at(std::string_view bytes, std::uint64_t at, T& out) {
  if (at > bytes.size() || bytes.size() - at < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + at, sizeof(T));
  return true;
}

}  // namespace

CubinInfo inspect_cubin(std::string_view c) {
  CubinInfo info;
  Elf64_Ehdr h{};
  if (!read_at(c, 0, h) || std::memcmp(h.e_ident, ELFMAG, SELFMAG) != 0 ||
      h.e_ident[EI_CLASS] != ELFCLASS64 || h.e_ident[EI_OSABI] != kCudaOsAbi)
    return info;
  // ELF ABI version 8 (CUDA 12.8+) keeps the SM number in bits 8..15 of e_flags; older ones
  // in bits 0..7.
  info.arch = h.e_ident[EI_ABIVERSION] >= 8 ? int((h.e_flags >> 8) & 0xff) : int(h.e_flags & 0xff);
  if (h.e_shentsize != sizeof(Elf64_Shdr)) return info;
  for (unsigned i = 0; i < h.e_shnum; ++i) {
    Elf64_Shdr sh{};
    if (!read_at(c, h.e_shoff + std::uint64_t(i) * sizeof sh, sh)) return info;
    if (sh.sh_type != SHT_SYMTAB) continue;
    Elf64_Shdr strtab{};
    if (!read_at(c, h.e_shoff + std::uint64_t(sh.sh_link) * sizeof sh, strtab)) return info;
    if (strtab.sh_offset > c.size() || c.size() - strtab.sh_offset < strtab.sh_size) return info;
    const std::string_view names = c.substr(strtab.sh_offset, strtab.sh_size);
    for (std::uint64_t k = 0; k < sh.sh_size / sizeof(Elf64_Sym); ++k) {
      Elf64_Sym s{};
      if (!read_at(c, sh.sh_offset + k * sizeof s, s)) return info;
      if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || !(s.st_other & kCudaEntry) ||
          s.st_name >= names.size())
        continue;
      const std::string_view rest = names.substr(s.st_name);
      info.kernels.emplace_back(rest.substr(0, rest.find('\0')));
    }
  }
  return info;
}

}  // namespace kiln::cache
