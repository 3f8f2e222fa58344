// The ranks' element ranges and the optimizer's parameters by name (see sharded_layout.hpp).
#include "sharded_layout.hpp"

#include <map>

namespace cohort::train::sharded {

std::vector<ParamLayout> layout_of(const DistributedDataParallel& ddp) {
  const comm::Communicator& c = ddp.shard_communicator();
  const int n = c.size(), me = c.rank();
  std::map<std::string, ParameterPtr> by_name;
  for (const auto& p : ddp.module().named_parameters()) by_name[p.name] = p.param;
  std::vector<ParamLayout> out;
  if (ddp.options().zero_stage == 0) {  // plain DDP: rank 0 "owns" everything
    for (const auto& p : ddp.module().named_parameters()) {
      if (!p.param->requires_grad) continue;
      ParamLayout l{p.name, p.param->value.shape(), p.param->value.dtype(), {}, {}, p.param->value};
      const std::int64_t numel = p.param->value.numel();
      for (int k = 0; k < n; ++k)
        l.ranges.push_back(k == 0 ? std::make_pair(std::int64_t{0}, numel)
                                  : std::make_pair(numel, numel));
      l.mine = me == 0 ? p.param->value.reshape({numel})
                       : p.param->value.reshape({numel}).slice(numel, numel);
      out.push_back(std::move(l));
    }
    return out;
  }
  for (int k = 0; k < n; ++k) {
    const auto pieces = ddp.shard_pieces(k);
    if (k == 0) {
      for (const auto& s : pieces) {
        const ParameterPtr& p = by_name.at(s.name);
        ParamLayout l{s.name, s.shape, p->value.dtype(), {}, {}, {}};
        if (ddp.options().zero_stage < 3) l.whole = p->value;
        out.push_back(std::move(l));
      }
    }
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      out[i].ranges.emplace_back(pieces[i].begin, pieces[i].end);
      if (k == me) out[i].mine = pieces[i].values;
    }
  }
  return out;
}

std::vector<std::string> slot_names(const DistributedDataParallel& ddp, const optim::Optimizer& opt,
                                    const std::vector<ParamLayout>& layout, const char* who) {
  std::vector<std::string> out;
  std::map<const Parameter*, std::string> whole;
  if (ddp.options().zero_stage == 0)
    for (const auto& p : ddp.module().named_parameters()) whole[p.param.get()] = p.name;
  for (std::size_t g = 0; g < opt.num_param_groups(); ++g)
    for (const auto& p : opt.params(g)) {
      std::string name;
      if (ddp.options().zero_stage == 0) {
        const auto it = whole.find(p.get());
        if (it != whole.end()) name = it->second;
      } else if (const int i = ddp.shard_piece_index(*p); i >= 0) {
        name = layout[static_cast<std::size_t>(i)].name;
      }
      COHORT_CHECK(
          !name.empty(), who, ": the optimizer's parameter ", out.size(), " (group ", g, ", shape ",
          p->value.shape().str(), ") is not ",
          ddp.options().zero_stage == 0
              ? "a parameter of the wrapped model"
              : "a piece that the DistributedDataParallel's shard_parameters() made",
          " (build the optimizer over ",
          ddp.options().zero_stage == 0 ? "the model's parameters" : "ddp.shard_parameters(...)",
          ")");
      out.push_back(name);
    }
  return out;
}

bool split_slot_key(const std::string& key, std::size_t* slot, std::string* rest) {
  if (key.rfind("state.", 0) != 0) return false;
  const std::size_t dot = key.find('.', 6);
  if (dot == std::string::npos) return false;
  *slot = static_cast<std::size_t>(std::stoull(key.substr(6, dot - 6)));
  *rest = key.substr(dot + 1);
  return true;
}

}  // namespace cohort::train::sharded
