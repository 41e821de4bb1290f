// An SVG drawing of a graph with a cut: nodes on a circle, coloured by side,
// cut edges drawn solid red and the others dashed grey.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qmlsim::io {

std::string cut_svg(int nodes, const std::vector<std::pair<int, int>>& edges,
                    std::uint64_t assignment, const std::string& title);

}  // namespace qmlsim::io
