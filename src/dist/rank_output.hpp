#pragma once
// What the ranks say, as the launcher shows it: rank 0's lines as they are, the others' prefixed
// "[rank N]", an error every rank says shown once, mpirun's own noise left out, and each rank's
// last lines kept for the report of a failure.

#include <cstddef>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rank_process.hpp"

namespace gputrain::dist {

/// mpirun's own lines that say nothing the launcher's report does not: its banners on how the job
/// ended (MPI_Abort, which a failed rank calls on purpose to end the job; a rank that exited
/// non-zero, 130 after a clean Ctrl-C included; a rank killed by a signal) and the errors of its
/// help system when several ranks abort at once. They are still read for the report
/// (parse_mpirun_failure).
class MpirunNoise {
 public:
  /// The lines to show for mpirun's `line`: a rule of dashes is held back until the next line says
  /// whether it opens one of those banners.
  std::vector<std::string> shown(const std::string& line);
  /// A rule still held back when mpirun's output ends.
  std::vector<std::string> rest();

 private:
  bool in_banner_ = false;
  std::string held_rule_;
};

/// The ranks' output on its way to the console (stderr), and what the launcher's report needs of it.
class RankOutput {
 public:
  /// `ranks` on this node, the first of them rank `first_rank` of the run (node_rank x ranks).
  RankOutput(int ranks, int tail_lines, int first_rank = 0);

  /// Reads what `c` has written so far, without blocking, and shows its whole lines; closes its
  /// pipe at its end.
  void drain(Child& c);
  /// Shows `c`'s unfinished last line and what mpirun held back.
  void flush(Child& c);
  /// One line from a child. mpirun's (--tag-output) puts "[1,R]<stderr>:" before every write of
  /// rank R, so a line written in pieces carries several tags; a line without one is mpirun's own.
  void line(const Child& from, const std::string& text);
  /// One line of the rank at `rank` on this node. Every rank reads the same config and data, so a mistake in them
  /// stops every rank with the same error: each error and fix line is shown once, by the first
  /// rank to say it.
  void rank_line(int rank, const std::string& body);

  /// A rank failed and the launcher is stopping the others.
  void ending_after_failure() { ending_after_failure_ = true; }
  /// The user stopped the job (a signal to the launcher): each rank's "interrupted" error is news.
  void user_stopped();
  /// The ranks have ended: a rank's "interrupted" error held back (it was stopped in its set-up
  /// by no signal of the user's) is shown unless another rank `failed`, which stopped it.
  void finish(bool failed);
  /// Whether every rank said the same error: a mistake in the config or data they share, not
  /// one rank's failure.
  bool every_rank_said_one_error() const;
  /// A rank's last lines (at most tail_lines).
  const std::deque<std::string>& tail(int rank) const { return tails_.at(static_cast<std::size_t>(rank)); }
  /// What mpirun itself said, for parse_mpirun_failure.
  const std::string& mpirun_text() const { return mpirun_text_; }
  /// Whether the console's last lines are `rank`'s last lines already: its tail would repeat them.
  bool last_on_screen(int rank) const;

 private:
  void echo(const std::string& text);
  // The console's part of rank_line: an error line said before is not repeated; other ranks' lines
  // get their "[rank N]".
  void show(int rank, bool known, const std::string& body);

  std::vector<std::deque<std::string>> tails_;
  std::vector<std::size_t> on_screen_at_;             // per rank: the console line its last line is (or repeats)
  std::map<std::string, std::size_t> errors_shown_;   // error and fix lines on the console, and where
  std::map<std::string, std::set<int>> error_ranks_;  // each error line, and the ranks that said it
  std::size_t echoed_ = 0;                            // lines written to the console so far
  bool ending_after_failure_ = false;
  bool user_stopped_ = false;
  std::vector<std::pair<int, std::string>> held_stops_;  // "interrupted" errors and their fixes, by rank
  std::set<int> holding_fix_;                            // ranks whose next fix line is held with their error
  MpirunNoise noise_;
  int tail_lines_;
  int first_rank_;  // added to a rank's place on this node to tell people its rank in the run
  std::string mpirun_text_;
  std::map<int, std::string> pieces_;  // a rank's line so far, when mpirun split it
  int last_rank_ = -1;
};

}  // namespace gputrain::dist
