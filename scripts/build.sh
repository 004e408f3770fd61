#!/usr/bin/env bash
# Build ompi-resilience against the cached ULFM Open MPI (built on first use) and install
# it into BUILD/stage, where the test runner and the demo load the components from.
# Prints the build directory on stdout; progress on stderr.
#
# Usage: scripts/build.sh [BUILD_DIR]    (default: _build in the source tree)
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$src/_build}
mkdir -p "$build"
build=$(cd "$build" && pwd)   # configure wants an absolute --prefix
say() { printf '[build] %s\n' "$*" >&2; }

eval "$("$src/scripts/ompi-bootstrap.sh" --print-env)"
export OMPI_PREFIX OMPI_SRC

if [ ! -x "$src/configure" ] || [ "$src/configure.ac" -nt "$src/configure" ] \
       || [ "$src/Makefile.am" -nt "$src/Makefile.in" ]; then
    say "autogen"
    "$src/autogen.sh" >&2
fi
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ] || ! grep -q "^OMPI_PREFIX = $OMPI_PREFIX\$" Makefile; then
    say "configure against $OMPI_PREFIX"
    # objects and programs linked against another Open MPI (their run path names it) go
    if [ -f Makefile ]; then make clean >/dev/null 2>&1 || true; fi
    "$src/configure" --with-ompi="$OMPI_PREFIX" --with-ompi-src="$OMPI_SRC" \
        --prefix="$build/stage" >configure.log 2>&1 || { tail -n 30 configure.log >&2; exit 1; }
fi
say "make"
make -j"$(( $(nproc) + 1 ))" >make.log 2>&1 || { grep -E 'error|Error' make.log | head -n 30 >&2; exit 1; }
make -j"$(( $(nproc) + 1 ))" tests >>make.log 2>&1 || { grep -E 'error|Error' make.log | head -n 30 >&2; exit 1; }
make install >>make.log 2>&1 || { tail -n 30 make.log >&2; exit 1; }
if grep -q 'warning:' make.log; then
    say "compiler warnings (see $build/make.log):"
    grep 'warning:' make.log | sort -u | head -n 20 >&2
fi
echo "$build"
