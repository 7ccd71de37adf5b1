// fit's bookkeeping: progress bar, records, CSV, callbacks, epoch summaries, checkpoints' numbers.
#include "fluxion/train/fit.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "fluxion/train/metrics.hpp"
#include "fluxion/train/progress.hpp"

namespace fx::train {

std::string checkpoint_path(const std::string& dir) { return dir + "/checkpoint.safetensors"; }

namespace detail {

struct FitDriver::Impl {
  const FitOptions& opt;
  std::ostream& out;
  History history;
  CsvLog csv;
  std::unique_ptr<ProgressBar> bar;
  RunningMean epoch_loss, interval_loss;
  size_t epoch_first_record = 0;  // where this epoch's records start, for the summary line
};

FitDriver::FitDriver(const FitOptions& options, int64_t batches_per_epoch)
    : impl_(new Impl{options, options.out ? *options.out : std::cout, {}, {}, {}, {}, {}, 0}) {
  FX_CHECK(options.epochs >= 0, "fx::train::fit: epochs must be non-negative, got ",
           options.epochs);
  FX_CHECK(options.record_every >= 0, "fx::train::fit: record_every must be non-negative, got ",
           options.record_every);
  ctx_.epochs = options.epochs;
  ctx_.batches = batches_per_epoch;
  ctx_.history = &impl_->history;
  ctx_.out = &impl_->out;
  ctx_.recorder = [this](const std::string& name, double value) {
    Record r{ctx_.step, ctx_.epoch, name, value};
    impl_->history.add(r);
    if (impl_->csv.is_open()) impl_->csv.write(r);
    for (const CallbackPtr& cb : impl_->opt.callbacks) cb->on_metric(ctx_, r);
  };
  if (!options.checkpoint_dir.empty()) std::filesystem::create_directories(options.checkpoint_dir);
  // Opened in resumed() instead when resuming: the old rows are read back and kept.
  if (!options.csv.empty() && options.resume_dir.empty()) impl_->csv = CsvLog(options.csv, false);
}

FitDriver::~FitDriver() = default;

void FitDriver::resumed(const Checkpoint& ck) {
  ctx_.step = ck.step;
  ctx_.epoch = ck.epoch;
  first_epoch_ = ck.epoch + 1;
  const std::string& csv = impl_->opt.csv;
  if (csv.empty()) return;
  if (std::filesystem::exists(csv)) {
    // Rows written after the checkpoint belong to the interrupted epoch, which runs again.
    impl_->history = History::read_csv(csv);
    impl_->history.truncate_after(ck.step);
    impl_->history.write_csv(csv);
  }
  impl_->csv = CsvLog(csv, true);
}

void FitDriver::begin_epoch(int64_t epoch) {
  ctx_.epoch = epoch;
  ctx_.batch = 0;
  ctx_.epoch_loss = 0;
  impl_->epoch_loss.reset();
  impl_->interval_loss.reset();
  impl_->epoch_first_record = impl_->history.records().size();
  if (impl_->opt.progress) {
    char label[64];
    std::snprintf(label, sizeof label, "epoch %lld/%lld", (long long)epoch, (long long)ctx_.epochs);
    impl_->bar = std::make_unique<ProgressBar>(ctx_.batches,
                                               ProgressOptions{.label = label, .out = &impl_->out});
  }
}

void FitDriver::before_step(const std::function<bool(double)>& set_lr) {
  if (!impl_->opt.schedule) return;
  double lr = impl_->opt.schedule(ctx_.step);
  FX_CHECK(set_lr(lr), "fx::train::fit: a schedule was given, but no rule of the optimiser has a ",
           "learning rate to set");
  if (impl_->opt.record_every > 0 && ctx_.step % impl_->opt.record_every == 0)
    ctx_.record("lr", lr);
}

void FitDriver::nonfinite(double loss, bool restored) {
  if (impl_->bar) impl_->bar->finish();
  fx::detail::fail("fx::train::fit: the loss is ", loss, " at step ", ctx_.step + 1, " (epoch ",
                   ctx_.epoch, ", batch ", ctx_.batch + 1, " of ", ctx_.batches, "); ",
                   restored
                       ? "the model holds the parameters of the last step whose loss was finite "
                         "(step " +
                             std::to_string(ctx_.step - 1) + ")"
                       : std::string("the model is left as it was"));
}

void FitDriver::end_step(double loss, int64_t samples) {
  ++ctx_.step;
  ++ctx_.batch;
  ctx_.loss = loss;
  impl_->epoch_loss.add(loss, double(samples));
  impl_->interval_loss.add(loss, double(samples));
  ctx_.epoch_loss = impl_->epoch_loss.value();
  if (impl_->bar) impl_->bar->update({{"loss", ctx_.epoch_loss}});
  int64_t every = impl_->opt.record_every;
  if (every > 0 && ctx_.step % every == 0) {
    ctx_.record("loss", impl_->interval_loss.value());
    impl_->interval_loss.reset();
  }
  for (const CallbackPtr& cb : impl_->opt.callbacks) cb->on_step(ctx_);
}

void FitDriver::end_epoch() {
  if (impl_->bar) impl_->bar->finish();
  impl_->bar.reset();
  ctx_.record("train_loss", impl_->epoch_loss.value());
  for (const CallbackPtr& cb : impl_->opt.callbacks) cb->on_epoch_end(ctx_);
  if (impl_->opt.epoch_summary) {
    // train_loss first, then what callbacks recorded at the epoch's end, in order.
    std::string line = "epoch=" + std::to_string(ctx_.epoch);
    const auto& rs = impl_->history.records();
    for (size_t i = impl_->epoch_first_record; i < rs.size(); ++i) {
      if (rs[i].step != ctx_.step || rs[i].name == "loss" || rs[i].name == "lr") continue;
      char v[64];
      std::snprintf(v, sizeof v, "%.6f", rs[i].value);
      line += " " + rs[i].name + "=" + v;
    }
    impl_->out << line << "\n" << std::flush;
  }
  if (ctx_.stop && !ctx_.stop_reason.empty()) impl_->out << ctx_.stop_reason << "\n" << std::flush;
}

Checkpoint FitDriver::checkpoint_of(data::DataLoader& loader) const {
  // The schedule's position is the step it is called with.
  return Checkpoint{.epoch = ctx_.epoch,
                    .step = ctx_.step,
                    .schedule = double(ctx_.step),
                    .generators = impl_->opt.generators,
                    .loader = &loader,
                    .metadata = {}};
}

History FitDriver::finish() { return std::move(impl_->history); }

void copy_leaves(const std::vector<Tensor>& dst, const std::vector<Tensor>& src) {
  for (size_t i = 0; i < dst.size(); ++i) {
    if (dst[i].is_contiguous() && src[i].is_contiguous())
      std::memcpy(dst[i].raw_data(), src[i].raw_data(),
                  size_t(src[i].numel()) * itemsize(src[i].dtype()));
    else Tensor(dst[i]).copy_(src[i]);
  }
}

std::vector<Tensor> clone_leaves(const std::vector<Tensor>& src) {
  std::vector<Tensor> out;
  out.reserve(src.size());
  for (const Tensor& t : src) out.push_back(t.clone());
  return out;
}

}  // namespace detail
}  // namespace fx::train
