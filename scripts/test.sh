#!/usr/bin/env bash
# The test command: on a fresh machine it installs what it needs (Debian packages, the
# ULFM Open MPI, cached per user), builds, and runs every test.
# Ends with "N passed, N failed, N skipped"; exits non-zero on any failure.
#
# Usage: scripts/test.sh [NAME_FILTER]
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$("$src/scripts/build.sh")
eval "$("$src/scripts/ompi-bootstrap.sh" --print-env --no-apt 2>/dev/null)"
export OMPI_PREFIX
# The multi-host cluster tests (test/cluster/) need iptables, which a fresh machine lacks;
# without it (or without root) they are skipped, saying why.
"$src/test/cluster/cluster.sh" install-deps || echo "test.sh: the multi-host cluster tests will be skipped" >&2
# Slurm and MUNGE for the Slurm tests on that cluster (test/cluster/slurm.sh); skipped without.
"$src/test/cluster/slurm.sh" install-deps || echo "test.sh: the Slurm tests will be skipped" >&2
# gdb, for the stacks of a job that hangs (test/hang-stacks.sh); the tests run without it.
if ! command -v gdb >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q gdb >/dev/null 2>&1 \
        || echo "test.sh: gdb could not be installed: a hung test's log will have no stacks" >&2
fi
# fi_info, which tells the btl/ofi tests which libfabric providers run here
# (test/sections/33-dr2-ofi.sh); without it they are skipped.
if ! command -v fi_info >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q libfabric-bin >/dev/null 2>&1 \
        || echo "test.sh: libfabric-bin could not be installed: the btl/ofi tests will be skipped" >&2
fi
exec "$src/test/run-tests.sh" "$build" "${1:-}"
