#include "rank_output.hpp"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <regex>
#include <utility>

#include "gputrain/core/stop_signal.hpp"

namespace gputrain::dist {
namespace {

bool is_rule(const std::string& line) { return line.size() > 20 && line.find_first_not_of('-') == std::string::npos; }

}  // namespace

std::vector<std::string> MpirunNoise::shown(const std::string& line) {
  if (in_banner_) {
    in_banner_ = !is_rule(line);
    return {};
  }
  // How the job ended, in mpirun's words: the launcher says it itself (the failed rank and how,
  // or the interruption and the checkpoint).
  static const char* const banner_starts[] = {"MPI_ABORT was invoked on rank ", "Primary job  terminated normally",
                                              "Primary job terminated normally", "mpirun detected that one or more processes exited",
                                              "mpirun noticed that process rank "};
  for (const char* start : banner_starts) {
    if (line.rfind(start, 0) == 0) {
      in_banner_ = true;
      held_rule_.clear();
      return {};
    }
  }
  auto out = rest();
  const bool help_error = line.find("ORTE_ERROR_LOG") != std::string::npos ||
                          line.find("has sent help message help-mpi-api.txt / mpi-abort") != std::string::npos ||
                          line.find("orte_base_help_aggregate") != std::string::npos;
  if (is_rule(line))
    held_rule_ = line;
  else if (!help_error)
    out.push_back(line);
  return out;
}

std::vector<std::string> MpirunNoise::rest() {
  if (held_rule_.empty()) return {};
  return {std::exchange(held_rule_, std::string())};
}

RankOutput::RankOutput(int ranks, int tail_lines, int first_rank)
    : tails_(static_cast<std::size_t>(ranks)),
      on_screen_at_(static_cast<std::size_t>(ranks), 0),
      tail_lines_(tail_lines),
      first_rank_(first_rank) {}

void RankOutput::rank_line(int rank, const std::string& body) {
  const bool known = rank >= 0 && static_cast<std::size_t>(rank) < tails_.size();
  if (known) {
    auto& tail = tails_[static_cast<std::size_t>(rank)];
    tail.push_back(body);
    if (static_cast<int>(tail.size()) > tail_lines_) tail.pop_front();
  }
  // Once a rank has failed, the launcher's SIGTERM to the others makes each announce a stop
  // (core::kStopAnnouncement: a blank line, then its words): noise beside the failure, which is
  // what ends the job.
  static const std::string announcement(core::kStopAnnouncement + 1, sizeof core::kStopAnnouncement - 3);
  if (ending_after_failure_ && (body.empty() || body == announcement)) return;
  // A rank stopped in its set-up says "interrupted while ..." (exit 130). Unless the user stopped
  // the job, what stopped it was another rank's failure (the launcher's SIGTERM, or mpirun's),
  // whose error may reach the console later: held back until the end says which.
  const bool held_fix = holding_fix_.erase(rank) > 0 && body.rfind("  fix: ", 0) == 0;
  if (!user_stopped_ && known && (held_fix || body.rfind("error: interrupted while ", 0) == 0)) {
    held_stops_.emplace_back(rank, body);
    if (!held_fix) holding_fix_.insert(rank);
    return;
  }
  show(rank, known, body);
}

void RankOutput::show(int rank, bool known, const std::string& body) {
  const bool error_line = body.rfind("error: ", 0) == 0 || body.rfind("  fix: ", 0) == 0;
  if (known && body.rfind("error: ", 0) == 0) error_ranks_[body].insert(rank);
  if (error_line) {
    if (const auto shown = errors_shown_.find(body); shown != errors_shown_.end()) {
      if (known) on_screen_at_[static_cast<std::size_t>(rank)] = shown->second;
      return;
    }
  }
  if (first_rank_ + rank == 0)
    echo(body);
  else
    echo("[rank " + std::to_string(first_rank_ + rank) + "] " + body);
  if (error_line) errors_shown_[body] = echoed_;
  if (known) on_screen_at_[static_cast<std::size_t>(rank)] = echoed_;
}

void RankOutput::line(const Child& from, const std::string& text) {
  if (from.rank >= 0) return rank_line(from.rank, text);
  static const std::regex tag(R"(\[\d+,(\d+)\]<std(?:out|err)>:)");
  auto it = std::sregex_iterator(text.begin(), text.end(), tag);
  if (it == std::sregex_iterator()) {
    mpirun_text_ += text + "\n";
    for (const auto& shown : noise_.shown(text)) echo(shown);
    return;
  }
  int rank = last_rank_;
  std::size_t position = 0;
  for (; it != std::sregex_iterator(); ++it) {
    if (rank >= 0) pieces_[rank] += text.substr(position, static_cast<std::size_t>(it->position()) - position);
    rank = std::stoi((*it)[1]);
    position = static_cast<std::size_t>(it->position() + it->length());
  }
  pieces_[rank] += text.substr(position);
  last_rank_ = rank;
  rank_line(rank, pieces_[rank]);
  pieces_[rank].clear();
}

void RankOutput::drain(Child& c) {
  char buffer[8192];
  while (true) {
    if (c.fd < 0) return;
    const ssize_t n = read(c.fd, buffer, sizeof buffer);
    if (n == 0) {  // the child closed its end: it has exited or is about to
      close(c.fd);
      c.fd = -1;
      return;
    }
    if (n < 0) return;  // EAGAIN: nothing more for now
    c.partial.append(buffer, static_cast<std::size_t>(n));
    std::size_t start = 0, end;
    while ((end = c.partial.find('\n', start)) != std::string::npos) {
      line(c, c.partial.substr(start, end - start));
      start = end + 1;
    }
    c.partial.erase(0, start);
  }
}

void RankOutput::flush(Child& c) {
  if (!c.partial.empty()) line(c, c.partial);
  c.partial.clear();
  for (const auto& shown : noise_.rest()) echo(shown);
}

void RankOutput::user_stopped() {
  user_stopped_ = true;
  finish(false);
}

void RankOutput::finish(bool failed) {
  const auto held = std::exchange(held_stops_, {});
  holding_fix_.clear();
  if (!failed)
    for (const auto& [rank, body] : held) show(rank, true, body);
}

bool RankOutput::every_rank_said_one_error() const {
  return std::any_of(error_ranks_.begin(), error_ranks_.end(), [&](const auto& said) { return said.second.size() == tails_.size(); });
}

bool RankOutput::last_on_screen(int rank) const {
  const auto at = on_screen_at_.at(static_cast<std::size_t>(rank));
  return at > 0 && at == echoed_;
}

void RankOutput::echo(const std::string& text) {
  std::cerr << text << "\n";
  ++echoed_;
}

}  // namespace gputrain::dist
