#!/usr/bin/env bash
# Checks that txl compiles and links against Debian 13's CUDA build of LibTorch
# (libtorch-cuda-dev, contrib) on a machine without a GPU or network access to NVIDIA.
#
# Usage: scripts/check_cuda_build.sh        (as root: debootstrap, chroot, mounts)
# Environment:
#   TXL_CUDA_ROOT=DIR   the Debian 13 root it makes once and reuses (default
#                       /var/tmp/txl-cuda-root); the build is DIR/src/build-cuda and the
#                       logs DIR/var/log/txl-cuda-check/
#
# Phases (each timed in the summary):
#   bootstrap  a trixie minbase root (main contrib non-free) from this machine's Debian mirror,
#              made once; later runs reuse it
#   copy       the working tree as git sees it (tracked and untracked-not-ignored files, so
#              uncommitted changes included) into DIR/src; DIR/src/build-cuda is kept
#   packages   the toolchain, libtorch-cuda-dev, nvidia-cuda-toolkit, libgloo-cuda-dev and
#              txl's other libraries from Debian 13
#   configure  CMake (Ninja, Release) into /src/build-cuda inside the root
#   build      the targets txl, txl_core_tests and txl_base_tests (-j2, ninja -k 0)
#   verify     readelf/ldd: the binaries must depend on libtorch_cuda.so; where the link needed
#              --allow-shlib-undefined (below), txl is linked once more without it, to a
#              scratch file, and every undefined reference left must be a cudnn* one
#   run        `txl info --no-bench` and the DeviceNames/ResolveDevice tests, only where the
#              binaries can start
#
# cuDNN. libtorch-cuda-2.6 depends on nvidia-cudnn, an installer whose postinst downloads
# cuDNN from NVIDIA; without that network it fails and leaves apt half-configured. Debian has
# no cuDNN libraries of its own, so this script installs in its place a local, empty package,
# txl-cudnn-absent, that says "Provides: nvidia-cudnn" (and conflicts with it): apt is then
# satisfied and nothing is downloaded. cuDNN's libraries are therefore ABSENT from the root,
# and the script says so. libtorch_cuda.so NEEDs libcudnn.so.9, so the linker cannot resolve
# libtorch_cuda.so's own cudnn* references; only for that case executables are linked with
# -Wl,--allow-shlib-undefined, which ignores unresolved symbols INSIDE shared libraries only:
# every undefined symbol of txl's own objects (and of its static libraries) must still
# resolve against LibTorch, c10, torch_cuda, Gloo, spdlog, ..., or the link fails.
#
# What this checks: every txl source compiles against LibTorch 2.6's headers with CUDA
# compiled in (torch_cuda target present, Gloo's CUDA build), and txl, txl_core_tests and
# txl_base_tests link, with all of txl's symbols resolved and a DT_NEEDED on libtorch_cuda.so.
# That DT_NEEDED comes from Torch's CMake (it links libtorch_cuda with --no-as-needed): txl
# reaches CUDA through LibTorch's dispatcher, and the script prints how many symbols it takes
# from libtorch_cuda.so/libc10_cuda.so directly (0 at the time of writing).
# What it does not check: anything at run time on CUDA. Without libcudnn.so.9 the dynamic
# loader refuses to start the LibTorch binaries, so neither `txl info` nor any test runs
# there (the script says so); and there is no GPU in any case. gpu_check.sh covers run time.
# The test binaries are not run by the build: CTest lists their suites when it starts
# (cmake/test_suites.cmake).
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"

root="${TXL_CUDA_ROOT:-/var/tmp/txl-cuda-root}"
[[ "$root" == /* && "$root" != / ]] ||
  { echo "error: TXL_CUDA_ROOT must be an absolute path other than /, got '$root'" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] ||
  { echo "error: scripts/check_cuda_build.sh needs root (debootstrap, chroot, mounts)" >&2; exit 1; }
[[ $# -eq 0 ]] || { sed -n '4,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

suite=trixie
marker=/var/lib/txl-cuda-check/bootstrapped   # inside the root: debootstrap finished
logs=/var/log/txl-cuda-check                  # inside the root
build=/src/build-cuda                         # inside the root
targets=(txl txl_core_tests txl_base_tests)
packages=(build-essential cmake ninja-build pkg-config libtorch-cuda-dev nvidia-cuda-toolkit
  libgloo-cuda-dev libcli11-dev libspdlog-dev nlohmann-json3-dev libgtest-dev
  libopenblas0-openmp libsentencepiece-dev)
cudnn_stub=txl-cudnn-absent

# --- Timing and summary ------------------------------------------------------------------
now() { echo "${EPOCHREALTIME/,/.}"; }
t_total=$(now)
t_phase=$t_total
summary=()
phase_done() {   # phase_done NAME RESULT
  local t line
  t=$(now)
  line="$(awk -v a="$t_phase" -v b="$t" -v n="$1" -v r="$2" \
    'BEGIN { printf "%-10s %7.1f s  %s", n, b - a, r }')"
  echo "[cuda] phase $line"
  summary+=("$line")
  t_phase=$t
}
notes=()
note() { echo "[cuda] $*"; notes+=("$*"); }
print_summary() {
  local line total
  total="$(awk -v a="$t_total" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')"
  echo
  echo "[cuda] ===== summary (root $root, ${total} s in all) ====="
  for line in "${summary[@]}"; do echo "[cuda]   $line"; done
  for line in "${notes[@]}"; do echo "[cuda]   note: $line"; done
}

# --- Mounts, released on exit ------------------------------------------------------------
mounted=()
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" ||
      echo "warning: could not unmount ${mounted[i]}" >&2
  done
}
trap cleanup EXIT
mount_in_root() {   # mount_in_root PATH MOUNT-ARGS...
  local target="$root$1"
  shift
  if mountpoint -q "$target"; then return 0; fi   # left by an earlier run: reuse
  mount "$@" "$target"
  mounted+=("$target")
}

# Runs a command inside the root with a clean environment.
in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    DEBIAN_FRONTEND=noninteractive "$@"
}

# --- Phase 1: the Debian 13 root ---------------------------------------------------------
host_mirror() {
  local sources=/etc/apt/sources.list.d/debian.sources uri=""
  if [[ -r $sources ]]; then
    uri="$(awk '$1 == "URIs:" && $2 !~ /security/ { print $2; exit }' "$sources")"
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

if [[ -e "$root$marker" ]]; then
  bootstrap_result="reused $root (Debian $(cat "$root/etc/debian_version"))"
else
  if [[ -d $root ]] && [[ -n "$(ls -A "$root")" ]]; then
    echo "error: $root exists but holds no finished debootstrap (no $marker in it)." >&2
    echo "HINT: unmount anything under it, remove it (rm -rf --one-file-system $root) and rerun." >&2
    exit 1
  fi
  command -v debootstrap >/dev/null || ensure_packages cuda debootstrap
  mirror="$(host_mirror)"
  echo "[cuda] debootstrap $suite (minbase; main contrib non-free) from $mirror into $root"
  mkdir -p "$root"
  log="$(mktemp)"
  if ! debootstrap --variant=minbase --components=main,contrib,non-free \
      "$suite" "$root" "$mirror" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "error: debootstrap of $suite from $mirror failed (above)" >&2
    exit 1
  fi
  rm -f "$log"
  mkdir -p "$root${marker%/*}"
  touch "$root$marker"
  bootstrap_result="made $root from $mirror (Debian $(cat "$root/etc/debian_version"))"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
# No service may start inside the root.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
mount_in_root /proc -t proc proc
mount_in_root /sys -t sysfs sysfs
mount_in_root /dev --bind /dev
mount_in_root /dev/pts --bind /dev/pts
mkdir -p "$root$logs"
phase_done bootstrap "$bootstrap_result"

# --- Phase 2: the working tree -----------------------------------------------------------
# Tracked and untracked-but-not-ignored files, as they are now (uncommitted changes too);
# tracked files deleted in the working tree are skipped. tar keeps modification times, so
# Ninja rebuilds only what changed since the last run.
list="$(mktemp)"
git -C "$repo" ls-files -co --exclude-standard -z >"$list"
files=()
while IFS= read -r -d '' f; do
  if [[ -e "$repo/$f" || -L "$repo/$f" ]]; then files+=("$f"); fi
done <"$list"
rm -f "$list"
mkdir -p "$root/src"
find "$root/src" -mindepth 1 -maxdepth 1 ! -name build-cuda -exec rm -rf --one-file-system {} +
printf '%s\0' "${files[@]}" | tar -C "$repo" --null -T - -cf - | tar -C "$root/src" -xf -
phase_done copy "${#files[@]} files of the working tree into $root/src"

# --- Phase 3: packages -------------------------------------------------------------------
installed_in_root() {
  local status
  status="$(in_root dpkg-query -W -f="\${Status}" "$1" 2>/dev/null)" || return 1
  [[ "$status" == "install ok installed" ]]
}

# The stand-in for nvidia-cudnn (see the header): an empty package that provides it at the
# version the archive has, so that libtorch-cuda's "nvidia-cudnn (>= ...)" is met.
install_cudnn_stub() {
  local version dir=/var/lib/txl-cuda-check/stub
  version="$(in_root apt-cache show --no-all-versions nvidia-cudnn)"
  version="$(awk '$1 == "Version:" { print $2; exit }' <<<"$version")"
  [[ -n "$version" ]] || { echo "error: no nvidia-cudnn in the root's archive (contrib?)" >&2; exit 1; }
  rm -rf "$root$dir"
  mkdir -p "$root$dir/pkg/DEBIAN"
  cat >"$root$dir/pkg/DEBIAN/control" <<EOF
Package: $cudnn_stub
Version: 1.0
Architecture: all
Maintainer: txl scripts/check_cuda_build.sh <root@localhost>
Provides: nvidia-cudnn (= $version)
Conflicts: nvidia-cudnn
Section: local
Priority: optional
Description: stand-in for nvidia-cudnn: cuDNN is NOT installed
 Made by txl's scripts/check_cuda_build.sh to install libtorch-cuda-dev without network
 access to NVIDIA (nvidia-cudnn's postinst downloads cuDNN). It holds no files:
 libcudnn*.so are absent, so programs that need cuDNN at run time do not start.
EOF
  in_root dpkg-deb --root-owner-group --build "$dir/pkg" "$dir/$cudnn_stub.deb" >/dev/null
  in_root dpkg -i "$dir/$cudnn_stub.deb" >/dev/null
  note "cuDNN: installed '$cudnn_stub', an empty local package with 'Provides: nvidia-cudnn (= $version)', instead of nvidia-cudnn (its postinst downloads cuDNN from NVIDIA, unreachable here); cuDNN's libraries (libcudnn.so.9 ...) are ABSENT from the root"
}

missing=()
for p in "${packages[@]}"; do installed_in_root "$p" || missing+=("$p"); done
if installed_in_root nvidia-cudnn; then
  note "cuDNN: the real nvidia-cudnn is installed in the root; no stand-in used"
elif installed_in_root "$cudnn_stub"; then
  note "cuDNN: '$cudnn_stub' (empty stand-in providing nvidia-cudnn) installed by an earlier run; cuDNN's libraries are ABSENT from the root"
fi
if [[ ${#missing[@]} -eq 0 ]]; then
  packages_result="all ${#packages[@]} packages already installed"
else
  echo "[cuda] installing ${#missing[@]} packages in the root: ${missing[*]}"
  in_root apt-get update -q >"$root$logs/apt-update.log" 2>&1 ||
    { cat "$root$logs/apt-update.log" >&2; echo "error: apt-get update in the root failed" >&2; exit 1; }
  for p in "${missing[@]}"; do   # names checked first, for a clear message
    in_root apt-cache show --no-all-versions "$p" >/dev/null 2>&1 ||
      { echo "error: package '$p' not found in Debian $suite (main contrib non-free)" >&2; exit 1; }
  done
  installed_in_root nvidia-cudnn || installed_in_root "$cudnn_stub" || install_cudnn_stub
  if ! in_root apt-get install -y -q --no-install-recommends "${missing[@]}" \
      >"$root$logs/apt-install.log" 2>&1; then
    tail -n 40 "$root$logs/apt-install.log" >&2
    echo "error: apt-get install in the root failed (log: $root$logs/apt-install.log)" >&2
    exit 1
  fi
  packages_result="installed ${#missing[@]} packages (log: $root$logs/apt-install.log)"
fi
torch_version="$(in_root dpkg-query -W -f="\${Version}" libtorch-cuda-dev)"
cuda_version="$(in_root dpkg-query -W -f="\${Version}" nvidia-cuda-toolkit)"
phase_done packages "$packages_result; libtorch-cuda-dev $torch_version, nvidia-cuda-toolkit $cuda_version"

# Is cuDNN there, and does LibTorch's CUDA library need it?
torch_cuda_lib=/usr/lib/x86_64-linux-gnu/libtorch_cuda.so
[[ -e "$root$torch_cuda_lib" ]] || torch_cuda_lib="$(in_root find /usr/lib -name libtorch_cuda.so -print -quit)"
[[ -n "$torch_cuda_lib" ]] || { echo "error: libtorch_cuda.so not found in the root" >&2; exit 1; }
dynamic="$(in_root readelf -d "$torch_cuda_lib")"
cudnn_needed="$(awk '/NEEDED/ && /libcudnn/ { gsub(/[][]/, "", $NF); print $NF }' <<<"$dynamic")"
cudnn_files="$(in_root ldconfig -p)"
cudnn_files="$(awk '/libcudnn/ { print $1 }' <<<"$cudnn_files")"
link_flags=()
if [[ -n "$cudnn_needed" && -z "$cudnn_files" ]]; then
  note "cuDNN: $torch_cuda_lib NEEDs $(tr '\n' ' ' <<<"$cudnn_needed")but no libcudnn is in the root: executables link with -Wl,--allow-shlib-undefined (symbols unresolved INSIDE shared libraries are ignored; txl's own undefined symbols must still resolve)"
  link_flags=("-DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined")
elif [[ -z "$cudnn_needed" ]]; then
  note "cuDNN: $torch_cuda_lib does not NEED libcudnn; plain link"
fi

# --- Phase 4: configure and build --------------------------------------------------------
configure_log="$root$logs/configure.log"
if ! in_root cmake -S /src -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${link_flags[@]}" \
    >"$configure_log" 2>&1; then
  cat "$configure_log" >&2
  echo "error: CMake configuration failed in the root (log: $configure_log)" >&2
  phase_done configure FAILED
  print_summary
  exit 1
fi
configure_text="$(cat "$configure_log")"
torch_line="$(awk '/LibTorch [0-9]/ { sub(/^-- /, ""); print; exit }' <<<"$configure_text")"
echo "[cuda] cmake: $torch_line"
awk '/PyTorch: CUDA detected|USE_CUDNN|oneDNN|Found sentencepiece/ {
  sub(/^(-- )? */, ""); print "[cuda] cmake: " $0 }' <<<"$configure_text"
if [[ "$torch_line" != *"CUDA compiled in"* ]]; then
  echo "error: CMake did not find LibTorch with CUDA compiled in: '$torch_line'" >&2
  phase_done configure FAILED
  print_summary
  exit 1
fi
phase_done configure "$torch_line"

build_log="$root$logs/build.log"
echo "[cuda] building ${targets[*]} (-j2, keep going; log: $build_log)"
# Ninja's progress lines as they come (a read loop: mawk would hold them in its input buffer).
show_progress() {
  local line
  while IFS= read -r line; do
    if [[ $line =~ ^\[[0-9]+/[0-9]+\] ]]; then echo "[cuda]   $line"; fi
  done
}
build_status=0
in_root cmake --build "$build" --target "${targets[@]}" -j 2 -- -k 0 2>&1 | tee "$build_log" |
  show_progress || build_status=$?
built=()
for t in "${targets[@]}"; do
  if [[ -x "$root$build/$t" ]]; then built+=("$t"); fi
done
if [[ $build_status -ne 0 ]]; then
  echo "[cuda] build FAILED (status $build_status); the compiler's and linker's errors:" >&2
  awk '/^FAILED:|error:|undefined reference|ld returned/' "$build_log" >&2
  phase_done build "FAILED (status $build_status); built: ${built[*]:-none}; log: $build_log"
  print_summary
  exit 1
fi
phase_done build "built and linked: ${built[*]}"

# --- Phase 5: what the binaries depend on ------------------------------------------------
verify_ok=1
for t in txl txl_core_tests; do
  dynamic="$(in_root readelf -d "$build/$t")"
  needed="$(awk '/NEEDED/ && /libtorch|libc10/' <<<"$dynamic")"
  echo "[cuda] readelf -d $build/$t (LibTorch's NEEDED entries):"
  awk '{ sub(/^ */, ""); print "[cuda]   " $0 }' <<<"$needed"
  if ! grep -q 'libtorch_cuda\.so' <<<"$needed"; then
    echo "error: $t has no DT_NEEDED on libtorch_cuda.so" >&2
    verify_ok=0
  fi
done
ldd_text="$(in_root ldd "$build/txl" 2>&1 || true)"
torch_cuda_resolved="$(awk '/libtorch_cuda\.so/ { print $1, $2, $3 }' <<<"$ldd_text")"
unresolved="$(awk '/not found/ { print $1 }' <<<"$ldd_text")"
echo "[cuda] ldd txl: ${torch_cuda_resolved:-libtorch_cuda.so not listed}"
# What txl calls in LibTorch's CUDA libraries directly (by symbol; most CUDA work goes through
# the dispatcher in libtorch_cpu, and Torch's CMake links libtorch_cuda with --no-as-needed).
direct="$(in_root bash -c "nm -D --undefined-only $build/txl | awk '{ print \$2 }' | sort -u > /tmp/txl-undefined
  nm -D --defined-only $torch_cuda_lib ${torch_cuda_lib%/*}/libc10_cuda.so | awk 'NF == 3 { print \$3 }' |
    sort -u | comm -12 /tmp/txl-undefined - | wc -l; rm -f /tmp/txl-undefined")"
echo "[cuda] txl's own references into libtorch_cuda.so/libc10_cuda.so: $direct symbols"
# With -Wl,--allow-shlib-undefined: link txl once more without it (to a scratch file), to show
# that what the flag lets through is cuDNN's symbols, needed by libtorch_cuda.so, and nothing else.
strict_result=""
if [[ ${#link_flags[@]} -gt 0 ]]; then
  commands="$(in_root ninja -C "$build" -t commands txl)"
  link_cmd="$(tail -n 1 <<<"$commands")"
  link_cmd="${link_cmd//-Wl,--allow-shlib-undefined/}"
  link_cmd="${link_cmd//-Wl,--dependency-file=CMakeFiles\/txl.dir\/link.d/}"
  link_cmd="${link_cmd/ -o txl / -o \/tmp\/txl-strict-link }"
  if [[ "$link_cmd" != *" -o /tmp/txl-strict-link "* ]]; then
    echo "error: could not make the strict link command from: $link_cmd" >&2
    verify_ok=0
  elif strict_log="$(in_root bash -c "cd $build && $link_cmd" 2>&1)"; then
    strict_result="strict link (no --allow-shlib-undefined) succeeded: the flag was not needed"
  else
    strict_result="$(awk '/undefined references? to/ { n++; if ($0 ~ /undefined references? to .cudnn/) c++; else { print "[cuda]   NOT cuDNN: " $0 > "/dev/stderr" } }
      END { printf "%d %d", n, c }' <<<"$strict_log")"
    read -r n_undefined n_cudnn <<<"$strict_result"
    if [[ $n_undefined -gt 0 && $n_undefined -eq $n_cudnn ]]; then
      strict_result="strict link (no --allow-shlib-undefined) fails only on $n_cudnn undefined references to cudnn* inside libtorch_cuda.so"
    else
      awk '/error|undefined|warning/' <<<"$strict_log" >&2
      strict_result="strict link fails on $((n_undefined - n_cudnn)) undefined references that are NOT cuDNN's (above)"
      verify_ok=0
    fi
  fi
  rm -f "$root/tmp/txl-strict-link"
  echo "[cuda] $strict_result"
fi
if [[ $verify_ok -eq 1 ]]; then
  phase_done verify "txl and txl_core_tests NEED libtorch_cuda.so${strict_result:+; $strict_result}"
else
  phase_done verify FAILED
fi

# --- Phase 6: start the binaries, where they can start -----------------------------------
if [[ -n "$unresolved" ]]; then
  note "run: not attempted: the dynamic loader cannot find $(tr '\n' ' ' <<<"$unresolved")for txl and txl_core_tests (cuDNN is absent), so they cannot start in this root; \`txl info\` and the device tests need cuDNN's libraries (or a GPU machine: scripts/gpu_check.sh)"
  phase_done run "skipped: binaries cannot start without $(tr '\n' ' ' <<<"$unresolved")"
else
  run_status=0
  in_root "$build/txl" info --no-bench || run_status=$?
  in_root env OMP_WAIT_POLICY=PASSIVE "$build/txl_core_tests" \
    --gtest_filter='ResolveDevice*:DeviceNames*' || run_status=$?
  if [[ $run_status -eq 0 ]]; then
    phase_done run "txl info and the device tests ran"
  else
    phase_done run "FAILED (status $run_status)"
    verify_ok=0
  fi
fi

print_summary
[[ $verify_ok -eq 1 ]] || exit 1
echo "[cuda] OK: txl compiles and links against Debian 13's LibTorch $torch_version with CUDA"
