// cohort-swap: a backend-swap experiment as one command. Runs a training program (or a zoo model)
// under cohortrun once per communicator backend x rank count x round, in alternating order, reads
// the RunReport each run leaves (COHORT_RUN_REPORT: the Trainer writes it), and writes one table
// (medians over the rounds: images/s, step ms, comm ms, the weights digest and whether it equals
// the first backend's at that rank count) and one plot.
//
//   cohort-swap [--backends shm,ucx,hier] [--nproc 2[,4]] [--rounds 3] [--out DIR]
//               (--model NAME -- [ARGS...] | -- PROGRAM [ARGS...])
//
// A backend entry is NAME[@HOSTS][+VAR=VALUE...]: NAME goes to the program as COHORT_COMM,
// @HOSTS runs the ranks as that many simulated hosts (cohortrun --simulate-hosts), and each
// +VAR=VALUE is set in the ranks' environment (ucx+UCX_TLS=tcp: ucx over TCP). The whole entry
// is the row's label.
//
// Rounds alternate: round k starts at the k-th cell of the list and wraps around, so no backend
// always runs first (a shared machine's drift falls on all of them). Every run's output is kept
// in DIR/logs/, its report in DIR/runs/, every figure in DIR/swap.csv; the table in DIR/swap.md
// and on stdout; the plot (DIR/swap.png) through share/cohort/tools/plot_swap.py and Debian's
// python3-matplotlib.
//
// Exit status: 0; 1 when a run fails, times out or leaves no report (the cell, the exit and the
// log's last lines are printed); 2 for bad arguments; 3 with --expect-equal when a digest differs
// from the first backend's at its rank count, varies over rounds, or the ranks of a run disagree.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cohort/collectives/registry.hpp"
#include "cohort/train/run_report.hpp"

namespace fs = std::filesystem;

namespace {

struct Spec {
  std::string label;    // as given
  std::string backend;  // COHORT_COMM
  int hosts = 0;        // --simulate-hosts (0: off)
  std::vector<std::pair<std::string, std::string>> env;
};

struct Cell {
  const Spec* spec;
  int nproc;
};

struct Run {
  int round = 0;
  cohort::train::RunReport report;
};

volatile sig_atomic_t g_stop = 0;
void on_signal(int sig) { g_stop = sig; }

[[noreturn]] void die_usage(const std::string& msg) {
  std::fprintf(stderr, "cohort-swap: %s (see cohort-swap --help)\n", msg.c_str());
  std::exit(2);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  return out;
}

Spec parse_spec(const std::string& entry, const std::vector<std::string>& known) {
  Spec s;
  s.label = entry;
  const auto parts = split(entry, '+');
  if (entry.empty() || parts.empty() || parts[0].empty())
    die_usage("--backends: empty entry in the list");
  std::string head = parts[0];
  if (const auto at = head.find('@'); at != std::string::npos) {
    const std::string h = head.substr(at + 1);
    char* end = nullptr;
    const long v = std::strtol(h.c_str(), &end, 10);
    if (h.empty() || *end != '\0' || v < 1 || v > 4096)
      die_usage("--backends " + entry + ": '@" + h + "' is not a host count (1..4096)");
    s.hosts = static_cast<int>(v);
    head = head.substr(0, at);
  }
  s.backend = head;
  if (std::find(known.begin(), known.end(), head) == known.end()) {
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    die_usage("--backends " + entry + ": no backend '" + head + "' in this build (" + list + ")");
  }
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const auto eq = parts[i].find('=');
    if (eq == std::string::npos || eq == 0)
      die_usage("--backends " + entry + ": '+" + parts[i] + "' is not VAR=VALUE");
    s.env.emplace_back(parts[i].substr(0, eq), parts[i].substr(eq + 1));
  }
  return s;
}

std::string exe_dir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  return fs::path(buf).parent_path().string();
}

// The first of `candidates` that exists, else "".
std::string first_existing(const std::vector<std::string>& candidates) {
  for (const auto& c : candidates)
    if (::access(c.c_str(), F_OK) == 0) return c;
  return "";
}

std::string tail_lines(const std::string& path, int n) {
  std::ifstream f(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(f, l);) lines.push_back(l);
  std::string out;
  for (std::size_t i = lines.size() > static_cast<std::size_t>(n) ? lines.size() - n : 0;
       i < lines.size(); ++i)
    out += "    " + lines[i] + "\n";
  return out;
}

// Runs argv with its output in `log` and `env` added; returns the wait status, or -1 on timeout.
// The child leads its own process group (cohortrun forwards our SIGTERM to its ranks).
int run_logged(const std::vector<std::string>& argv,
               const std::vector<std::pair<std::string, std::string>>& env, const std::string& log,
               double timeout_s) {
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("cohort-swap: fork");
    std::exit(1);
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out < 0 || in < 0) {
      std::fprintf(stderr, "cohort-swap: cannot open %s: %s\n", log.c_str(), std::strerror(errno));
      ::_exit(127);
    }
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    std::fprintf(stderr, "cohort-swap: cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  const auto t0 = std::chrono::steady_clock::now();
  bool killed = false;
  for (;;) {
    int status = 0;
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) return killed ? -1 : status;
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!killed && (g_stop || t > timeout_s)) {
      ::kill(-pid, SIGTERM);  // cohortrun stops its ranks (SIGKILL after its --kill-grace)
      killed = true;
    }
    if (killed && t > timeout_s + 30) ::kill(-pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string how(int status) {
  if (status == -1) return "timed out (--timeout) or was interrupted";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by ") + strsignal(WTERMSIG(status));
  return "ended with wait status " + std::to_string(status);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  // Everything after the first "--" is the program and its arguments (or, with --model, the zoo
  // program's extra arguments), passed on untouched.
  std::vector<std::string> command;
  int own = argc;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--") {
      own = i;
      for (int k = i + 1; k < argc; ++k) command.emplace_back(argv[k]);
      break;
    }

  std::string backends = "shm,ucx,hier", nprocs = "2", out = "swap-results", model;
  int rounds = 3;
  double timeout_s = 600;
  bool no_plot = false, expect_equal = false;
  CLI::App app{
      "cohort-swap: the same training run over communicator backends and rank counts, in "
      "alternating rounds; one table and one plot (docs/PARALLEL.md, \"Backend-swap "
      "experiments\")\n\n"
      "  cohort-swap [options] -- PROGRAM [ARGS...]\n"
      "  cohort-swap [options] --model NAME [-- ARGS...]   (the model zoo's cifar_cnn)\n\n"
      "The program must train with cohort::train::Trainer (or write a RunReport itself) and take "
      "its backend from COHORT_COMM: pass no --comm.",
      "cohort-swap"};
  app.add_option("--backends", backends,
                 "comma-separated NAME[@HOSTS][+VAR=VALUE...]: hier@2 simulates 2 hosts, "
                 "ucx+UCX_TLS=tcp sets UCX_TLS for the ranks")
      ->capture_default_str();
  app.add_option("--nproc", nprocs, "comma-separated rank counts (cohortrun --nproc-per-node)")
      ->capture_default_str();
  app.add_option("--rounds", rounds, "runs of every cell, in alternating order; medians are shown")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--out", out, "directory for swap.md, swap.csv, swap.png, logs/ and runs/")
      ->capture_default_str();
  app.add_option("--model", model, "a zoo model (cnn_a, resnet9, vit, ...): runs cifar_cnn --model NAME");
  app.add_option("--timeout", timeout_s, "seconds one run may take before it is stopped")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  app.add_flag("--no-plot", no_plot, "write no swap.png (no python3-matplotlib needed)");
  app.add_flag("--expect-equal", expect_equal,
               "exit 3 unless every backend's weights digest equals the first's at each rank count "
               "(use with the program's deterministic mode at 3+ ranks)");
  try {
    app.parse(own, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    die_usage(e.what());
  }

  std::vector<std::string> known;
  for (const auto& f : cohort::comm::communicator_factories()) known.push_back(f.name);
  known.push_back("auto");
  std::vector<Spec> specs;
  for (const auto& e : split(backends, ',')) specs.push_back(parse_spec(e, known));
  if (specs.empty()) die_usage("--backends is empty");
  std::vector<int> ranks;
  for (const auto& n : split(nprocs, ',')) {
    char* end = nullptr;
    const long v = std::strtol(n.c_str(), &end, 10);
    if (n.empty() || *end != '\0' || v < 1 || v > 4096)
      die_usage("--nproc: '" + n + "' is not a rank count (1..4096)");
    ranks.push_back(static_cast<int>(v));
  }
  for (const auto& s : specs)
    for (int n : ranks)
      if (s.hosts > n)
        die_usage("--backends " + s.label + " at --nproc " + std::to_string(n) + ": " +
                  std::to_string(s.hosts) + " simulated hosts need at least as many ranks");

  const std::string dir = exe_dir();
  const std::string cohortrun = first_existing({dir + "/cohortrun"});
  if (cohortrun.empty()) {
    std::fprintf(stderr, "cohort-swap: no cohortrun beside %s/cohort-swap\n", dir.c_str());
    return 1;
  }
  std::vector<std::string> program;
  if (!model.empty()) {
    const std::string zoo =
        first_existing({dir + "/cifar_cnn", dir + "/../libexec/cohort/cifar_cnn"});
    if (zoo.empty()) {
      std::fprintf(stderr,
                   "cohort-swap: --model needs the zoo program cifar_cnn, found neither in %s nor "
                   "in %s/../libexec/cohort\n",
                   dir.c_str(), dir.c_str());
      return 1;
    }
    program = {zoo, "--model", model};
    program.insert(program.end(), command.begin(), command.end());
  } else {
    if (command.empty()) die_usage("no program: give -- PROGRAM [ARGS...] or --model NAME");
    program = command;
  }
  for (const auto& a : program)
    if (a == "--comm" || a.rfind("--comm=", 0) == 0)
      die_usage("the program's arguments hold " + a +
                ": cohort-swap sets the backend through COHORT_COMM, and --comm would override it");

  fs::create_directories(fs::path(out) / "logs");
  fs::create_directories(fs::path(out) / "runs");
  std::vector<Cell> cells;
  for (int n : ranks)
    for (const auto& s : specs) cells.push_back({&s, n});
  const auto name = [](const Cell& c, int round) {
    std::string l = c.spec->label;
    for (char& ch : l)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_') ch = '_';
    return l + "_np" + std::to_string(c.nproc) + "_r" + std::to_string(round);
  };

  ::signal(SIGINT, on_signal);
  ::signal(SIGTERM, on_signal);
  std::string cmdline;
  for (const auto& a : program) cmdline += (cmdline.empty() ? "" : " ") + a;
  std::printf("cohort-swap: %zu cells x %d rounds of: %s\n", cells.size(), rounds,
              cmdline.c_str());
  std::fflush(stdout);
  std::map<std::size_t, std::vector<Run>> runs;  // by cell
  for (int round = 1; round <= rounds; ++round) {
    for (std::size_t j = 0; j < cells.size(); ++j) {
      const std::size_t ci = (j + static_cast<std::size_t>(round - 1)) % cells.size();
      const Cell& c = cells[ci];
      const std::string base = name(c, round);
      const std::string log = (fs::path(out) / "logs" / (base + ".log")).string();
      const std::string report = (fs::path(out) / "runs" / (base + ".json")).string();
      std::remove(report.c_str());
      std::vector<std::string> args = {cohortrun, "--nproc-per-node", std::to_string(c.nproc),
                                       "--master-port", "0"};
      if (c.spec->hosts > 0) {
        args.push_back("--simulate-hosts");
        args.push_back(std::to_string(c.spec->hosts));
      }
      args.insert(args.end(), program.begin(), program.end());
      auto env = c.spec->env;
      env.emplace_back("COHORT_COMM", c.spec->backend);
      env.emplace_back("COHORT_RUN_REPORT", report);
      const auto t0 = std::chrono::steady_clock::now();
      const int status = run_logged(args, env, log, timeout_s);
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (g_stop) {
        std::fprintf(stderr, "cohort-swap: interrupted during %s (%s); stopped\n", base.c_str(),
                     log.c_str());
        return 128 + g_stop;
      }
      if (status != 0) {
        std::fprintf(stderr, "cohort-swap: %s at %d ranks, round %d %s after %.1f s; the last "
                     "lines of %s:\n%s",
                     c.spec->label.c_str(), c.nproc, round, how(status).c_str(), secs, log.c_str(),
                     tail_lines(log, 12).c_str());
        return 1;
      }
      Run r;
      r.round = round;
      try {
        r.report = cohort::train::read_run_report(report);
      } catch (const std::exception& e) {
        std::fprintf(stderr,
                     "cohort-swap: %s at %d ranks, round %d: %s\n    (the program must train with "
                     "cohort::train::Trainer, which writes COHORT_RUN_REPORT, or call "
                     "write_run_report; its output: %s)\n",
                     c.spec->label.c_str(), c.nproc, round, e.what(), log.c_str());
        return 1;
      }
      if ((c.spec->backend != "auto" && r.report.backend != c.spec->backend) ||
          r.report.world_size != c.nproc) {
        std::fprintf(stderr,
                     "cohort-swap: %s at %d ranks, round %d: the program ran on %s with %d ranks "
                     "(does it ignore COHORT_COMM, or split its ranks?); %s\n",
                     c.spec->label.c_str(), c.nproc, round, r.report.backend.c_str(),
                     r.report.world_size, log.c_str());
        return 1;
      }
      std::printf("  round %d/%d  %-18s %2d ranks  %8.1f images/s  %6.1f s\n", round, rounds,
                  c.spec->label.c_str(), c.nproc, r.report.images_per_s, secs);
      std::fflush(stdout);
      runs[ci].push_back(r);
    }
  }

  // Every run's figures.
  {
    std::ofstream csv(fs::path(out) / "swap.csv");
    csv << "label,backend,ranks,round,images_per_s,step_ms,comm_ms,overlap_ms,final_loss,"
           "deterministic,digest,weights_identical\n";
    for (std::size_t ci = 0; ci < cells.size(); ++ci)
      for (const auto& r : runs[ci])
        csv << cells[ci].spec->label << "," << r.report.backend << "," << cells[ci].nproc << ","
            << r.round << "," << r.report.images_per_s << "," << r.report.step_ms << ","
            << r.report.comm_ms << "," << r.report.overlap_ms << "," << r.report.final_loss
            << "," << (r.report.deterministic ? 1 : 0) << "," << r.report.digest << ","
            << (r.report.weights_identical ? 1 : 0) << "\n";
  }

  // The table: medians per cell; the digest against the first backend's at the same rank count.
  std::ostringstream md;
  md << "| backend | ranks | images/s | spread | step ms | comm ms | overlap ms | final loss | "
        "weights digest | equal |\n|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n";
  bool all_equal = true, varied = false, undetermined_3 = false;
  std::map<int, std::string> ref;  // rank count -> the first backend's digest
  for (std::size_t ci = 0; ci < cells.size(); ++ci) {
    const Cell& c = cells[ci];
    const auto& rs = runs[ci];
    std::vector<double> ips, step, comm, ovl;
    bool same_rounds = true, ranks_agree = true;
    for (const auto& r : rs) {
      ips.push_back(r.report.images_per_s);
      step.push_back(r.report.step_ms);
      comm.push_back(r.report.comm_ms);
      ovl.push_back(r.report.overlap_ms);
      same_rounds = same_rounds && r.report.digest == rs.front().report.digest;
      ranks_agree = ranks_agree && r.report.weights_identical;
      if (c.nproc >= 3 && !r.report.deterministic) undetermined_3 = true;
    }
    const std::string digest = same_rounds ? rs.front().report.digest : "varies";
    std::string equal;
    if (!ranks_agree) {
      equal = "NO: ranks differ";
    } else if (!same_rounds) {
      equal = "NO: varies over rounds";
      varied = true;
    } else if (!ref.count(c.nproc)) {
      ref[c.nproc] = digest;
      equal = "reference";
    } else {
      equal = digest == ref[c.nproc] ? "yes" : "NO";
    }
    if (equal.rfind("NO", 0) == 0) all_equal = false;
    const double m = median(ips);
    const double spread =
        m > 0 ? 100.0 * (*std::max_element(ips.begin(), ips.end()) -
                         *std::min_element(ips.begin(), ips.end())) / m
              : 0.0;
    md << "| " << c.spec->label << " | " << c.nproc << " | " << fmt("%.1f", m) << " | "
       << fmt("%.1f%%", spread) << " | " << fmt("%.2f", median(step)) << " | "
       << fmt("%.2f", median(comm)) << " | " << fmt("%.2f", median(ovl)) << " | "
       << fmt("%.6f", rs.back().report.final_loss) << " | " << digest << " | " << equal << " |\n";
  }
  md << "\n" << rounds << " round(s), alternating order; medians. spread: (max - min) / median of "
     << "images/s over the rounds. comm ms: waiting for gradient all-reduces after the backward "
     << "(mostly one rank waiting for a slower one); overlap ms: all-reduce time hidden under the "
     << "backward.\n";
  if (!all_equal && undetermined_3)
    md << "\nDigests may differ at 3+ ranks without DDP's deterministic mode (the program's "
          "--deterministic): a sum of three or more is not order-free in floating point.\n";
  {
    std::ofstream f(fs::path(out) / "swap.md");
    f << "cohort-swap: " << cmdline << "\n\n" << md.str();
  }
  std::printf("\n%s\nwrote %s/swap.md and %s/swap.csv\n", md.str().c_str(), out.c_str(),
              out.c_str());
  std::fflush(stdout);

  if (!no_plot) {
    const std::string script = first_existing({dir + "/../share/cohort/tools/plot_swap.py",
                                               std::string(COHORT_SOURCE_DIR) + "/tools/plot_swap.py"});
    if (script.empty()) {
      std::fprintf(stderr, "cohort-swap: plot_swap.py is in neither %s/../share/cohort/tools nor "
                           "%s/tools; --no-plot skips the plot\n",
                   dir.c_str(), COHORT_SOURCE_DIR);
      return 1;
    }
    const std::string png = (fs::path(out) / "swap.png").string();
    const std::string csv = (fs::path(out) / "swap.csv").string();
    const std::string log = (fs::path(out) / "logs" / "plot.log").string();
    const int status = run_logged({"/usr/bin/python3", script, csv, png}, {}, log, 300);
    if (status != 0) {
      std::fprintf(stderr,
                   "cohort-swap: the plot %s (/usr/bin/python3 %s); it needs Debian's "
                   "python3-matplotlib; the table is written, --no-plot skips the plot. The "
                   "last lines of %s:\n%s",
                   how(status).c_str(), script.c_str(), log.c_str(), tail_lines(log, 6).c_str());
      return 1;
    }
    std::printf("wrote %s\n", png.c_str());
  }
  if (expect_equal && (!all_equal || varied)) {
    std::fprintf(stderr, "cohort-swap: --expect-equal: the weights digests differ (see the "
                         "table's 'equal' column)\n");
    return 3;
  }
  return 0;
}
