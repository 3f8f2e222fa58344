// All-gathers of small host values (parameter-description hashes, weights digests) on any
// communicator (internal). A communicator that takes only device memory (nccl) refuses host
// pointers, so the bytes then go through two small buffers on `dev`, the device the model lives
// on; the others gather the host memory directly.
#pragma once

#include <cstddef>

#include "cohort/collectives/communicator.hpp"
#include "cohort/core/device.hpp"
#include "cohort/layers/module.hpp"

namespace cohort::parallel::detail {

// recv[r * bytes + i] = send of rank r [i] (recv holds size() * bytes). Collective; blocks.
// `dev` is used only when `comm` cannot take host memory; nullptr then is an error naming `what`.
void allgather_host(comm::Communicator& comm, Device* dev, const void* send, void* recv,
                    std::size_t bytes, const char* what);

// The device of `model`'s first parameter, nullptr for a model without parameters.
Device* model_device(const nn::Module& model);

}  // namespace cohort::parallel::detail
