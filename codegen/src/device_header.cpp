#include "kiln/codegen/device_header.hpp"

#include "kiln_codegen_device_sources.hpp"

namespace kiln::codegen {

std::string device_header(const DeviceHeaderNeeds& needs) {
  std::string out = "// ---- kiln device support (generated; names are kiln_-prefixed) ----\n";
  if (needs.fp16) out += "#include <cuda_fp16.h>\n";
  if (needs.bf16) out += "#include <cuda_bf16.h>\n";
  out += device_source("kiln_core");
  if (needs.fp16) out += device_source("kiln_fp16");
  if (needs.bf16) out += device_source("kiln_bf16");
  if (needs.complex) out += device_source("kiln_complex");
  return out;
}

}  // namespace kiln::codegen
