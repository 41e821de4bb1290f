#include "backends/cpu/kernels.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "core/cpu_features.h"
#include "core/error.h"

namespace qmlsim::cpu {

struct FormSlot {
  mutable std::mutex mutex;
  std::vector<std::string> names;
  std::vector<std::vector<double>> seconds;  // per form, its trials
  int chosen = -1;
};

namespace {

const char* const kAllForms[] = {"lockstep", "tiled2", "tiled4", "tiled8", "sequential"};

std::string checked_form(const std::string& form, const std::string& what) {
  if (form.empty()) return form;
  std::string names;
  for (const char* f : kAllForms) {
    if (form == f) return form;
    names += std::string(names.empty() ? "" : ", ") + f;
  }
  throw Error(what + ": expected one of " + names + ", got '" + form + "'");
}

// The forced form (QMLSIM_KERNEL_FORM, or force_kernel_form), empty if none.
struct Forced {
  std::mutex mutex;
  std::string form;
  Forced() {
    const char* v = std::getenv("QMLSIM_KERNEL_FORM");
    form = checked_form(v ? v : "", "QMLSIM_KERNEL_FORM");
  }
};
Forced& forced() {
  static Forced f;
  return f;
}

// The index of the forced form among the slot's, or -1.
int forced_index(const FormSlot& slot) {
  Forced& f = forced();
  std::lock_guard<std::mutex> lock(f.mutex);
  for (std::size_t i = 0; i < slot.names.size(); ++i)
    if (slot.names[i] == f.form) return static_cast<int>(i);
  return -1;
}

}  // namespace

std::string force_kernel_form(const std::string& form) {
  const std::string checked = checked_form(form, "kernel form");
  Forced& f = forced();
  std::lock_guard<std::mutex> lock(f.mutex);
  return std::exchange(f.form, checked);
}

bool kernel_form_forced() {
  Forced& f = forced();
  std::lock_guard<std::mutex> lock(f.mutex);
  return !f.form.empty();
}

FormSlot* form_slot(const char* isa, int vector_bytes, int real_bytes, int kind, int n,
                    const char* const* names, int count) {
  using Key = std::tuple<std::string, int, int, int, int>;
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<FormSlot>> slots;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<FormSlot>& slot = slots[Key{isa, vector_bytes, real_bytes, kind, n}];
  if (!slot) {
    slot = std::make_unique<FormSlot>();
    slot->names.assign(names, names + count);
    slot->seconds.resize(static_cast<std::size_t>(count));
  }
  return slot.get();
}

int form_to_run(FormSlot* slot) {
  if (const int f = forced_index(*slot); f >= 0) return f;
  std::lock_guard<std::mutex> lock(slot->mutex);
  if (slot->chosen >= 0) return slot->chosen;
  int next = 0;  // the form with the fewest trials, in turn
  for (std::size_t f = 1; f < slot->seconds.size(); ++f)
    if (slot->seconds[f].size() < slot->seconds[next].size()) next = static_cast<int>(f);
  return next;
}

void form_report(FormSlot* slot, int form, double seconds) {
  if (forced_index(*slot) >= 0) return;
  std::lock_guard<std::mutex> lock(slot->mutex);
  if (slot->chosen >= 0) return;
  slot->seconds[static_cast<std::size_t>(form)].push_back(seconds);
  double best = 0;
  int best_form = -1;
  for (std::size_t f = 0; f < slot->seconds.size(); ++f) {
    const std::vector<double>& t = slot->seconds[f];
    if (t.size() < static_cast<std::size_t>(kFormTrials)) return;
    const double least = *std::min_element(t.begin(), t.end());
    if (best_form < 0 || least < best) {
      best = least;
      best_form = static_cast<int>(f);
    }
  }
  slot->chosen = best_form;
}

const char* form_name(const FormSlot* slot) {
  if (const int f = forced_index(*slot); f >= 0)
    return slot->names[static_cast<std::size_t>(f)].c_str();
  std::lock_guard<std::mutex> lock(slot->mutex);
  return slot->chosen >= 0 ? slot->names[static_cast<std::size_t>(slot->chosen)].c_str()
                           : "calibrating";
}

double form_clock() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<const KernelSet*> available_kernel_sets() {
  std::vector<const KernelSet*> out = {&portable::kernels16(), &portable::kernels32(),
                                       &portable::kernels64()};
  const CpuFeatures f = detect_cpu_features();
  if (f.avx2_fma) out.push_back(&avx2::kernels());
  if (f.avx512f) out.push_back(&avx512::kernels());
  return out;
}

const KernelSet& best_kernels() {
  static const KernelSet* chosen = [] {
    const std::vector<const KernelSet*> sets = available_kernel_sets();
    if (const char* want = std::getenv("QMLSIM_KERNELS"); want && *want) {
      for (const KernelSet* k : sets)
        if (std::strcmp(k->name, want) == 0) return k;
      std::string names;
      for (const KernelSet* k : sets) names += std::string(names.empty() ? "" : ", ") + k->name;
      throw Error("QMLSIM_KERNELS=" + std::string(want) +
                  ": not available here (available: " + names + ")");
    }
    const CpuFeatures f = detect_cpu_features();
    if (f.avx512f) return &avx512::kernels();
    if (f.avx2_fma) return &avx2::kernels();
    return &portable::kernels16();
  }();
  return *chosen;
}

}  // namespace qmlsim::cpu
