#!/usr/bin/env bash
# Obtain, build and cache an Open MPI 5.0.x with ULFM and devel headers.
#
# Debian bookworm ships Open MPI 4.1 (no ULFM), so we build Debian trixie's source package
# of Open MPI 5.0.x. The install prefix and the configured source tree (needed because
# 5.0.x's installed devel headers are incomplete) are cached per user under
#   ${OMPI_RESILIENCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ompi-resilience}/ompi-<version>-<key>/
# where <key> hashes the configure options and our patches. A second run finds the cache
# and returns in seconds.
#
# Usage: scripts/ompi-bootstrap.sh [--print-env] [--no-apt]
#   --print-env  on success, print OMPI_PREFIX=... and OMPI_SRC=... lines on stdout
#   --no-apt     do not install build dependencies (they must already be present)
# Progress goes to stderr.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${OMPI_RESILIENCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ompi-resilience}
print_env=0
use_apt=1
for arg in "$@"; do
    case "$arg" in
        --print-env) print_env=1 ;;
        --no-apt) use_apt=0 ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) echo "ompi-bootstrap: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
    esac
done

say() { printf '[ompi-bootstrap] %s\n' "$*" >&2; }
die() { printf '[ompi-bootstrap] ERROR: %s\n' "$*" >&2; exit 1; }

# The configure options are part of the cache key: change them and a new build is made.
# PMIx and PRRTE are Open MPI's own copies, which our patches change: a system PMIx
# (libpmix-dev, common where Slurm is) would otherwise be taken, or refused as too old.
configure_opts=(
    --with-ft=ulfm --with-devel-headers
    --with-pmix=internal --with-prrte=internal
    --disable-mpi-fortran --disable-oshmem
    --with-hwloc=external --with-libevent=external --with-ofi
    --without-cuda --without-ucx
    --enable-debug=no
    --disable-dependency-tracking
    --disable-io-romio
    --enable-mca-no-build=topo-treematch,btl-usnic,coll-monitoring,pml-monitoring,osc-monitoring,common-monitoring
)
build_deps=(build-essential dpkg-dev autoconf automake libtool pkg-config
            libhwloc-dev libevent-dev libfabric-dev)
patch_dir="$here/ompi-patches"

patch_digest() {
    if [ -d "$patch_dir" ]; then
        find "$patch_dir" -type f -name '*.patch' | LC_ALL=C sort | xargs -r cat
    fi
}
cache_key=$(printf '%s\n' "${configure_opts[@]}" "$(patch_digest)" | sha256sum | cut -c1-12)

emit_env() {
    if [ "$print_env" = 1 ]; then
        printf 'OMPI_PREFIX=%s\nOMPI_SRC=%s\n' "$1/prefix" "$1/src"
    fi
}

# One build at a time per cache: a second caller (a parallel build dir, another shell)
# waits here for the first and then takes its result from the fast path below.
mkdir -p "$cache_root"
exec 9>"$cache_root/.bootstrap-$cache_key.lock"
if ! flock -n 9; then
    say "another Open MPI build for this cache is running; waiting for it"
    flock 9
fi

# Fast path: any finished build with this key.
for done_stamp in "$cache_root"/ompi-5.0.*-"$cache_key"/.complete; do
    [ -e "$done_stamp" ] || continue
    dir=$(dirname "$done_stamp")
    if "$dir/prefix/bin/ompi_info" --parsable 2>/dev/null | grep -q '^mca:coll:ftagree'; then
        say "using cached Open MPI in $dir"
        emit_env "$dir"
        exit 0
    fi
    say "cached build in $dir does not run; rebuilding"
    rm -f "$done_stamp"
done

need_root() {
    [ "$(id -u)" = 0 ] || die "$1 needs root (or run as root once; the result is cached per user)"
}

# shellcheck source=scripts/debian-src.sh
. "$here/debian-src.sh"

if [ "$use_apt" = 1 ]; then
    need_root "installing build dependencies"
    missing=()
    for p in "${build_deps[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    added=$(ompires_add_deb_src trixie) \
        || die "no Debian archive is configured in /etc/apt; cannot fetch the openmpi source package"
    [ -z "$added" ] || say "added a deb-src entry for trixie (archive $added) to fetch Open MPI 5's source"
    say "apt-get update"
    apt-get update -qq >&2 || die "apt-get update failed; check the archive configured in /etc/apt"
    if [ "${#missing[@]}" -gt 0 ]; then
        say "installing build dependencies: ${missing[*]}"
        apt_log=$(mktemp "${TMPDIR:-/tmp}/ompi-bootstrap-apt.XXXXXX")
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >"$apt_log" 2>&1 \
            || { tail -n 20 "$apt_log" >&2; die "could not install ${missing[*]}"; }
        rm -f "$apt_log"
    fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ompi-bootstrap.XXXXXX")
trap 'rm -rf "$work"' EXIT
say "downloading the openmpi source package from trixie"
(cd "$work" && apt-get source --download-only openmpi/trixie >"$work/apt-source.log" 2>&1) || {
    tail -n 5 "$work/apt-source.log" >&2
    die "apt-get source openmpi/trixie failed: is a deb-src entry for trixie configured? (this script adds one when run as root without --no-apt)"
}
orig=$(ls "$work"/openmpi_*.orig.tar.* 2>/dev/null | head -n 1)
[ -n "$orig" ] || die "the openmpi source package has no upstream tarball"
version=$(basename "$orig" | sed -E 's/^openmpi_([0-9][0-9.]*)\.orig\.tar\..*/\1/')
case "$version" in
    5.0.*) ;;
    *) die "trixie's openmpi is version $version; ompi-resilience needs Open MPI 5.0.x" ;;
esac

dir="$cache_root/ompi-$version-$cache_key"
say "building Open MPI $version with ULFM into $dir (4.5 minutes on the 2-core machine it was measured on; slower machines have taken up to 4 times that)"
rm -rf "$dir"
mkdir -p "$dir/src"
tar -xf "$orig" -C "$dir/src" --strip-components=1
if [ -d "$patch_dir" ]; then
    for p in $(find "$patch_dir" -type f -name '*.patch' | LC_ALL=C sort); do
        say "applying $(basename "$p")"
        patch -d "$dir/src" -p1 --forward --quiet < "$p" || die "patch $p does not apply to Open MPI $version"
    done
fi

log="$dir/build.log"
build_start=$SECONDS
# What each step took on a 2-core machine with these options (configure 60 s, make 180 s
# compiling 1866 files, install 15 s): the progress line compares against it, and estimates
# what is left of make from the files compiled so far.
make_files_expected=1866
mmss() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
progress() { # progress NAME STEP_START
    local name=$1 took=$((SECONDS - $2)) files detail=""
    if [ "$name" = make ]; then
        files=$(grep -c -E '^  (CC|CCLD|CXX)' "$log" || true)
        detail="$files of ~$make_files_expected files compiled"
        if [ "$files" -gt 50 ] && [ "$files" -lt "$make_files_expected" ]; then
            detail="$detail, about $(mmss $((took * (make_files_expected - files) / files))) left"
        fi
        detail="$detail; "
    fi
    say "  $name: $(mmss "$took") (${detail}Open MPI build $(mmss $((SECONDS - build_start))) so far)"
}
step() {
    # step NAME CMD...: run CMD in the source tree, its output to the log; a ticker shows progress.
    local name=$1; shift
    local start=$SECONDS
    ( cd "$dir/src" && "$@" ) >>"$log" 2>&1 &
    local pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep 15
        kill -0 "$pid" 2>/dev/null || break
        progress "$name" "$start"
    done
    wait "$pid" || { tail -n 30 "$log" >&2; die "$name failed; full log: $log"; }
    say "  $name done in $(mmss $((SECONDS - start)))"
}
step configure ./configure --prefix="$dir/prefix" "${configure_opts[@]}"
step make make -j"$(( $(nproc) + 1 ))"
step install make install

"$dir/prefix/bin/ompi_info" --parsable | grep -q 'ftmpi' \
    || die "the build finished but ompi_info does not report ULFM (ftmpi); see $log"
# Object files are not needed to build components against the tree; keep the cache small.
find "$dir/src" -name '*.o' -o -name '*.lo' | xargs -r rm -f
touch "$dir/.complete"
say "Open MPI $version with ULFM is ready in $(mmss $((SECONDS - build_start))): $dir/prefix"
emit_env "$dir"
