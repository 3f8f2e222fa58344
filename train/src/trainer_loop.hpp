// Helpers of the Trainer's loops (internal: trainer.cpp's evaluate and fit, trainer_epoch.cpp).
#pragma once

#include <chrono>

#include "cohort/core/error.hpp"
#include "cohort/data/dataloader.hpp"

namespace cohort::train {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The loader serves this rank's shard: sharded here unless the caller already did (then it must
// be this rank's shard of this world).
inline void shard_loader(data::DataLoader& loader, int rank, int world, bool pad,
                         const char* which) {
  if (world <= 1) return;
  if (loader.world_size() == 1) {
    loader.shard(rank, world, pad);
    return;
  }
  COHORT_CHECK(loader.rank() == rank && loader.world_size() == world, "Trainer: the ", which,
               " loader serves shard ", loader.rank(), " of ", loader.world_size(),
               " but this is rank ", rank, " of ", world,
               " (leave the loader unsharded and the Trainer shards it)");
}

}  // namespace cohort::train
