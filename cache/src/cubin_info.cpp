#include "kiln/cache/cubin_info.hpp"

#include <elf.h>

#include <cstring>

#include "kiln/cache/nvrtc_archs.hpp"

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

// The bytes of section `sh`, or empty when they lie outside the file.
std::string_view section_bytes(std::string_view c, const Elf64_Shdr& sh) {
  if (sh.sh_type == SHT_NOBITS || sh.sh_offset > c.size() || c.size() - sh.sh_offset < sh.sh_size)
    return {};
  return c.substr(sh.sh_offset, sh.sh_size);
}

// The characters in `set` that follow `prefix` in `text` ("" if absent).
std::string run_after(std::string_view text, std::string_view prefix, std::string_view set) {
  const auto at = text.find(prefix);
  if (at == std::string_view::npos) return {};
  const std::string_view rest = text.substr(at + prefix.size());
  return std::string(rest.substr(0, rest.find_first_not_of(set)));
}

// ptxas's note (.note.nv.tkinfo) names the tool and its options: "Cuda compilation tools,
// release 13.0, V13.0.88" and "-arch sm_90a". The arch-specific suffix is only there: e_flags
// are the same for sm_90 and sm_90a.
void read_toolkit_note(std::string_view note, CubinInfo& info) {
  info.tool_version = run_after(note, "Cuda compilation tools, release ", "0123456789.");
  const std::string full = run_after(note, ", V", "0123456789.");
  if (!full.empty()) info.tool_version = full;
  const std::string arch = run_after(note, "-arch sm_", "0123456789a");
  if (info.arch != 0 && arch == std::to_string(info.arch) + "a")
    info.arch = arch_specific(info.arch);
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
  Elf64_Shdr names_sh{};
  const std::string_view section_names =
      read_at(c, h.e_shoff + std::uint64_t(h.e_shstrndx) * sizeof names_sh, names_sh)
          ? section_bytes(c, names_sh)
          : std::string_view{};
  for (unsigned i = 0; i < h.e_shnum; ++i) {
    Elf64_Shdr sh{};
    if (!read_at(c, h.e_shoff + std::uint64_t(i) * sizeof sh, sh)) return info;
    if (sh.sh_type == SHT_NOTE && sh.sh_name < section_names.size() &&
        section_names.substr(sh.sh_name).starts_with(std::string_view(".note.nv.tkinfo\0", 16)))
      read_toolkit_note(section_bytes(c, sh), info);
    if (sh.sh_type != SHT_SYMTAB) continue;
    Elf64_Shdr strtab{};
    if (!read_at(c, h.e_shoff + std::uint64_t(sh.sh_link) * sizeof sh, strtab)) return info;
    const std::string_view names = section_bytes(c, strtab);
    if (names.empty()) return info;
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
