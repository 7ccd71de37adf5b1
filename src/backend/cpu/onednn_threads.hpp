// OneThreadInParallel: makes a oneDNN primitive called inside an OpenMP parallel region (a
// thread's share of a data-parallel step, fx::train::DataParallel) plan and run on the calling
// thread alone.
//
//   const OneThreadInParallel one_thread;   // before creating or looking up the primitive
//   key.push_back(omp_get_max_threads());   // 1 in a parallel region: cached apart
//   prim.execute(stream, args);
//
// oneDNN 2.6 (OpenMP build) splits a primitive's work for omp_get_max_threads() at creation.
// In a parallel region that is still the outer team's size (the nthreads ICV), while oneDNN's
// own `omp parallel` there gets a team of one (nesting is off): the one thread ran its part and
// waited at oneDNN's barrier for partners that never came (the hang that once made conv decline
// there, ConvLayer.DataParallelGradientEqualsTheSerialOne at two threads). Setting this
// thread's ICV to 1 for the call, and restoring it after, gives single-threaded primitives.
#pragma once
#include <omp.h>

namespace fx::backend::cpu {

class OneThreadInParallel {
 public:
  OneThreadInParallel() : saved_(omp_in_parallel() ? omp_get_max_threads() : 0) {
    if (saved_ > 1) omp_set_num_threads(1);
  }
  ~OneThreadInParallel() {
    if (saved_ > 1) omp_set_num_threads(saved_);
  }
  OneThreadInParallel(const OneThreadInParallel&) = delete;
  OneThreadInParallel& operator=(const OneThreadInParallel&) = delete;

 private:
  int saved_;
};

}  // namespace fx::backend::cpu
