# Sourced by test/run-tests.sh (see there for the helpers: unit, mpi, check, ft_run, ...).
# The last cluster test takes the cluster down and checks that nothing is left.

in_cluster check cluster/down-leaves-nothing cluster_down_leaves_nothing
