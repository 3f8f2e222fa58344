// Checkpoints through crashes: a writer SIGKILLed at random moments of save_checkpoint always
// leaves a whole pair (model + training state from the same save) that load_checkpoint finds;
// and a model file and a state file from different saves are refused together.
#include <doctest/doctest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "../common/testing.hpp"
#include "cohort/devices.hpp"
#include "cohort/layers.hpp"
#include "cohort/optim.hpp"
#include "cohort/train/checkpoint.hpp"
#include "cohort/train/sharded_checkpoint.hpp"

namespace nn = cohort::nn;
namespace train = cohort::train;
using cohort::testing::error_of;
using cohort::testing::TempDir;

namespace {

// 1M + 1K weights (4 MB, and 4 MB more of momentum in the state): saves take milliseconds, long
// enough for kills to land inside them.
nn::ModulePtr big_net() {
  auto& dev = cohort::host_device();
  return nn::make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
      {"fc", nn::make<nn::Linear>(1024, 1024, dev)}});
}

// Every weight = v, and momentum = v too: the pair of save number v.
void set_all(nn::Module& m, cohort::optim::SGD& opt, float v) {
  for (const auto& p : m.parameters()) {
    p->value.copy_from(cohort::Tensor::full(p->value.shape(), v, cohort::DType::f32,
                                            cohort::host_device()));
    p->grad = cohort::Tensor::full(p->value.shape(), v, cohort::DType::f32, cohort::host_device());
  }
  (void)opt;
}

cohort::optim::SGDOptions momentum() {
  cohort::optim::SGDOptions o;
  o.lr = 0.0;  // step() keeps the weights; it only fills the momentum buffers
  o.momentum = 0.5;
  return o;
}

}  // namespace

TEST_CASE("checkpoints: a writer killed at any moment leaves a whole pair that loads") {
  TempDir d;
  const std::string path = d.file("ck.safetensors");
  {
    auto m = big_net();
    cohort::optim::SGD opt(m->parameters(), momentum());
    set_all(*m, opt, 0.f);
    opt.step();
    train::save_checkpoint(path, *m, opt, nullptr, {0, 0});
  }
  std::mt19937 rng(7);
  int newer = 0, previous = 0, mid_save = 0;
  std::int64_t last_step = 0;
  for (int kill = 0; kill < 30; ++kill) {
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      // Saves pair after pair, numbered after the last one on disk, until killed; says so after
      // its first save.
      ::close(ready[0]);
      auto m = big_net();
      cohort::optim::SGD opt(m->parameters(), momentum());
      std::int64_t step = last_step;
      for (;;) {
        ++step;
        set_all(*m, opt, static_cast<float>(step));
        opt.step();
        train::save_checkpoint(path, *m, opt, nullptr, {step, step});
        if (ready[1] >= 0) {
          const char one = 1;
          (void)!::write(ready[1], &one, 1);
          ::close(ready[1]);
          ready[1] = -1;
        }
      }
    }
    // The kill lands a random time after the child's first save, in its save loop: timed from
    // the fork instead, a slow build (ASan) spent the whole window building the model, and no
    // kill fell inside a save.
    ::close(ready[1]);
    pollfd pfd{ready[0], POLLIN, 0};
    const int polled = ::poll(&pfd, 1, 60000);
    ::close(ready[0]);
    if (polled != 1) ::kill(child, SIGKILL);
    REQUIRE_MESSAGE(polled == 1, "the saving child did not finish its first save within 60 s");
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200000));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    // Killed inside a save: its temporary or new files are still there.
    for (const auto& e : std::filesystem::directory_iterator(d.path)) {
      const std::string n = e.path().filename().string();
      if (n.find(".tmp.") != std::string::npos || n.find(".new") != std::string::npos) {
        ++mid_save;
        break;
      }
    }
    auto m = big_net();
    cohort::optim::SGD opt(m->parameters(), momentum());
    train::CheckpointLoad got;
    const std::string err = error_of([&] { got = train::load_checkpoint(path, *m, opt, nullptr); });
    CAPTURE(kill);
    REQUIRE(err == "<no error>");
    // Whole and consistent: weights, momentum and progress all of one save.
    const std::int64_t step = got.progress.global_step;
    CHECK(step >= last_step);
    const auto w = m->parameters()[0]->value.to_vector<float>();
    CHECK(w.front() == static_cast<float>(step));
    CHECK(w.back() == static_cast<float>(step));
    (got.model_path == path ? newer : previous) += 1;
    // Resume from what was found, as a restarted job would.
    train::save_checkpoint(path, *m, opt, nullptr, got.progress);
    last_step = step;
  }
  MESSAGE("30 kills, " << mid_save << " of them inside a save: " << newer
                       << " loads from the newest pair, " << previous
                       << " from the previous pair; last step " << last_step);
  CHECK(last_step > 0);
  CHECK(mid_save > 0);
}

TEST_CASE("checkpoints: a model and a training state from different saves are refused") {
  TempDir d;
  const std::string path = d.file("m.safetensors");
  auto m = big_net();
  cohort::optim::SGD opt(m->parameters(), momentum());
  set_all(*m, opt, 1.f);
  opt.step();
  train::save_checkpoint(path, *m, opt, nullptr, {1, 1});
  // A crash between the two renames of the next save: its state next to the old model, the
  // previous pair kept aside.
  namespace fs = std::filesystem;
  const std::string state = train::state_path_for(path);
  fs::copy_file(path, train::previous_path_for(path));
  fs::copy_file(state, train::previous_path_for(state));
  set_all(*m, opt, 2.f);
  opt.step();
  train::save_training_state(state, *m, opt, nullptr, {2, 2});

  auto r = big_net();
  cohort::optim::SGD ro(r->parameters(), momentum());
  train::load_model(path, *r);  // the old weights (1)
  const std::string e = error_of([&] { train::load_training_state(state, *r, ro, nullptr); });
  CHECK(e.find("the model file and the training state come from different saves") !=
        std::string::npos);
  CHECK(e.find(state) != std::string::npos);
  // load_checkpoint sees it and takes the previous pair, which is whole.
  const auto got = train::load_checkpoint(path, *r, ro, nullptr);
  CHECK(got.model_path == train::previous_path_for(path));
  CHECK(got.progress.global_step == 1);
  CHECK(r->parameters()[0]->value.to_vector<float>().front() == 1.f);
  // Nothing whole at all: one error naming both attempts.
  fs::remove(train::previous_path_for(path));
  const std::string none = error_of([&] { train::load_checkpoint(path, *r, ro, nullptr); });
  CHECK(none.find("no whole checkpoint at '" + path + "'") != std::string::npos);
}

TEST_CASE("sharded checkpoints: rank 0 waiting for a lost rank's shard gives up when told") {
  // An elastic group that lost rank 1 (its shard will never come): rank 0's write in flight
  // stops waiting at once, publishes nothing, and says why; the directory is left as it was.
  TempDir d;
  train::ShardedSnapshot s;
  s.dir = d.file("sharded");
  s.rank = 0;
  s.world_size = 2;
  s.save_id = 12345;
  s.index = "{}";
  s.global_step = 7;
  train::CheckpointWriter w;
  w.save_sharded(std::move(s));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(w.busy());  // waiting for rank 1 (up to wait_ms, 10 minutes)
  const auto t0 = std::chrono::steady_clock::now();
  w.give_up_missing_shards();
  const std::string why = error_of([&] { w.wait(); });
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  CHECK(why.find("step 7: rank(s) 1 did not write their shard") != std::string::npos);
  CHECK(why.find("before the group gave up on them") != std::string::npos);
  CHECK(why.find("nothing was published") != std::string::npos);
  CHECK(!std::filesystem::exists(d.file("sharded")));
}
