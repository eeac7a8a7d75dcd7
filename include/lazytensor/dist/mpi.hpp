// SPDX-License-Identifier: MIT
// The MPI transport of lt::dist: compiled into a program only where it asks for MPI
// (LAZYTENSOR_MPI=1, which the CMake target lazytensor::distributed sets and links MPI for);
// lazytensor.hpp includes it then. It registers itself as the program starts, so the engine,
// which includes no MPI header, finds it when lt::dist::init runs under a launcher. Written
// against <mpi.h> alone: Open MPI and MPICH both build it.
//
// Every MPI call is made under one mutex (MPI_THREAD_SERIALIZED), on a duplicate of
// MPI_COMM_WORLD, so that the program's own MPI traffic never meets lazytensor's. Waits poll
// with MPI_Test (which is also what drives Open MPI's progress), up to LAZYTENSOR_DIST_TIMEOUT.
#pragma once

#include <mpi.h>

#include <chrono>
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../core/communicator.hpp"

namespace lazytensor::detail::mpi {

inline std::mutex& call_mutex() {
    static std::mutex* m = new std::mutex();
    return *m;
}

inline std::string error_text(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return concat("MPI error ", code);
    return std::string(text, static_cast<std::size_t>(length));
}

/// Throws DistributedError with MPI's message unless `code` is MPI_SUCCESS.
inline void check(int code, const char* call) {
    if (code != MPI_SUCCESS) fail<DistributedError>("lt::dist: ", call, " failed: ", error_text(code));
}

inline MPI_Datatype datatype(DType t) {
    switch (t) {
        case DType::Bool: return MPI_C_BOOL;
        case DType::UInt8: return MPI_UINT8_T;
        case DType::Int8: return MPI_INT8_T;
        case DType::Int16: return MPI_INT16_T;
        case DType::UInt16: return MPI_UINT16_T;
        case DType::Int32: return MPI_INT32_T;
        case DType::UInt32: return MPI_UINT32_T;
        case DType::Int64: return MPI_INT64_T;
        case DType::UInt64: return MPI_UINT64_T;
        case DType::Float16:  // moved as 16-bit words; reduced in float32 (frontend/dist.hpp)
        case DType::BFloat16: return MPI_UINT16_T;
        case DType::Float32: return MPI_FLOAT;
        case DType::Float64: return MPI_DOUBLE;
        case DType::Complex64:
        case DType::Complex128: complex_dtype_inside(t);
    }
    return MPI_BYTE;
}

inline MPI_Op reduction(CollectiveOp op, DType t) {
    if (op == CollectiveOp::Max) return t == DType::Bool ? MPI_LOR : MPI_MAX;
    if (op == CollectiveOp::Min) return t == DType::Bool ? MPI_LAND : MPI_MIN;
    return MPI_SUM;
}

class Communicator;

/// Requests in flight, waited on by polling until the timeout.
class Requests final : public Transfer {
public:
    Requests(Communicator& comm, std::vector<MPI_Request> requests, std::string what)
        : comm_(comm), requests_(std::move(requests)), what_(std::move(what)) {}
    ~Requests() override;
    bool test() override;
    void wait() override;

private:
    Communicator& comm_;
    std::vector<MPI_Request> requests_;
    std::string what_;
    bool done_ = false;
};

class Communicator final : public lazytensor::detail::Communicator {
public:
    Communicator() {
        std::lock_guard<std::mutex> lock(call_mutex());
        int initialized = 0;
        MPI_Initialized(&initialized);
        if (!initialized) {
            int provided = 0;
            check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
            started_ = true;
        }
        check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
        MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
        MPI_Comm_rank(comm_, &rank_);
        MPI_Comm_size(comm_, &size_);
        if (const char* v = env("OMPI_COMM_WORLD_LOCAL_RANK")) {
            local_rank_ = std::atoi(v);
        } else {
            MPI_Comm shared;
            check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &shared), "MPI_Comm_split_type");
            MPI_Comm_rank(shared, &local_rank_);
            MPI_Comm_free(&shared);
        }
        char version[MPI_MAX_LIBRARY_VERSION_STRING];
        int length = 0;
        MPI_Get_library_version(version, &length);
        library_.assign(version, static_cast<std::size_t>(length));
        const std::size_t cut = library_.find_first_of(",\n");
        if (cut != std::string::npos) library_.resize(cut);
        if (started_) std::atexit([] { finalize_at_exit(); });
    }

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    int local_rank() const override { return local_rank_; }
    std::string describe() const override { return concat("MPI (", library_, "), rank ", rank_, " of ", size_); }

    std::string routine(CollectiveOp op) const override {
        switch (op) {
            case CollectiveOp::Sum:
            case CollectiveOp::Max:
            case CollectiveOp::Min: return "MPI_Iallreduce";
            case CollectiveOp::Gather: return "MPI_Iallgather";
            case CollectiveOp::ReduceScatter: return "MPI_Ireduce_scatter_block";
            case CollectiveOp::Broadcast: return "MPI_Ibcast";
        }
        return "MPI";
    }

    std::unique_ptr<Transfer> start(CollectiveOp op, DType dtype, const void* in, void* out, std::int64_t count, int root,
                                    const std::string& what) override {
        const MPI_Datatype type = datatype(dtype);
        const std::size_t element = dtype_size(dtype);
        std::vector<MPI_Request> requests;
        std::lock_guard<std::mutex> lock(call_mutex());
        auto issued = [&](int code, const char* call) {
            if (code == MPI_SUCCESS) return;
            for (MPI_Request& r : requests) MPI_Wait(&r, MPI_STATUS_IGNORE);
            check(code, call);
        };
        // MPI counts are ints: element-wise collectives go in pieces; the others must fit.
        constexpr std::int64_t most = INT_MAX;
        switch (op) {
            case CollectiveOp::Sum:
            case CollectiveOp::Max:
            case CollectiveOp::Min:
            case CollectiveOp::Broadcast:
                for (std::int64_t at = 0; at < count || (count == 0 && at == 0); at += most) {
                    const int n = static_cast<int>(std::min(most, count - at));
                    const char* from = static_cast<const char*>(in) + at * static_cast<std::int64_t>(element);
                    char* to = static_cast<char*>(out) + at * static_cast<std::int64_t>(element);
                    MPI_Request r;
                    if (op == CollectiveOp::Broadcast) {
                        if (rank_ == root && n > 0) std::memcpy(to, from, static_cast<std::size_t>(n) * element);
                        issued(MPI_Ibcast(to, n, type, root, comm_, &r), "MPI_Ibcast");
                    } else {
                        issued(MPI_Iallreduce(from, to, n, type, reduction(op, dtype), comm_, &r), "MPI_Iallreduce");
                    }
                    requests.push_back(r);
                    if (count == 0) break;
                }
                break;
            case CollectiveOp::Gather:
            case CollectiveOp::ReduceScatter: {
                const std::int64_t per_rank = op == CollectiveOp::Gather ? count : count / size_;
                if (per_rank > most)
                    fail<DistributedError>("lt::dist: ", what, ": ", per_rank, " elements per rank; ",
                                           op == CollectiveOp::Gather ? "all_gather" : "reduce_scatter",
                                           " moves at most 2^31 - 1 elements per rank in one call");
                MPI_Request r;
                if (op == CollectiveOp::Gather)
                    issued(MPI_Iallgather(in, static_cast<int>(per_rank), type, out, static_cast<int>(per_rank), type, comm_, &r),
                           "MPI_Iallgather");
                else
                    issued(MPI_Ireduce_scatter_block(in, out, static_cast<int>(per_rank), type, MPI_SUM, comm_, &r),
                           "MPI_Ireduce_scatter_block");
                requests.push_back(r);
                break;
            }
        }
        return std::make_unique<Requests>(*this, std::move(requests), what);
    }

    Agreement agree(const std::string& record, bool failed) override {
        // The largest of (h, ~h, failed) over the ranks: a rank whose h is not the largest sees
        // max(h) != h, the one with the largest sees max(~h) != ~h.
        const std::uint64_t h = hash(record);
        std::uint64_t mine[3] = {h, ~h, failed ? 1u : 0u}, most[3] = {0, 0, 0};
        {
            MPI_Request r;
            {
                std::lock_guard<std::mutex> lock(call_mutex());
                check(MPI_Iallreduce(mine, most, 3, MPI_UINT64_T, MPI_MAX, comm_, &r), "MPI_Iallreduce");
            }
            Requests(*this, {r}, concat("the agreement before this realize's collectives (", record, ")")).wait();
        }
        Agreement a;
        if (most[0] == h && most[1] == ~h && most[2] == 0) return a;
        // Every rank is on this path: exchange the records themselves.
        a.agreed = false;
        int length = static_cast<int>(record.size());
        std::vector<int> lengths(static_cast<std::size_t>(size_)), at(static_cast<std::size_t>(size_));
        {
            MPI_Request r;
            {
                std::lock_guard<std::mutex> lock(call_mutex());
                check(MPI_Iallgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_, &r), "MPI_Iallgather");
            }
            Requests(*this, {r}, "the records of a failed agreement").wait();
        }
        int total = 0;
        for (int k = 0; k < size_; ++k) {
            at[static_cast<std::size_t>(k)] = total;
            total += lengths[static_cast<std::size_t>(k)];
        }
        std::vector<char> all(static_cast<std::size_t>(total) + 1);
        {
            MPI_Request r;
            {
                std::lock_guard<std::mutex> lock(call_mutex());
                check(MPI_Iallgatherv(record.data(), length, MPI_CHAR, all.data(), lengths.data(), at.data(), MPI_CHAR, comm_, &r),
                  "MPI_Iallgatherv");
            }
            Requests(*this, {r}, "the records of a failed agreement").wait();
        }
        for (int k = 0; k < size_; ++k)
            a.records.emplace_back(all.data() + at[static_cast<std::size_t>(k)],
                                   static_cast<std::size_t>(lengths[static_cast<std::size_t>(k)]));
        return a;
    }

    void barrier() override {
        const Agreement a = agree("barrier", false);
        if (a.agreed) return;
        std::string all;
        for (std::size_t r = 0; r < a.records.size(); ++r) all += concat(r ? "; " : "", "rank ", r, ": ", a.records[r]);
        fail<DistributedError>("lt::dist::barrier: the ranks were not all at a barrier: ", all,
                               "; every rank must call barrier() at the same point (docs/distributed.md)");
    }

    [[noreturn]] void abort(const std::string& message) override {
        std::fprintf(stderr, "%s\n", message.c_str());
        std::fflush(stderr);
        MPI_Abort(comm_, 1);
        std::abort();
    }

    void finalize() override {
        std::lock_guard<std::mutex> lock(call_mutex());
        finalize_locked();
    }

private:
    friend class Requests;

    static std::uint64_t hash(const std::string& s) {
        std::uint64_t h = 1469598103934665603ull;  // FNV-1a
        for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
        return h;
    }

    void finalize_locked() {
        if (finalized_) return;
        finalized_ = true;
        int done = 0;
        MPI_Finalized(&done);
        if (done) return;
        MPI_Comm_free(&comm_);
        if (started_) MPI_Finalize();
    }

    static void finalize_at_exit() {
        std::shared_ptr<lazytensor::detail::Communicator> world;
        {
            std::lock_guard<std::mutex> lock(transports().mutex);
            world = transports().world;
        }
        if (world) world->finalize();
    }

    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0, size_ = 1, local_rank_ = 0;
    bool started_ = false, finalized_ = false;
    std::string library_;
};

inline Requests::~Requests() {
    // A transfer dropped in flight (an error elsewhere ends the job first): complete it.
    if (!done_ && !requests_.empty()) wait();
}

inline bool Requests::test() {
    if (done_) return true;
    std::lock_guard<std::mutex> lock(call_mutex());
    int flag = 0;
    check(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &flag, MPI_STATUSES_IGNORE), "MPI_Testall");
    done_ = flag != 0;
    return done_;
}

inline void Requests::wait() {
    const long long timeout = dist_timeout_seconds();
    const auto start = std::chrono::steady_clock::now();
    // Open MPI advances a non-blocking collective only inside MPI calls: a sleep between tests
    // stalls it (64 MiB over 2 ranks: 206 ms with 50 us sleeps, 27 ms with yields).
    for (std::uint64_t spins = 0; !test(); ++spins) {
        std::this_thread::yield();
        if (spins % 1024 != 0) continue;
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (timeout > 0 && waited > static_cast<double>(timeout))
            comm_.abort(concat("[lazytensor rank ", comm_.rank(), " of ", comm_.size(), "] lt::dist: rank ", comm_.rank(),
                               " waited ", timeout, " s for ", what_,
                               " (group world); some rank did not reach it (LAZYTENSOR_DIST_TIMEOUT sets the limit)"));
    }
}

/// The transport, registered as the program starts.
inline std::shared_ptr<lazytensor::detail::Communicator> make_world() { return std::make_shared<Communicator>(); }

inline const bool registered = register_mpi_transport(&make_world);

}  // namespace lazytensor::detail::mpi
