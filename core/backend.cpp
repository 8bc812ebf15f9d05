#include "core/backend.hpp"

#include "core/error.hpp"

namespace truepeak {

bool cpu_has_avx512(const nlohmann::json& properties) {
  if (!properties.contains("isa") || !properties["isa"].is_object()) return false;
  const auto& isa = properties["isa"];
  return isa.contains("avx512f") && isa["avx512f"].is_boolean() && isa["avx512f"].get<bool>();
}

std::int64_t cpu_channel_block(const nlohmann::json& properties) {
  if (properties.contains("onednn_isa") && properties["onednn_isa"].is_string())
    return onednn_channel_block(properties["onednn_isa"].get<std::string>());
  return onednn_channel_block(cpu_has_avx512(properties) ? "avx512" : "");
}

std::unique_ptr<Kernel> Backend::gemm_cold_weights(const GemmShape& shape) {
  throw Unsupported("gemm " + shape.str() + " with cold weights is not measured on " +
                    describe().id);
}

std::unique_ptr<Kernel> Backend::conv_cold_weights(const ConvShape& shape, ConvLayout) {
  throw Unsupported("conv " + shape.str() + " with cold weights is not measured on " +
                    describe().id);
}

std::unique_ptr<Kernel> Backend::vector_op(const VectorOpShape& shape) {
  throw Unsupported("vector_op " + shape.str() + " is not measured on " + describe().id);
}

std::unique_ptr<Kernel> Backend::clock() {
  throw Unsupported("the core clock is not measured on " + describe().id);
}

std::unique_ptr<Kernel> Backend::graph_tiny_op() {
  throw Unsupported("graph replay is not available on " + describe().id);
}

std::unique_ptr<Kernel> Backend::transfer(TransferDir, bool, std::int64_t) {
  throw Unsupported("host-device transfers do not apply to " + describe().id);
}

std::unique_ptr<Kernel> Backend::transfer_bidirectional(std::int64_t) {
  throw Unsupported("host-device transfers do not apply to " + describe().id);
}

std::unique_ptr<Kernel> Backend::device_copy(std::int64_t) {
  throw Unsupported("device-to-device copies do not apply to " + describe().id);
}

}  // namespace truepeak
