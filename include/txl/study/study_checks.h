// The checks a study makes on its cells before the first one trains: every check `txl
// train` makes before it starts a run that needs the data but no run directory (the corpus
// is there and readable, a training segment fits the streams, the memory estimate fits the
// machine), made for every cell that will train. A study refused here has trained nothing
// and written nothing, instead of stopping at a bad cell after the good ones trained.
#pragma once

#include <cstdint>
#include <vector>

#include "txl/study/study_cell.h"
#include "txl/study/study_config.h"

namespace txl {

// InputError naming the study file, the cell, its grid values and the problem (which names
// the key) for the first of `cells` that is not done and cannot train. `jobs` cells train
// at once, each in its own process: each cell's footprint, measured as its run will measure
// it, N times must fit (check_training_footprint).
void check_cells_can_train(const StudySpec& spec, const StudyPaths& paths,
                           const std::vector<const StudyCell*>& cells, int64_t jobs);

}  // namespace txl
