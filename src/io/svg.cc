#include "io/svg.h"

#include <cmath>
#include <numbers>
#include <sstream>

namespace qmlsim::io {

std::string cut_svg(int nodes, const std::vector<std::pair<int, int>>& edges,
                    std::uint64_t assignment, const std::string& title) {
  constexpr double kSize = 480, kRadius = 190, kNode = 13;
  auto x = [&](int i) { return kSize / 2 + kRadius * std::cos(2 * std::numbers::pi * i / nodes); };
  auto y = [&](int i) {
    return kSize / 2 + 10 + kRadius * std::sin(2 * std::numbers::pi * i / nodes);
  };
  auto side = [&](int i) { return (assignment >> i) & 1; };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kSize << "\" height=\"" << kSize + 20
    << "\" font-family=\"sans-serif\">\n";
  s << "<text x=\"" << kSize / 2 << "\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">";
  for (char c : title) {
    if (c == '<')
      s << "&lt;";
    else if (c == '&')
      s << "&amp;";
    else
      s << c;
  }
  s << "</text>\n";
  for (const auto& [u, v] : edges) {
    const bool cut = side(u) != side(v);
    s << "<line x1=\"" << x(u) << "\" y1=\"" << y(u) << "\" x2=\"" << x(v) << "\" y2=\"" << y(v)
      << (cut ? "\" stroke=\"#d62728\" stroke-width=\"2\"/>\n"
              : "\" stroke=\"#999\" stroke-width=\"1\" stroke-dasharray=\"4 3\"/>\n");
  }
  for (int i = 0; i < nodes; ++i) {
    s << "<circle cx=\"" << x(i) << "\" cy=\"" << y(i) << "\" r=\"" << kNode << "\" fill=\""
      << (side(i) ? "#1f77b4" : "#ff7f0e") << "\" stroke=\"#333\"/>\n";
    s << "<text x=\"" << x(i) << "\" y=\"" << y(i) + 4
      << "\" text-anchor=\"middle\" font-size=\"11\" fill=\"white\">" << i << "</text>\n";
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace qmlsim::io
