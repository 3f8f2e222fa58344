// Helpers shared by the Store implementations: the wording of timeouts and the integer encoding
// of add() counters (decimal text, as torch.distributed stores them, so get() on a counter reads
// "3").
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace cohort::comm::detail {

// Throws cohort::Error: "store <address>: timed out after <ms> ms waiting for keys 'a', 'b'".
[[noreturn]] void throw_store_timeout(const std::string& address,
                                      const std::vector<std::string>& missing,
                                      std::chrono::milliseconds timeout);
std::int64_t decode_counter(const std::string& address, const std::string& key,
                            const std::vector<std::uint8_t>& value);
std::vector<std::uint8_t> encode_counter(std::int64_t v);

}  // namespace cohort::comm::detail
