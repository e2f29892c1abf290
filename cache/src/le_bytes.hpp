#pragma once
// Little-endian integer encoding shared by the key framing and the entry format, so both
// are byte-identical on every host (and match their golden tests).
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::cache::detail {

template <class U>
void put_le(std::string& out, U v) {
  for (unsigned i = 0; i < sizeof(U); ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

template <class U>
U get_le(std::string_view in, std::size_t at) {
  U v = 0;
  for (unsigned i = 0; i < sizeof(U); ++i)
    v |= static_cast<U>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return v;
}

}  // namespace kiln::cache::detail
