#!/usr/bin/env bash
# Runs a command in a brand-new minimal Debian root holding a fresh clone of this repository,
# as a newcomer's machine starts: no compiler, no libraries. CI runs the suite this way on
# Debian 13 (the machine itself is Debian 12).
#
# Usage: scripts/fresh_root.sh SUITE 'COMMAND'   e.g. scripts/fresh_root.sh trixie 'bash scripts/test.sh'
#   SUITE     a Debian suite debootstrap knows: trixie (13), bookworm (12)
#   COMMAND   run by bash in the clone's root folder, as root
# Environment:
#   TXL_FRESH_DIR=DIR   where the root is made (default /var/tmp/txl-fresh-SUITE): a folder that
#                       does not exist yet, or holds a root this script made (its marker file
#                       .txl-fresh-root); anything else is refused, never emptied
#   TXL_FRESH_KEEP=1    keep the root afterwards (default: removed)
# Needs root (debootstrap, chroot, mounts). Clones HEAD (uncommitted changes are not in it)
# where the checkout is a git repository, else copies its files.
# Exits with COMMAND's status; prints the time of each phase.
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib.sh
source "$repo/scripts/lib.sh"

usage() { sed -n '5,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then usage; exit 0; fi
[[ $# -eq 2 && -n "$1" && -n "$2" ]] || { usage >&2; exit 2; }
suite="$1"
command="$2"
[[ "$suite" =~ ^[a-z]+$ ]] || { echo "error: suite '$suite' is not a Debian suite name (e.g. trixie)" >&2; exit 2; }
root="${TXL_FRESH_DIR:-/var/tmp/txl-fresh-$suite}"
[[ "$root" == /* ]] || { echo "error: TXL_FRESH_DIR must be an absolute path, got '$root'" >&2; exit 2; }
root="$(realpath -m -- "$root")"  # links and .. resolved: the folder that would be emptied
marker=.txl-fresh-root
if [[ -e "$root" || -L "$root" ]] && [[ ! -f "$root/$marker" ]]; then
  echo "error: TXL_FRESH_DIR $root exists and is not a root this script made (no $marker in" \
    "it); it removes only its own folders: name one that does not exist yet" >&2
  exit 2
fi
[[ $(id -u) -eq 0 ]] || { echo "error: scripts/fresh_root.sh needs root (debootstrap, chroot, mounts)" >&2; exit 1; }

ensure_packages fresh debootstrap git

# The mirror this machine's apt uses (deb822 or one-line sources), else Debian's own.
mirror=""
sources="$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null || true)"
mirror="$(awk '/^URIs:/ { print $2; exit } /^deb / { print $2; exit }' <<<"$sources")"
[[ -n "$mirror" ]] || mirror=http://deb.debian.org/debian

unmount_all() {
  local m
  for m in dev sys proc; do
    if mountpoint -q "$root/$m" 2>/dev/null; then umount -l "$root/$m" || true; fi
  done
}
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  unmount_all
  if [[ "${TXL_FRESH_KEEP:-0}" != 1 && -f "$root/$marker" ]]; then rm -rf --one-file-system "$root"; fi
}

t0=$SECONDS
unmount_all
if [[ -f "$root/$marker" ]]; then rm -rf --one-file-system "$root"; fi
mkdir -p "$root"
touch "$root/$marker"
trap cleanup EXIT
log="$(mktemp)"
if ! debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  echo "error: debootstrap of $suite from $mirror failed (above)" >&2
  exit 1
fi
rm -f "$log"
t_root=$(( SECONDS - t0 ))
echo "[fresh] $suite root made in $root ($t_root s, $(cat "$root/etc/debian_version"))"

cp /etc/resolv.conf "$root/etc/resolv.conf"
# A clone of HEAD where the checkout is a git repository; otherwise its files, without the
# build folders and outputs a clone would not have either.
if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
  git clone -q "$repo" "$root/src/txl"
else
  mkdir -p "$root/src/txl"
  tar -C "$repo" --exclude='./build*' --exclude=./runs --exclude=./deps --exclude=./out -cf - . |
    tar -C "$root/src/txl" -xf -
fi
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"

t1=$SECONDS
status=0
# A clean environment, as a new login would have, keeping what the CPU set-up of this
# workplace exports (OpenBLAS's kernel choice), so both roots run the same kernels.
keep=()
for name in OPENBLAS_CORETYPE OPENBLAS_L2_SIZE TXL_CI_SETUP_RUNS; do
  if [[ -n "${!name:-}" ]]; then keep+=("$name=${!name}"); fi
done
chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${keep[@]+"${keep[@]}"}" \
  /bin/bash -c "cd /src/txl && $command" || status=$?
echo "[fresh] $suite: '$command' exited with status $status after $(( SECONDS - t1 )) s (root $t_root s)"
exit "$status"
