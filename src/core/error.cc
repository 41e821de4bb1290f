#include "core/error.h"

namespace qmlsim {

void throw_at(const SourceLoc& loc, const std::string& message) {
  throw Error(loc.source + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.column) +
              ": " + message);
}

}  // namespace qmlsim
