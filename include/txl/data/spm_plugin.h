// The C interface between txl and its sentencepiece plugin (libtxl_spm.so).
//
// Why a plugin: Debian's libsentencepiece carries its own copy of protobuf-lite with
// exported symbols, and LibTorch links the system libprotobuf; loaded together at start-up
// the two copies bind to each other's functions and the process crashes before main. The
// plugin is loaded on first use with dlopen(RTLD_LOCAL | RTLD_DEEPBIND), so sentencepiece
// binds to its own protobuf and nothing else sees it. Plain C types only cross the boundary.
#pragma once

#include <stddef.h>
#include <stdint.h>

extern "C" {

// Training: `args` are sentencepiece trainer flags; `text` is split into lines (empty ones
// skipped). On success returns 0 and a malloc'ed serialized model in *model / *model_size;
// otherwise non-zero with sentencepiece's message in `error` (NUL-terminated, truncated).
typedef int (*txl_spm_train_fn)(const char* args, const char* text, size_t text_size, char** model,
                                size_t* model_size, char* error, size_t error_size);
// A processor from a serialized model, or null with the reason in `error`.
typedef void* (*txl_spm_load_fn)(const char* model, size_t model_size, char* error,
                                 size_t error_size);
typedef void (*txl_spm_free_fn)(void* processor);
typedef int (*txl_spm_size_fn)(void* processor);                   // pieces
typedef int (*txl_spm_special_fn)(void* processor, int which);     // 0: unk id, 1: eos id
typedef const char* (*txl_spm_piece_fn)(void* processor, int id);  // valid while loaded
// One line -> ids: writes at most `capacity` ids to `out` and returns how many there are
// (call again with more room when that is larger); -1 on failure.
typedef int64_t (*txl_spm_encode_fn)(void* processor, const char* line, size_t line_size,
                                     int32_t* out, int64_t capacity);
// Ids -> text, the same protocol in bytes.
typedef int64_t (*txl_spm_decode_fn)(void* processor, const int32_t* ids, int64_t count, char* out,
                                     int64_t capacity);
typedef void (*txl_spm_release_fn)(char* buffer);  // frees what train returned

}  // extern "C"
