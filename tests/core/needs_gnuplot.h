// Whether gnuplot, which draws every plot, is installed: scripts/setup.sh installs it, a GPU
// box with only PyTorch may not have it. Tests of the plots skip, or leave the plots
// unchecked, without it; CompareCli.MissingGnuplotIsExitCode1AfterTheJsonIsWritten covers
// its absence.
#pragma once

#include "txl/eval/plot.h"

namespace txl::testing {

inline bool has_gnuplot() { return !find_on_path("gnuplot").empty(); }

inline const char* const kNoGnuplot = "gnuplot is not installed (Debian: gnuplot-nox)";

}  // namespace txl::testing
