// Elastic training's parts that need no group (the membership protocol itself runs for real in
// tests/launch/test_elastic.sh): the --elastic range, the membership log written and read back,
// its corrupt forms named by line, and the refusal to start without a store that outlives ranks.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "../common/testing.hpp"
#include "cohort/parallel/elastic.hpp"

namespace par = cohort::parallel;
using cohort::testing::error_of;

namespace {
std::string temp_log(const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("cohort_elastic_" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(p) << text;
  return p.string();
}
}  // namespace

TEST_CASE("elastic: MIN:MAX and N parse; bad ranges are named") {
  par::ElasticOptions o;
  par::parse_elastic_range("2:4", "--elastic", o);
  CHECK(o.min_ranks == 2);
  CHECK(o.max_ranks == 4);
  par::parse_elastic_range("3", "--elastic", o);
  CHECK(o.min_ranks == 3);
  CHECK(o.max_ranks == 3);
  CHECK(error_of([&] {
          par::parse_elastic_range("4:2", "--elastic", o);
        }).find("--elastic '4:2': MIN 4 is above MAX 2") != std::string::npos);
  for (const char* bad : {"", "0:2", "a:2", "2:", "2:x", "-1:3"})
    CHECK(error_of([&] {
            par::parse_elastic_range(bad, "--elastic", o);
          }).find("expected MIN:MAX") != std::string::npos);
}

TEST_CASE("elastic: a membership log round-trips; corrupt ones are named by file and line") {
  par::MembershipChange a;
  a.epoch = 1;
  a.step = 41;
  a.old_members = {0, 1, 2};
  a.new_members = {0, 2};
  a.steps = {41, 40};
  a.root = 0;
  a.reason = "rank 1 \"exited\"";
  par::MembershipChange b = a;
  b.epoch = 2;
  b.step = 90;
  b.old_members = {0, 2};
  b.new_members = {2};
  b.steps = {90};
  const std::string path = temp_log(a.json() + "\n" + b.json() + "\n");
  const auto got = par::read_membership_log(path);
  REQUIRE(got.size() == 2);
  CHECK(got[0].epoch == 1);
  CHECK(got[0].step == 41);
  CHECK(got[0].old_members == std::vector<int>{0, 1, 2});
  CHECK(got[0].new_members == std::vector<int>{0, 2});
  CHECK(got[0].reason == "rank 1 \"exited\"");
  CHECK(got[1].new_members == std::vector<int>{2});
  // Out of order, a missing field, a step going back, a missing file.
  const std::string skip = temp_log(b.json() + "\n");
  CHECK(error_of([&] {
          par::read_membership_log(skip);
        }).find(", line 1: membership epoch 2 where 1 was due") != std::string::npos);
  const std::string nofield = temp_log("{\"epoch\":1,\"step\":3}\n");
  CHECK(error_of([&] { par::read_membership_log(nofield); }).find(", line 1: no \"old\" field") !=
        std::string::npos);
  par::MembershipChange back = b;
  back.step = 10;
  const std::string backwards = temp_log(a.json() + "\n" + back.json() + "\n");
  CHECK(error_of([&] {
          par::read_membership_log(backwards);
        }).find(", line 2: step 10 is before the previous change's 41") != std::string::npos);
  CHECK(error_of([] {
          par::read_membership_log("/nonexistent/m.jsonl");
        }).find("membership log /nonexistent/m.jsonl: cannot be read") != std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("elastic: refused without a store that outlives every rank") {
  const char* served = std::getenv("COHORT_STORE_SERVED");
  if (served && std::string(served) == "1") return;  // under cohortrun --elastic: not this case
  par::ElasticOptions o;
  CHECK(error_of([&] {
          par::ElasticGroup g(o);
        }).find("start the job with cohortrun --elastic MIN:MAX") != std::string::npos);
}
