// Internal to the estimator: an op's row and a pass's rows, shared by the files that cost a model
// (estimator.cpp, op_row.cpp, pass_rows.cpp); not part of the estimator's public API.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "estimate/cost.hpp"
#include "estimate/estimator.hpp"
#include "estimate/fusion.hpp"
#include "estimate/graph.hpp"
#include "estimate/rates.hpp"

namespace truepeak::estimate::estimator_detail {

// An op's kind as its row names it: "elementwise:relu", or the whole kind where the op has no
// function.
std::string row_kind(const Op& op);

// `model_weight_bytes`: all of the model's parameters, the level that serves each op's weights;
// `pass_bytes`: those and the graph inputs, the level that serves what a pass reads once.
OpRow cost_row(const Op& op, const Work& w, const RateModel& rates, const std::string& phase,
               double model_weight_bytes, double pass_bytes = 0);

// Checks `row` (a non-finite or negative figure is an internal error), adds it to `totals`, and
// keeps it in `rows` where rows are kept.
void add_row(Totals& totals, std::vector<OpRow>* rows, OpRow row);

// One forward pass (or decode step) of `g` as rows: with a runtime's blocked layout, own kernels,
// in-place ops, per-kind dispatch costs and fused kernels where given.
Totals run_forward(const Graph& g, const Bindings& b, double e, const RateModel& rates,
                   const std::string& phase, std::vector<OpRow>* rows,
                   const std::optional<BlockedLayout>& layout = std::nullopt,
                   bool linears_as_convolutions = false, const OwnRates& own_rates = {},
                   const std::vector<std::string>& in_place_kinds = {},
                   const OwnRates& kind_overheads = {}, const FusedGraph* kernels = nullptr,
                   double graph_s = 0, const ColdCalls* cold_calls = nullptr);

// The backward pass of `g` as rows (data and weight gradients, in reverse op order).
Totals run_backward(const Graph& g, const Bindings& b, double e, const RateModel& rates,
                    std::vector<OpRow>* rows);

}  // namespace truepeak::estimate::estimator_detail
