#pragma once
// What ElementwiseKernel and ReductionKernel share, written once (a CRTP base): the definition
// they were built from, the call operator, and the ahead-of-time methods. The kernel class
// supplies call(args), specs(target), a static emit(definition, spec) and kKind
// ("elementwise", "reduction": the kind recorded in manifests and cache listings).
//
//   kiln::ElementwiseKernel k("T x", "T y", "y = x * 2", "twice");
//   kiln::ndarray y = k(x);                                   // call operator
//   auto reqs = k.compile_requests({.dtypes = {kiln::float32}}, 90);   // ahead of time
#include <array>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/cache/binary.hpp"
#include "kiln/cache/compile_cache.hpp"
#include "kiln/cache/compile_request.hpp"
#include "kiln/codegen/kernel_definition.hpp"
#include "kiln/engine/ahead_of_time.hpp"
#include "kiln/engine/kernel_arg.hpp"
#include "kiln/engine/kernel_result.hpp"

namespace kiln {

namespace detail {
/// The compile request of one generated kernel (its name and NVRTC options from `def`).
cache::CompileRequest make_compile_request(const codegen::KernelDefinition& def,
                                           std::string_view kind, std::string source, int arch);
}  // namespace detail

template <class Kernel, class Definition, class Spec>
class generated_kernel {
 public:
  /// k(inputs...), k(inputs..., outputs...), then the kind's per-call options and a
  /// launch_options, if any.
  template <class... A>
  kernel_result operator()(A&&... args) const {
    const std::array<kernel_arg, sizeof...(A)> argv{kernel_arg(args)...};
    return self().call(std::span<const kernel_arg>(argv.data(), argv.size()));
  }

  const std::string& name() const noexcept { return def_->name; }
  int nin() const noexcept { return def_->nin; }
  int nout() const noexcept { return def_->nout; }
  const Definition& definition() const noexcept { return *def_; }

  // ---- ahead of time (no GPU needed): kiln-cache, CPU tests ----
  /// The compile requests of every spec of specs(target) that `arch` (e.g. 90) can run: a kind
  /// whose specs need a newer GPU says which (Kernel::runs_on(spec, arch): a row split over a
  /// cluster of blocks needs sm_90).
  std::vector<cache::CompileRequest> compile_requests(const aot_target& target, int arch) const {
    cache::check_arch(arch);
    std::vector<cache::CompileRequest> out;
    for (const Spec& spec : self().specs(target))
      if (runs(spec, arch)) out.push_back(compile_request(spec, arch));
    return out;
  }
  /// The CUDA C++ source for a spec.
  std::string source(const Spec& spec) const { return Kernel::emit(*def_, spec); }
  cache::CompileRequest compile_request(const Spec& spec, int arch) const {
    cache::check_arch(arch);
    return detail::make_compile_request(*def_, Kernel::kKind, source(spec), arch);
  }
  /// Generates and compiles (through the disk cache) for `arch`. Throws CompileError (NVRTC
  /// log with `operation(line)` positions, options, numbered source, kernel name).
  cache::Binary compile_for(const Spec& spec, int arch) const {
    return cache::compile_cached(compile_request(spec, arch));
  }

 protected:
  explicit generated_kernel(Definition def)
      : def_(std::make_shared<const Definition>(std::move(def))) {}
  std::shared_ptr<const Definition> def_;

 private:
  const Kernel& self() const { return static_cast<const Kernel&>(*this); }
  static bool runs(const Spec& spec, int arch) {
    if constexpr (requires { Kernel::runs_on(spec, arch); })
      return Kernel::runs_on(spec, arch);
    else
      return true;
  }
};

}  // namespace kiln
