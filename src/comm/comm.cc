#include "comm/comm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "core/error.h"

#ifdef QMLSIM_WITH_MPI
#include <mpi.h>
#endif

namespace qmlsim::comm {
namespace {

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : 0;
}

}  // namespace

bool built_with_mpi() {
#ifdef QMLSIM_WITH_MPI
  return true;
#else
  return false;
#endif
}

int launcher_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "SLURM_NTASKS"})
    if (const int n = env_int(name); n > 0) return n;
  if (std::getenv("PMIX_RANK") || std::getenv("PMI_RANK")) return -1;  // size unknown
  return 0;
}

namespace {
Comm* g_world = nullptr;
}

#ifdef QMLSIM_WITH_MPI
// A group's MPI communicator (the world's is MPI_COMM_WORLD, held by no handle).
struct Comm::Handle {
  MPI_Comm comm;
};
namespace {
MPI_Comm comm_of(const std::unique_ptr<Comm::Handle>& h) { return h ? h->comm : MPI_COMM_WORLD; }
}  // namespace
#else
struct Comm::Handle {};
#endif

Comm::Comm(Group) : group_(true) {}

std::unique_ptr<Comm> Comm::split(int color) const {
  std::unique_ptr<Comm> g(new Comm(Group{}));
  g->local_size_ = local_size_;
  g->local_rank_ = local_rank_;
  g->mpi_ = mpi_;
#ifdef QMLSIM_WITH_MPI
  if (mpi_ && size_ > 1) {
    MPI_Comm c;
    MPI_Comm_split(comm_of(handle_), color, rank_, &c);
    g->handle_ = std::make_unique<Handle>(Handle{c});
    MPI_Comm_rank(c, &g->rank_);
    MPI_Comm_size(c, &g->size_);
    return g;
  }
#endif
  (void)color;
  return g;
}

Comm& Comm::world() {
  static Comm c;
  g_world = &c;
  return c;
}

Comm* Comm::existing() { return g_world; }

Comm::Comm() {
  const int announced = launcher_world_size();
#ifdef QMLSIM_WITH_MPI
  if (announced != 0) {
    // Collectives are called by one thread per rank, the one that
    // initialised MPI (the models run a distributed state's examples in turn).
    int ready = 0, provided = MPI_THREAD_SINGLE;
    MPI_Initialized(&ready);
    if (ready)
      MPI_Query_thread(&provided);
    else
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (provided < MPI_THREAD_FUNNELED)
      throw Error("MPI: the library gives no thread support (MPI_THREAD_FUNNELED is needed)");
    mpi_ = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_free(&local);
    if (announced > 1 && announced != size_)
      throw Error("the launcher announced " + std::to_string(announced) +
                  " processes but MPI sees " + std::to_string(size_) +
                  " (mpirun of another MPI implementation?)");
  }
#else
  if (announced > 1 || announced < 0)
    throw Error("started by an MPI launcher as one of " +
                (announced > 0 ? std::to_string(announced) : std::string("several")) +
                " processes, but this qmlsim was built without MPI (install libopenmpi-dev and "
                "rebuild)");
#endif
}

Comm::~Comm() {
#ifdef QMLSIM_WITH_MPI
  if (handle_) {
    int done = 0;
    MPI_Finalized(&done);
    if (!done) MPI_Comm_free(&handle_->comm);
    return;
  }
  if (mpi_ && !group_) {
    int done = 0;
    MPI_Finalized(&done);
    if (!done) MPI_Finalize();
  }
#endif
}

std::vector<double> Comm::allgather(std::span<const double> mine) const {
  if (size_ == 1) return {mine.begin(), mine.end()};
#ifdef QMLSIM_WITH_MPI
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(size_)), displs(counts.size());
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_of(handle_));
  int total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    displs[r] = total;
    total += counts[r];
  }
  std::vector<double> all(static_cast<std::size_t>(total));
  MPI_Allgatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), displs.data(),
                 MPI_DOUBLE, comm_of(handle_));
  return all;
#else
  return {mine.begin(), mine.end()};
#endif
}

std::vector<std::string> Comm::gather_to_root(const std::string& mine) const {
  if (size_ == 1) return {mine};
#ifdef QMLSIM_WITH_MPI
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(size_)), displs(counts.size());
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm_of(handle_));
  int total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    displs[r] = total;
    total += counts[r];
  }
  std::string all(static_cast<std::size_t>(root() ? total : 0), '\0');
  MPI_Gatherv(mine.data(), count, MPI_CHAR, all.data(), counts.data(), displs.data(), MPI_CHAR, 0,
              comm_of(handle_));
  std::vector<std::string> out;
  if (root())
    for (std::size_t r = 0; r < counts.size(); ++r)
      out.push_back(
          all.substr(static_cast<std::size_t>(displs[r]), static_cast<std::size_t>(counts[r])));
  return out;
#else
  return {mine};
#endif
}

void Comm::broadcast(std::vector<double>& data, int root) const {
  if (size_ == 1) return;
#ifdef QMLSIM_WITH_MPI
  long long n = static_cast<long long>(data.size());
  MPI_Bcast(&n, 1, MPI_LONG_LONG, root, comm_of(handle_));
  data.resize(static_cast<std::size_t>(n));
  MPI_Bcast(data.data(), static_cast<int>(n), MPI_DOUBLE, root, comm_of(handle_));
#else
  (void)data;
  (void)root;
#endif
}

void Comm::broadcast(std::string& text, int root) const {
  if (size_ == 1) return;
#ifdef QMLSIM_WITH_MPI
  long long n = static_cast<long long>(text.size());
  MPI_Bcast(&n, 1, MPI_LONG_LONG, root, comm_of(handle_));
  text.resize(static_cast<std::size_t>(n));
  MPI_Bcast(text.data(), static_cast<int>(n), MPI_CHAR, root, comm_of(handle_));
#else
  (void)text;
  (void)root;
#endif
}

void Comm::sendrecv(const void* send, void* recv, std::size_t bytes, int dest, int source) const {
  if (size_ == 1 || (dest == rank_ && source == rank_)) {
    if (send != recv) std::memcpy(recv, send, bytes);
    return;
  }
#ifdef QMLSIM_WITH_MPI
  constexpr std::size_t kPiece = std::size_t{1} << 30;  // MPI counts are int
  const auto* s = static_cast<const char*>(send);
  auto* r = static_cast<char*>(recv);
  for (std::size_t done = 0; done < bytes; done += kPiece) {
    const int count = static_cast<int>(std::min(kPiece, bytes - done));
    MPI_Sendrecv(s + done, count, MPI_BYTE, dest, 7, r + done, count, MPI_BYTE, source, 7,
                 comm_of(handle_), MPI_STATUS_IGNORE);
  }
#else
  (void)dest;
  (void)source;
#endif
}

void Comm::send(const void* data, std::size_t bytes, int dest) const {
#ifdef QMLSIM_WITH_MPI
  if (size_ == 1) return;
  constexpr std::size_t kPiece = std::size_t{1} << 30;
  for (std::size_t done = 0; done < bytes; done += kPiece)
    MPI_Send(static_cast<const char*>(data) + done,
             static_cast<int>(std::min(kPiece, bytes - done)), MPI_BYTE, dest, 8, comm_of(handle_));
#else
  (void)data;
  (void)bytes;
  (void)dest;
#endif
}

void Comm::recv(void* data, std::size_t bytes, int source) const {
#ifdef QMLSIM_WITH_MPI
  if (size_ == 1) return;
  constexpr std::size_t kPiece = std::size_t{1} << 30;
  for (std::size_t done = 0; done < bytes; done += kPiece)
    MPI_Recv(static_cast<char*>(data) + done, static_cast<int>(std::min(kPiece, bytes - done)),
             MPI_BYTE, source, 8, comm_of(handle_), MPI_STATUS_IGNORE);
#else
  (void)data;
  (void)bytes;
  (void)source;
#endif
}

void Comm::barrier() const {
#ifdef QMLSIM_WITH_MPI
  if (size_ > 1) MPI_Barrier(comm_of(handle_));
#endif
}

void Comm::abort(int status) const {
#ifdef QMLSIM_WITH_MPI
  if (mpi_ && size_ > 1) MPI_Abort(comm_of(handle_), status);
#endif
  std::exit(status);
}

}  // namespace qmlsim::comm
