#!/usr/bin/env bash
# Build XGBoost's command-line program from Debian bookworm's source package (1.7.4) with
# our patches (integrations/xgboost/patches/, docs/xgboost.md) and cache it per user, like
# Open MPI: ${OMPI_RESILIENCE_CACHE:-~/.cache/ompi-resilience}/xgboost-VERSION-KEY/, where
# KEY hashes the Debian source version, the patches, the engine's sources, ftrabit.h, the
# Open MPI and the libftrabit it links (their paths are in the program: a replacement that
# MPI_Comm_spawn starts gets no LD_LIBRARY_PATH) and the build options. A second run finds the cache in seconds.
#
# Usage: integrations/xgboost/build.sh [--engine ftrabit|socket] BUILD_DIR
#   BUILD_DIR: a built ompi-resilience tree (scripts/build.sh's; libftrabit in BUILD_DIR/stage)
#   --engine ftrabit (default): our engine on libftrabit (ftrabit_xgb_engine.cc);
#   --engine socket: rabit's own socket engine, unchanged (the benchmark's baseline)
# Needs OMPI_PREFIX in the environment (scripts/ompi-bootstrap.sh --print-env). Prints the
# cache directory on stdout (the program is DIR/bin/xgboost, the source DIR/src); progress
# on stderr. Installs cmake, libdmlc-dev and dpkg-dev with apt when run as root.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src_root=$(cd "$here/../.." && pwd)
engine=ftrabit
if [ "${1:-}" = --engine ]; then
    engine=${2:?--engine needs ftrabit or socket}
    shift 2
fi
case "$engine" in ftrabit|socket) ;; *) echo "build.sh: unknown engine '$engine'" >&2; exit 2 ;; esac
build=$(cd "${1:?usage: integrations/xgboost/build.sh [--engine ftrabit|socket] BUILD_DIR}" && pwd)
: "${OMPI_PREFIX:?set OMPI_PREFIX (eval \"\$(scripts/ompi-bootstrap.sh --print-env)\")}"
cache_root=${OMPI_RESILIENCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ompi-resilience}
say() { printf '[xgboost-build] %s\n' "$*" >&2; }
die() { printf '[xgboost-build] ERROR: %s\n' "$*" >&2; exit 1; }
mmss() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# What the command-line program needs and nothing more: one target, Debian's -O2 without
# debug information, three compile jobs (the machine has two cores; the third hides I/O).
jobs=${XGBOOST_BUILD_JOBS:-3}
cmake_opts=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG"
            "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG" -DUSE_OPENMP=ON)
engine_sources=("$here/ftrabit_xgb_engine.cc" "$here/ftrabit_xgb_rules.c" "$here/ftrabit_xgb_rules.h")
if [ "$engine" = ftrabit ]; then
    cmake_opts+=(-DRABIT_BUILD_MPI=ON "-DMPI_CXX_COMPILER=$OMPI_PREFIX/bin/mpicxx"
                 "-DMPI_C_COMPILER=$OMPI_PREFIX/bin/mpicc"
                 "-DRABIT_MPI_ENGINE=$here/ftrabit_xgb_engine.cc;$here/ftrabit_xgb_rules.c"
                 "-DRABIT_MPI_ENGINE_INCLUDE_DIRS=$build/stage/include;$here"
                 "-DRABIT_MPI_ENGINE_LIBRARIES=-L$build/stage/lib;-Wl,-rpath,$build/stage/lib;-lftrabit")
fi

# shellcheck source=scripts/debian-src.sh
. "$src_root/scripts/debian-src.sh"
if [ "$(id -u)" = 0 ]; then
    missing=()
    for p in cmake libdmlc-dev dpkg-dev; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    added=$(ompires_add_deb_src bookworm) \
        || die "no Debian archive is configured in /etc/apt; cannot fetch XGBoost's source package"
    if [ -n "$added" ] || [ "${#missing[@]}" -gt 0 ]; then
        say "apt-get update"
        apt-get update -qq >&2 || die "apt-get update failed"
    fi
    if [ "${#missing[@]}" -gt 0 ]; then
        say "installing ${missing[*]}"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2 \
            || die "could not install ${missing[*]}"
    fi
fi
for tool in cmake dpkg-source apt-get; do
    command -v "$tool" >/dev/null || die "$tool is missing (run once as root to install it)"
done
[ -e /usr/include/dmlc/base.h ] || die "libdmlc-dev is missing (run once as root to install it)"

# The source package's version, asked of apt (no download when the cache has it).
deb_version=$(apt-cache showsrc xgboost 2>/dev/null | awk '/^Version: 1\.7\./ { print $2; exit }')
[ -n "$deb_version" ] || die "apt knows no xgboost 1.7 source package: a deb-src entry for bookworm is needed (run once as root)"
upstream=${deb_version%%-*}
key=$( { echo "$deb_version $engine $OMPI_PREFIX ${cmake_opts[*]}"
         cat "$here"/patches/*.patch "$build/stage/include/ftrabit.h"
         if [ "$engine" = ftrabit ]; then cat "${engine_sources[@]}"; fi; } | sha256sum | cut -c1-12)
dir="$cache_root/xgboost-$upstream-$engine-$key"

mkdir -p "$cache_root"
exec 9>"$cache_root/.xgboost-$key.lock"
if ! flock -n 9; then
    say "another build of this XGBoost is running; waiting for it"
    flock 9
fi
if [ -e "$dir/.complete" ] && [ -x "$dir/bin/xgboost" ]; then
    say "using cached XGBoost $deb_version ($engine engine) in $dir"
    echo "$dir"
    exit 0
fi

say "building XGBoost $deb_version with the $engine engine into $dir"
rm -rf "$dir"
mkdir -p "$dir/download" "$dir/bin"
log=$dir/build.log
start=$SECONDS
(cd "$dir/download" && apt-get source --download-only "xgboost=$deb_version" >"$log" 2>&1) \
    || { tail -n 5 "$log" >&2; die "apt-get source xgboost=$deb_version failed"; }
dpkg-source -x "$dir"/download/xgboost_"$deb_version".dsc "$dir/src" >>"$log" 2>&1 \
    || { tail -n 5 "$log" >&2; die "dpkg-source could not unpack xgboost $deb_version"; }
rm -rf "$dir/download"
for p in "$here"/patches/*.patch; do
    say "applying $(basename "$p")"
    patch -d "$dir/src" -p1 --forward --quiet <"$p" >>"$log" 2>&1 \
        || die "patch $p does not apply to xgboost $deb_version (see $log)"
done

say "cmake"
cmake -S "$dir/src" -B "$dir/build" "${cmake_opts[@]}" >>"$log" 2>&1 \
    || { tail -n 20 "$log" >&2; die "cmake failed; see $log"; }
configured=$SECONDS
# About 90 files; compiled in -j$jobs. A ticker says how far it is.
say "compiling the command-line program (-j$jobs)"
nice make -C "$dir/build" -j"$jobs" runxgboost >>"$log" 2>&1 &
make_pid=$!
while kill -0 "$make_pid" 2>/dev/null; do
    sleep 30
    kill -0 "$make_pid" 2>/dev/null || break
    pct=$(grep -o '^\[ *[0-9]*%\]' "$log" | tail -n 1 | tr -dc '0-9')
    say "  ${pct:-0}% after $(mmss $((SECONDS - configured)))"
done
wait "$make_pid" || { grep -E 'error|Error' "$log" | head -n 20 >&2; die "the build failed; see $log"; }
cp "$dir/src/xgboost" "$dir/bin/xgboost" \
    || die "the build made no xgboost program"
say "XGBoost built in $(mmss $((SECONDS - start))) (cmake $(mmss $((configured - start))), compiling $(mmss $((SECONDS - configured))))"
echo "built in $((SECONDS - start)) s: cmake $((configured - start)) s, compile $((SECONDS - configured)) s with -j$jobs" >>"$log"
# The objects are not needed any more; the source stays (its demo data, docs/xgboost.md).
rm -rf "$dir/build"
touch "$dir/.complete"
echo "$dir"
