// A backtrace on stderr when the process dies of a fatal signal (SIGSEGV, SIGBUS, SIGFPE,
// SIGILL, SIGABRT), before it dies of it as it would have: a crash a user reports, or one on
// a machine only a script reaches (scripts/gpu_check.sh), then names where it happened.
#pragma once

namespace txl {

// Installs the handlers (on an alternate stack, so a stack overflow is reported too). Frames
// in shared libraries carry their symbols; frames of the executable itself carry offsets
// (binary(+0x...)), which `addr2line -Cfpe binary 0x...` turns into names.
void install_crash_report();

}  // namespace txl
