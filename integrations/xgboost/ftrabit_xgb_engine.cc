/*
 * ompi-resilience: a rabit engine for XGBoost 1.7 on libftrabit (the FTR_* API), built into
 * XGBoost in place of rabit's socket engine (XGBoost's CMake option RABIT_MPI_ENGINE, added
 * by integrations/xgboost/patches/0001).
 *
 * Every collective XGBoost makes (allreduce: max, min, sum on eight element types;
 * broadcast) is an FTR collective on the communicator FTR_Init returned: a process that
 * dies is replaced, the replacement loads the last checkpoint (the learner, serialized by
 * XGBoost, handed over after each boosting round by the patched CLI and checkpointed every
 * ftrabit_checkpoint_every rounds) and the collectives it repeats, those of the rounds since
 * that checkpoint included, are served the bytes the survivors got. Collectives made before the first
 * checkpoint (loading the data, configuring the learner, the first round) are bootstrap
 * collectives, kept for the whole job, since a replacement makes them again before it loads
 * the checkpoint (docs/xgboost.md).
 *
 * With FTRABIT_XGB_ENGINE=mpi in the environment the same engine calls MPI_Allreduce and
 * MPI_Bcast on a duplicate of MPI_COMM_WORLD instead, keeps no checkpoint and survives
 * nothing: the baseline of bench/run-xgboost.sh.
 */
#include <rabit/internal/engine.h>
#include <rabit/internal/io.h>
#include <rabit/internal/utils.h>

#include <mpi.h>

#include <climits>
#include <csignal>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "ftrabit.h"
#include "ftrabit_xgb_rules.h"

namespace rabit {
namespace engine {
namespace {

/* XGBoost's training parameters, as the engine is given them ("key=value"). Settings of
 * the engine are parameters too (ftrabit_*): a replacement is started with the same
 * arguments, while what mpirun's -x puts in the environment does not reach it. */
class Params {
 public:
  Params(int argc, char *argv[]) {
    for (int i = 0; i < argc; ++i) {
      std::string kv(argv[i]);
      size_t eq = kv.find('=');
      keys_.push_back(kv.substr(0, eq));
      values_.push_back(eq == std::string::npos ? std::string() : kv.substr(eq + 1));
    }
    for (size_t i = 0; i < keys_.size(); ++i) {
      all_.push_back({keys_[i].c_str(), values_[i].c_str()});
    }
  }
  const char *Get(const char *key) const {
    return ftrabit_xgb_param(all_.data(), static_cast<int>(all_.size()), key);
  }
  const ftrabit_xgb_param_t *All() const { return all_.data(); }
  int Count() const { return static_cast<int>(all_.size()); }

 private:
  std::vector<std::string> keys_, values_;
  std::vector<ftrabit_xgb_param_t> all_;
};

/* Elements per collective call at most: MPI counts are ints. ftrabit_test_max_count
 * lowers it, so that tests cut ordinary collectives into several. */
size_t MaxCount(const Params &params) {
  const char *limit = params.Get("ftrabit_test_max_count");
  long n = limit ? std::atol(limit) : 0;
  return n > 0 && n < INT_MAX ? static_cast<size_t>(n) : static_cast<size_t>(INT_MAX);
}

/* ftrabit_checkpoint_every=K: the learner is serialized and checkpointed after every K-th
 * boosting round; a replacement replays the rounds since the last checkpoint (at most K-1)
 * from the survivors' result caches. Serializing the whole learner costs time in proportion
 * to the model, which grows every round (docs/xgboost.md: its cost measured). */
constexpr int kDefaultCheckpointEvery = 10;

int CheckpointEvery(const Params &params) {
  const char *every = params.Get("ftrabit_checkpoint_every");
  if (every == nullptr) return kDefaultCheckpointEvery;
  char *end = nullptr;
  long k = std::strtol(every, &end, 10);
  if (end == every || *end != '\0' || k < 1 || k > INT_MAX) {
    utils::Error("ftrabit engine: ftrabit_checkpoint_every=%s: expected a whole number >= 1",
                 every);
  }
  return static_cast<int>(k);
}

/* Wall-clock seconds spent per kind of work (ftrabit_timing=1 prints them at the end):
 * where a round's time goes. */
struct Timing {
  double collectives{0}, serializing{0}, checkpointing{0}, loading{0};
  long collective_calls{0}, checkpoints{0};
  size_t checkpoint_bytes{0};  // the last one
};

double Now() { return MPI_Wtime(); }

/* ftrabit_test_kill=R:ROUND:WHERE[,R:ROUND:WHERE...] (for tests): the original process of
 * rank R kills itself (SIGKILL) in boosting round ROUND (0 is the first), WHERE being
 * `round` (at its third collective; round 0 counts from the start, data loading included)
 * or `checkpoint` (after serializing the learner, right before FTR_Checkpoint: the others
 * find it dead inside the checkpoint; only a round followed by a checkpoint has one).
 * Replacements never do. */
struct TestKill {
  int rank, round;
  bool in_checkpoint;
};

std::vector<TestKill> TestKills(const Params &params) {
  std::vector<TestKill> kills;
  const char *spec = params.Get("ftrabit_test_kill");
  for (const char *at = spec; at != nullptr && *at != '\0';) {
    int rank, round, used = 0;
    char where[16];
    if (std::sscanf(at, " %d:%d:%15[a-z]%n", &rank, &round, where, &used) != 3) {
      utils::Error("ftrabit engine: ftrabit_test_kill: expected R:ROUND:round|checkpoint at '%s'",
                   at);
    }
    kills.push_back({rank, round, std::strcmp(where, "checkpoint") == 0});
    at += used;
    at += *at == ',';
  }
  return kills;
}

/* The process's arguments as it was started (/proc/self/cmdline): XGBoost hands the
 * engine its training parameters instead, and a replacement must be started as the
 * process it replaces was. */
std::vector<std::string> ProcessArguments() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t at = 0; at < all.size();) {
    size_t end = all.find('\0', at);
    if (end == std::string::npos) end = all.size();
    args.emplace_back(all, at, end - at);
    at = end + 1;
  }
  return args;
}

MPI_Datatype TypeOf(mpi::DataType type) {
  switch (type) {
    case mpi::kChar: return MPI_SIGNED_CHAR;  // XGBoost's int8 (char is signed on x86-64)
    case mpi::kUChar: return MPI_UNSIGNED_CHAR;
    case mpi::kInt: return MPI_INT;
    case mpi::kUInt: return MPI_UNSIGNED;
    case mpi::kLong: return MPI_LONG;
    case mpi::kULong: return MPI_UNSIGNED_LONG;
    case mpi::kFloat: return MPI_FLOAT;
    case mpi::kDouble: return MPI_DOUBLE;
    case mpi::kLongLong: return MPI_LONG_LONG;
    case mpi::kULongLong: return MPI_UNSIGNED_LONG_LONG;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op OpOf(mpi::OpType op) {
  switch (op) {
    case mpi::kMax: return MPI_MAX;
    case mpi::kMin: return MPI_MIN;
    case mpi::kSum: return MPI_SUM;
    case mpi::kBitwiseOR: return MPI_BOR;
  }
  return MPI_OP_NULL;
}

class FtrabitEngine : public IEngine {
 public:
  /* argv: XGBoost's training parameters as key=value. */
  bool Init(int argc, char *argv[]) {
    Params params(argc, argv);
    const char *mode = std::getenv("FTRABIT_XGB_ENGINE");
    plain_mpi_ = mode != nullptr && std::strcmp(mode, "mpi") == 0;
    if (!plain_mpi_ && !Replayable(params)) {
      return false;
    }
    max_count_ = MaxCount(params);
    checkpoint_every_ = CheckpointEvery(params);  // refused before MPI starts
    args_ = ProcessArguments();
    for (auto &a : args_) arg_ptrs_.push_back(&a[0]);
    arg_ptrs_.push_back(nullptr);
    int nargs = static_cast<int>(args_.size());
    char **args = arg_ptrs_.data();
    int err;
    if (plain_mpi_) {
      int provided;
      err = MPI_Init_thread(&nargs, &args, MPI_THREAD_SINGLE, &provided);
      if (err == MPI_SUCCESS) err = MPI_Comm_dup(MPI_COMM_WORLD, &world_);
    } else {
      err = FTR_Init(&nargs, &args, &world_);  // a replacement joins the survivors here
    }
    Check(err, "initialisation");
    int origin = FTR_ORIGIN_ORIGINAL;
    if (!plain_mpi_) FTR_Origin(&origin);
    if (origin == FTR_ORIGIN_ORIGINAL) kills_ = TestKills(params);
    const char *verbose = params.Get("ftrabit_verbose");
    verbose_ = verbose != nullptr && std::atoi(verbose) > 0;
    const char *timing = params.Get("ftrabit_timing");
    timing_on_ = timing != nullptr && std::atoi(timing) > 0;
    if (timing_on_) {
      utils::Printf("ftrabit engine: rank %d %s at %.6f", GetRank(),
                    origin == FTR_ORIGIN_ORIGINAL ? "started" : "joined as a replacement",
                    WallClock());
    }
    return true;
  }

  bool Shutdown() {
    if (timing_on_) PrintTiming();
    if (plain_mpi_) {
      MPI_Comm_free(&world_);
      return MPI_Finalize() == MPI_SUCCESS;
    }
    return FTR_Finalize() == MPI_SUCCESS;
  }

  void AllreduceTyped(void *buf, size_t type_nbytes, size_t count, mpi::DataType dtype,
                      mpi::OpType op, PreprocFunction prepare_fun, void *prepare_arg) {
    if (prepare_fun != nullptr) prepare_fun(prepare_arg);
    MPI_Datatype type = TypeOf(dtype);
    MPI_Op mpi_op = OpOf(op);
    if (type == MPI_DATATYPE_NULL || mpi_op == MPI_OP_NULL) {
      utils::Error("ftrabit engine: allreduce of unknown element type %d or operation %d",
                   static_cast<int>(dtype), static_cast<int>(op));
    }
    char *bytes = static_cast<char *>(buf);
    for (size_t i = 0; i < ftrabit_xgb_chunks(count, max_count_); ++i) {
      size_t first, n;
      ftrabit_xgb_chunk(count, max_count_, i, &first, &n);
      Log("allreduce", n, type_nbytes, static_cast<int>(op));
      MaybeDie(false);
      void *chunk = bytes + first * type_nbytes;
      int c = static_cast<int>(n), err;
      double start = Now();
      if (plain_mpi_) {
        err = MPI_Allreduce(MPI_IN_PLACE, chunk, c, type, mpi_op, world_);
      } else if (bootstrap_) {
        err = FTR_Allreduce_bootstrap(chunk, c, type, mpi_op, &world_);
      } else {
        err = FTR_Allreduce(chunk, c, type, mpi_op, &world_);
      }
      Counted(start);
      Check(err, "allreduce");
    }
  }

  /* XGBoost's collectives come through AllreduceTyped; this form carries only a reduce
   * function, which MPI cannot apply. */
  void Allreduce(void *, size_t, size_t, ReduceFunction, PreprocFunction, void *) override {
    utils::Error("ftrabit engine: an allreduce with a custom reduce function (only max, min, "
                 "sum and bitwise or on basic types are supported)");
  }

  void Broadcast(void *buf, size_t size, int root) override {
    char *bytes = static_cast<char *>(buf);
    for (size_t i = 0; i < ftrabit_xgb_chunks(size, max_count_); ++i) {
      size_t first, n;
      ftrabit_xgb_chunk(size, max_count_, i, &first, &n);
      Log("broadcast", n, 1, root);
      MaybeDie(false);
      int c = static_cast<int>(n), err;
      double start = Now();
      if (plain_mpi_) {
        err = MPI_Bcast(bytes + first, c, MPI_BYTE, root, world_);
      } else if (bootstrap_) {
        err = FTR_Bcast_bootstrap(bytes + first, c, MPI_BYTE, root, &world_);
      } else {
        err = FTR_Bcast(bytes + first, c, MPI_BYTE, root, &world_);
      }
      Counted(start);
      Check(err, "broadcast");
    }
  }

  /* Each rank's slice is put in place and the rest zeroed; a bitwise-or allreduce then
   * gives every rank every slice (they do not overlap). */
  void Allgather(void *buf, size_t total_size, size_t slice_begin, size_t slice_end,
                 size_t) override {
    char *bytes = static_cast<char *>(buf);
    std::memset(bytes, 0, slice_begin);
    std::memset(bytes + slice_end, 0, total_size - slice_end);
    AllreduceTyped(buf, 1, total_size, mpi::kUChar, mpi::kBitwiseOR, nullptr, nullptr);
  }

  /* Returns the boosting rounds done at the checkpoint loaded (0: a fresh start). */
  int LoadCheckPoint(Serializable *global_model, Serializable *local_model) override {
    if (plain_mpi_) return 0;
    double start = Now();
    void *global = nullptr, *local = nullptr;
    size_t global_size = 0, local_size = 0;
    int version = 0;
    Check(FTR_Load_checkpoint_alloc(&world_, &global, &global_size,
                                    local_model ? &local : nullptr,
                                    local_model ? &local_size : nullptr, &version),
          "loading the checkpoint");
    bootstrap_ = false;
    std::unique_ptr<void, decltype(&std::free)> own_global(global, &std::free);
    std::unique_ptr<void, decltype(&std::free)> own_local(local, &std::free);
    if (version > 0) {
      int rounds = ftrabit_xgb_header_read(static_cast<unsigned char *>(global), global_size);
      if (rounds < 1) {
        utils::Error("ftrabit engine: checkpoint version %d (%zu bytes) is not a learner this "
                     "engine checkpointed", version, global_size);
      }
      utils::MemoryFixSizeBuffer global_in(static_cast<char *>(global) + FTRABIT_XGB_HEADER_SIZE,
                                           global_size - FTRABIT_XGB_HEADER_SIZE);
      global_model->Load(&global_in);
      if (local_model != nullptr) {
        utils::MemoryFixSizeBuffer local_in(local, local_size);
        local_model->Load(&local_in);
      }
      if (verbose_ || timing_on_) {
        utils::Printf("ftrabit engine: rank %d loaded version %d, after round %d (%zu + %zu "
                      "bytes) in %.3f s, at %.6f", GetRank(), version, rounds - 1, global_size,
                      local_size, Now() - start, WallClock());
      }
      rounds_done_ = rounds;
      collectives_in_round_ = 0;
    }
    timing_.loading += Now() - start;
    return version > 0 ? rounds_done_ : 0;
  }

  /* Called after every boosting round: the round is done; every checkpoint_every_ rounds
   * the learner is checkpointed. */
  void CheckPoint(const Serializable *global_model, const Serializable *local_model) override {
    if (plain_mpi_ || !ftrabit_xgb_checkpoint_due(rounds_done_ + 1, checkpoint_every_)) {
      RoundDone();
      return;
    }
    double start = Now();
    std::string global(FTRABIT_XGB_HEADER_SIZE, '\0'), local;
    ftrabit_xgb_header_write(reinterpret_cast<unsigned char *>(&global[0]), rounds_done_ + 1);
    utils::MemoryBufferStream global_out(&global);
    global_out.Seek(FTRABIT_XGB_HEADER_SIZE);
    global_model->Save(&global_out);
    if (local_model != nullptr) {
      utils::MemoryBufferStream local_out(&local);
      local_model->Save(&local_out);
    }
    double serialized = Now();
    MaybeDie(true);
    Check(FTR_Checkpoint(&world_, global.data(), global.size(), local.data(), local.size()),
          "checkpoint");
    timing_.serializing += serialized - start;
    timing_.checkpointing += Now() - serialized;
    timing_.checkpoints++;
    timing_.checkpoint_bytes = global.size() + local.size();
    bootstrap_ = false;
    RoundDone();
  }

  /* The deprecated forms, without a model: the version, and a checkpoint of nothing,
   * which a replacement could not resume from. */
  int LoadCheckPoint() override { return VersionNumber(); }
  void CheckPoint() override {
    utils::Error("ftrabit engine: a checkpoint needs the model (rabit::CheckPoint(model))");
  }

  /* The rounds handed to CheckPoint (or loaded): rabit counted a version per call. */
  int VersionNumber() const override { return rounds_done_; }
  int GetRingPrevRank() const override {
    return (GetRank() + GetWorldSize() - 1) % GetWorldSize();
  }
  int GetRank() const override {
    int rank = 0;
    MPI_Comm_rank(world_, &rank);
    return rank;
  }
  int GetWorldSize() const override {
    int size = 1;
    MPI_Comm_size(world_, &size);
    return size;
  }
  bool IsDistributed() const override { return true; }
  std::string GetHost() const override {
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    MPI_Get_processor_name(name, &len);
    return std::string(name, len);
  }
  /* Without a tracker, printed by the process that says it (rank 0 for the evaluations),
   * as rabit's socket engine prints it without one. */
  void TrackerPrint(const std::string &msg) override {
    std::fputs(msg.c_str(), stderr);
    std::fflush(stderr);
  }

 private:
  /* Every process checks the same parameters and refuses alike, before MPI starts. */
  static bool Replayable(const Params &params) {
    char why[512];
    if (ftrabit_xgb_replay_refusal(params.All(), params.Count(), why, sizeof(why))) {
      std::fprintf(stderr, "ftrabit engine: this training cannot be replayed after a failure "
                           "with the same result: %s (docs/xgboost.md)\n", why);
      return false;
    }
    return true;
  }

  /* An error here is not one a process can recover from; every rank would hit it when
   * replaying (MPI_Abort under ULFM ends only this process). */
  void Check(int err, const char *what) const {
    if (err == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, msg, &len);
    std::fprintf(stderr, "ftrabit engine: %s failed: %s\n", what, msg);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  void RoundDone() {
    ++rounds_done_;
    collectives_in_round_ = 0;
  }

  void Counted(double start) {
    timing_.collectives += Now() - start;
    timing_.collective_calls++;
  }

  static double WallClock() {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  }

  void PrintTiming() const {
    utils::Printf("ftrabit engine: rank %d timing: %d rounds; collectives %.3f s (%ld calls); "
                  "serializing the learner %.3f s, FTR_Checkpoint %.3f s (%ld checkpoints, the "
                  "last %zu bytes); loading %.3f s; ended at %.6f", GetRank(), rounds_done_,
                  timing_.collectives, timing_.collective_calls, timing_.serializing,
                  timing_.checkpointing, timing_.checkpoints, timing_.checkpoint_bytes,
                  timing_.loading, WallClock());
  }

  void MaybeDie(bool in_checkpoint) {
    if (!in_checkpoint) ++collectives_in_round_;
    for (const TestKill &k : kills_) {
      if (k.rank == GetRank() && k.round == rounds_done_ && k.in_checkpoint == in_checkpoint &&
          (in_checkpoint || collectives_in_round_ == 3)) {
        std::fprintf(stderr, "ftrabit engine: rank %d killing itself in round %d%s "
                             "(ftrabit_test_kill) at %.6f\n", k.rank, k.round,
                     in_checkpoint ? ", in its checkpoint" : "", WallClock());
        std::fflush(stderr);
        std::raise(SIGKILL);
      }
    }
  }

  void Log(const char *kind, size_t n, size_t type_nbytes, int op_or_root) const {
    if (verbose_) {
      utils::Printf("ftrabit engine: rank %d %s%s of %zu x %zu bytes (op/root %d)",
                    GetRank(), bootstrap_ && !plain_mpi_ ? "bootstrap " : "", kind, n,
                    type_nbytes, op_or_root);
    }
  }

  MPI_Comm world_{MPI_COMM_NULL};
  bool plain_mpi_{false};
  bool bootstrap_{true};  // until the first load or checkpoint, as FTR's bootstrap phase
  bool verbose_{false};
  bool timing_on_{false};
  size_t max_count_{INT_MAX};
  int checkpoint_every_{kDefaultCheckpointEvery};
  int rounds_done_{0};            // rounds handed to CheckPoint or loaded: the round under way
  int collectives_in_round_{0};   // since the last of them
  Timing timing_;
  std::vector<TestKill> kills_;
  std::vector<std::string> args_;
  std::vector<char *> arg_ptrs_;
};

std::unique_ptr<FtrabitEngine> the_engine;

FtrabitEngine *Engine() {
  utils::Check(the_engine != nullptr, "ftrabit engine: rabit::Init was not called");
  return the_engine.get();
}

}  // namespace

bool Init(int argc, char *argv[]) {
  if (the_engine != nullptr) return true;
  std::unique_ptr<FtrabitEngine> engine(new FtrabitEngine());
  if (!engine->Init(argc, argv)) return false;
  the_engine = std::move(engine);
  return true;
}

bool Finalize() {
  if (the_engine == nullptr) return true;
  bool ok = the_engine->Shutdown();
  the_engine.reset();
  return ok;
}

IEngine *GetEngine() { return Engine(); }

void Allgather(void *buf, size_t total_size, size_t slice_begin, size_t slice_end,
               size_t size_prev_slice) {
  Engine()->Allgather(buf, total_size, slice_begin, slice_end, size_prev_slice);
}

void Allreduce_(void *buf, size_t type_nbytes, size_t count, IEngine::ReduceFunction,
                mpi::DataType dtype, mpi::OpType op, IEngine::PreprocFunction prepare_fun,
                void *prepare_arg) {
  Engine()->AllreduceTyped(buf, type_nbytes, count, dtype, op, prepare_fun, prepare_arg);
}

}  // namespace engine
}  // namespace rabit
