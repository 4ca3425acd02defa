#include "repo_fixture.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>

namespace portdiff_test {
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

CommandResult run_command(const std::string& command) {
  char pattern[] = "/tmp/portdiff-cmd-XXXXXX";
  const fs::path scratch = mkdtemp(pattern);
  const std::string full = "(" + command + ") >" + shell_quote((scratch / "out").string()) + " 2>" +
                           shell_quote((scratch / "err").string());
  const int status = std::system(full.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = slurp(scratch / "out");
  result.err = slurp(scratch / "err");
  fs::remove_all(scratch);
  return result;
}

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

CommandResult run_portdiff(const std::vector<std::string>& args) {
  std::string command = shell_quote(PORTDIFF_EXE);
  for (const std::string& arg : args) command += " " + shell_quote(arg);
  return run_command(command);
}

TempRepo::TempRepo() {
  char pattern[] = "/tmp/portdiff-repo-XXXXXX";
  dir_ = mkdtemp(pattern);
  git("init -q -b main .");
  git("config user.name portdiff-test");
  git("config user.email test@example.com");
  git("config core.autocrlf false");
  git("config commit.gpgsign false");
}

TempRepo::~TempRepo() { fs::remove_all(dir_); }

std::string TempRepo::git(const std::string& args) const {
  const CommandResult result = run_command(
      "GIT_AUTHOR_DATE=2024-01-01T00:00:00Z GIT_COMMITTER_DATE=2024-01-01T00:00:00Z "
      "git -C " +
      shell_quote(dir_) + " " + args);
  EXPECT_EQ(result.exit_code, 0) << "git " << args << ": " << result.err;
  return result.out;
}

void TempRepo::apply(const Edit& edit) const {
  for (const auto& [path, content] : edit) {
    const fs::path file = fs::path(dir_) / path;
    if (!content) {
      fs::remove(file);
      continue;
    }
    fs::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << *content;
  }
}

void TempRepo::set_executable(const std::string& path, bool executable) const {
  ::chmod((fs::path(dir_) / path).c_str(), executable ? 0755 : 0644);
}

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

std::string TempRepo::rev(const std::string& spec) const {
  std::string sha = git("rev-parse " + spec);
  sha.pop_back();
  return sha;
}

std::string TempRepo::commit(const std::string& message) const {
  git("add -A");
  git("commit -q --allow-empty -m " + shell_quote(message));
  std::string sha = git("rev-parse HEAD");
  sha.pop_back();  // the '\n'
  return sha;
}

Ports make_ports(const TempRepo& repo, const Edit& base, const Edit& source_change,
                 const Edit& target_baseline, const Edit& target_change) {
  repo.apply(base);
  const std::string base_sha = repo.commit("base");
  repo.git("checkout -q -b source " + base_sha);
  repo.apply(source_change);
  const std::string source_head = repo.commit("change");
  repo.git("checkout -q -b target " + base_sha);
  repo.apply(target_baseline);
  const std::string target_base = repo.commit("target baseline");
  repo.apply(target_change);
  const std::string target_head = repo.commit("change (port)");
  return {base_sha + ".." + source_head, target_base + ".." + target_head};
}

}  // namespace portdiff_test
