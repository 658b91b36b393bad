#include "kernels/cpu/aten_trace.h"

#include <ATen/record_function.h>

#include "fusion/errors.h"

namespace fg {

namespace {

thread_local std::map<std::string, int>* sink = nullptr;

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  if (sink) ++(*sink)[fn.name()];
  return nullptr;
}

}  // namespace

AtenOpTrace::AtenOpTrace() : outer_(sink) {
  FG_CHECK(outer_ == nullptr, "nested ATen op traces on one thread");
  sink = &ops_;
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(on_enter).needsInputs(false).scopes({at::RecordScope::FUNCTION}));
}

AtenOpTrace::~AtenOpTrace() {
  at::removeCallback(handle_);
  sink = outer_;
}

}  // namespace fg
