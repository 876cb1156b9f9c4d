#!/usr/bin/env bash
# Installs every Debian package cohort needs (only the missing ones) and
# builds it into build/ (Release). Safe to run again; run as root on Debian 12.
#   tools/setup.sh            release build in build/
#   tools/setup.sh --asan     also the AddressSanitizer/UBSan build in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config   # toolchain
  libgtest-dev                                   # C++ tests
  libssl-dev                                     # HMAC-SHA256 for job authentication; dataset object ids
  libzstd-dev liblz4-dev libxxhash-dev           # dataset chunks: compression, checksums
  libturbojpeg0-dev libjpeg62-turbo-dev          # data loader: JPEG decoding (libjpeg-turbo)
  openmpi-bin libopenmpi-dev                     # peer benchmark: Open MPI
  python3 python3-torch python3-numpy python3-pytest  # peer benchmark: torch gloo; Python tests
  python3-dev pybind11-dev python3-pybind11      # the Python package's extension modules
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j"$jobs"
# Makes `/usr/bin/python3 -c "import cohort"` find python/ (and through it the
# extension modules in build/python).
site=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$PWD/python" > "$site/cohort.pth"
if [[ "${1:-}" == "--asan" ]]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOHORT_SANITIZE=ON > /dev/null
  cmake --build build-asan -j"$jobs"
fi
