// What a rank is doing, published for the launcher that started it. cohortrun gives each rank a
// small file (its path in COHORT_RUN_STATUS); the rank maps it and keeps a few fields current: the
// last optimizer step it finished, the checkpoint it resumed from and the newest one it wrote, and
// the last collective it issued. When a rank dies, cohortrun reads the dead rank's page to report
// where it was ("killed by signal 9 at step 57, in allreduce #912 (1199882 x f32)") and, on a
// restart, how long the group took to train again. Without COHORT_RUN_STATUS (torchrun, srun,
// mpirun, a plain process) every note is one untaken branch.
//
// The Page is a contract between two programs built from this tree: fixed-width fields, no
// pointers, a magic string with the layout version. Updates are plain stores under a process-local
// lock; the launcher reads the page only after the rank has exited, so it never sees a write in
// progress except one cut short by the death itself (a diagnostic, never a decision's input
// beyond "the same step twice").
#pragma once

#include <cstddef>
#include <cstdint>

#include "cohort/core/dtype.hpp"

namespace cohort::run_status {

inline constexpr char kMagic[8] = {'c', 'o', 'h', 'r', 's', 't', '0', '1'};

struct Page {
  char magic[8];                      // kMagic once the rank has mapped the page
  std::int64_t step;                  // optimizer steps completed (global), -1: none yet
  std::int64_t resumed_step;          // the step of the checkpoint resumed from, -1: none
  std::int64_t checkpoint_step;       // newest checkpoint this rank finished writing, -1: none
  std::int64_t checkpoint_writing;    // step of a save being written in the background, -1: none
  std::int64_t resumed_ns;            // steady clock (CLOCK_MONOTONIC) when the resume finished
  std::int64_t first_step_ns;         // ... when the first step of this process finished
  std::uint64_t collectives;          // collectives issued so far (the last one's number)
  std::uint64_t collective_count;     // the last collective's element count
  char collective_kind[16];           // "allreduce", "broadcast", ... (NUL-terminated)
  char collective_dtype[8];           // "f32", ...
};

// Each note is a no-op unless COHORT_RUN_STATUS names a file this process could map.
void note_step(std::int64_t global_step);
void note_resumed(std::int64_t step);
void note_checkpoint_writing(std::int64_t step);  // -1: none in flight
void note_checkpoint_written(std::int64_t step);
void note_collective(const char* kind, std::size_t count, DType dtype);

// The steady clock in nanoseconds, as the page's times are.
std::int64_t now_ns();

}  // namespace cohort::run_status
