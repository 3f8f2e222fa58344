// TensorBoard scalars without TensorBoard: writes the event-file format its reader expects, so
// `tensorboard --logdir DIR` plots loss, accuracy, images/s, learning rate and phase times.
//
// The file is DIR/events.out.tfevents.<seconds>.<host>.<pid>.cohort: TFRecord framing (length,
// masked CRC-32C of the length, data, masked CRC-32C of the data) around tensorflow.Event
// protocol buffers: first {wall_time, file_version: "brain.Event:2"}, then one Event per
// add_scalar with {wall_time, step, summary {value {tag, simple_value}}}, the same encoding
// PyTorch's torch.utils.tensorboard.SummaryWriter produces for add_scalar.
//
// Each record is written with one write() and the file is flushed every `flush_every` records
// and on destruction, so a crashed run leaves every flushed point readable. Not thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace cohort::train {

class SummaryWriter {
 public:
  // Creates DIR (and parents) if needed and opens a new event file in it; throws cohort::Error
  // naming the directory or file when that fails.
  explicit SummaryWriter(const std::string& log_dir, int flush_every = 10);
  ~SummaryWriter();
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  // One point of the curve `tag` ("train/loss") at `step`; wall_time in seconds since the epoch
  // (negative: now).
  void add_scalar(const std::string& tag, double value, std::int64_t step, double wall_time = -1);
  void flush();
  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& event);
  std::string path_;
  std::FILE* file_ = nullptr;
  int flush_every_, pending_ = 0;
};

}  // namespace cohort::train
