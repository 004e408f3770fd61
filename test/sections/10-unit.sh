# Sourced by test/run-tests.sh (see there for the helpers: unit, mpi, check, ft_run, ...).
# Unit tests: the pure logic, no MPI runtime.

echo "== unit tests"
unit test_schedule
unit test_ftrabit_cache
unit test_ftrabit_pool
unit test_ftrabit_copy
unit test_ftrabit_bootstrap
unit test_ftrabit_typesig
unit test_ftrabit_recovery
unit test_ftrabit_recovery_sim
unit test_ftrabit_spare_plan
unit test_dr2_crc
unit test_dr2_hdr
unit test_dr2_hdr_eager
unit test_dr2_window
unit test_dr2_rxcheck
unit test_dr2_copychoice
unit test_dr2_path
unit test_dr2_locality
