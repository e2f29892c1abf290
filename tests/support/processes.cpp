#include "support/processes.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/test_support.hpp"

extern char** environ;

namespace kiln::test {

std::string ChildResult::describe() const {
  std::string how = timed_out ? "killed at the time limit"
                    : signal  ? "signal " + std::to_string(signal)
                              : "exit " + std::to_string(exit_code);
  return how + " after " + std::to_string(seconds) + " s; output:\n" + output;
}

std::vector<ChildResult> run_children(const std::vector<ChildSpec>& children,
                                      std::chrono::seconds limit) {
  using Clock = std::chrono::steady_clock;
  TempDir dir;
  std::vector<pid_t> pids;
  std::vector<ChildResult> results(children.size());
  const auto start = Clock::now();
  for (std::size_t i = 0; i < children.size(); ++i) {
    const auto& spec = children[i];
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      const std::string entry = *e;
      const std::string name = entry.substr(0, entry.find('='));
      bool changed = false;
      for (const auto& [k, v] : spec.env) changed = changed || k == name;
      if (!changed) env.push_back(entry);
    }
    for (const auto& [k, v] : spec.env)
      if (v) env.push_back(k + "=" + *v);
    std::vector<char*> envp, argv;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = spec.argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string out = (dir.path() / ("child" + std::to_string(i) + ".txt")).string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      for (pid_t p : pids) {
        ::kill(p, SIGKILL);
        ::waitpid(p, nullptr, 0);
      }
      throw std::runtime_error("posix_spawn " + spec.argv.at(0) + ": " + std::strerror(rc));
    }
    pids.push_back(pid);
  }
  std::size_t running = pids.size();
  std::vector<bool> done(pids.size(), false);
  while (running > 0) {
    for (std::size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      int status = 0;
      if (::waitpid(pids[i], &status, WNOHANG) != pids[i]) continue;
      done[i] = true;
      --running;
      results[i].seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (WIFEXITED(status)) results[i].exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) results[i].signal = WTERMSIG(status);
    }
    if (running > 0 && Clock::now() - start > limit) {
      for (std::size_t i = 0; i < pids.size(); ++i) {
        if (done[i]) continue;
        ::kill(pids[i], SIGKILL);
        ::waitpid(pids[i], nullptr, 0);
        results[i].timed_out = true;
        results[i].signal = SIGKILL;
        results[i].seconds = std::chrono::duration<double>(Clock::now() - start).count();
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (std::size_t i = 0; i < pids.size(); ++i) {
    std::ifstream in(dir.path() / ("child" + std::to_string(i) + ".txt"));
    std::ostringstream text;
    text << in.rdbuf();
    results[i].output = text.str();
  }
  return results;
}

std::string nccl_rank_program() {
  if (const char* p = std::getenv("KILN_NCCL_RANK_PROGRAM"); p && *p) return p;
  return KILN_NCCL_RANK_PROGRAM;
}

}  // namespace kiln::test
