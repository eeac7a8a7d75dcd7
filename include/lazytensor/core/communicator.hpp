// SPDX-License-Identifier: MIT
// A group of processes as the collectives see it (lt::dist): what the collective item
// (items/collective_item.hpp) calls to move data between ranks, and the registry through which a
// transport makes itself known. The MPI transport (dist/mpi.hpp) is compiled only into programs
// that ask for it (LAZYTENSOR_MPI): the engine, header-only or compiled once, holds no MPI. A
// program without a transport, or started without a launcher, is a group of one.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dtype.hpp"
#include "env.hpp"
#include "error.hpp"

namespace lazytensor::detail {

// The collectives, defined once: X(enumerator, the lt::dist function). all_mean is all_sum
// followed by a division in the graph.
//   - Sum, Max, Min: element-wise over the ranks, the same result on every rank.
//   - Gather: every rank's input concatenated in rank order (the front end moves the axis).
//   - ReduceScatter: the sum, of which rank r keeps the r-th of `size` equal pieces.
//   - Broadcast: the root's input on every rank.
#define LAZYTENSOR_COLLECTIVES(X)     \
    X(Sum, "all_sum")                 \
    X(Max, "all_max")                 \
    X(Min, "all_min")                 \
    X(Gather, "all_gather")           \
    X(ReduceScatter, "reduce_scatter") \
    X(Broadcast, "broadcast")

enum class CollectiveOp : std::uint8_t {
#define LAZYTENSOR_X(name, text) name,
    LAZYTENSOR_COLLECTIVES(LAZYTENSOR_X)
#undef LAZYTENSOR_X
};

inline const char* collective_name(CollectiveOp op) {
    switch (op) {
#define LAZYTENSOR_X(name, text) \
    case CollectiveOp::name: return text;
        LAZYTENSOR_COLLECTIVES(LAZYTENSOR_X)
#undef LAZYTENSOR_X
    }
    return "?";
}

/// A collective in flight.
class Transfer {
public:
    virtual ~Transfer() = default;
    /// Advances it; true once it is done.
    virtual bool test() = 0;
    /// Returns once it is done; past LAZYTENSOR_DIST_TIMEOUT, ends the job (Communicator::abort).
    virtual void wait() = 0;
};

/// What the ranks of a realize that holds collectives said to each other before any data moved.
struct Agreement {
    bool agreed = true;                // every rank had the same record and none failed
    std::vector<std::string> records;  // where not: every rank's record, in rank order
};

/// One group of processes and the transport that connects them.
class Communicator {
public:
    virtual ~Communicator() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    /// This rank's index among the ranks of its machine.
    virtual int local_rank() const = 0;
    /// "MPI (Open MPI v4.1.4), rank 1 of 2".
    virtual std::string describe() const = 0;
    /// Starts `op` on host memory: `count` elements of `dtype` at `in` (for Gather, this rank's
    /// part; for ReduceScatter, the whole), the result at `out` (Gather: size() * count
    /// elements; ReduceScatter: count / size()). `what` names it in a timeout's message.
    virtual std::unique_ptr<Transfer> start(CollectiveOp op, DType dtype, const void* in, void* out, std::int64_t count,
                                            int root, const std::string& what) = 0;
    /// The transport's routine for `op` ("MPI_Iallreduce"), for lt::schedule and LAZYTENSOR_DEBUG.
    virtual std::string routine(CollectiveOp op) const = 0;
    /// Compares this rank's `record` (its collectives, in order) with every other rank's, and
    /// says whether any rank `failed` before its collectives. Called by every rank of a realize
    /// that holds collectives, before the first one starts.
    virtual Agreement agree(const std::string& record, bool failed) = 0;
    /// Returns once every rank has called it (an agreement with nothing to agree on).
    virtual void barrier() = 0;
    /// Ends every rank of the job after writing `message` to stderr: what a rank does when the
    /// others wait inside collectives that can no longer complete.
    [[noreturn]] virtual void abort(const std::string& message) = 0;
    /// Ends the transport where lazytensor started it (lt::dist::finalize).
    virtual void finalize() {}
    /// Held by a realize from its agreement to its last collective: the ranks must issue a
    /// group's collectives in one order, so one realize at a time issues them.
    std::mutex& issue_mutex() { return issue_mutex_; }

private:
    std::mutex issue_mutex_;
};

/// The group of this process alone: every collective is a copy.
class SingleProcess final : public Communicator {
public:
    int rank() const override { return 0; }
    int size() const override { return 1; }
    int local_rank() const override { return 0; }
    std::string describe() const override { return "a single process (no MPI), rank 0 of 1"; }
    std::unique_ptr<Transfer> start(CollectiveOp, DType dtype, const void* in, void* out, std::int64_t count, int,
                                    const std::string&) override {
        if (count > 0 && in != out) std::memcpy(out, in, static_cast<std::size_t>(count) * dtype_size(dtype));
        struct Done final : Transfer {
            bool test() override { return true; }
            void wait() override {}
        };
        return std::make_unique<Done>();
    }
    std::string routine(CollectiveOp) const override { return "a copy (a group of one process)"; }
    Agreement agree(const std::string&, bool) override { return {}; }
    void barrier() override {}
    [[noreturn]] void abort(const std::string& message) override { fail<Error>(message); }
};

/// How lt::dist::init connects the processes.
enum class Transport { Auto, Mpi, Single };

/// Makes the communicator of every process a launcher started (the world).
using TransportFactory = std::shared_ptr<Communicator> (*)();

struct TransportRegistry {
    std::mutex mutex;
    TransportFactory mpi = nullptr;        // set by dist/mpi.hpp where the program includes it
    std::shared_ptr<Communicator> world;   // made by the first init
    Transport chosen = Transport::Auto;
    bool finalized = false;
    std::vector<std::shared_ptr<Communicator>> groups;  // by group id: 0 is the world
};

inline TransportRegistry& transports() {
    static TransportRegistry* registry = new TransportRegistry();  // never destroyed: MPI may finalize at exit
    return *registry;
}

/// Called by a transport's header as the program starts (an inline variable's initializer).
inline bool register_mpi_transport(TransportFactory factory) {
    std::lock_guard<std::mutex> lock(transports().mutex);
    transports().mpi = factory;
    return true;
}

/// The launcher variable that says this process was started by one ("OMPI_COMM_WORLD_SIZE=2"),
/// or empty: Open MPI's mpirun, MPICH's Hydra and Slurm's PMI, PMIx.
inline std::string launcher_variable() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
        if (const char* v = env(name)) return concat(name, "=", v);
    return {};
}

/// LAZYTENSOR_DIST_TIMEOUT: how long a rank waits for the others in one collective or
/// agreement, in seconds (0: for ever); 300 by default.
inline long long dist_timeout_seconds() {
    return env_int("LAZYTENSOR_DIST_TIMEOUT", 300, 0, 1LL << 40, "a number of seconds");
}

/// The world group, made once (lt::dist::init): `asked` or LAZYTENSOR_DIST chooses the
/// transport; Auto is MPI where a launcher started the process.
inline std::shared_ptr<Communicator> init_world(Transport asked) {
    TransportRegistry& r = transports();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.finalized)
        fail<Error>("lt::dist::init: lt::dist::finalize() was called already; a process initializes its group once");
    if (r.world) return r.world;
    Transport t = asked;
    if (t == Transport::Auto) {
        if (const char* v = env("LAZYTENSOR_DIST")) {
            const std::string s(v);
            if (s == "single") t = Transport::Single;
            else if (s == "mpi") t = Transport::Mpi;
            else if (s != "auto") fail<ValueError>("LAZYTENSOR_DIST=", s, " is not a transport: use single, mpi or auto");
        }
    }
    const std::string launcher = launcher_variable();
    if (t == Transport::Auto) t = launcher.empty() ? Transport::Single : Transport::Mpi;
    if (t == Transport::Mpi) {
        if (!r.mpi)
            fail<Error>("lt::dist::init: ",
                        launcher.empty() ? std::string("MPI was asked for")
                                         : concat("this process was started by an MPI launcher (", launcher, ")"),
                        ", but this program was built without MPI: link the CMake target lazytensor::distributed "
                        "(find_package(MPI) finds Open MPI or MPICH; Debian: apt-get install libopenmpi-dev), or define "
                        "LAZYTENSOR_MPI=1 and compile and link with mpicxx");
        r.world = r.mpi();
    } else {
        r.world = std::make_shared<SingleProcess>();
    }
    r.chosen = t;
    r.groups.assign(1, r.world);
    return r.world;
}

/// Group `id`'s communicator (0: the world). Error after finalize.
inline std::shared_ptr<Communicator> communicator(int id) {
    TransportRegistry& r = transports();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.finalized) fail<Error>("lt::dist: the group was used after lt::dist::finalize(); a process finalizes once, at its end");
    if (id < 0 || static_cast<std::size_t>(id) >= r.groups.size())
        fail<Error>("lazytensor internal error: no communicator for group ", id);
    return r.groups[static_cast<std::size_t>(id)];
}

}  // namespace lazytensor::detail
