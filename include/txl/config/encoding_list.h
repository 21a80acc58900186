// The position encodings, one line each: the only list of them. Everything else is derived
// from it: the PosEncoding enum (config.h), the traits registry (encodings.cpp) and the
// factory table (model/encoding_registry.cpp), all in this order, which is the order
// `txl encodings`, bench and the tests list them in (and the enum's values).
//
// A line TXL_ENCODING(kId, name) says that PosEncoding::kId is model.pos_encoding "name",
// that EncodingTraits name_traits() gives what it is and costs (config/encoding_traits_helpers.h;
// in src/model/encodings/name_traits.cpp, torch-free and built into txl_base) and that
// EncodingFactory name_factory() builds its modules (model/encoding_factory.h; beside the
// modules in src/model/encodings/).
//
// Adding an encoding: its own files in src/model/encodings/ (name_traits.cpp, the module with
// name_factory(), its header in include/txl/model/encodings/) and one line here.
//
// An X-macro list, so no include guard: define TXL_ENCODING(id, name), then include this
// file where the list is to be spelled out; it undefines TXL_ENCODING at its end.
TXL_ENCODING(kRelative, relative)
TXL_ENCODING(kAbsolute, absolute)
TXL_ENCODING(kRelativeLearned, relative_learned)
TXL_ENCODING(kNope, nope)
TXL_ENCODING(kRope, rope)
TXL_ENCODING(kAlibi, alibi)
TXL_ENCODING(kT5, t5)
TXL_ENCODING(kKerple, kerple)
TXL_ENCODING(kFire, fire)
TXL_ENCODING(kLearnedAbsolute, learned_absolute)
#undef TXL_ENCODING
