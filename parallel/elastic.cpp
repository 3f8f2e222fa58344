// ElasticGroup (cohort/parallel/elastic.hpp): membership through the store, one communicator per
// membership, and the membership log (written and read back here: a fixed one-line JSON form).
#include "cohort/parallel/elastic.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <thread>

#include "cohort/collectives/process_group.hpp"
#include "cohort/collectives/registry.hpp"
#include "cohort/collectives/store.hpp"
#include "cohort/core/error.hpp"

namespace cohort::parallel {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// The value after "key": in one line of our own JSON (numbers, [a,b,...] or a string).
std::string field(const std::string& line, const std::string& key, const std::string& path,
                  int lineno) {
  const std::string k = "\"" + key + "\":";
  const auto at = line.find(k);
  COHORT_CHECK(at != std::string::npos, "membership log ", path, ", line ", lineno, ": no \"", key,
               "\" field (not a log cohort wrote)");
  std::size_t b = at + k.size();
  if (line[b] == '"') {
    std::string out;
    for (std::size_t i = b + 1; i < line.size() && line[i] != '"'; ++i) {
      if (line[i] == '\\' && i + 1 < line.size()) ++i;
      out += line[i];
    }
    return out;
  }
  if (line[b] == '[') return line.substr(b + 1, line.find(']', b) - b - 1);
  const auto e = line.find_first_of(",}", b);
  return line.substr(b, e - b);
}

template <class T>
std::vector<T> numbers(const std::string& list) {
  std::vector<T> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(static_cast<T>(std::stoll(item)));
  return out;
}

}  // namespace

void parse_elastic_range(const std::string& spec, const std::string& flag, ElasticOptions& o) {
  const auto colon = spec.find(':');
  const std::string a = spec.substr(0, colon);
  const std::string b = colon == std::string::npos ? a : spec.substr(colon + 1);
  auto num = [&](const std::string& s) {
    char* end = nullptr;
    const long v = std::strtol(s.c_str(), &end, 10);
    COHORT_CHECK(!s.empty() && end && *end == '\0' && v >= 1 && v <= 1 << 20, flag, " '", spec,
                 "': expected MIN:MAX (ranks, 1 <= MIN <= MAX), e.g. 2:4");
    return static_cast<int>(v);
  };
  o.min_ranks = num(a);
  o.max_ranks = num(b);
  COHORT_CHECK(o.min_ranks <= o.max_ranks, flag, " '", spec, "': MIN ", o.min_ranks,
               " is above MAX ", o.max_ranks);
}

std::string MembershipChange::json() const {
  std::ostringstream os;
  std::string st;
  for (std::size_t i = 0; i < steps.size(); ++i) st += (i ? "," : "") + std::to_string(steps[i]);
  os << "{\"epoch\":" << epoch << ",\"step\":" << step << ",\"old\":[" << join(old_members)
     << "],\"new\":[" << join(new_members) << "],\"steps\":[" << st << "],\"root\":" << root
     << ",\"reason\":" << quoted(reason) << ",\"detect_s\":" << detect_s
     << ",\"agree_s\":" << agree_s << ",\"build_s\":" << build_s << "}";
  return os.str();
}

std::vector<MembershipChange> read_membership_log(const std::string& path) {
  std::ifstream in(path);
  COHORT_CHECK(in.good(), "membership log ", path, ": cannot be read");
  std::vector<MembershipChange> out;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    MembershipChange c;
    try {
      c.epoch = std::stoll(field(line, "epoch", path, lineno));
      c.step = std::stoll(field(line, "step", path, lineno));
      c.old_members = numbers<int>(field(line, "old", path, lineno));
      c.new_members = numbers<int>(field(line, "new", path, lineno));
      c.reason = field(line, "reason", path, lineno);
    } catch (const std::invalid_argument&) {
      COHORT_FAIL("membership log ", path, ", line ", lineno, ": a number field is not a number");
    }
    COHORT_CHECK(c.epoch == static_cast<std::int64_t>(out.size()) + 1, "membership log ", path,
                 ", line ", lineno, ": membership epoch ", c.epoch, " where ", out.size() + 1,
                 " was due (lines missing or out of order)");
    COHORT_CHECK(out.empty() || c.step >= out.back().step, "membership log ", path, ", line ",
                 lineno, ": step ", c.step, " is before the previous change's ", out.back().step);
    out.push_back(std::move(c));
  }
  return out;
}

ElasticGroup::ElasticGroup(ElasticOptions options) : opt_(std::move(options)) {
  const comm::ProcessGroupInfo info = comm::ProcessGroupInfo::from_env();
  const char* served = std::getenv("COHORT_STORE_SERVED");
  COHORT_CHECK(served && std::string(served) == "1", "elastic training (", info.str(),
               ") needs a store that outlives every rank: start the job with cohortrun --elastic "
               "MIN:MAX, which serves it (rank 0 serves the store otherwise, and dies with it)");
  launch_rank_ = info.rank;
  launch_world_ = info.world_size;
  if (opt_.max_ranks == 0) opt_.max_ranks = launch_world_;
  COHORT_CHECK(opt_.min_ranks >= 1 && opt_.min_ranks <= launch_world_, "elastic: MIN ",
               opt_.min_ranks, " ranks, but the job was launched with ", launch_world_);
  COHORT_CHECK(launch_world_ <= opt_.max_ranks, "elastic: the job was launched with ",
               launch_world_, " ranks, above MAX ", opt_.max_ranks);
  // UCX's cma transport (process_vm_readv) makes a peer's death fatal to the reader: UCX aborts
  // the process in the middle of a rendezvous transfer. Survivors must live, so unless the user
  // chose the transports, the rest are used (shared-memory copies, tcp), which fail softly.
  ::setenv("UCX_TLS", "^cma", /*overwrite=*/0);
  if (!opt_.replay_log.empty()) replay_ = read_membership_log(opt_.replay_log);
  store_ = comm::make_prefix_store(comm::connect_job_store(info), "elastic");
  host_ = comm::host_key();
  const char* inc = std::getenv("COHORT_ELASTIC_INCARNATION");
  incarnation_ = inc && *inc ? std::atoi(inc) : 0;
  const char* grow = std::getenv("COHORT_ELASTIC_GROW");
  grow_enabled_ = grow && std::string(grow) == "1";
  const char* join = std::getenv("COHORT_ELASTIC_JOIN");
  store_->set_string("host/" + std::to_string(launch_rank_), host_);
  if (join && std::string(join) == "1") {
    // A respawned rank: queue up, then wait until the group admits it at a step boundary.
    joined_ = true;
    const std::int64_t n = store_->add("joins", 1);
    // Its incarnation goes public ("inc/<rank>") only when it is admitted: until then the group
    // may still be agreeing that its predecessor is gone ("gone/<rank>.<old incarnation>").
    store_->set_string("joiner_id/" + std::to_string(n), opt_.identity);
    store_->set_string("joiner_inc/" + std::to_string(n), std::to_string(incarnation_));
    store_->set_string("joiner/" + std::to_string(n), std::to_string(launch_rank_));
    store_->add("news", 1);
    const std::string key =
        "admit/" + std::to_string(launch_rank_) + "." + std::to_string(incarnation_);
    // Until the group admits it at a boundary, or ends without it (finished, or stopped below
    // MIN: no boundary will come).
    const auto deadline = Clock::now() + std::chrono::minutes(10);
    while (!store_->check({key})) {
      COHORT_CHECK(!store_->check({"finished"}), "elastic: rank ", launch_rank_,
                   " (started again) was not admitted: the group finished first");
      if (store_->check({"stopped"}))
        COHORT_FAIL("elastic: rank ", launch_rank_,
                    " (started again) was not admitted: the "
                    "group stopped (",
                    store_->get_string("stopped", std::chrono::seconds(5)), ")");
      COHORT_CHECK(Clock::now() < deadline, "elastic: rank ", launch_rank_,
                   " (started again) waited 10 minutes for the group to admit it; giving up");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const std::string v = store_->get_string(key, std::chrono::milliseconds(5000));
    if (v.rfind("refused|", 0) == 0)
      COHORT_FAIL("elastic: rank ", launch_rank_, " was refused at the join: it runs '",
                  opt_.identity, "', the group runs '", v.substr(8),
                  "' (another model, batch, precision or --elastic range); the group goes on "
                  "without it");
    const auto bar = v.find('|');
    epoch_ = std::stoll(v.substr(0, bar));
    std::stringstream ss(v.substr(bar + 1));
    std::string item;
    while (std::getline(ss, item, ',')) members_.push_back(std::stoi(item));
    admitted_ = std::stoll(store_->get_string("admitted", std::chrono::milliseconds(60000)));
  } else {
    for (int r = 0; r < launch_world_; ++r) members_.push_back(r);
    store_->set_string("inc/" + std::to_string(launch_rank_), std::to_string(incarnation_));
  }
  build(epoch_);
  watcher_ = std::thread([this] { watch(); });
}

std::string ElasticGroup::gone_key(int m) {
  std::string inc = "0";
  const std::string k = "inc/" + std::to_string(m);
  if (store_->check({k})) inc = store_->get_string(k, std::chrono::milliseconds(1000));
  return "gone/" + std::to_string(m) + "." + inc;
}

bool ElasticGroup::grow_due(std::int64_t boundary) {
  if (!grow_enabled_) return false;
  const std::string e = "e" + std::to_string(epoch_) + "/";
  if (comm_->rank() == 0 && !grow_asked_ && static_cast<int>(members_.size()) < opt_.max_ranks &&
      store_->add("joins", 0) > admitted_) {
    // Due at the next boundary: every rank reaches it after the next step's collectives, which
    // need this rank, so every rank reads the key there.
    store_->set_string(e + "grow", std::to_string(boundary + 1));
    grow_asked_ = true;
  }
  if (!store_->check({e + "grow"})) return false;
  return std::stoll(store_->get_string(e + "grow", std::chrono::milliseconds(1000))) == boundary;
}

MembershipChange ElasticGroup::grow(std::int64_t boundary) {
  const auto t0 = Clock::now();
  const std::string e = "e" + std::to_string(epoch_) + "/";
  const auto wait = std::chrono::milliseconds(60000);
  if (comm_->rank() == 0) {
    // The joiners queued so far, up to MAX (the rest wait for a later boundary); one that runs
    // something else than the group is refused here, before any collective.
    std::string list;
    const std::int64_t joins = store_->add("joins", 0);
    int room = opt_.max_ranks - static_cast<int>(members_.size());
    std::int64_t n = admitted_ + 1;
    for (; n <= joins && room > 0; ++n) {
      const std::string j = store_->get_string("joiner/" + std::to_string(n), wait);
      const std::string id = store_->get_string("joiner_id/" + std::to_string(n), wait);
      const std::string inc = store_->get_string("joiner_inc/" + std::to_string(n), wait);
      if (id != opt_.identity) {
        store_->set_string("admit/" + j + "." + inc, "refused|" + opt_.identity);
        std::fprintf(stderr,
                     "[elastic] rank %s refused at the join: it runs '%s', the group '%s'\n",
                     j.c_str(), id.c_str(), opt_.identity.c_str());
        continue;
      }
      list += (list.empty() ? "" : ",") + j + ":" + inc;
      --room;
    }
    store_->set_string(e + "grown/" + std::to_string(boundary), std::to_string(n - 1) + "#" + list);
  }
  MembershipChange c;
  c.epoch = epoch_ + 1;
  c.step = boundary;
  c.old_members = members_;
  c.new_members = members_;
  const std::string grown = store_->get_string(e + "grown/" + std::to_string(boundary), wait);
  const auto hash = grown.find('#');
  admitted_ = std::stoll(grown.substr(0, hash));  // the queue's entries dealt with
  std::stringstream ss(grown.substr(hash + 1));
  std::string item;
  std::vector<int> joiners;
  std::vector<std::string> incs;
  while (std::getline(ss, item, ',')) {
    const auto colon = item.find(':');
    joiners.push_back(std::stoi(item.substr(0, colon)));
    incs.push_back(item.substr(colon + 1));
  }
  if (joiners.empty()) {  // every joiner refused: the group stays as it is
    grow_asked_ = false;
    c.agree_s = seconds_since(t0);
    return c;
  }
  for (int j : joiners) c.new_members.push_back(j);  // after the members: rank 0 stays rank 0
  c.steps.assign(c.new_members.size(), boundary);
  c.root = 0;
  for (int j : joiners)
    c.reason += (c.reason.empty() ? "" : "; ") + ("rank " + std::to_string(j) + " joined");
  c.agree_s = seconds_since(t0);
  const auto tb = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    members_ = c.new_members;
    epoch_ = c.epoch;
    grow_asked_ = false;
    comm_.reset();
  }
  if (launch_rank_ == c.old_members.front()) {
    store_->set_string("admitted", std::to_string(admitted_));
    for (std::size_t k = 0; k < joiners.size(); ++k) {
      const std::string j = std::to_string(joiners[k]);
      store_->set_string("inc/" + j, incs[k]);  // its deaths count from here
      store_->set_string("admit/" + j + "." + incs[k],
                         std::to_string(c.epoch) + "|" + join(c.new_members));
    }
  }
  build(epoch_);
  c.build_s = seconds_since(tb);
  log_change(c);
  return c;
}

void ElasticGroup::log_change(const MembershipChange& c) {
  if (comm_->rank() == 0 && !opt_.membership_log.empty()) {
    std::ofstream log(opt_.membership_log, std::ios::app);
    log << c.json() << "\n";
    COHORT_CHECK(log.good(), "membership log ", opt_.membership_log, ": cannot be written");
  }
  changes_.push_back(c);
}

ElasticGroup::~ElasticGroup() {
  stop_ = true;
  if (watcher_.joinable()) watcher_.join();
  // The group's rank 0 leaving without an exception in flight: the job is done, and a rank
  // started again but never admitted can stop waiting (and its launcher knows it failed nothing).
  if (std::uncaught_exceptions() == 0 && comm_ && comm_->rank() == 0) try {
      store_->set_string("finished", "1");
    } catch (const std::exception&) {
    }
}

void ElasticGroup::watch() {
  std::int64_t seen = 0;
  std::vector<int> declared;  // in the communicator `last`
  const comm::Communicator* last = nullptr;
  while (!stop_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    try {
      const std::int64_t news = store_->add("news", 0);
      if (news == seen) continue;
      seen = news;
      std::shared_ptr<comm::Communicator> comm;
      std::vector<int> members;
      std::int64_t epoch = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        comm = comm_;
        members = members_;
        epoch = epoch_;
      }
      if (!comm) continue;
      if (comm.get() != last) declared.clear();
      last = comm.get();
      const std::string e = "e" + std::to_string(epoch) + "/in/";
      for (std::size_t i = 0; i < members.size(); ++i) {
        const std::string m = std::to_string(members[i]);
        if (members[i] == launch_rank_ ||
            std::find(declared.begin(), declared.end(), members[i]) != declared.end())
          continue;
        std::string why;
        if (store_->check({gone_key(members[i])}))
          why = "launch rank " + m + " exited (cohortrun saw it go)";
        else if (store_->check({e + m}))
          why = "launch rank " + m + " left this communicator to agree on a new group";
        else
          continue;
        declared.push_back(members[i]);
        comm->declare_dead(static_cast<int>(i), why);
      }
    } catch (const std::exception&) {
      // The store gone (the launcher ending): the communicator's own detection remains.
      return;
    }
  }
}

void ElasticGroup::build(std::int64_t epoch) {
  comm::ProcessGroupInfo info = comm::ProcessGroupInfo::from_env();
  const auto me = std::find(members_.begin(), members_.end(), launch_rank_);
  info.rank = static_cast<int>(me - members_.begin());
  info.world_size = static_cast<int>(members_.size());
  // Local ranks among the members on this host, by their host keys.
  const auto wait =
      std::chrono::duration_cast<std::chrono::milliseconds>(opt_.settle) + std::chrono::seconds(30);
  info.local_rank = 0;
  info.local_world_size = 0;
  for (int m : members_) {
    const bool here =
        m == launch_rank_ || store_->get_string("host/" + std::to_string(m), wait) == host_;
    if (!here) continue;
    if (m < launch_rank_) ++info.local_rank;
    ++info.local_world_size;
  }
  info.job_id += ".m" + std::to_string(epoch);
  std::shared_ptr<comm::Communicator> comm = comm::create_communicator(
      opt_.backend, info, comm::make_prefix_store(store_, "e" + std::to_string(epoch) + "/comm"),
      opt_.device);
  std::lock_guard<std::mutex> lock(mu_);
  comm_ = std::move(comm);
}

// The first member to check in for membership epoch_ + 1 decides it: waits for every member to
// check in or be known gone, at most `settle`, and writes the members, the reason and the streak
// of losses with the same step in flight under `e` + "members".
void ElasticGroup::decide_shrink(const std::string& e, std::int64_t committed,
                                 std::chrono::milliseconds wait) {
  const auto deadline = Clock::now() + opt_.settle;
  std::vector<int> in, gone, silent;
  for (;;) {
    in.clear();
    gone.clear();
    silent.clear();
    for (int m : members_) {
      const std::string s = std::to_string(m);
      if (store_->check({e + "in/" + s}))
        in.push_back(m);
      else if (store_->check({gone_key(m)}))
        gone.push_back(m);
      else
        silent.push_back(m);
    }
    if (silent.empty() || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::string record;
  for (int m : in)
    record += (record.empty() ? "" : ",") + std::to_string(m) + ":" +
              store_->get_string(e + "in/" + std::to_string(m), wait);
  std::string why;
  for (int m : gone) why += (why.empty() ? "" : "; ") + ("rank " + std::to_string(m) + " exited");
  for (int m : silent)
    why += (why.empty() ? "" : "; ") + ("rank " + std::to_string(m) + " silent for " +
                                        std::to_string(opt_.settle.count()) + " ms, declared dead");
  // Losses in a row with the same step in flight (no step completed in between): a streak
  // "<top committed>|<count>|<history>", kept by the deciders (one per membership, in turn).
  std::int64_t top = committed;
  for (int m : in)
    top = std::max<std::int64_t>(
        top, std::stoll(store_->get_string(e + "in/" + std::to_string(m), wait)));
  int tries = 1;
  std::string history;
  if (store_->check({"streak"})) {
    const std::string prev = store_->get_string("streak", wait);
    const auto b1 = prev.find('|'), b2 = prev.find('|', b1 + 1);
    if (std::stoll(prev.substr(0, b1)) == top) {
      tries = std::stoi(prev.substr(b1 + 1, b2 - b1 - 1)) + 1;
      history = prev.substr(b2 + 1) + "; ";
    }
  }
  history += "try " + std::to_string(tries) + ": " + why;
  store_->set_string("streak", std::to_string(top) + "|" + std::to_string(tries) + "|" + history);
  store_->set_string(e + "members",
                     record + "|" + why + "|" + std::to_string(tries) + "|" + history);
}

// The decider's "<launch rank>:<step>,...|<reason>|<tries>|<history>" as the change to
// membership epoch_ + 1.
MembershipChange ElasticGroup::read_decision(const std::string& decided) const {
  const auto bar = decided.find('|'), bar2 = decided.find('|', bar + 1),
             bar3 = decided.find('|', bar2 + 1);
  MembershipChange c;
  c.epoch = epoch_ + 1;
  c.old_members = members_;
  c.reason = decided.substr(bar + 1, bar2 - bar - 1);
  c.tries = std::stoi(decided.substr(bar2 + 1, bar3 - bar2 - 1));
  c.tries_history = decided.substr(bar3 + 1);
  std::stringstream ss(decided.substr(0, bar));
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto colon = item.find(':');
    c.new_members.push_back(std::stoi(item.substr(0, colon)));
    c.steps.push_back(std::stoll(item.substr(colon + 1)));
  }
  return c;
}

MembershipChange ElasticGroup::shrink(
    const std::string& reason, std::int64_t committed,
    const std::function<std::int64_t(const MembershipChange&)>& restart) {
  const auto t0 = Clock::now();
  const std::int64_t seen_ns = wall_ns();
  const std::string e = "e" + std::to_string(epoch_) + "/";
  const auto wait =
      std::chrono::duration_cast<std::chrono::milliseconds>(opt_.settle) + std::chrono::seconds(30);
  const std::string late = "rank " + std::to_string(launch_rank_) + " was left out of membership " +
                           std::to_string(epoch_ + 1) +
                           ": the others went on without it (it did not check in within the settle "
                           "time, " +
                           std::to_string(opt_.settle.count()) + " ms); refused";
  COHORT_CHECK(!store_->check({e + "members"}), late);
  store_->set_string(e + "in/" + std::to_string(launch_rank_), std::to_string(committed));
  store_->add("news", 1);  // the others' watchers: this rank left the communicator
  if (store_->add(e + "count", 1) == 1) decide_shrink(e, committed, wait);
  MembershipChange c = read_decision(store_->get_string(e + "members", wait));
  // The decider listed them in members_ order: ascending launch ranks.
  COHORT_CHECK(
      std::find(c.new_members.begin(), c.new_members.end(), launch_rank_) != c.new_members.end(),
      late);
  if (c.new_members == members_)
    COHORT_FAIL(reason, " [elastic: every rank of membership ", epoch_,
                " is alive, so this failure is not a lost rank and is not survived]");
  c.agree_s = seconds_since(t0);
  // The death time cohortrun recorded for a rank gone (same host clock as ours).
  for (int m : c.old_members) {
    const std::string k = gone_key(m);
    if (std::find(c.new_members.begin(), c.new_members.end(), m) != c.new_members.end() ||
        !store_->check({k}))
      continue;
    const double d = static_cast<double>(seen_ns - std::stoll(store_->get_string(k, wait))) / 1e9;
    if (c.detect_s < 0 || d > c.detect_s) c.detect_s = d;
  }
  const int n = static_cast<int>(c.new_members.size());
  if (n < opt_.min_ranks) {
    const std::string why =
        "elastic: " + std::to_string(n) + " rank" + (n == 1 ? "" : "s") + " left (launch rank" +
        (n == 1 ? " " : "s ") + join(c.new_members) + ") after " + c.reason + "; fewer than MIN " +
        std::to_string(opt_.min_ranks) + ": stopping (the last checkpoint is left as it was)";
    stop(why);  // joiners and the launchers: no group to go on with
    COHORT_FAIL(why);
  }
  c.step = *std::max_element(c.steps.begin(), c.steps.end());
  c.root = static_cast<int>(std::max_element(c.steps.begin(), c.steps.end()) - c.steps.begin());
  const auto tb = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    members_ = c.new_members;
    epoch_ = c.epoch;
    comm_.reset();
  }
  build(epoch_);
  c.build_s = seconds_since(tb);
  if (restart) {
    const std::int64_t from = restart(c);
    c.step = from;
    c.steps.assign(c.new_members.size(), from);
    c.root = 0;
  }
  log_change(c);
  return c;
}

const MembershipChange* ElasticGroup::replay_at(std::int64_t step) const {
  // Losses only: a growth needs a process started to join, which a replay does not start.
  for (const auto& c : replay_)
    if (c.step == step && c.epoch == epoch_ + 1 && c.new_members.size() < c.old_members.size())
      return &c;
  return nullptr;
}

void ElasticGroup::stop(const std::string& why) {
  try {
    store_->set_string("stopped", why);
  } catch (const std::exception&) {
    // The store gone: the launcher sees the ranks exit anyway.
  }
}

void ElasticGroup::leave() {
  store_->set_string(gone_key(launch_rank_), std::to_string(wall_ns()));
  store_->add("news", 1);
}

}  // namespace cohort::parallel
