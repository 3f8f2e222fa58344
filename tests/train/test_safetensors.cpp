// safetensors: reading a file written independently from the format's specification
// (tests/golden/make_safetensors_golden.py), round trips of every dtype, atomic replacement, and
// every corruption the reader promises to report.
#include <doctest/doctest.h>

#include "../common/testing.hpp"

using cohort::testing::error_of;
using cohort::testing::TempDir;

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>

#include "cohort/core/error.hpp"
#include "cohort/devices.hpp"
#include "cohort/train/safetensors.hpp"

namespace fs = std::filesystem;
using cohort::DType;
using cohort::Tensor;

namespace {
std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
void write_file(const std::string& p, const std::string& s) {
  std::ofstream(p, std::ios::binary) << s;
}
std::string with_header(const std::string& json, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[static_cast<std::size_t>(i)] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  return out + json + data;
}
}  // namespace

TEST_CASE("safetensors: reads a file written from the specification") {
  auto& host = cohort::host_device();
  const auto f =
      cohort::io::load_safetensors(std::string(COHORT_GOLDEN_DIR) + "/sample.safetensors");
  CHECK(f.metadata.at("format") == "pt");
  CHECK(f.metadata.at("epoch") == "3");
  REQUIRE(f.tensors.size() == 7);
  CHECK(f.tensors[0].name == "conv1.weight");
  CHECK(f.find("conv1.weight")->shape == cohort::Shape{2, 1, 1, 2});
  CHECK(f.find("conv1.weight")->to(host).to_vector<float>() ==
        std::vector<float>{0.5f, -1.25f, 3.0f, 1e-3f});
  CHECK(f.find("fc.bias")->to(host).to_vector<double>() == std::vector<double>{1.0, -2.0, 0.125});
  CHECK(f.find("labels")->to(host).to_vector<std::int64_t>() == std::vector<std::int64_t>{7, -3});
  CHECK(f.find("counts")->to(host).to_vector<std::int32_t>() ==
        std::vector<std::int32_t>{1, 2, 3, 4});
  CHECK(f.find("mask")->to(host).to_vector<std::uint8_t>() == std::vector<std::uint8_t>{0, 1, 255});
  CHECK(f.find("half")->to(host).item(0) == 1.0);
  CHECK(f.find("half")->to(host).item(1) == -2.5);
  CHECK(f.find("fp16")->dtype == DType::f16);
  CHECK(f.find("fp16")->to(host).item(0) == 1.0);
  CHECK(f.find("fp16")->to(host).item(1) == -2.5);
  CHECK(f.find("fp16")->to(host).item(2) == 65504.0);
  CHECK(f.find("absent") == nullptr);
}

TEST_CASE("safetensors: round trip, layout, atomic replacement") {
  auto& host = cohort::host_device();
  TempDir d;
  const std::string p = d.file("model.safetensors");
  cohort::io::NamedTensors ts = {
      {"w", Tensor::uniform({3, 5}, -1, 1, 4, host)},
      {"b", Tensor::full({5}, 0.5, DType::f32, host)},
      {"steps", Tensor::full({1}, 42, DType::i64, host)},
      {"empty", Tensor::empty({0, 3}, DType::f32, host)},
  };
  cohort::io::save_safetensors(p, ts, {{"step", "100"}});
  const std::string bytes = read_file(p);
  std::uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i)
    hlen |=
        static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]))
        << (8 * i);
  CHECK((8 + hlen) % 8 == 0);  // data section 8-byte aligned
  CHECK(bytes.size() == 8 + hlen + 15 * 4 + 5 * 4 + 8);
  const auto back = cohort::io::load_safetensors(p);
  CHECK(back.metadata.at("step") == "100");
  CHECK(back.find("w")->to(host).to_vector<float>() == ts[0].second.to_vector<float>());
  CHECK(back.find("b")->to(host).to_vector<float>() == std::vector<float>(5, 0.5f));
  CHECK(back.find("steps")->to(host).item() == 42.0);
  CHECK(back.find("empty")->shape == cohort::Shape{0, 3});

  // A save refused up front (undefined tensor) leaves the old file and no temporary behind.
  cohort::io::NamedTensors bad = {{"x", Tensor()}};
  CHECK(error_of([&] { cohort::io::save_safetensors(p, bad); }).find("tensor 'x' is undefined") !=
        std::string::npos);
  CHECK(read_file(p) == bytes);
  int files = 0;
  for (const auto& e : fs::directory_iterator(d.path)) files += e.is_regular_file();
  CHECK(files == 1);
  // A save that fails after its temporary file exists and half of it is written (the file size
  // limit stands in for a full disk) leaves the old file whole and removes the temporary.
  {
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG
    rlimit saved{};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
    rlimit small = saved;
    small.rlim_cur = 4096;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    cohort::io::NamedTensors big = {{"w", Tensor::uniform({100, 100}, -1, 1, 5, host)}};
    const std::string err = error_of([&] { cohort::io::save_safetensors(p, big); });
    ::setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, old_handler);
    CAPTURE(err);
    CHECK(err.find("writing '" + p + ".tmp.") != std::string::npos);
    CHECK(err.find("File too large") != std::string::npos);
    CHECK(read_file(p) == bytes);
    int left = 0;
    for (const auto& e : fs::directory_iterator(d.path)) left += e.is_regular_file();
    CHECK(left == 1);
  }
  cohort::io::NamedTensors dup = {{"x", ts[1].second}, {"x", ts[1].second}};
  CHECK(error_of([&] { cohort::io::save_safetensors(p, dup); }).find("'x' appears twice") !=
        std::string::npos);
  CHECK(error_of([&] { cohort::io::save_safetensors(d.file("no/such/dir/m.st"), ts); })
            .find("cannot create") != std::string::npos);
}

TEST_CASE("safetensors: corrupt and truncated files are named errors") {
  TempDir d;
  const std::string p = d.file("bad.safetensors");
  auto load_err = [&](const std::string& content) {
    write_file(p, content);
    return error_of([&] { cohort::io::load_safetensors(p); });
  };
  CHECK(load_err("abc").find("truncated: 3 bytes") != std::string::npos);
  CHECK(load_err(with_header("{\"a\":1}", "").substr(0, 12))
            .find("header length 7 but only 4 bytes follow") != std::string::npos);
  CHECK(load_err(with_header("{not json", "")).find("corrupt JSON header") != std::string::npos);
  const std::string ok = "{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  CHECK(load_err(with_header(ok, std::string(4, '\0')))
            .find("spans bytes [0, 8) of a 4-byte data section") != std::string::npos);
  CHECK(load_err(with_header("{\"t\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}",
                             std::string(8, '\0')))
            .find("tensor 't' of shape [3] f32 needs 12 bytes but spans 8") != std::string::npos);
  CHECK(load_err(with_header("{\"t\":{\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[0,8]}}",
                             std::string(8, '\0')))
            .find("unsupported dtype \"C64\"") != std::string::npos);
  CHECK(load_err(with_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                             "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}",
                             std::string(6, '\0')))
            .find("tensors 'a' and 'b' overlap") != std::string::npos);
  CHECK(load_err(with_header("{\"t\":[1,2]}", "")).find("entry 't' is malformed") !=
        std::string::npos);
  CHECK(error_of([&] { cohort::io::load_safetensors(d.file("missing")); })
            .find("cannot open safetensors file") != std::string::npos);
}
