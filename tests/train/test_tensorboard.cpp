// SummaryWriter: CRC-32C against published check values (RFC 3720 B.4 and the "123456789" check
// value), and the event file's framing read back byte by byte. That TensorBoard itself reads the
// file is checked by test_tensorboard.py with TensorBoard's own reader.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../../train/src/crc32c.hpp"  // internal: the CRC is not public API
#include "../common/testing.hpp"
#include "cohort/train/tensorboard.hpp"

using cohort::train::SummaryWriter;
namespace tbd = cohort::train::detail;

TEST_CASE("crc32c: published check values") {
  CHECK(tbd::crc32c("123456789", 9) == 0xE3069283u);
  std::vector<unsigned char> zeros(32, 0), ones(32, 0xFF), inc(32);
  for (int i = 0; i < 32; ++i) inc[static_cast<std::size_t>(i)] = static_cast<unsigned char>(i);
  CHECK(tbd::crc32c(zeros.data(), 32) == 0x8A9136AAu);  // RFC 3720, B.4
  CHECK(tbd::crc32c(ones.data(), 32) == 0x62A8AB43u);
  CHECK(tbd::crc32c(inc.data(), 32) == 0x46DD794Eu);
  CHECK(tbd::crc32c("", 0) == 0u);
}

TEST_CASE("SummaryWriter: TFRecord framing, the version event first, then scalars") {
  const std::string dir = "tb_unit_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::string path;
  {
    SummaryWriter w(dir);
    path = w.path();
    w.add_scalar("train/loss", 0.5, 7, 1000.0);
    w.add_scalar("eval/accuracy", 0.875, 8, 1001.0);
  }
  CHECK(std::filesystem::path(path).filename().string().rfind("events.out.tfevents.", 0) == 0);
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> records;
  std::size_t at = 0;
  while (at < bytes.size()) {
    REQUIRE(at + 12 <= bytes.size());
    std::uint64_t len;
    std::memcpy(&len, bytes.data() + at, 8);
    std::uint32_t len_crc, data_crc;
    std::memcpy(&len_crc, bytes.data() + at + 8, 4);
    CHECK(len_crc == tbd::masked_crc32c(bytes.data() + at, 8));
    REQUIRE(at + 12 + len + 4 <= bytes.size());
    records.emplace_back(bytes.data() + at + 12, len);
    std::memcpy(&data_crc, bytes.data() + at + 12 + len, 4);
    CHECK(data_crc == tbd::masked_crc32c(bytes.data() + at + 12, len));
    at += 12 + len + 4;
  }
  REQUIRE(records.size() == 3);
  CHECK(records[0].find("brain.Event:2") != std::string::npos);
  // Event 2, by hand: wall_time (field 1, fixed64) 1000.0, step (field 2, varint) 7, summary
  // (field 5) { value (field 1) { tag (field 1) "train/loss", simple_value (field 2) 0.5f } }.
  std::string expect;
  const double wt = 1000.0;
  expect += '\x09';
  expect.append(reinterpret_cast<const char*>(&wt), 8);
  expect += "\x10\x07";
  const float v = 0.5f;
  std::string value = std::string("\x0a\x0a") + "train/loss" + '\x15';
  value.append(reinterpret_cast<const char*>(&v), 4);
  const std::string summary = std::string("\x0a") + static_cast<char>(value.size()) + value;
  expect += std::string("\x2a") + static_cast<char>(summary.size()) + summary;
  CHECK(records[1] == expect);
  std::filesystem::remove_all(dir);
  CHECK(cohort::testing::error_of([] { SummaryWriter w("/proc/no/such/dir"); })
            .find("TensorBoard log directory '/proc/no/such/dir' cannot be created") !=
        std::string::npos);
}
