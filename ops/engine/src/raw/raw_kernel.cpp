// RawKernel: a user kernel found in a RawSource's module, launched with checked arguments.
#include "kiln/engine/raw_kernel.hpp"

#include <cuda.h>
#include <fmt/format.h>

#include <atomic>

#include "graph/capture_record.hpp"
#include "kiln/cache/loaded_kernels.hpp"
#include "kiln/cache/nvrtc_archs.hpp"
#include "kiln/engine/raw_module.hpp"
#include "kiln/runtime/device.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/stream.hpp"
#include "raw_checks.hpp"
#include "raw_source.hpp"

namespace kiln {
namespace detail {

inline constexpr int kMaxRawDevices = 64;
inline constexpr std::size_t kMaxRawArgs = 1024;

struct RawFunctionState {
  std::shared_ptr<const RawSource> src;
  std::string name;
  bool cooperative = false;
  Hash128 fn_hash;
  // The cache entry per device, once found: a hit is one atomic load (entries live forever).
  mutable std::atomic<const cache::LoadedKernel*> loaded[kMaxRawDevices] = {};

  const cache::LoadedKernel& on(int device) const {
    if (device >= 0 && device < kMaxRawDevices)
      if (const cache::LoadedKernel* k = loaded[device].load(std::memory_order_acquire)) return *k;
    const cache::LoadedKernel& k =
        cache::loaded_entry(cache::kernel_key(fn_hash, std::span<const std::byte>(), device), [&] {
          const cache::LoadedKernel& m = src->module_on(device);
          const std::string sym = src->symbol(m, name);
          const Function f = m.module->find_function(sym);
          if (!f) throw ValueError(src->missing_message(m, "kernel", name));
          cache::LoadedKernel out;
          out.module = m.module;
          out.function = f;
          out.max_threads_per_block = f.max_threads_per_block();
          out.lowered_names = {sym};
          if (auto layout = f.param_layout()) {
            out.params = std::move(*layout);
            out.params_known = true;
          }
          return out;
        });
    if (device >= 0 && device < kMaxRawDevices) loaded[device].store(&k, std::memory_order_release);
    return k;
  }
};

namespace {

bool is_binary_file(const std::filesystem::path& p) {
  const auto ext = p.extension();
  return ext == ".cubin" || ext == ".ptx" || ext == ".fatbin";
}

// A C++ name goes through NVRTC's name expressions (extern "C" names lower to themselves);
// a mangled name is looked up as it is.
void add_entry_expression(raw_options& o, std::string_view name) {
  if (name.starts_with("_Z")) return;
  const std::string n = normalize_name_expression(name);
  for (const auto& e : o.name_expressions)
    if (normalize_name_expression(e) == n) return;
  o.name_expressions.push_back(n);
}

void ensure_dynamic_shared(const RawFunctionState& st, const cache::LoadedKernel& k, int device,
                           dim3 grid, dim3 block, std::size_t shared) {
  const int static_bytes = k.function.attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  int optin = 0;
  if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) !=
      cudaSuccess)
    cudaGetLastError();
  if (optin > 0 && shared + std::size_t(static_bytes) > std::size_t(optin))
    throw ValueError(fmt::format(
        "cannot launch {}: {} bytes of dynamic plus {} of static shared memory is more than "
        "device {} allows per block ({} bytes)",
        launch_description(st.name, grid, block, shared), shared, static_bytes, device, optin));
  if (std::size_t(k.function.attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)) < shared)
    k.function.set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(shared));
}

}  // namespace
}  // namespace detail

RawKernel::RawKernel(std::shared_ptr<const detail::RawSource> src, std::string name,
                     bool cooperative)
    : state_(std::make_shared<detail::RawFunctionState>()) {
  if (name.empty()) throw ValueError("RawKernel: the kernel name is empty");
  Hasher128 h;
  h.str("kiln.raw.function");
  h.hash(src->hash);
  h.str(normalize_name_expression(name));
  state_->fn_hash = h.digest();
  state_->src = std::move(src);
  state_->name = std::move(name);
  state_->cooperative = cooperative;
}

RawKernel::RawKernel(std::string_view code, std::string_view name, raw_options options)
    : RawKernel(
          [&] {
            if (name.empty()) throw ValueError("RawKernel: the kernel name is empty");
            detail::add_entry_expression(options, name);
            return detail::RawSource::from_code(std::string(code), std::move(options),
                                                fmt::format("of kernel '{}'", name));
          }(),
          std::string(name), options.cooperative) {}

RawKernel RawKernel::from_file(const std::filesystem::path& path, std::string_view name,
                               raw_options options) {
  if (!detail::is_binary_file(path)) detail::add_entry_expression(options, name);
  const bool coop = options.cooperative;
  return RawKernel(detail::RawSource::from_file(path, std::move(options)), std::string(name), coop);
}

void RawKernel::launch(dim3 grid, dim3 block, std::span<const raw_arg> args) const {
  static const launch_options kDefaults{};
  const launch_options* o = &kDefaults;
  if (!args.empty() && args.back().is_options()) {
    o = &args.back().options();
    args = args.first(args.size() - 1);
  }
  const auto& st = *state_;
  for (const auto& a : args)
    if (a.is_options())
      throw ValueError(
          fmt::format("kernel '{}': launch_options must be the last argument", st.name));
  if (args.size() > detail::kMaxRawArgs)
    throw ValueError(fmt::format("kernel '{}': {} arguments; kiln passes at most {}", st.name,
                                 args.size(), detail::kMaxRawArgs));
  detail::check_launch_dims(st.name, grid, block, o->shared_mem);

  const int device = current_device();
  cudaStream_t stream;
  if (o->stream) {
    if (o->stream->device() != device)
      throw ValueError(
          fmt::format("kernel '{}': the stream belongs to device {} but device {} "
                      "is current",
                      st.name, o->stream->device(), device));
    stream = o->stream->handle();
  } else {
    stream = current_stream_handle(device);
  }
  const cache::LoadedKernel& k = st.on(device);
  if (k.params_known) detail::check_raw_args(st.name, k.params, args);
  const unsigned threads = block.x * block.y * block.z;
  if (threads > unsigned(k.max_threads_per_block))
    throw ValueError(fmt::format(
        "cannot launch {}: the block has {} threads, but this kernel allows at most {} on device "
        "{} (its register use or __launch_bounds__)",
        detail::launch_description(st.name, grid, block, o->shared_mem), threads,
        k.max_threads_per_block, device));
  if (o->shared_mem > 48 * 1024)
    detail::ensure_dynamic_shared(st, k, device, grid, block, o->shared_mem);

  void* argv[detail::kMaxRawArgs];
  for (std::size_t i = 0; i < args.size(); ++i) argv[i] = const_cast<void*>(args[i].address());
  try {
    if (st.cooperative) {
      const int per_sm =
          k.function.max_active_blocks_per_multiprocessor(int(threads), o->shared_mem);
      const int sms = device_properties(device).multiprocessor_count;
      if ((unsigned long long)grid.x * grid.y * grid.z > (unsigned long long)per_sm * sms)
        throw ValueError(
            detail::cooperative_too_big(st.name, grid, block, o->shared_mem, per_sm, sms));
      k.function.launch_cooperative(grid, block, argv, o->shared_mem, stream);
    } else {
      k.function.launch(grid, block, argv, o->shared_mem, stream);
    }
    if (detail::thread_capture()) [[unlikely]]
      detail::record_raw_launch(st.name, stream, args, argv);
  } catch (const CudaError& e) {
    throw CudaError(
        fmt::format("launch of {} failed: {}",
                    detail::launch_description(st.name, grid, block, o->shared_mem), e.what()),
        e.code());
  }
}

kernel_attributes RawKernel::attributes() const {
  const Function& f = state_->on(current_device()).function;
  kernel_attributes a;
  a.max_threads_per_block = f.attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  a.shared_size_bytes = f.attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
  a.const_size_bytes = f.attribute(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES);
  a.local_size_bytes = f.attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
  a.num_regs = f.attribute(CU_FUNC_ATTRIBUTE_NUM_REGS);
  a.ptx_version = f.attribute(CU_FUNC_ATTRIBUTE_PTX_VERSION);
  a.binary_version = f.attribute(CU_FUNC_ATTRIBUTE_BINARY_VERSION);
  a.max_dynamic_shared_size_bytes = f.attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
  a.preferred_shared_memory_carveout =
      f.attribute(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT);
  return a;
}

void RawKernel::set_max_dynamic_shared_memory(int bytes) const {
  if (bytes < 0)
    throw ValueError(
        fmt::format("kernel '{}': max dynamic shared memory {} is negative", name(), bytes));
  state_->on(current_device())
      .function.set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
}

void RawKernel::set_preferred_shared_memory_carveout(int percent) const {
  if (percent < -1 || percent > 100)
    throw ValueError(
        fmt::format("kernel '{}': shared memory carveout {} is not -1 or a percent "
                    "0..100",
                    name(), percent));
  state_->on(current_device())
      .function.set_attribute(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, percent);
}

const std::string& RawKernel::name() const noexcept { return state_->name; }

std::string RawKernel::symbol() const { return state_->on(current_device()).lowered_names.front(); }

std::vector<cache::CompileRequest> RawKernel::compile_requests(int arch) const {
  cache::check_arch(arch);
  if (state_->src->kind != detail::RawSource::Kind::source) return {};
  return {state_->src->request(arch)};
}

}  // namespace kiln
