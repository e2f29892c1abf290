#include "kiln/cache/nvrtc_compiler.hpp"

#include <dlfcn.h>
#include <link.h>
#include <nvrtc.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string_view>
#include <system_error>

#include "kiln/cache/nvrtc_archs.hpp"
#include "kiln/runtime/detail/log.hpp"
#include "kiln/runtime/error.hpp"
#include "kiln/runtime/regular_file.hpp"

#ifndef KILN_CUDA_INCLUDE_DIR
#define KILN_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

namespace kiln::cache {
namespace fs = std::filesystem;

namespace {

// Owns an nvrtcProgram so every exit path (including throws) destroys it.
class Program {
 public:
  Program(const CompileRequest& req) {
    const std::string name = (req.kernel_name.empty() ? "kernel" : req.kernel_name) + ".cu";
    check(nvrtcCreateProgram(&prog_, req.source.c_str(), name.c_str(), 0, nullptr, nullptr),
          "nvrtcCreateProgram", req);
  }
  ~Program() {
    if (prog_) nvrtcDestroyProgram(&prog_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram get() const { return prog_; }

  static void check(nvrtcResult r, const char* call, const CompileRequest& req) {
    if (r != NVRTC_SUCCESS)
      throw kiln::Error("kiln: " + std::string(call) + " failed for kernel '" + req.kernel_name +
                        "': " + nvrtcGetErrorString(r));
  }

 private:
  nvrtcProgram prog_ = nullptr;
};

std::string program_log(nvrtcProgram prog) {
  std::size_t size = 0;
  if (nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(prog, log.data()) != NVRTC_SUCCESS) return {};
  log.resize(size - 1);  // drop the terminating NUL NVRTC counts in the size
  return log;
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

fs::path cuda_include_dir() {
  for (const char* var : {"CUDA_PATH", "CUDA_HOME"}) {
    const char* v = std::getenv(var);
    if (v && *v && is_dir(fs::path(v) / "include")) return fs::path(v) / "include";
  }
  // CMake's CUDAToolkit_INCLUDE_DIRS may be a ;-list (newer CMake adds .../cccl to it);
  // the folder that holds cuda_fp16.h is the one kernels need.
  std::string_view dirs = KILN_CUDA_INCLUDE_DIR;
  while (!dirs.empty()) {
    const auto semi = dirs.find(';');
    const fs::path d(std::string(dirs.substr(0, semi)));
    std::error_code ec;
    if (!d.empty() && fs::exists(d / "cuda_fp16.h", ec)) return d;
    dirs = semi == std::string_view::npos ? std::string_view{} : dirs.substr(semi + 1);
  }
  return "/usr/local/cuda/include";
}

// The build number is only in the file name of the real library (libnvrtc.so.13.0.88) on
// classic toolkit installs; wheel-style installs name it libnvrtc.so.13 and record the
// version in a *.dist-info folder or version.json nearby.
fs::path loaded_nvrtc_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) && info.dli_fname &&
      std::string_view(info.dli_fname).find("nvrtc") != std::string_view::npos)
    return info.dli_fname;
  // In a non-PIE executable &nvrtcVersion can be a PLT stub in the executable itself;
  // then search the loaded objects by name.
  fs::path found;
  dl_iterate_phdr(
      [](dl_phdr_info* i, std::size_t, void* out) {
        if (i->dlpi_name &&
            std::string_view(i->dlpi_name).find("libnvrtc.so") != std::string_view::npos) {
          *static_cast<fs::path*>(out) = i->dlpi_name;
          return 1;
        }
        return 0;
      },
      &found);
  return found;
}

// A toolkit's version.json is a few kB; a larger file is not one.
constexpr std::uint64_t kVersionJsonMaxBytes = std::uint64_t{1} << 20;

bool looks_like_version(std::string_view v, std::string_view prefix) {
  if (v.substr(0, prefix.size()) != prefix || v.size() <= prefix.size()) return false;
  for (char c : v)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  return true;
}

std::string find_build_version(int major, int minor) {
  const std::string prefix = std::to_string(major) + "." + std::to_string(minor) + ".";
  const fs::path lib = loaded_nvrtc_path();
  if (lib.empty()) return {};
  std::error_code ec;
  const fs::path real = fs::canonical(lib, ec);
  if (!ec) {
    const std::string name = real.filename().string();
    const auto so = name.find(".so.");
    if (so != std::string::npos && looks_like_version(name.substr(so + 4), prefix))
      return name.substr(so + 4);
  }
  // Look a few folders up from the library for version.json or nvidia_cuda_nvrtc-*.dist-info.
  fs::path d = (ec ? lib : real).parent_path();
  for (int up = 0; up < 4 && !d.empty(); ++up, d = d.parent_path()) {
    std::string why;
    if (const auto json = read_regular_file(d / "version.json", kVersionJsonMaxBytes, why)) {
      const std::string& text = *json;
      const auto at = text.find("\"cuda_nvrtc\"");
      const auto ver = at == std::string::npos ? at : text.find("\"version\"", at);
      const auto q1 = ver == std::string::npos ? ver : text.find('"', text.find(':', ver));
      const auto q2 = q1 == std::string::npos ? q1 : text.find('"', q1 + 1);
      if (q2 != std::string::npos && looks_like_version(text.substr(q1 + 1, q2 - q1 - 1), prefix))
        return text.substr(q1 + 1, q2 - q1 - 1);
    }
    for (const fs::path& sub : {d, d / "dist-info"}) {
      for (fs::directory_iterator it(sub, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string n = it->path().filename().string();
        const std::string_view head = "nvidia_cuda_nvrtc-", tail = ".dist-info";
        if (n.size() > head.size() + tail.size() && n.starts_with(head) && n.ends_with(tail)) {
          const std::string v = n.substr(head.size(), n.size() - head.size() - tail.size());
          if (looks_like_version(v, prefix)) return v;
        }
      }
      ec.clear();
    }
  }
  return {};
}

}  // namespace

std::string number_lines(const std::string& source) {
  std::size_t lines = 1;
  for (char c : source) lines += c == '\n';
  const int width = static_cast<int>(std::to_string(lines).size()) + 2;
  std::string out;
  out.reserve(source.size() + lines * (width + 4));
  std::size_t start = 0, number = 1;
  while (start <= source.size()) {
    const auto end = source.find('\n', start);
    const std::string num = std::to_string(number++);
    out.append(static_cast<std::size_t>(width) - num.size(), ' ');
    out += num;
    out += " | ";
    out.append(source, start, end == std::string::npos ? std::string::npos : end - start);
    out += '\n';
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::vector<std::string> default_include_options() {
  const fs::path inc = cuda_include_dir();
  std::vector<std::string> opts{"-I" + inc.string()};
  // CUDA 13 keeps libcu++/CUB/Thrust (<cuda/std/complex>) under include/cccl.
  if (is_dir(inc / "cccl")) opts.push_back("-I" + (inc / "cccl").string());
  return opts;
}

const NvrtcVersion& nvrtc_version() {
  static const NvrtcVersion v = [] {
    NvrtcVersion r;
    if (nvrtcVersion(&r.major, &r.minor) != NVRTC_SUCCESS) r.major = r.minor = 0;
    r.full = find_build_version(r.major, r.minor);
    if (r.full.empty()) {
      r.full = std::to_string(r.major) + "." + std::to_string(r.minor);
      kiln::detail::logger().debug("NVRTC build number not found; cache keys use {}", r.full);
    }
    return r;
  }();
  return v;
}

void check_request(const CompileRequest& req) {
  check_arch(req.arch);
  for (const auto& o : req.options)
    if (o.starts_with("-arch") || o.starts_with("--gpu-architecture") || o == "-code" ||
        o.starts_with("-code=") || o.starts_with("--gpu-code"))
      throw kiln::ValueError("NVRTC option '" + o + "' in kernel '" + req.kernel_name +
                             "': the architecture is kiln's choice (the device's, or ahead of "
                             "time the one named: compile_for(spec, arch), kiln-cache --arch); "
                             "supported: " +
                             supported_archs_text());
}

Binary nvrtc_compile(const CompileRequest& req) {
  check_request(req);
  std::vector<std::string> opts = req.options;
  opts.push_back("-arch=" + arch_name(req.arch));
  for (auto& inc : default_include_options()) opts.push_back(std::move(inc));

  std::optional<Program> prog;
  auto compile = [&] {
    prog.emplace(req);
    for (const auto& expr : req.name_expressions)
      Program::check(nvrtcAddNameExpression(prog->get(), expr.c_str()), "nvrtcAddNameExpression",
                     req);
    std::vector<const char*> argv;
    argv.reserve(opts.size());
    for (const auto& o : opts) argv.push_back(o.c_str());
    return nvrtcCompileProgram(prog->get(), static_cast<int>(argv.size()), argv.data());
  };
  nvrtcResult r = compile();
  // "-minimal" (a default of generated kernels) leaves out the CUDA runtime's host types,
  // textures and surfaces; a user's code that uses them compiles without it. The key keeps
  // the option: the same source and options always give this binary.
  if (const auto minimal = std::find(opts.begin(), opts.end(), "-minimal");
      r == NVRTC_ERROR_COMPILATION && minimal != opts.end()) {
    kiln::detail::logger().debug(
        "kernel '{}' did not compile with -minimal; compiling it again "
        "without:\n{}",
        req.kernel_name, program_log(prog->get()));
    opts.erase(minimal);
    r = compile();
  }
  const std::string log = program_log(prog->get());
  if (r != NVRTC_SUCCESS) {
    std::string msg = "kiln: NVRTC could not compile kernel '" + req.kernel_name + "' for " +
                      arch_name(req.arch) + " (" + nvrtcGetErrorString(r) + ")\n";
    // Every option NVRTC was given, one per line (an -I folder may hold spaces), so the
    // compile can be reproduced from a pasted message.
    msg += "--- NVRTC " + nvrtc_version().full + " options ---\n";
    for (const auto& o : opts) msg += o + '\n';
    msg += "--- NVRTC log ---\n" + log;
    if (!log.empty() && log.back() != '\n') msg += '\n';
    // NVRTC says `cannot open source file "x.h"`: name the header and where kiln looked.
    const std::string_view miss = "cannot open source file \"";
    if (const auto at = log.find(miss); at != std::string::npos) {
      const auto end = log.find('"', at + miss.size());
      msg += "kiln: header '" + log.substr(at + miss.size(), end - at - miss.size()) +
             "' was not found; include folders: ";
      bool any = false;
      for (std::size_t k = 0; k < opts.size(); ++k)
        if (opts[k].starts_with("-I") || opts[k].starts_with("--include-path")) {
          msg += (any ? ", " : "") + opts[k];
          any = true;
        }
      msg += "\n";
    }
    msg += "--- source ---\n" + number_lines(req.source);
    throw kiln::CompileError(std::move(msg), log, req.source);
  }
  if (!log.empty())
    kiln::detail::logger().debug("NVRTC log for kernel '{}':\n{}", req.kernel_name, log);

  Binary bin;
  std::size_t size = 0;
  Program::check(nvrtcGetCUBINSize(prog->get(), &size), "nvrtcGetCUBINSize", req);
  bin.cubin.resize(size);
  Program::check(nvrtcGetCUBIN(prog->get(), bin.cubin.data()), "nvrtcGetCUBIN", req);
  bin.lowered_names.reserve(req.name_expressions.size());
  for (const auto& expr : req.name_expressions) {
    const char* lowered = nullptr;
    Program::check(nvrtcGetLoweredName(prog->get(), expr.c_str(), &lowered), "nvrtcGetLoweredName",
                   req);
    bin.lowered_names.emplace_back(lowered);  // copy: NVRTC frees it with the program
  }
  return bin;
}

}  // namespace kiln::cache
