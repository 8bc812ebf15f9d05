// The memory model: parameters, activations (the inference peak live set by tensor liveness, or
// what backward keeps in training), gradients, optimizer states and the KV cache.
#pragma once

#include <set>
#include <string>

#include "estimate/estimator.hpp"

namespace truepeak::estimate {

// Largest sum of simultaneously live activations while running the graph in order: a tensor
// lives from the op that writes it to the last op that reads it (views share their source).
double peak_live_bytes(const Graph& graph, const Bindings& bindings, double element_bytes);
// Activations backward reads (inputs of GEMMs/convs, norm inputs, softmax outputs, inputs of
// nonlinear functions, ...) plus the largest gradient working set of one op.
double training_activation_bytes(const Graph& graph, const Bindings& bindings,
                                 double element_bytes);
// Distinct state tensors (the KV cache) read by the graph.
double state_bytes(const Graph& graph, const Bindings& bindings, double element_bytes);
// Tensors that depend on a parameter, by name (views included): those need gradients.
std::set<std::string> tensors_needing_grad(const Graph& graph);

// Symbol values for an estimate: the model's defaults, S and T from the options, N = batch.
Bindings bindings_for(const Model& model, const Options& options);

}  // namespace truepeak::estimate
