#pragma once
// Helpers shared by the kiln-cache tests: run the CLI (optionally with stdin and extra
// environment), quote paths, write files.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace kiln::test {

struct CliResult {
  int status;
  std::string output;  // stdout and stderr together
};

/// Runs a shell command; its status and output.
inline CliResult run_shell(const std::string& cmd) {
  CliResult r{0, ""};
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) r.output += buf;
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

/// Runs `kiln-cache ARGS` through the shell (ARGS may hold quotes; `env` holds assignments
/// such as "KILN_LOG=bogus").
inline CliResult run_cli(const std::string& args, const std::string& env = "") {
  return run_shell((env.empty() ? "" : "env " + env + " ") + std::string(KILN_CACHE_CLI) + " " +
                   args + " 2>&1");
}

/// stdout only (for --json: stderr is not part of the document).
inline CliResult run_cli_stdout(const std::string& args, const std::string& env = "") {
  return run_shell((env.empty() ? "" : "env " + env + " ") + std::string(KILN_CACHE_CLI) + " " +
                   args + " 2>/dev/null");
}

inline std::string q(const std::filesystem::path& p) { return "'" + p.string() + "'"; }

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

inline std::size_t line_count(const std::string& s) {
  return std::size_t(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace kiln::test
