// The transformer shorthand: a small config (layers, hidden, heads, ...) that expands to the op
// graph of an encoder (BERT, ViT) or a decoder (GPT-2, Llama) as the reference implementations
// run it. The fields are documented in models/README.md.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "estimate/graph.hpp"

namespace truepeak::estimate {

// Fills model.forward (and model.decode for decoders), model.kind and the default symbols.
// Throws InputError naming `where` and the field.
void expand_transformer(const nlohmann::json& config, const std::string& where, Model& model);

}  // namespace truepeak::estimate
