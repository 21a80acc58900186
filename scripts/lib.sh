# shellcheck shell=bash
# Shared by the project's bash scripts (sourced, not run): strict mode that never fails
# silently, root access, and Debian package installation.
#
# Pipelines under `set -o pipefail`: a reader that stops early (`grep -q`, `awk '... exit'`,
# `head`) makes its writer die of SIGPIPE, the pipeline's status becomes 141 and `set -e`
# ends the script. Scripts here therefore capture a command's whole output first
# (`out="$(cmd)"`) and search the captured text (`grep -q ... <<<"$out"`).

set -Eeuo pipefail

# Every script answers -h / --help with its opening comment (its usage) and does nothing else,
# whatever else is on the line (`gpu_check.sh deps --help` included). Sourced, this file sees
# the script's own arguments.
for txl_arg in "$@"; do
  if [[ "$txl_arg" == -h || "$txl_arg" == --help ]]; then
    txl_script="${BASH_SOURCE[${#BASH_SOURCE[@]} - 1]}"
    awk 'NR == 1 && /^#!/ { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$txl_script"
    exit 0
  fi
done
unset txl_arg

# Every unexpected non-zero status names the script, line, command and status before the
# script ends (-E: functions and subshells inherit the trap).
txl_on_error() {
  local status=$1 line=$2 command=$3 source=$4
  echo "error: ${source}:${line}: '${command}' exited with status ${status}" >&2
}
trap 'txl_on_error "$?" "$LINENO" "$BASH_COMMAND" "${BASH_SOURCE[0]}"' ERR

# Runs a command that changes the system: directly as root, else through sudo.
as_root() {
  if [[ $(id -u) -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    echo "error: need root to run '$*', and sudo is not installed." >&2
    echo "HINT: run this script as root, or install sudo and give this user access." >&2
    exit 1
  fi
}

# True when Debian package $1 is installed.
package_installed() {
  local status
  status="$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" || return 1
  [[ "$status" == "install ok installed" ]]
}

# Installs the named Debian packages that are missing (one apt-get call), without the
# recommended extras (libtorch's only recommendation is a BLAS, which setup.sh names itself;
# the others would add hundreds of MB). Prints what it does, with `label` as the prefix.
ensure_packages() {
  local label="$1" missing=() p
  shift
  for p in "$@"; do
    package_installed "$p" || missing+=("$p")
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    echo "[$label] all $# packages already installed"
    return 0
  fi
  echo "[$label] installing ${#missing[@]} missing packages: ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"
}
