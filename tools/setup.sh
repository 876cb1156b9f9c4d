#!/usr/bin/env bash
# Installs every Debian package cohort needs (only the missing ones) and
# builds it into build/ (Release). Safe to run again; run as root on Debian 12.
#   tools/setup.sh            release build in build/
#   tools/setup.sh --asan     also the AddressSanitizer/UBSan build in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config   # toolchain
  ccache                                         # rebuilds after a change reuse unchanged objects
  libgtest-dev                                   # C++ tests
  libssl-dev                                     # HMAC-SHA256 for job authentication; dataset object ids
  libzstd-dev liblz4-dev libxxhash-dev           # dataset chunks: compression, checksums
  libcurl4-openssl-dev                           # datasets over HTTP(S) and S3
  libturbojpeg0-dev libjpeg62-turbo-dev          # data loader: JPEG decoding (libjpeg-turbo)
  libpng-dev                                     # data loader: PNG decoding (ingest imagefolder takes .png)
  openmpi-bin libopenmpi-dev                     # peer benchmark: Open MPI
  python3 python3-torch python3-numpy python3-pytest  # peer benchmark: torch gloo; Python tests
  python3-botocore                               # storage tests: an independent SigV4 signer
  python3-dev pybind11-dev python3-pybind11      # the Python package's extension modules
  python3-venv python3-pip python3-setuptools python3-wheel  # pip install of the package (pyproject.toml; its test)
  python3-cloudpickle                            # cohort.run, broadcast_object/allgather_object
  python3-sklearn python3-torchvision python3-pil  # examples: digits data, synthetic benchmark models; PIL: loader tests, dashboard screenshots
  libtorch-dev                                   # the LibTorch adapter's tests and C++ example; the torch.distributed backend (cohort._c10d)
  python3-sklearn python3-torchvision            # examples: digits data, synthetic benchmark models
  libtorch-dev                                   # the LibTorch adapter's tests and C++ example
  python3-filelock                               # Horovod's pytorch_mnist.py, run unchanged for docs/python.md
  openssh-client openssh-server iproute2 procps  # multi-host: cohort run over ssh; tools/cluster (netns, tc, sshd); its tests
  libsqlite3-dev nlohmann-json3-dev              # experiment tracking: the SQLite store, the REST server's JSON
  libpq-dev postgresql-15                        # experiment tracking: the PostgreSQL store (libpq); its tests' throw-away cluster (initdb, pg_ctl)
  chromium                                       # the dashboard's browser tests and benchmark (headless)
  libyaml-cpp-dev                                # cohort sweep: YAML specs (its journal's JSON: nlohmann above)
  python3-optuna python3-matplotlib              # bench/sweep: the Optuna peer; plots
  slurmctld slurmd slurm-client munge            # the job queue's SLURM pool and its test (a real SLURM on loopback)
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

# The S3-compatible server the storage tests start (npm package s3rver; it
# checks access key ids, not signatures), in a project-local folder. node may come from
# elsewhere (nodesource); install Debian's only when there is none.
if ! command -v node > /dev/null || ! command -v npm > /dev/null; then
  echo "setup: installing nodejs npm"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs npm
fi
if [[ ! -f build-tools/s3rver/node_modules/s3rver/package.json ]]; then
  echo "setup: installing s3rver into build-tools/s3rver"
  mkdir -p build-tools/s3rver
  npm install --prefix build-tools/s3rver --no-audit --no-fund s3rver@3.7.1
fi
# The dashboard (web/): esbuild bundles it, uPlot draws its charts, typescript
# checks it (ctest WebDashboardTypes), playwright-core drives chromium in its
# browser tests. Before the build: CMake looks for them when configuring.
if [[ ! -f build-tools/web/node_modules/playwright-core/package.json ]]; then
  echo "setup: installing the dashboard's build and test tools into build-tools/web"
  mkdir -p build-tools/web
  npm install --prefix build-tools/web --no-audit --no-fund \
    esbuild@0.23.1 uplot@1.6.30 typescript@5.5.4 playwright-core@1.47.2
fi

jobs=$(nproc)
# ccache: building again, here or in another checkout of the same sources
# (paths are taken relative to this folder), compiles only what changed.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" > /dev/null
cmake --build build -j"$jobs"
# Makes `/usr/bin/python3 -c "import cohort"` find python/ (and through it the
# extension modules in build/python).
site=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$PWD/python" > "$site/cohort.pth"
if [[ "${1:-}" == "--asan" ]]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOHORT_SANITIZE=ON \
    "${launcher[@]}" > /dev/null
  cmake --build build-asan -j"$jobs"
fi
