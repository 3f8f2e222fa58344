// The ucx engine's failure path keeps callers' buffers safe: a transfer still in flight when its
// op fails never writes into the buffer after the error reached the caller (Engine::Impl::release
// and the quarantine, docs/UCX.md "Timeouts"). Real processes over TCP.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "cohort/core/error.hpp"
#include "harness.hpp"
#include "ucx/ucx_communicator.hpp"

using namespace ucxtest;
using cohort::comm::Timeout;
using cohort::comm::WorkHandle;

namespace {
constexpr Timeout kSenderTimeout{20000};  // a wrong test fails, it does not hang
}  // namespace

// A transfer stalled mid-message when its op fails (the sender SIGSTOPped past the receiver's
// timeout, as launch_elastic_netns does) must not write into the receiver's buffer after the
// failure has reached the caller, who owns the buffer again. Before the worker was quarantined
// (Engine::Impl::release), the receive was freed while matched and, once the sender woke, the
// progress thread delivered the rest into a buffer that DDP had freed (a SIGSEGV in
// uct_tcp_iface_progress). Over TCP, where a large message arrives in many pieces; for a
// point-to-point receive and a collective (broadcast) alike.
TEST_CASE("ucx: a transfer stalled past the timeout writes nothing into the failed op's buffer") {
  for (const std::string kind : {"recv", "broadcast"}) {
    CAPTURE(kind);
    char dir[] = "/tmp/cohort-ucx-stall-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    const char* old = std::getenv("UCX_TLS");
    const std::string saved = old ? old : "";
    setenv("UCX_TLS", "tcp,self", 1);
    const auto codes =
        run_processes(2, {"--ucx-stall-worker", dir, kind}, std::chrono::seconds(60));
    if (old)
      setenv("UCX_TLS", saved.c_str(), 1);
    else
      unsetenv("UCX_TLS");
    for (std::size_t r = 0; r < codes.size(); ++r)
      CHECK_MESSAGE(codes[r] == 0, "rank ", r, " exit code ", codes[r]);
    std::system((std::string("rm -rf ") + dir).c_str());
  }
}

// One rank of the test above. Rank 1 sends 512 MiB (at most a few GB/s over loopback TCP) and
// stops itself 10 ms in; rank 0's receive times out at 300 ms, then rank 0 refills its buffer,
// wakes rank 1 and checks, 1.5 s later, that no byte of the buffer changed.
int ucx_stall_worker_main(const std::string& dir, const std::string& kind, int rank) {
  constexpr std::size_t kCount = std::size_t{512} << 20;
  constexpr std::uint8_t kSent = 0x5a, kMine = 0xc3;
  try {
    auto store = directory_store(dir);
    if (rank == 1) {
      const std::string pid = std::to_string(getpid());
      store->set("stall/pid", std::vector<std::uint8_t>(pid.begin(), pid.end()));
    }
    auto comm = cohort::comm::ucx::factory().create(group_info(rank, 2), store);
    std::vector<std::uint8_t> buf(kCount, rank == 1 ? kSent : 0);
    const bool p2p = kind == "recv";
    WorkHandle w;
    if (rank == 0 && p2p) w = comm->recv(buf.data(), kCount, DType::u8, 1, 3, Timeout{300});
    comm->barrier(kSenderTimeout)->wait();  // rank 0's receive is posted before rank 1 sends
    if (rank == 1) {
      std::thread stopper([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        kill(getpid(), SIGSTOP);
      });
      std::string error;
      try {
        (p2p ? comm->send(buf.data(), kCount, DType::u8, 0, 3, kSenderTimeout)
             : comm->broadcast(buf.data(), kCount, DType::u8, 1, kSenderTimeout))
            ->wait();
      } catch (const cohort::Error& e) {
        error = e.what();
      }
      stopper.join();
      if (error.empty()) {
        std::cerr << "rank 1: the send completed although rank 0 gave up on it\n";
        return 1;
      }
      return 0;
    }
    std::string error;
    try {
      if (!p2p) w = comm->broadcast(buf.data(), kCount, DType::u8, 1, Timeout{300});
      w->wait();
    } catch (const cohort::Error& e) {
      error = e.what();
    }
    if (error.find("timed out after 300 ms") == std::string::npos) {
      std::cerr << "rank 0: expected a timeout, got: " << (error.empty() ? "success" : error)
                << "\n";
      return 1;
    }
    std::memset(buf.data(), kMine, kCount);  // the caller's buffer again, as DDP reuses a bucket
    const auto pid = store->get("stall/pid", std::chrono::milliseconds(5000));
    kill(std::stoi(std::string(pid.begin(), pid.end())), SIGCONT);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const auto changed = static_cast<std::size_t>(
        std::count_if(buf.begin(), buf.end(), [&](std::uint8_t b) { return b != kMine; }));
    if (changed != 0) {
      std::cerr << "rank 0: " << changed << " bytes of the failed " << kind
                << "'s buffer were written after the failure was reported\n";
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "rank " << rank << ": " << e.what() << "\n";
    return 2;
  }
}
