#!/usr/bin/env bash
# Configures and builds the minimal tree (-DCOHORT_MINIMAL=ON) the way a
# machine without the Debian -dev packages would: in a private mount
# namespace where the headers, pkg-config files and CMake package files of
# every library only the full build uses (OpenSSL, zstd, lz4, xxhash, curl,
# libjpeg/turbojpeg, libpng, SQLite, libpq, nlohmann-json, yaml-cpp, GTest)
# are absent. Then checks that configure looked for none of them.
#
#   tools/check-minimal-build.sh [BUILD_DIR]      (default: build-minimal)
#
# Registered as the ctest MinimalBuild (tests/CMakeLists.txt). With ccache
# warm from the full build, nearly every object is a cache hit (a few
# minutes); cold it compiles the runtime (about 15 minutes on 2 cores).
# Without the rights to make a mount namespace (unshare -m) it builds with
# the packages visible and says so; the configure check still runs.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
out="$(realpath -m "${1:-$src/build-minimal}")"
jobs="${COHORT_BUILD_JOBS:-2}"

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$src" CCACHE_NOHASHDIR=1
fi
configure=(cmake -S "$src" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOHORT_MINIMAL=ON
           "${launcher[@]}")
build=(nice cmake --build "$out" -j "$jobs")

# Inside the namespace: /usr/include becomes an overlay of itself minus the
# -dev packages' headers, and their pkg-config and CMake package folders
# become empty.
view="$(mktemp -d)"
trap 'rm -rf "$view"' EXIT
mkdir -p "$view/upper" "$view/work" "$view/include" "$view/empty"
hidden=(openssl yaml-cpp nlohmann gtest gmock curl postgresql libpng16
        x86_64-linux-gnu/openssl x86_64-linux-gnu/curl x86_64-linux-gnu/jconfig.h
        zstd.h zstd_errors.h zdict.h lz4.h lz4hc.h lz4frame.h xxhash.h turbojpeg.h jpeglib.h
        jmorecfg.h jerror.h png.h pngconf.h pnglibconf.h sqlite3.h sqlite3ext.h libpq-fe.h)
masked=(/usr/lib/x86_64-linux-gnu/pkgconfig /usr/share/pkgconfig /usr/share/cmake/nlohmann_json)
for package in GTest yaml-cpp zstd libjpeg-turbo; do
  masked+=("/usr/lib/x86_64-linux-gnu/cmake/$package")
done
mounts="mount -t overlay overlay -o lowerdir=/usr/include,upperdir=$view/upper,workdir=$view/work $view/include"
for name in "${hidden[@]}"; do mounts+=" && rm -rf '$view/include/$name'"; done
mounts+=" && mount --bind '$view/include' /usr/include"
for dir in "${masked[@]}"; do
  [ -d "$dir" ] && mounts+=" && mount --bind '$view/empty' '$dir'"
done

rm -rf "$out"
if unshare -m true 2>/dev/null; then
  echo "== minimal build in a mount namespace without the -dev packages' files"
  unshare -m bash -c "set -e; $mounts; $(printf '%q ' "${configure[@]}") >'$out.configure.log'; \
    $(printf '%q ' "${build[@]}")" || { cat "$out.configure.log" 2>/dev/null; exit 1; }
else
  echo "== cannot make a mount namespace here: minimal build with the -dev packages visible"
  "${configure[@]}" >"$out.configure.log" || { cat "$out.configure.log"; exit 1; }
  "${build[@]}"
fi
mv "$out.configure.log" "$out/configure.log"

# Configure looked for none of the full build's packages.
if grep -E '^(OpenSSL|OPENSSL|PKG_CONFIG|DATA_CODECS|CURL|IMAGE_CODECS|SQLITE|LIBPQ|nlohmann_json|yaml-cpp|GTest)[_A-Za-z]*[:=]' \
     "$out/CMakeCache.txt"; then
  echo "FAILED: the minimal configure looked for the packages above" >&2
  exit 1
fi
for program in cohort libcohort.so tests/gpu_collectives_worker tests/gpu_device_checks \
               gpu_collectives_bench python/cohort; do
  [ -e "$out/$program" ] || { echo "FAILED: $out/$program was not built" >&2; exit 1; }
done
ls "$out"/python/cohort/_cohort*.so >/dev/null || { echo "FAILED: no cohort._cohort" >&2; exit 1; }
# The minimal `cohort` has run and bench only.
if "$out/cohort" data info 2>/dev/null; then echo "FAILED: minimal cohort has data" >&2; exit 1; fi
"$out/cohort" --help | grep -q "cohort bench" || { echo "FAILED: cohort --help" >&2; exit 1; }
echo "minimal build OK: $out"
