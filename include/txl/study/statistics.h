// Seed-level statistics of a study: a 95% interval over the per-seed values of one
// quantity, by Student's t.
//
// A study trains every cell with several seeds; each seed gives one number per length (its
// mean NLL per token over the evaluated tokens), and those numbers are treated as a sample
// of what training produces. For n seeds with mean m and sample standard deviation s the
// interval is m +- t(1 - (1 - level) / 2, n - 1) * s / sqrt(n). Paired quantities (an
// encoding minus the baseline with the same seed; a length minus the training length of the
// same model) are formed per seed first and then go through the same interval.
#pragma once

#include <cstdint>
#include <vector>

namespace txl {

// P(T <= t) for Student's t with df degrees of freedom (df >= 1), through the regularised
// incomplete beta function.
double student_t_cdf(double t, double df);

// The t with student_t_cdf(t, df) = p, for 0 < p < 1 (bisection to 1e-12).
double student_t_quantile(double p, double df);

struct SeedInterval {
  int64_t n = 0;
  double mean = 0.0;
  double sd = 0.0;     // sample standard deviation (n - 1 in the denominator)
  bool valid = false;  // n >= 2
  double lo = 0.0;
  double hi = 0.0;
  bool excludes_zero() const { return valid && (lo > 0.0 || hi < 0.0); }
};

// The t interval of the values' mean; with fewer than two values, valid = false and lo = hi
// = the mean (no spread to estimate).
SeedInterval seed_interval(const std::vector<double>& values, double level = 0.95);

}  // namespace txl
