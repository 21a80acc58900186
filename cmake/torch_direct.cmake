# LibTorch taken from its folder (TXL_TORCH_ROOT) without its CMake package. PyTorch's package
# looks for the CUDA toolkit, NVTX and cuDNN when its LibTorch has CUDA, and fails where they
# are laid out differently (CUDA 12.9 and 13 ship NVTX as headers only, pip installs the
# toolkit's parts in separate folders); txl compiles no CUDA code and needs none of them, only
# LibTorch's headers and libraries. Sets what find_package(Torch) sets and txl reads:
# Torch_VERSION, Torch_DIR, TORCH_LIBRARIES, TORCH_CXX_FLAGS, and TXL_TORCH_HAS_CUDA.
#
# TXL_TORCH_ROOT is a folder with include/torch/csrc/api/include/torch/torch.h and the
# libraries in lib/ (a PyTorch installation's torch/ folder, an unpacked LibTorch archive) or
# in the system's library folders (Debian: -DTXL_TORCH_ROOT=/usr).
set(_txl_root "${TXL_TORCH_ROOT}")
set(_txl_include "${_txl_root}/include")
if(NOT EXISTS "${_txl_include}/torch/csrc/api/include/torch/torch.h")
  message(FATAL_ERROR "TXL_TORCH_ROOT=${_txl_root}: no include/torch/csrc/api/include/torch/torch.h "
    "there; expected LibTorch's folder, for instance "
    "$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')")
endif()

# The version, from the header every LibTorch ships.
file(STRINGS "${_txl_include}/torch/csrc/api/include/torch/version.h" _txl_version_lines
  REGEX "^#define TORCH_VERSION_(MAJOR|MINOR|PATCH) [0-9]+")
set(Torch_VERSION "")
foreach(_part MAJOR MINOR PATCH)
  set(_txl_number "")
  foreach(_line ${_txl_version_lines})
    if(_line MATCHES "^#define TORCH_VERSION_${_part} ([0-9]+)")
      set(_txl_number "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  if(_txl_number STREQUAL "")
    message(FATAL_ERROR "TXL_TORCH_ROOT=${_txl_root}: no TORCH_VERSION_${_part} in "
      "include/torch/csrc/api/include/torch/version.h")
  endif()
  if(Torch_VERSION STREQUAL "")
    set(Torch_VERSION "${_txl_number}")
  else()
    string(APPEND Torch_VERSION ".${_txl_number}")
  endif()
endforeach()
set(Torch_DIR "${_txl_root} (TXL_TORCH_ROOT, without LibTorch's CMake package)")

# The libraries: lib/ first, then the system's folders.
function(_txl_torch_library var name required)
  find_library(${var} ${name} HINTS "${_txl_root}/lib")
  if(NOT ${var} AND required)
    message(FATAL_ERROR "TXL_TORCH_ROOT=${_txl_root}: lib${name}.so not found in lib/ or the "
      "system's library folders")
  endif()
endfunction()
_txl_torch_library(TXL_TORCH_LIB_TORCH torch ON)
_txl_torch_library(TXL_TORCH_LIB_TORCH_CPU torch_cpu ON)
_txl_torch_library(TXL_TORCH_LIB_C10 c10 ON)
_txl_torch_library(TXL_TORCH_LIB_TORCH_CUDA torch_cuda OFF)
_txl_torch_library(TXL_TORCH_LIB_C10_CUDA c10_cuda OFF)
get_filename_component(_txl_libdir "${TXL_TORCH_LIB_TORCH}" DIRECTORY)

# The libstdc++ string ABI LibTorch was built with, as its CMake package writes it; LibTorch
# 2.7 and later, and every Debian LibTorch, use the C++11 ABI.
set(_txl_abi 1)
file(GLOB _txl_configs "${_txl_root}/share/cmake/Torch/TorchConfig.cmake"
  "${_txl_libdir}/cmake/Torch/TorchConfig.cmake")
foreach(_config ${_txl_configs})
  file(STRINGS "${_config}" _txl_abi_line REGEX "_GLIBCXX_USE_CXX11_ABI=[01]")
  if(_txl_abi_line MATCHES "_GLIBCXX_USE_CXX11_ABI=([01])")
    set(_txl_abi "${CMAKE_MATCH_1}")
  endif()
endforeach()
set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=${_txl_abi}")

# The definitions LibTorch's own targets pass to their users (USE_DISTRIBUTED, USE_C10D_GLOO:
# without them the c10d headers txl's data-parallel training includes declare nothing), as
# its CMake package lists them.
set(_txl_definitions "")
file(GLOB _txl_targets "${_txl_root}/share/cmake/Caffe2/Caffe2Targets.cmake"
  "${_txl_libdir}/cmake/Caffe2/Caffe2Targets.cmake")
foreach(_targets ${_txl_targets})
  file(STRINGS "${_targets}" _txl_lines REGEX "INTERFACE_COMPILE_DEFINITIONS \"[^$]*\"")
  foreach(_line ${_txl_lines})
    if(_line MATCHES "INTERFACE_COMPILE_DEFINITIONS \"([^\"$]*)\"")
      list(APPEND _txl_definitions ${CMAKE_MATCH_1})
    endif()
  endforeach()
endforeach()
if(NOT _txl_targets)
  message(WARNING "TXL_TORCH_ROOT=${_txl_root}: no Caffe2Targets.cmake, so none of LibTorch's "
    "compile definitions; data-parallel training (Gloo) may not compile")
endif()
list(REMOVE_DUPLICATES _txl_definitions)

add_library(txl_torch INTERFACE IMPORTED)
set_target_properties(txl_torch PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${_txl_include};${_txl_include}/torch/csrc/api/include"
  INTERFACE_COMPILE_DEFINITIONS "${_txl_definitions}"
  INTERFACE_COMPILE_OPTIONS "${TORCH_CXX_FLAGS}")
set(_txl_links "${TXL_TORCH_LIB_TORCH}" "${TXL_TORCH_LIB_TORCH_CPU}" "${TXL_TORCH_LIB_C10}")
set(TXL_TORCH_HAS_CUDA OFF)
if(TXL_TORCH_LIB_TORCH_CUDA AND TXL_TORCH_LIB_C10_CUDA)
  # Nothing in txl calls into libtorch_cuda, so a linker that drops unused libraries (Ubuntu's
  # default) would leave it out, and with it the CUDA backend it registers when loaded.
  list(APPEND _txl_links "-Wl,--no-as-needed,${TXL_TORCH_LIB_TORCH_CUDA},--as-needed"
    "${TXL_TORCH_LIB_C10_CUDA}")
  set(TXL_TORCH_HAS_CUDA ON)
endif()
set_target_properties(txl_torch PROPERTIES INTERFACE_LINK_LIBRARIES "${_txl_links}")
# The CUDA library is named by a linker flag, which CMake does not add to the run path.
set_target_properties(txl_torch PROPERTIES INTERFACE_LINK_OPTIONS "-Wl,-rpath,${_txl_libdir}")
set(TORCH_LIBRARIES txl_torch)
set(TORCH_INCLUDE_DIRS "${_txl_include};${_txl_include}/torch/csrc/api/include")
