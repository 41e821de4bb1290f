#include <cstdlib>
#include <string>

#include "backends/cuda/statevector.h"

namespace qmlsim::cuda {

int local_rank_from_env() {
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID", "PMI_LOCAL_RANK"}) {
    const char* v = std::getenv(name);
    if (!v || !*v) continue;
    char* end = nullptr;
    const long r = std::strtol(v, &end, 10);
    if (*end == '\0' && r >= 0) return static_cast<int>(r);
  }
  return 0;
}

}  // namespace qmlsim::cuda
