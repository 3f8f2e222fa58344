// SummaryWriter (see tensorboard.hpp). The protocol-buffer messages are encoded by hand: the
// handful of fields TensorBoard reads for scalars do not justify a protobuf dependency.
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; }
#include "cohort/train/tensorboard.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "cohort/core/error.hpp"
#include "crc32c.hpp"

namespace cohort::train {
namespace {
void varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void key(std::string& out, int field, int wire_type) {
  varint(out, static_cast<std::uint64_t>(field) << 3 | static_cast<std::uint64_t>(wire_type));
}
template <class T>
void fixed(std::string& out, int field, T v) {  // double (wire type 1) or float (5)
  key(out, field, sizeof(T) == 8 ? 1 : 5);
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian, as protobuf wants (x86_64, aarch64)
  out.append(b, sizeof(T));
}
void bytes(std::string& out, int field, const std::string& s) {
  key(out, field, 2);
  varint(out, s.size());
  out += s;
}
void int64(std::string& out, int field, std::int64_t v) {
  key(out, field, 0);
  varint(out, static_cast<std::uint64_t>(v));
}
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

SummaryWriter::SummaryWriter(const std::string& log_dir, int flush_every)
    : flush_every_(flush_every < 1 ? 1 : flush_every) {
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  COHORT_CHECK(!ec && std::filesystem::is_directory(log_dir), "TensorBoard log directory '",
               log_dir, "' cannot be created: ", ec ? ec.message() : "not a directory");
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  const double t = now_seconds();
  path_ = (std::filesystem::path(log_dir) /
           ("events.out.tfevents." + std::to_string(static_cast<long long>(t)) + "." + host + "." +
            std::to_string(::getpid()) + ".cohort"))
              .string();
  file_ = std::fopen(path_.c_str(), "wb");
  COHORT_CHECK(file_ != nullptr, "cannot create the TensorBoard event file '", path_, "': ",
               std::strerror(errno));
  std::string ev;
  fixed(ev, 1, t);
  bytes(ev, 3, "brain.Event:2");
  write_record(ev);
  flush();
}

SummaryWriter::~SummaryWriter() {
  if (file_) {
    std::fflush(file_);
    std::fclose(file_);
  }
}

void SummaryWriter::add_scalar(const std::string& tag, double value, std::int64_t step,
                               double wall_time) {
  std::string v;
  bytes(v, 1, tag);
  fixed(v, 2, static_cast<float>(value));
  std::string summary;
  bytes(summary, 1, v);
  std::string ev;
  fixed(ev, 1, wall_time < 0 ? now_seconds() : wall_time);
  int64(ev, 2, step);
  bytes(ev, 5, summary);
  write_record(ev);
  if (++pending_ >= flush_every_) flush();
}

void SummaryWriter::flush() {
  COHORT_CHECK(std::fflush(file_) == 0, "writing the TensorBoard event file '", path_,
               "' failed: ", std::strerror(errno));
  pending_ = 0;
}

void SummaryWriter::write_record(const std::string& event) {
  std::string rec;
  const std::uint64_t len = event.size();
  char l[8];
  std::memcpy(l, &len, 8);
  rec.append(l, 8);
  const std::uint32_t lc = detail::masked_crc32c(l, 8);
  rec.append(reinterpret_cast<const char*>(&lc), 4);
  rec += event;
  const std::uint32_t dc = detail::masked_crc32c(event.data(), event.size());
  rec.append(reinterpret_cast<const char*>(&dc), 4);
  COHORT_CHECK(std::fwrite(rec.data(), 1, rec.size(), file_) == rec.size(),
               "writing the TensorBoard event file '", path_, "' failed: ", std::strerror(errno));
}

}  // namespace cohort::train
