// CRC-32C as TFRecord frames use it (SummaryWriter's event files). Internal header of train/
// (not installed); tests/train/test_tensorboard.cpp includes it by path.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cohort::train::detail {

// CRC-32C (Castagnoli) of n bytes: crc32c("123456789", 9) == 0xE3069283.
std::uint32_t crc32c(const void* data, std::size_t n);
// TFRecord's mask: rotate right by 15, add 0xA282EAD8.
std::uint32_t masked_crc32c(const void* data, std::size_t n);

}  // namespace cohort::train::detail
