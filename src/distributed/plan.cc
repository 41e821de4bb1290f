#include "distributed/plan.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "core/error.h"

namespace qmlsim::distributed {

QubitMap QubitMap::identity(int n) {
  QubitMap m;
  m.phys.resize(static_cast<std::size_t>(n));
  std::iota(m.phys.begin(), m.phys.end(), 0);
  m.logical = m.phys;
  return m;
}

void QubitMap::swap_physical(int a, int b) {
  const int qa = logical[static_cast<std::size_t>(a)], qb = logical[static_cast<std::size_t>(b)];
  std::swap(logical[static_cast<std::size_t>(a)], logical[static_cast<std::size_t>(b)]);
  phys[static_cast<std::size_t>(qa)] = b;
  phys[static_cast<std::size_t>(qb)] = a;
}

bool QubitMap::is_identity() const {
  for (std::size_t q = 0; q < phys.size(); ++q)
    if (phys[q] != static_cast<int>(q)) return false;
  return true;
}

BoundGate to_physical(const BoundGate& g, const QubitMap& map, std::vector<int>* order) {
  BoundGate out;
  out.diagonal = g.diagonal;
  // A canonical matrix is a table-order matrix on the reversed target list.
  std::vector<int> wires;
  for (auto t = g.targets.rbegin(); t != g.targets.rend(); ++t)
    wires.push_back(map.phys[static_cast<std::size_t>(*t)]);
  out.matrix = to_canonical(g.matrix, g.diagonal, wires);
  out.targets = std::move(wires);
  for (int c : g.controls) out.controls.push_back(map.phys[static_cast<std::size_t>(c)]);
  std::sort(out.controls.begin(), out.controls.end());
  if (order) {
    order->clear();
    for (int t : g.targets) {
      const int p = map.phys[static_cast<std::size_t>(t)];
      order->push_back(static_cast<int>(
          std::lower_bound(out.targets.begin(), out.targets.end(), p) - out.targets.begin()));
    }
  }
  return out;
}

namespace {

bool is_x(const BoundGate& g) {
  return g.targets.size() == 1 && !g.diagonal && g.matrix[0] == cplx{0} && g.matrix[1] == cplx{1} &&
         g.matrix[2] == cplx{1} && g.matrix[3] == cplx{0};
}

bool is_swap(const BoundGate& g) {
  if (g.targets.size() != 2 || g.diagonal || !g.controls.empty()) return false;
  static const int kSwap[16] = {1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1};
  for (int i = 0; i < 16; ++i)
    if (g.matrix[static_cast<std::size_t>(i)] != cplx{static_cast<double>(kSwap[i])}) return false;
  return true;
}

// Physical qubits that gate g (logical) needs local under map: its non-diagonal targets.
template <class Fn>
void for_needed(const BoundGate& g, const QubitMap& map, Fn&& fn) {
  if (g.diagonal) return;
  for (int t : g.targets) fn(map.phys[static_cast<std::size_t>(t)]);
}

// The exchange before gates[i]: which slice qubits come in and which local ones go out.
std::vector<std::pair<int, int>> choose_exchange(const std::vector<BoundGate>& gates, std::size_t i,
                                                 int n, int m, const QubitMap& map) {
  constexpr std::size_t kLookahead = 100000;
  // Positions are the physical qubits at the boundary; look-ahead SWAPs move labels only.
  QubitMap ahead = map;
  std::vector<char> needed(static_cast<std::size_t>(n), 0);
  int count = 0;
  std::vector<std::size_t> next_use(static_cast<std::size_t>(n),
                                    std::numeric_limits<std::size_t>::max());
  bool window_open = true;
  for (std::size_t j = i; j < gates.size() && j < i + kLookahead; ++j) {
    const BoundGate& g = gates[j];
    if (is_swap(g)) {
      ahead.swap_physical(ahead.phys[static_cast<std::size_t>(g.targets[0])],
                          ahead.phys[static_cast<std::size_t>(g.targets[1])]);
      continue;
    }
    int extra = 0;
    for_needed(g, ahead, [&](int p) {
      if (next_use[static_cast<std::size_t>(p)] == std::numeric_limits<std::size_t>::max())
        next_use[static_cast<std::size_t>(p)] = j;
      if (window_open && !needed[static_cast<std::size_t>(p)]) ++extra;
    });
    if (!window_open) continue;
    if (count + extra > m) {
      if (j == i) throw Error("a gate has more non-diagonal targets than a slice's qubits");
      window_open = false;
      continue;
    }
    for_needed(g, ahead, [&](int p) {
      if (!needed[static_cast<std::size_t>(p)]) {
        needed[static_cast<std::size_t>(p)] = 1;
        ++count;
      }
    });
  }
  std::vector<int> incoming, victims;
  for (int p = m; p < n; ++p)
    if (needed[static_cast<std::size_t>(p)]) incoming.push_back(p);
  for (int p = 0; p < m; ++p)
    if (!needed[static_cast<std::size_t>(p)]) victims.push_back(p);
  // Furthest next use first; ties: the highest local qubit (keeps low qubits, where
  // the kernels' lanes are, in place).
  std::stable_sort(victims.begin(), victims.end(), [&](int a, int b) {
    const std::size_t ua = next_use[static_cast<std::size_t>(a)],
                      ub = next_use[static_cast<std::size_t>(b)];
    return ua != ub ? ua > ub : a > b;
  });
  std::vector<std::pair<int, int>> pairs;
  for (std::size_t t = 0; t < incoming.size(); ++t) pairs.push_back({victims[t], incoming[t]});
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

void count_naive(const BoundGate& g, int m, PlanStats& s) {
  if (g.diagonal) return;
  int remote = 0;
  for (int t : g.targets) remote += t >= m;
  if (remote == 0) return;
  if (g.targets.size() == 1) {
    s.naive_exchanges += 1;
    s.naive_slices_moved += 0.5;
  } else {
    s.naive_exchanges += 2 * remote;
    s.naive_slices_moved += remote;  // in and out, half a slice each
  }
}

}  // namespace

DistPlan plan(const std::vector<BoundGate>& gates, int n, int g, const QubitMap& start) {
  if (g < 0 || g >= n) throw Error("a distributed layout needs fewer slice qubits than qubits");
  const int m = n - g;
  DistPlan p;
  QubitMap map = start;
  Step cur;
  auto flush = [&] {
    if (cur.gates.empty()) return;
    p.steps.push_back(std::move(cur));
    cur = Step{};
  };
  for (std::size_t i = 0; i < gates.size(); ++i) {
    const BoundGate& gate = gates[i];
    count_naive(gate, m, p.stats);
    if (g > 0 && is_swap(gate)) {  // relabel: the data stay, the names move
      map.swap_physical(map.phys[static_cast<std::size_t>(gate.targets[0])],
                        map.phys[static_cast<std::size_t>(gate.targets[1])]);
      ++p.stats.relabels;
      continue;
    }
    if (g > 0 && is_x(gate) && gate.controls.size() <= 1) {
      const int t = map.phys[static_cast<std::size_t>(gate.targets[0])];
      const int c =
          gate.controls.empty() ? -1 : map.phys[static_cast<std::size_t>(gate.controls[0])];
      if (t >= m && (c < 0 || c >= m)) {  // slices trade places
        flush();
        Step r;
        r.kind = Step::Kind::kRelabel;
        r.target = t - m;
        r.control = c < 0 ? -1 : c - m;
        p.steps.push_back(std::move(r));
        ++p.stats.relabels;
        continue;
      }
    }
    bool remote = false;
    for_needed(gate, map, [&](int q) { remote |= q >= m; });
    if (remote) {
      flush();
      Step x;
      x.kind = Step::Kind::kExchange;
      x.pairs = choose_exchange(gates, i, n, m, map);
      for (const auto& [a, b] : x.pairs) map.swap_physical(a, b);
      ++p.stats.exchanges;
      p.stats.slices_moved += 1.0 - 1.0 / static_cast<double>(1 << x.pairs.size());
      p.steps.push_back(std::move(x));
    }
    std::vector<int> order;
    cur.gates.push_back(to_physical(gate, map, &order));
    cur.source.push_back(static_cast<int>(i));
    cur.order.push_back(std::move(order));
  }
  flush();
  p.final_map = std::move(map);
  return p;
}

Specialized specialize(const BoundGate& g, int m, std::uint64_t slice) {
  Specialized s;
  auto bit = [&](int q) { return (slice >> (q - m)) & 1; };
  for (int c : g.controls) {
    if (c >= m && !bit(c)) {
      s.skip = true;
      return s;
    }
  }
  s.gate.diagonal = g.diagonal;
  for (int c : g.controls)
    if (c < m) s.gate.controls.push_back(c);
  bool remote_target = false;
  for (int t : g.targets) remote_target |= t >= m;
  if (!remote_target) {
    s.gate.targets = g.targets;
    s.gate.matrix = g.matrix;
    return s;
  }
  // A diagonal with targets on slice bits: fix those bits.
  std::size_t fixed = 0;
  std::vector<std::size_t> local_bits;  // positions in g.targets of local targets
  for (std::size_t j = 0; j < g.targets.size(); ++j) {
    if (g.targets[j] >= m)
      fixed |= static_cast<std::size_t>(bit(g.targets[j])) << j;
    else
      local_bits.push_back(j);
  }
  if (!local_bits.empty()) {
    s.map = Specialized::Map::kDiagonalFixed;
    for (std::size_t j : local_bits) s.gate.targets.push_back(g.targets[j]);
    for (std::size_t a = 0; a < (std::size_t{1} << local_bits.size()); ++a) {
      std::size_t idx = fixed;
      for (std::size_t k = 0; k < local_bits.size(); ++k)
        if (a >> k & 1) idx |= std::size_t{1} << local_bits[k];
      s.index.push_back(idx);
      s.gate.matrix.push_back(g.matrix[idx]);
    }
    return s;
  }
  const cplx phase = g.matrix[fixed];
  s.index = {fixed};
  if (!s.gate.controls.empty()) {  // a phase where every local control is 1
    s.map = Specialized::Map::kPhaseOnControls;
    s.gate.targets = s.gate.controls;
    s.gate.controls.clear();
    s.gate.matrix.assign(std::size_t{1} << s.gate.targets.size(), cplx{1});
    s.gate.matrix.back() = phase;
    return s;
  }
  s.map = Specialized::Map::kPhaseOnSlice;
  s.gate.targets = {0};
  s.gate.matrix = {phase, phase};
  return s;
}

}  // namespace qmlsim::distributed
