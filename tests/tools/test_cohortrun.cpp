// cohortrun, driven from outside as a user would: the environment it gives each rank, whole
// prefixed lines, exit status propagation, stopping the other ranks when one fails, signal
// forwarding and argument errors. Ranks are small sh scripts.
#include <doctest/doctest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Result {
  int status = -1;  // shell terms: exit code, or 128 + signal
  std::string out, err;
  double seconds = 0;
};

// Runs cohortrun with `args`. If `ready` is given, sends `sig` to cohortrun once stdout holds
// `ready_count` occurrences of it. Kills everything after 60 s so that no test can hang.
Result run(const std::vector<std::string>& args, const std::string& ready = "", int ready_count = 0,
           int sig = 0) {
  int po[2], pe[2];
  REQUIRE(::pipe(po) == 0);
  REQUIRE(::pipe(pe) == 0);
  const auto t0 = Clock::now();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(po[1], 1);
    ::dup2(pe[1], 2);
    ::close(po[0]);
    ::close(pe[0]);
    std::vector<char*> argv;
    static char self[] = COHORTRUN;
    argv.push_back(self);
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(self, argv.data());
    ::_exit(126);
  }
  ::close(po[1]);
  ::close(pe[1]);
  Result r;
  bool sent = false, killed = false;
  int open = 2;
  pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
  while (open > 0) {
    if (!killed && Clock::now() - t0 > std::chrono::seconds(60)) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
    if (::poll(fds, 2, 100) <= 0) continue;
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP))) continue;
      char buf[65536];
      const ssize_t n = ::read(fds[k].fd, buf, sizeof(buf));
      if (n <= 0) {
        ::close(fds[k].fd);
        fds[k].fd = -1;
        --open;
        continue;
      }
      (k == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
    }
    if (!sent && !ready.empty()) {
      int count = 0;
      for (auto p = r.out.find(ready); p != std::string::npos; p = r.out.find(ready, p + 1)) ++count;
      if (count >= ready_count) {
        ::kill(pid, sig);
        sent = true;
      }
    }
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream is(s);
  for (std::string l; std::getline(is, l);) v.push_back(l);
  return v;
}

}  // namespace

TEST_SUITE("cohortrun") {
  TEST_CASE("each rank gets the torchrun environment and a shared job id") {
    const Result r = run({"--nproc-per-node", "3", "--master-port", "0", "sh", "-c",
                          "echo \"$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $GROUP_RANK "
                          "$MASTER_ADDR $MASTER_PORT $COHORT_JOB_ID\""});
    CHECK(r.status == 0);
    const auto ls = lines(r.out);
    REQUIRE(ls.size() == 3);
    std::set<std::string> ports, jobs;
    for (int rank = 0; rank < 3; ++rank) {
      std::string line;
      for (const auto& l : ls)
        if (l.rfind("[rank " + std::to_string(rank) + "] ", 0) == 0) line = l;
      CAPTURE(r.out);
      REQUIRE(!line.empty());
      std::istringstream is(line.substr(line.find(']') + 2));
      int rk, ws, lr, lws, gr, port;
      std::string addr, job;
      is >> rk >> ws >> lr >> lws >> gr >> addr >> port >> job;
      CHECK(rk == rank);
      CHECK(ws == 3);
      CHECK(lr == rank);
      CHECK(lws == 3);
      CHECK(gr == 0);
      CHECK(addr == "127.0.0.1");
      CHECK(port > 0);
      ports.insert(std::to_string(port));
      jobs.insert(job);
    }
    CHECK(ports.size() == 1);  // --master-port 0 picked one port for everybody
    CHECK(jobs.size() == 1);
    CHECK(!jobs.begin()->empty());
  }

  TEST_CASE("each job gets its own random store token, the same on all its ranks") {
    std::set<std::string> seen;
    for (int job = 0; job < 2; ++job) {
      const Result r = run({"--nproc-per-node", "2", "--master-port", "0", "sh", "-c",
                            "echo \"token=$COHORT_JOB_TOKEN\""});
      CHECK(r.status == 0);
      std::set<std::string> tokens;
      for (const auto& l : lines(r.out)) tokens.insert(l.substr(l.find("token=") + 6));
      REQUIRE(tokens.size() == 1);  // both ranks
      const std::string t = *tokens.begin();
      CHECK(t.size() == 32);
      CHECK(t.find_first_not_of("0123456789abcdef") == std::string::npos);
      seen.insert(t);
    }
    CHECK(seen.size() == 2);  // two jobs, two tokens
    // The user's token wins; with several nodes none is invented (each node would draw its own).
    ::setenv("COHORT_JOB_TOKEN", "mine", 1);
    const Result mine = run({"--master-port", "0", "sh", "-c", "echo \"token=$COHORT_JOB_TOKEN\""});
    ::unsetenv("COHORT_JOB_TOKEN");
    CHECK(mine.out.find("token=mine") != std::string::npos);
    const Result multi = run({"--nnodes", "2", "--node-rank", "1", "--master-addr", "h",
                              "--master-port", "1", "sh", "-c", "echo \"token=$COHORT_JOB_TOKEN.\""});
    CHECK(multi.out.find("token=.") != std::string::npos);
  }

  TEST_CASE("several nodes: ranks are numbered after the node's index") {
    const Result r = run({"--nnodes=2", "--node_rank", "1", "--nproc-per-node", "2",
                          "--master-addr", "head", "--master-port", "1234", "sh", "-c",
                          "echo $RANK/$WORLD_SIZE/$LOCAL_RANK/$GROUP_RANK/$MASTER_ADDR:$MASTER_PORT"});
    CHECK(r.status == 0);
    CHECK(r.out.find("[rank 2] 2/4/0/1/head:1234\n") != std::string::npos);
    CHECK(r.out.find("[rank 3] 3/4/1/1/head:1234\n") != std::string::npos);
  }

  TEST_CASE("every line comes out whole and prefixed, on stdout and stderr") {
    // 3 ranks write 3000 lines of ~300 bytes each to both streams as fast as they can; pipes
    // deliver them in arbitrary pieces, so a line may only come out whole if cohortrun buffers.
    const Result r = run({"--nproc-per-node", "3", "sh", "-c",
                          "l=$(printf 'R%s-%0300d' $RANK 0); "
                          "yes $l | head -n 3000; yes $l | head -n 3000 >&2; printf 'tail'"});
    CHECK(r.status == 0);
    for (const std::string* s : {&r.out, &r.err}) {
      std::map<int, int> count;
      std::size_t bad = 0;
      for (const auto& l : lines(*s)) {
        int rank = -1;
        if (std::sscanf(l.c_str(), "[rank %d] ", &rank) != 1) {
          ++bad;
          continue;
        }
        const std::string body = l.substr(l.find(']') + 2);
        const std::string want = "R" + std::to_string(rank) + "-" + std::string(300, '0');
        if (body == want)
          ++count[rank];
        else if (body != "tail")
          ++bad;
      }
      CHECK(bad == 0);
      for (int rank = 0; rank < 3; ++rank) CHECK(count[rank] == 3000);
    }
    // A last line without a newline still comes out, completed.
    for (int rank = 0; rank < 3; ++rank)
      CHECK(r.out.find("[rank " + std::to_string(rank) + "] tail\n") != std::string::npos);
  }

  TEST_CASE("the status of a failing rank is cohortrun's status") {
    const Result r = run({"--nproc-per-node", "3", "sh", "-c", "exit $(( RANK == 1 ? 7 : 0 ))"});
    CHECK(r.status == 7);
    CHECK(r.err.find("cohortrun: rank 1 exited with status 7") != std::string::npos);
    const Result ok = run({"--nproc-per-node", "2", "true"});
    CHECK(ok.status == 0);
    CHECK(ok.err.empty());
  }

  TEST_CASE("a rank killed by a signal gives 128 + the signal") {
    const Result r = run({"--nproc-per-node", "2", "sh", "-c",
                          "if [ $RANK = 1 ]; then kill -SEGV $$; fi; sleep 0.2"});
    CHECK(r.status == 128 + SIGSEGV);
    CHECK(r.err.find("rank 1 was killed by signal 11") != std::string::npos);
  }

  // A peer that aborts because a rank was killed can be reaped first (UCX aborts on a read from
  // the dead process before the killed rank's exit completes): a rank killed outright within
  // 250 ms of the first failure is named instead. Here rank 1 aborts at 0.2 s and rank 0, which
  // ignores cohortrun's SIGTERM, is killed by SIGKILL 50 ms later.
  TEST_CASE("a rank killed outright is named, not the peer that aborted just before it") {
    const Result r = run({"--nproc-per-node", "2", "sh", "-c",
                          "if [ $RANK = 1 ]; then sleep 0.2; kill -ABRT $$; fi; "
                          "trap '' TERM; sleep 0.25; kill -KILL $$"});
    CHECK(r.status == 128 + SIGKILL);
    CHECK(r.err.find("cohortrun: rank 0 was killed by signal 9") != std::string::npos);
    CHECK(r.err.find("rank 1 was killed by signal 6") == std::string::npos);
    // Outside the window the first failure keeps the blame: a SIGKILL 1 s after the abort is
    // something else (here: a rank stopped late).
    const Result late = run({"--nproc-per-node", "2", "sh", "-c",
                             "if [ $RANK = 1 ]; then sleep 0.2; kill -ABRT $$; fi; "
                             "trap '' TERM; sleep 1.2; kill -KILL $$"});
    CHECK(late.status == 128 + SIGABRT);
    CHECK(late.err.find("cohortrun: rank 1 was killed by signal 6") != std::string::npos);
  }

  TEST_CASE("a failing rank stops the others at once") {
    const Result r = run({"--nproc-per-node", "3", "sh", "-c",
                          "if [ $RANK = 2 ]; then sleep 0.3; exit 3; fi; exec sleep 60"});
    CHECK(r.status == 3);
    CHECK(r.seconds < 5);
  }

  TEST_CASE("ranks that ignore SIGTERM are killed after the grace period") {
    const Result r = run({"--nproc-per-node", "2", "--kill-grace", "0.5", "sh", "-c",
                          "if [ $RANK = 1 ]; then sleep 0.3; exit 4; fi; trap '' TERM; sleep 60"});
    CHECK(r.status == 4);
    CHECK(r.seconds > 0.7);
    CHECK(r.seconds < 6);
  }

  TEST_CASE("SIGTERM and SIGINT are forwarded to every rank") {
    for (int sig : {SIGTERM, SIGINT}) {
      CAPTURE(sig);
      const Result r = run({"--nproc-per-node", "2", "sh", "-c",
                            "trap 'echo got signal; exit 0' TERM INT; echo ready; "
                            "sleep 60 & wait"},
                           "ready", 2, sig);
      CHECK(r.out.find("[rank 0] got signal") != std::string::npos);
      CHECK(r.out.find("[rank 1] got signal") != std::string::npos);
      CHECK(r.status == 128 + sig);
      CHECK(r.seconds < 10);
    }
  }

  TEST_CASE("--max-restarts: a failed attempt restarts the whole group with a counter") {
    // Rank 1 fails in the first attempt only; every rank reports its attempt's variables.
    const Result r = run({"--nproc-per-node", "2", "--max-restarts", "2", "sh", "-c",
                          "echo \"restart=$COHORT_RESTART_COUNT torch=$TORCHELASTIC_RESTART_COUNT "
                          "max=$TORCHELASTIC_MAX_RESTARTS job=$COHORT_JOB_ID\"; "
                          "if [ $RANK = 1 ] && [ $COHORT_RESTART_COUNT = 0 ]; then "
                          "echo 'disk on fire' >&2; exit 5; fi; exec sleep 0.3"});
    CHECK(r.status == 0);
    CHECK(r.err.find("cohortrun: rank 1 exited with status 5 on host ") != std::string::npos);
    CHECK(r.err.find("before it reported any progress") != std::string::npos);
    CHECK(r.err.find("its last line on stderr: disk on fire") != std::string::npos);
    CHECK(r.err.find("restart 1 of 2: starting all 2 ranks again (COHORT_RESTART_COUNT=1") !=
          std::string::npos);
    std::set<std::string> jobs0, jobs1;
    for (const auto& l : lines(r.out)) {
      const auto j = l.find("job=");
      if (j == std::string::npos) continue;
      (l.find("restart=0 torch=0 max=2") != std::string::npos ? jobs0 : jobs1)
          .insert(l.substr(j + 4));
      if (l.find("restart=1") != std::string::npos)
        CHECK(l.find("restart=1 torch=1 max=2") != std::string::npos);
    }
    REQUIRE(jobs0.size() == 1);  // one job id per attempt, shared by its ranks...
    REQUIRE(jobs1.size() == 1);
    CHECK(*jobs1.begin() == *jobs0.begin() + ".r1");  // ... a new one for the restart
  }

  TEST_CASE("--max-restarts: the restarts are counted per job, then the last status is ours") {
    // A different failure each time (the message carries the attempt), so none is "the same".
    const Result r = run({"--nproc-per-node", "2", "--max-restarts", "2", "sh", "-c",
                          "if [ $RANK = 0 ]; then echo \"attempt $COHORT_RESTART_COUNT\" >&2; "
                          "exit $(( 3 + COHORT_RESTART_COUNT )); fi; exec sleep 60"});
    CHECK(r.status == 5);  // the third attempt's
    CHECK(r.err.find("restart 2 of 2") != std::string::npos);
    CHECK(r.err.find("restart 3") == std::string::npos);
    CHECK(r.err.find("no restarts left (--max-restarts 2, all used); exiting with rank 0's "
                     "status 5") != std::string::npos);
    CHECK(r.seconds < 10);  // the sleeping rank is stopped at once every time
  }

  TEST_CASE("--max-restarts: a failure that repeats itself is not restarted again") {
    const Result r = run({"--nproc-per-node", "2", "--max-restarts", "5", "sh", "-c",
                          "if [ $RANK = 1 ]; then echo 'bad flag --lr' >&2; exit 2; fi; "
                          "exec sleep 60"});
    CHECK(r.status == 2);
    CHECK(r.err.find("restart 1 of 5") != std::string::npos);
    CHECK(r.err.find("restart 2 of 5") == std::string::npos);
    CHECK(r.err.find("the job failed the same way as in the previous attempt (rank 1 exited "
                     "with status 2, before it reported any progress, the same last line); a "
                     "restart cannot fix that: not restarting (4 of --max-restarts 5 left)") !=
          std::string::npos);
    // Every rank failing alike, whichever is first and names itself: still the same failure.
    const Result all = run({"--nproc-per-node", "3", "--max-restarts", "5", "sh", "-c",
                            "echo \"rank $RANK: no such file\" >&2; exit 1"});
    CHECK(all.status == 1);
    CHECK(all.err.find("restart 2 of 5") == std::string::npos);
    CHECK(all.err.find("the job failed the same way") != std::string::npos);
  }

  TEST_CASE("--max-restarts: a signal to cohortrun stops the job, it does not restart it") {
    const Result r = run({"--nproc-per-node", "2", "--max-restarts", "3", "sh", "-c",
                          "trap 'exit 1' TERM; echo ready; sleep 60 & wait"},
                         "ready", 2, SIGTERM);
    CHECK(r.status == 128 + SIGTERM);
    CHECK(r.err.find("restart") == std::string::npos);
    const Result nodes = run({"--nnodes", "2", "--max-restarts", "1", "true"});
    CHECK(nodes.status == 2);
    CHECK(nodes.err.find("--max-restarts with --nnodes > 1 is not supported") != std::string::npos);
    CHECK(lines(nodes.err).size() == 1);
    const Result bad = run({"--max-restarts", "-1", "true"});
    CHECK(bad.status == 2);
    CHECK(bad.err.find("--max-restarts expects an integer in 0..1000000, got '-1'") !=
          std::string::npos);
  }

  TEST_CASE("--simulate-hosts K: blocks of consecutive local ranks get one COHORT_HOSTID each") {
    // 5 ranks as 2 hosts: 0..2 on the first, 3..4 on the second (i * K / nproc), named by node.
    ::setenv("COHORT_HOSTID", "overridden", 1);
    const Result r = run({"--nnodes", "2", "--node-rank", "1", "--master-addr", "h",
                          "--master-port", "1", "--nproc-per-node", "5", "--simulate-hosts", "2",
                          "sh", "-c", "echo \"$LOCAL_RANK=$COHORT_HOSTID\""});
    ::unsetenv("COHORT_HOSTID");
    CHECK(r.status == 0);
    for (const char* want : {"[rank 5] 0=node1-sim0\n", "[rank 6] 1=node1-sim0\n",
                             "[rank 7] 2=node1-sim0\n", "[rank 8] 3=node1-sim1\n",
                             "[rank 9] 4=node1-sim1\n"}) {
      CAPTURE(r.out);
      CHECK(r.out.find(want) != std::string::npos);
    }
    const Result none = run({"--nproc-per-node", "2", "sh", "-c", "echo \"[$COHORT_HOSTID]\""});
    CHECK(none.out.find("] []\n") != std::string::npos);  // without the flag: not set
    const Result many = run({"--nproc-per-node", "2", "--simulate-hosts", "3", "true"});
    CHECK(many.status == 2);
    CHECK(many.err.find("--simulate-hosts 3 is above the 2 ranks of this node") !=
          std::string::npos);
    const Result zero = run({"--simulate-hosts", "0", "true"});
    CHECK(zero.status == 2);
    CHECK(zero.err.find("--simulate-hosts expects an integer in 1..4096, got '0'") !=
          std::string::npos);
  }

  TEST_CASE("argument errors are one clear line and a non-zero status") {
    const Result bogus = run({"--bogus", "3", "true"});
    CHECK(bogus.status == 2);
    CHECK(bogus.err.find("unknown option '--bogus'") != std::string::npos);
    CHECK(lines(bogus.err).size() == 1);
    const Result none = run({"--nproc-per-node", "2"});
    CHECK(none.status == 2);
    CHECK(none.err.find("no program given") != std::string::npos);
    const Result bad = run({"--nproc-per-node", "two", "true"});
    CHECK(bad.status == 2);
    CHECK(bad.err.find("--nproc-per-node expects an integer") != std::string::npos);
    const Result port0 = run({"--nnodes", "2", "--master-port", "0", "true"});
    CHECK(port0.status == 2);
    CHECK(port0.err.find("--master-port 0") != std::string::npos);
    const Result node = run({"--nnodes", "2", "--node-rank", "2", "true"});
    CHECK(node.status == 2);
    const Result help = run({"--help"});
    CHECK(help.status == 0);
    CHECK(help.out.find("--nproc-per-node") != std::string::npos);
  }

  TEST_CASE("a program that cannot be started fails like a rank that exits 127") {
    const Result r = run({"--nproc-per-node", "2", "/nonexistent/program"});
    CHECK(r.status == 127);
    CHECK(r.err.find("cannot run '/nonexistent/program'") != std::string::npos);
  }

  TEST_CASE("shared-memory segments a crashed rank left behind are removed") {
    const std::string job = "cohortrun-test-" + std::to_string(::getpid());
    ::setenv("COHORT_JOB_ID", job.c_str(), 1);
    const Result r = run({"--nproc-per-node", "1", "sh", "-c",
                          "touch /dev/shm/cohort-$COHORT_JOB_ID-deadbeef"});
    ::unsetenv("COHORT_JOB_ID");
    CHECK(r.status == 0);
    struct stat st;
    CHECK(::stat(("/dev/shm/cohort-" + job + "-deadbeef").c_str(), &st) != 0);
    CHECK(r.err.find("removed /dev/shm/cohort-" + job + "-deadbeef") != std::string::npos);
  }
}
