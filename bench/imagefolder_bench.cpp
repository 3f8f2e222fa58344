// The cohort side of the image-folder loading benchmark (bench/imagefolder_compare.sh runs it
// next to bench/imagefolder_torch.py, torchvision's DataLoader): ROOT/train through the DataLoader
// with the reference recipe's training transforms (RandomResizedCrop(224), flip, normalize), W
// worker threads, no model. Prints one line per epoch and
//   RESULT images_per_s=<float> workers=<W> batch=<B>
// over the timed epochs, leaving out the first K batches (the peer's rule: warm-up).
//
//   build/bin/imagefolder_bench ROOT [--workers 2] [--batch-size 32] [--epochs 2] [--warmup-batches 3]
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>

#include "cohort/data/dataloader.hpp"
#include "cohort/data/image_folder.hpp"
#include "cohort/devices.hpp"

using namespace cohort;

int main(int argc, char** argv) {
  std::string root;
  int workers = 2;
  std::int64_t batch = 32, epochs = 2, warmup = 3, size = 224;
  std::string augment;
  CLI::App app{"image-folder loading throughput (cohort side)", "imagefolder_bench"};
  app.add_option("root", root, "image folder root (ROOT/train/<class>/...)")->required();
  app.add_option("--workers", workers, "decoding threads")->check(CLI::Range(0, 256));
  app.add_option("--batch-size", batch, "batch size")->check(CLI::PositiveNumber);
  app.add_option("--epochs", epochs, "epochs")->check(CLI::PositiveNumber);
  app.add_option("--warmup-batches", warmup, "batches left out at the start")->check(CLI::NonNegativeNumber);
  app.add_option("--size", size, "RandomResizedCrop's size")->check(CLI::PositiveNumber);
  app.add_option("--auto-augment", augment,
                 "after the flip, as the reference script's presets: ta_wide, ra, imagenet "
                 "(bilinear sampling)");
  CLI11_PARSE(app, argc, argv);
  try {
    auto ds = data::load_image_folder(root, data::Split::train);
    data::DataLoaderOptions o;
    o.batch_size = batch;
    o.shuffle = true;
    o.seed = 0;
    o.num_workers = workers;
    std::vector<data::TransformPtr> chain = {data::random_resized_crop(size),
                                             data::random_horizontal_flip()};
    if (!augment.empty()) chain.push_back(data::auto_augment_by_name(augment));
    chain.push_back(data::normalize({0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}));
    data::DataLoader loader(ds, o, chain, host_device());
    std::printf("imagefolder_bench: %s | %s%d workers, batch %lld, %lld epochs\n",
                ds->describe().c_str(), augment.empty() ? "" : ("auto-augment " + augment + " | ").c_str(),
                workers, static_cast<long long>(batch),
                static_cast<long long>(epochs));
    std::int64_t timed = 0, seen = 0;
    double seconds = 0;
    for (std::int64_t e = 0; e < epochs; ++e) {
      loader.set_epoch(e);
      data::Batch b;
      auto t0 = std::chrono::steady_clock::now();
      std::int64_t n = 0;
      while (loader.next(b)) {
        ++seen;
        if (seen == warmup) {  // the clock starts once the warm-up batches are in
          t0 = std::chrono::steady_clock::now();
          n = 0;
          continue;
        }
        n += b.images.shape()[0];
      }
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (seen > warmup || e > 0) {
        timed += n;
        seconds += s;
      }
      std::printf("epoch %lld: %lld images in %.2f s, %.1f images/s\n", static_cast<long long>(e + 1),
                  static_cast<long long>(n), s, s > 0 ? n / s : 0.0);
    }
    if (timed == 0) {
      std::fprintf(stderr, "imagefolder_bench: --warmup-batches %lld leaves no batch to time\n",
                   static_cast<long long>(warmup));
      return 1;
    }
    std::printf("RESULT images_per_s=%.2f workers=%d batch=%lld\n", timed / seconds, workers,
                static_cast<long long>(batch));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "imagefolder_bench: %s\n", e.what());
    return 1;
  }
}
