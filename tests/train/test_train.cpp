// Progress output, the ASCII chart, metrics JSON Lines, phase timing and Chrome traces, each
// checked against hand-written expectations or parsed back with an independent JSON parser.
#include <doctest/doctest.h>

#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "cohort/core/error.hpp"
#include "cohort/core/trace.hpp"
#include "cohort/train/ascii_plot.hpp"
#include "cohort/train/metrics.hpp"
#include "cohort/train/phase_timer.hpp"
#include "cohort/train/profile_trace.hpp"
#include "cohort/train/progress.hpp"

using namespace cohort::train;

namespace {
std::string temp_path(const std::string& name) {
  return "/tmp/cohort_train_test_" + std::to_string(::getpid()) + "_" + name;
}
std::string slurp(std::FILE* f) {
  std::rewind(f);
  std::string s;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}
}  // namespace

TEST_CASE("ascii_plot: a falling line, axis labels and bucketing") {
  const std::string p = ascii_plot({4, 3, 2, 1}, "loss", 60, 4);
  const std::string expect =
      "loss\n"
      "         4 |*   \n"
      "         3 | *  \n"
      "           |  * \n"
      "         1 |   *\n"
      "           +----\n"
      "            1  4\n";
  CHECK(p == expect);
  std::vector<double> many(1000);
  for (int i = 0; i < 1000; ++i) many[static_cast<std::size_t>(i)] = 1000 - i;
  const std::string q = ascii_plot(many, "t", 50, 10);
  CHECK(q.find(std::string(50, '-')) != std::string::npos);  // 50 columns for 1000 points
  CHECK(q.find("1000\n") != std::string::npos);
  CHECK(ascii_plot({}, "empty") == "empty\n(no data)\n");
  CHECK(ascii_plot({std::nan(""), 2.0}, "nan").find('*') != std::string::npos);
}

TEST_CASE("progress: plain lines every log interval when not a terminal") {
  std::FILE* f = std::tmpfile();
  ProgressBar bar(f, 2, /*tty=*/0);
  bar.start_epoch(1, 3, 5);
  for (int s = 0; s < 5; ++s) bar.update(s, 0.5 - 0.1 * s, 1000.0);
  bar.end_epoch();
  const std::string out = slurp(f);
  std::fclose(f);
  // steps 2, 4 and the last (5)
  CHECK(out.find("epoch 1/3 step 2/5 ( 40%) loss 0.4000 1000 img/s ETA ") == 0);
  CHECK(out.find("step 4/5") != std::string::npos);
  CHECK(out.find("step 5/5 (100%) loss 0.1000") != std::string::npos);
  CHECK(out.find("step 1/5") == std::string::npos);
  CHECK(std::count(out.begin(), out.end(), '\n') == 3);
  CHECK(ProgressBar::format_duration(3723) == "1:02:03");
  CHECK(ProgressBar::format_duration(62) == "01:02");
}

TEST_CASE("progress: one redrawn line on a terminal") {
  std::FILE* f = std::tmpfile();
  ProgressBar bar(f, 10, /*tty=*/1);
  bar.start_epoch(2, 2, 4);
  bar.update(1, 1.25, 50.0);
  bar.end_epoch();
  const std::string out = slurp(f);
  std::fclose(f);
  CHECK(out.find("\repoch 2/2 [############............] 2/4 loss 1.2500 50 img/s ETA") == 0);
  CHECK(out.back() == '\n');
}

TEST_CASE("metrics: JSON Lines that a JSON parser reads back") {
  const std::string path = temp_path("metrics.jsonl");
  {
    MetricsWriter w(path);
    w.write("train", {{"step", 10}, {"loss", 0.25}, {"lr", 1e-3}},
            {{"phase_ms", {{"forward", 1.5}}}});
    w.write("eval", {{"epoch", 1}, {"accuracy", 0.891}, {"bad", std::nan("")}});
  }
  std::ifstream in(path);
  std::string line;
  std::vector<nlohmann::json> rows;
  while (std::getline(in, line)) rows.push_back(nlohmann::json::parse(line));
  std::remove(path.c_str());
  REQUIRE(rows.size() == 2);
  CHECK(rows[0]["kind"] == "train");
  CHECK(rows[0]["step"] == 10);
  CHECK(rows[0]["loss"].get<double>() == 0.25);
  CHECK(rows[0]["lr"].get<double>() == doctest::Approx(1e-3));
  CHECK(rows[0]["phase_ms"]["forward"].get<double>() == 1.5);
  CHECK(rows[1]["accuracy"].get<double>() == doctest::Approx(0.891));
  CHECK(rows[1]["bad"].is_null());
  CHECK_THROWS_WITH_AS(MetricsWriter("/nonexistent/dir/m.jsonl"),
                       doctest::Contains("cannot open metrics file '/nonexistent/dir/m.jsonl'"),
                       cohort::Error);
}

TEST_CASE("phase timer: parts of a phase are shown under it and not counted twice") {
  PhaseTimer t;
  t.add("forward", 0.030);
  t.add("backward", 0.060);
  t.add_within("comm", "backward", 0.015);
  t.add("optimizer", 0.010);
  t.add_within("overlap", "backward", 0.005);
  t.add_within("orphan", "never_ran", 0.100);  // a parent that never ran: a phase of its own
  t.end_step();
  t.end_step();
  const std::string sum = t.summary();
  // step = 30 + 60 + 10 + 100 ms (comm and overlap are inside backward): 200 ms over 2 steps.
  CHECK(sum.find("total                     0.200    100.000  100.0%  (2 steps)") !=
        std::string::npos);
  CHECK(sum.find("  of which comm           0.015      7.500    7.5%") != std::string::npos);
  CHECK(sum.find("  of which overlap        0.005      2.500    2.5%") != std::string::npos);
  CHECK(sum.find("backward                  0.060     30.000   30.0%") != std::string::npos);
  CHECK(sum.find("orphan                    0.100     50.000   50.0%") != std::string::npos);
  // Order: each part right under its parent, before the next phase.
  CHECK(sum.find("backward") < sum.find("of which comm"));
  CHECK(sum.find("of which comm") < sum.find("of which overlap"));
  CHECK(sum.find("of which overlap") < sum.find("optimizer"));
  CHECK(t.mean_ms().at("comm") == doctest::Approx(7.5));
}

TEST_CASE("phase timer and Chrome trace") {
  cohort::trace::clear();
  cohort::trace::enable(true);
  cohort::trace::set_rank(1);
  PhaseTimer t;
  for (int step = 0; step < 2; ++step) {
    t.time("forward", [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); });
    t.time("comm", [] { return 0; }, "comm");
    t.end_step();
  }
  { cohort::trace::Span s("manual", "data"); }
  cohort::trace::enable(false);
  { cohort::trace::Span s("ignored"); }
  CHECK(t.steps() == 2);
  CHECK(t.total("forward") >= 0.004);
  CHECK(t.mean_ms().at("forward") >= 2.0);
  const std::string sum = t.summary();
  CHECK(sum.find("forward") < sum.find("comm"));  // order of first use
  CHECK(sum.find("(2 steps)") != std::string::npos);
  CHECK(cohort::trace::event_count() == 5);

  const std::string path = temp_path("trace.json");
  cohort::trace::write_chrome_trace(path);
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  std::remove(path.c_str());
  int spans = 0;
  std::set<int> tids;
  for (const auto& e : j["traceEvents"]) {
    CHECK(e["pid"] == 1);
    if (e["ph"] == "X") {
      ++spans;
      tids.insert(e["tid"].get<int>());
      CHECK(e["dur"].get<long long>() >= 0);
    }
  }
  CHECK(spans == 5);
  CHECK(tids.size() == 3);  // compute, comm, data tracks
  cohort::trace::clear();
  cohort::trace::set_rank(-1);
}

// The layout of torch.profiler.tensorboard_trace_handler, as torch-tb-profiler 0.4.3 reads it
// (its consts.WORKER_PATTERN and trace.create_trace_event): what each track becomes. The plugin's
// own reader runs on a real mnist_cnn run in train_profile_reader
// (tests/train/test_profile_trace.py).
TEST_CASE("profile trace: the PyTorch profiler plugin's file name, steps, DataLoader and comm") {
  namespace fs = std::filesystem;
  cohort::trace::clear();
  cohort::trace::enable(true);
  cohort::trace::record("data", "data", 100, 10);
  cohort::trace::record("forward", "compute", 110, 40);
  cohort::trace::record("allreduce bucket", "comm", 130, 30);
  cohort::trace::record("allgather unit", "comm", 105, 20);  // ZeRO stage 3's gather
  cohort::trace::record("ddp sync_buffers", "comm", 95, 4);
  cohort::trace::record("ddp wait", "comm", 160, 5);
  cohort::trace::record("backward", "compute", 150, 50);
  cohort::trace::record("step 7", "steps", 99, 110);
  cohort::trace::enable(false);
  const std::string dir = temp_path("profile");
  fs::remove_all(dir);

  cohort::train::ProfileTraceInfo info;
  info.rank = 1;
  info.world_size = 2;
  info.backend = "shm";
  info.worker = "node7_rank1";
  const std::string path = cohort::train::write_profile_trace(dir, info);
  // The plugin's WORKER_PATTERN: worker, an optional ".<digits>" span, ".pt.trace.json".
  std::smatch m;
  const std::string name = fs::path(path).filename().string();
  REQUIRE(std::regex_match(name, m, std::regex(R"(^(.*?)(\.\d+)?\.pt\.trace\.json$)")));
  CHECK(m[1] == "node7_rank1");
  CHECK(m[2].length() > 10);  // unix milliseconds
  CHECK(fs::path(path).parent_path() == fs::path(dir));

  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  CHECK(j["schemaVersion"] == 1);
  CHECK(j["distributedInfo"]["backend"] == "shm");
  CHECK(j["distributedInfo"]["rank"] == 1);
  CHECK(j["distributedInfo"]["world_size"] == 2);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X") {
      CHECK(e["pid"] == 1);
      by_name[e["name"].get<std::string>()] = e;
    }
  REQUIRE(by_name.size() == 8);
  const auto& step = by_name.at("ProfilerStep#7");
  CHECK(step["cat"] == "user_annotation");
  CHECK(step["ts"] == 99);
  CHECK(step["dur"] == 110);
  const auto& data = by_name.at("enumerate(DataLoader)#cohort.__next__");
  CHECK(data["cat"] == "cpu_op");
  CHECK(data["tid"] == step["tid"]);  // nested in the step on the main thread
  CHECK(by_name.at("forward")["cat"] == "cpu_op");
  CHECK(by_name.at("forward")["tid"] == step["tid"]);
  CHECK(by_name.at("shm:all_reduce")["tid"] != step["tid"]);  // DDP's communication thread
  CHECK(by_name.at("shm:all_reduce")["dur"] == 30);
  CHECK(by_name.at("shm:all_gather")["tid"] == by_name.at("shm:all_reduce")["tid"]);
  CHECK(by_name.at("shm:broadcast")["cat"] == "cpu_op");
  CHECK(by_name.at("ddp wait")["args"]["cohort track"] == "comm");

  // One rank: no distributedInfo; the default worker name ends in _rank0.
  info = cohort::train::ProfileTraceInfo{};
  const std::string one = cohort::train::write_profile_trace(dir + "/one", info);
  CHECK(fs::path(one).filename().string().find("_rank0.") != std::string::npos);
  std::ifstream in1(one);
  CHECK_FALSE(nlohmann::json::parse(in1).contains("distributedInfo"));

  // A directory that cannot be made: the error names it.
  const std::string file = dir + "/a_file";
  std::ofstream(file) << "x";
  const std::string bad = file + "/sub";
  CHECK_THROWS_WITH_AS(cohort::train::write_profile_trace(bad, info),
                       doctest::Contains(bad.c_str()), cohort::Error);
  fs::remove_all(dir);
  cohort::trace::clear();
}
