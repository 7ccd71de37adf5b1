// What the libtorch oracle tests share: fluxion tensors as torch tensors of the same dtype, and
// an elementwise comparison that names the first difference.
#pragma once
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <fluxion/core/tensor.hpp>
#include <fluxion/ops/create.hpp>

namespace fx::oracle {

// A copy of t in torch, same shape and dtype (bool, integers, f32, f64).
inline torch::Tensor to_torch(const Tensor& t) {
  const std::vector<int64_t> dims(t.shape().begin(), t.shape().end());
  switch (t.dtype()) {
    case i64:
    case i32:
    case boolean: {
      auto v = to_vector<int64_t>(t);
      auto d = torch::from_blob(v.data(), dims, torch::kLong).clone();
      return t.dtype() == i64 ? d : d.to(t.dtype() == i32 ? torch::kInt : torch::kBool);
    }
    case f32: {
      auto v = to_vector<float>(t);
      return torch::from_blob(v.data(), dims, torch::kFloat).clone();
    }
    default: {
      auto v = to_vector<double>(t);
      return torch::from_blob(v.data(), dims, torch::kDouble).clone();
    }
  }
}

// Empty when got equals want within rtol of each element plus the largest element of want;
// otherwise what differs first.
inline std::string mismatch(const Tensor& got, const torch::Tensor& want, double rtol) {
  std::vector<int64_t> gs(got.shape().begin(), got.shape().end());
  if (gs != want.sizes().vec()) return "shape " + got.shape().to_string();
  auto g = to_vector<double>(got);
  torch::Tensor w = want.detach().to(torch::kDouble).contiguous();
  const double* wp = w.data_ptr<double>();
  double scale = 0;
  for (int64_t i = 0; i < w.numel(); ++i) scale = std::max(scale, std::abs(wp[i]));
  for (size_t i = 0; i < g.size(); ++i)
    if (std::abs(g[i] - wp[i]) > rtol * (std::abs(wp[i]) + scale))
      return "element " + std::to_string(i) + ": fluxion " + std::to_string(g[i]) + ", torch " +
             std::to_string(wp[i]);
  return "";
}

}  // namespace fx::oracle
