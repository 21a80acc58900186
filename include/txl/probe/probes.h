// The registered probes, one file each (src/probe/probe_<name>.cpp). Only the registry
// (src/probe/probe_registry.cpp) includes this; everything else asks probe_registry().
#pragma once

#include "txl/probe/probe.h"

namespace txl {

Probe recl_probe();       // probe_recl.cpp
Probe copy_probe();       // probe_copy.cpp
Probe passkey_probe();    // probe_passkey.cpp
Probe attention_probe();  // probe_attention.cpp

// The largest evaluated length of the subject; the run's training length when none.
int64_t longest_length(const ProbeSubject& subject);
// InputError when a window of `window` tokens is past the positions the run's encoding can
// take (a learned table), naming the probe option that asks for it.
void check_window_fits(const ProbeSubject& subject, int64_t window, const std::string& option);

}  // namespace txl
