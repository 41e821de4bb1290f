// The processes of a job and the few collectives that data-parallel training and
// the distributed state vector (distributed/) need.
// With MPI (found at build time) and a process started by an MPI launcher
// (mpirun, srun --mpi=pmix, the Kubeflow MPI Operator's mpirun), this is
// MPI_COMM_WORLD; otherwise a single process of rank 0. No MPI header leaks out
// of comm.cc.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace qmlsim::comm {

// The world, or a group split from it.
class Comm {
 public:
  // The world, initialised on first use. Throws Error when the environment
  // says the process is one of several ranks but this build has no MPI.
  static Comm& world();
  // The world if world() has been called, else null (for error paths, which
  // must not start MPI).
  static Comm* existing();

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }
  // Ranks on this host (for the default thread count) and this one's place among
  // them (for the GPU it takes).
  int local_size() const { return local_size_; }
  int local_rank() const { return local_rank_; }
  bool with_mpi() const { return mpi_; }

  // Every rank contributes `mine` (any length); every rank receives all
  // contributions concatenated in rank order.
  std::vector<double> allgather(std::span<const double> mine) const;
  // Rank 0 receives every rank's text in rank order; the others an empty list.
  std::vector<std::string> gather_to_root(const std::string& mine) const;
  // data on `root` is copied to every rank (resized as needed).
  void broadcast(std::vector<double>& data, int root = 0) const;
  void broadcast(std::string& text, int root = 0) const;
  // Sends `bytes` bytes to rank `dest` while receiving as many from rank
  // `source` (MPI_Sendrecv, in pieces of at most 1 GiB so that counts fit an
  // int). Alone: a copy. `send` and `recv` must not overlap unless equal.
  void sendrecv(const void* send, void* recv, std::size_t bytes, int dest, int source) const;
  // Point to point (MPI_Send / MPI_Recv, pieces as above); a no-op alone.
  void send(const void* data, std::size_t bytes, int dest) const;
  void recv(void* data, std::size_t bytes, int source) const;
  void barrier() const;
  // Ends every rank of the job at once (MPI_Abort); a plain exit when alone.
  [[noreturn]] void abort(int status) const;

  // The processes of this group with the same `color`, ranked as here (MPI_Comm_split;
  // collective over this group). Must be destroyed before the world.
  std::unique_ptr<Comm> split(int color) const;

  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  struct Handle;

 private:
  Comm();
  struct Group {};
  explicit Comm(Group);
  int rank_ = 0, size_ = 1, local_size_ = 1, local_rank_ = 0;
  bool mpi_ = false;
  bool group_ = false;              // made by split()
  std::unique_ptr<Handle> handle_;  // a group's communicator; none for the world
};

// True when the build includes MPI.
bool built_with_mpi();

// The world size a launcher announced in the environment (OpenMPI, PMIx, PMI,
// Slurm), or 0 when there is none.
int launcher_world_size();

}  // namespace qmlsim::comm
