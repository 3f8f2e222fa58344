// The example of docs/PARALLEL.md, built and run as a test so the documented output is real:
// a small CNN with batch norm trained by the Trainer on 2 ranks, the DDP module passed to the
// Trainer as the model (its forward syncs the batch-norm buffers, its backward averages the
// gradients). Prints per-epoch losses, the phase table (with DDP's comm and overlap as extra rows)
// and whether the ranks ended with identical weights; exits 1 if they did not.
#include <cstdio>
#include <memory>

#include "cohort/collectives/registry.hpp"
#include "cohort/data/dataloader.hpp"
#include "cohort/data/synthetic.hpp"
#include "cohort/devices.hpp"
#include "cohort/layers.hpp"
#include "cohort/optim.hpp"
#include "cohort/parallel/ddp.hpp"
#include "cohort/train/trainer.hpp"

using namespace cohort;

int main() {
  try {
    std::shared_ptr<comm::Communicator> comm = comm::init_process_group();  // COHORT_COMM or auto
    auto& dev = host_device();
    nn::manual_seed(static_cast<std::uint64_t>(comm->rank()) + 1);  // DDP makes them equal
    auto model = nn::sequential({{"conv", nn::make<nn::Conv2d>(nn::Conv2dOptions(1, 8, 3), dev)},
                                 {"bn", nn::make<nn::BatchNorm2d>(8, dev)},
                                 {"relu", nn::make<nn::ReLU>()},
                                 {"pool", nn::make<nn::MaxPool2d>(nn::MaxPool2dOptions(2))},
                                 {"flatten", nn::make<nn::Flatten>()},
                                 {"fc", nn::make<nn::Linear>(72, 10, dev)}});

    parallel::DDPOptions opt;
    opt.first_bucket_mb = 0.001;  // ~1 KiB: fc.bias alone, so communication starts early
    parallel::DistributedDataParallel ddp(model, comm, opt);

    auto ds = std::make_shared<data::SyntheticDataset>(2048, Shape{1, 8, 8}, 10, 5);
    data::DataLoaderOptions lo;
    lo.batch_size = 32;  // per rank; the Trainer shards the loader
    lo.shuffle = true;
    lo.seed = 7;
    data::DataLoader loader(ds, lo, {}, dev);

    nn::CrossEntropyLoss loss;
    optim::SGDOptions so;
    so.lr = 0.05;
    so.momentum = 0.9;
    optim::SGD sgd(ddp.parameters(), so);
    train::TrainerOptions to;
    to.epochs = 3;
    to.show_progress = false;
    // The DDP module, like any model: the Trainer shards the loader, averages the loss over the
    // ranks and adds DDP's comm and overlap rows to the phase table itself.
    train::Trainer trainer(ddp, loss, sgd, nullptr, to);

    for (const auto& r : trainer.fit(loader, nullptr))
      if (comm->rank() == 0)
        std::printf("epoch %lld: train loss %.4f (%lld steps of %d x 32 samples)\n",
                    static_cast<long long>(r.epoch), r.train_loss, static_cast<long long>(r.steps),
                    comm->size());
    const auto s = ddp.stats();
    // Each forward starts from rank 0's buffers, then updates them with this rank's batch: copy
    // rank 0's once more so the final check covers the running statistics too.
    ddp.sync_buffers();
    const bool same = ddp.weights_identical_across_ranks();
    if (comm->rank() == 0) {
      std::printf("%d buckets: %s | %s\n", s.buckets, ddp.bucket_layout().front().front().c_str(),
                  ddp.bucket_layout().back().front().c_str());
      std::printf("%s", trainer.timer().summary().c_str());
      std::printf("weights identical across ranks: %s (digest %s)\n", same ? "yes" : "NO",
                  ddp.weights_digest().c_str());
    }
    std::fflush(stdout);
    comm->barrier()->wait();
    return same ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "ddp_example: %s\n", e.what());
    return 1;
  }
}
