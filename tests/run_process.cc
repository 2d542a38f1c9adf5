#include "run_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <stdexcept>

extern char** environ;

namespace evident::testing {

pid_t StartProcess(const std::vector<std::string>& argv, ChildFds fds,
                   const std::vector<int>& close_in_child,
                   const std::vector<std::pair<std::string, std::optional<std::string>>>& env) {
  // Everything the child needs is built before fork: between fork and exec only
  // async-signal-safe calls.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [n, v] : env) replaced = replaced || n == name;
    if (!replaced) environment.push_back(entry);
  }
  for (const auto& [name, value] : env) {
    if (value) environment.push_back(name + "=" + *value);
  }
  std::vector<char*> envp;
  for (std::string& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::cout.flush();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  signal(SIGPIPE, SIG_DFL);
  const int targets[3] = {fds.in, fds.out, fds.err};
  for (int i = 0; i < 3; ++i) {
    if (targets[i] >= 0 && targets[i] != i) dup2(targets[i], i);
  }
  for (int fd : targets) {
    if (fd > 2) close(fd);
  }
  for (int fd : close_in_child) close(fd);
  execve(args[0], args.data(), envp.data());
  _exit(127);
}

int RunAndKill(const std::vector<std::string>& argv, const std::string& fault,
               int64_t kill_after_us, const std::string& log_path) {
  const int log_fd = log_path.empty()
                         ? open("/dev/null", O_WRONLY | O_CLOEXEC)
                         : open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const pid_t pid = StartProcess(
      argv, {.out = log_fd, .err = log_fd}, {},
      {{"EVIDENT_FAULT_POINT", fault.empty() ? std::nullopt : std::optional<std::string>(fault)}});
  if (log_fd >= 0) close(log_fd);
  if (pid < 0) return -1;
  if (kill_after_us >= 0) {
    usleep(static_cast<useconds_t>(kill_after_us));
    kill(pid, SIGKILL);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

ProcessResult RunProcess(const std::vector<std::string>& argv, const std::string& input) {
  // A child that exits before reading its input (a usage error) closes the pipe: writing to it
  // must fail with EPIPE, handled below, not kill the test with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe(in_pipe) != 0 || pipe(out_pipe) != 0 || pipe(err_pipe) != 0) {
    throw std::runtime_error("pipe failed");
  }
  const pid_t pid = StartProcess(argv, {in_pipe[0], out_pipe[1], err_pipe[1]},
                                 {in_pipe[1], out_pipe[0], err_pipe[0]});
  if (pid < 0) throw std::runtime_error("fork failed");
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);
  ProcessResult result;
  size_t written = 0;
  bool in_open = true, out_open = true, err_open = true;
  if (input.empty()) {
    close(in_pipe[1]);
    in_open = false;
  }
  char buffer[65536];
  while (out_open || err_open) {
    pollfd fds[3];
    int n = 0;
    if (out_open) fds[n++] = {out_pipe[0], POLLIN, 0};
    if (err_open) fds[n++] = {err_pipe[0], POLLIN, 0};
    if (in_open) fds[n++] = {in_pipe[1], POLLOUT, 0};
    poll(fds, n, -1);
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == in_pipe[1]) {
        const ssize_t w = write(in_pipe[1], input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 || written == input.size()) {
          close(in_pipe[1]);
          in_open = false;
        }
        continue;
      }
      const ssize_t r = read(fds[i].fd, buffer, sizeof buffer);
      if (r <= 0) {
        close(fds[i].fd);
        (fds[i].fd == out_pipe[0] ? out_open : err_open) = false;
      } else {
        (fds[i].fd == out_pipe[0] ? result.out : result.err).append(buffer, static_cast<size_t>(r));
      }
    }
  }
  if (in_open) close(in_pipe[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

ProcessResult RunEvident(const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> argv = {EVIDENT_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, input);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string SourcePath(const std::string& relative) {
  return std::string(EVIDENT_SOURCE_DIR) + "/" + relative;
}

}  // namespace evident::testing
