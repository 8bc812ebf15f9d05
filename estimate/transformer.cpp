#include "estimate/transformer.hpp"

#include <fmt/format.h>

#include <set>

#include "core/error.hpp"
#include "estimate/builder.hpp"

namespace truepeak::estimate {
namespace {

using nlohmann::json;

struct Config {
  std::int64_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0;
  std::int64_t seq_len = 0, max_positions = 0, type_vocab = 0;
  bool decoder = false, gated_mlp = false, bias = true, tied_embeddings = false, fused_qkv = false;
  bool pooler = false, lm_head = true, embedding_norm = false, pre_norm = true;
  std::string activation = "gelu", norm = "layernorm", position = "learned";
  // Vision front end (ViT): patches of an image instead of token ids.
  std::int64_t image = 0, patch = 0, channels = 3, classes = 0;
};

const std::set<std::string> kFields = {"architecture",    "layers",        "hidden",     "heads",
                                       "kv_heads",        "ffn",           "vocab",      "seq_len",
                                       "max_positions",   "type_vocab",    "gated_mlp",  "bias",
                                       "tied_embeddings", "fused_qkv",     "pooler",     "lm_head",
                                       "embedding_norm",  "norm_position", "activation", "norm",
                                       "position",        "image",         "patch",      "channels",
                                       "classes",         "comment"};

[[noreturn]] void fail(const std::string& where, const std::string& field, const std::string& why) {
  throw InputError(fmt::format("{}: transformer, field '{}': {}", where, field, why));
}

// Sizes up to 2^31 - 1 keep every product of two of them (4 x hidden, the patch grid) inside
// 64 bits; the shapes built from them are checked when bound (check_sizes).
constexpr std::int64_t kMaxSize = 2147483647;
// Each layer adds its ops to the graph: a bound keeps a typo from building millions of them.
constexpr std::int64_t kMaxLayers = 1024;

std::int64_t int_field(const json& c, const std::string& where, const std::string& field,
                       std::int64_t fallback, bool required = false) {
  if (!c.contains(field)) {
    if (required) fail(where, field, "missing");
    return fallback;
  }
  const auto& v = c.at(field);
  const std::int64_t max = field == "layers" ? kMaxLayers : kMaxSize;
  // An unsigned value past 2^63 reads as negative: refused like one.
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > max)
    fail(where, field, fmt::format("expected a whole number from 0 to {}, got {}", max, v.dump()));
  return v.get<std::int64_t>();
}

bool bool_field(const json& c, const std::string& where, const std::string& field, bool fallback) {
  if (!c.contains(field)) return fallback;
  if (!c.at(field).is_boolean())
    fail(where, field, fmt::format("expected true or false, got {}", c.at(field).dump()));
  return c.at(field).get<bool>();
}

std::string string_field(const json& c, const std::string& where, const std::string& field,
                         const std::string& fallback, const std::set<std::string>& allowed) {
  if (!c.contains(field)) return fallback;
  if (!c.at(field).is_string()) fail(where, field, "expected a string");
  const auto v = c.at(field).get<std::string>();
  if (!allowed.count(v)) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail(where, field, fmt::format("'{}' is not one of {}", v, list));
  }
  return v;
}

Config parse_config(const json& c, const std::string& where) {
  if (!c.is_object()) fail(where, "transformer", "expected an object");
  for (const auto& [key, value] : c.items())
    if (!kFields.count(key)) fail(where, key, "unknown field");
  Config cfg;
  cfg.decoder = string_field(c, where, "architecture", "", {"encoder", "decoder"}) == "decoder";
  if (!c.contains("architecture"))
    fail(where, "architecture", "missing (\"encoder\" or \"decoder\")");
  cfg.layers = int_field(c, where, "layers", 0, true);
  cfg.hidden = int_field(c, where, "hidden", 0, true);
  cfg.heads = int_field(c, where, "heads", 0, true);
  cfg.kv_heads = int_field(c, where, "kv_heads", cfg.heads);
  cfg.ffn = int_field(c, where, "ffn", 4 * cfg.hidden);
  cfg.image = int_field(c, where, "image", 0);
  cfg.patch = int_field(c, where, "patch", 0);
  cfg.channels = int_field(c, where, "channels", 3);
  cfg.classes = int_field(c, where, "classes", 0);
  const bool vision = cfg.image > 0;
  cfg.vocab = int_field(c, where, "vocab", 0, !vision);
  cfg.seq_len = vision ? 0 : int_field(c, where, "seq_len", 0, true);
  cfg.max_positions = int_field(c, where, "max_positions", cfg.seq_len);
  cfg.type_vocab = int_field(c, where, "type_vocab", 0);
  cfg.gated_mlp = bool_field(c, where, "gated_mlp", false);
  cfg.bias = bool_field(c, where, "bias", true);
  cfg.tied_embeddings = bool_field(c, where, "tied_embeddings", false);
  cfg.fused_qkv = bool_field(c, where, "fused_qkv", false);
  cfg.pooler = bool_field(c, where, "pooler", false);
  cfg.lm_head = bool_field(c, where, "lm_head", cfg.decoder);
  cfg.embedding_norm = bool_field(c, where, "embedding_norm", false);
  cfg.pre_norm = string_field(c, where, "norm_position", "pre", {"pre", "post"}) == "pre";
  cfg.activation = string_field(c, where, "activation", "gelu", {"gelu", "gelu_tanh", "silu", "relu"});
  cfg.norm = string_field(c, where, "norm", "layernorm", {"layernorm", "rmsnorm"});
  cfg.position = string_field(c, where, "position", "learned", {"learned", "rope", "none"});
  for (const auto& [field, value] : {std::pair{"layers", cfg.layers}, std::pair{"hidden", cfg.hidden},
                                      std::pair{"heads", cfg.heads}})
    if (value == 0) fail(where, field, "must be positive");
  if (cfg.hidden % cfg.heads != 0)
    fail(where, "heads",
         fmt::format("hidden {} is not a multiple of heads {}", cfg.hidden, cfg.heads));
  if (cfg.ffn == 0) fail(where, "ffn", "must be positive");
  if (!vision && cfg.vocab == 0) fail(where, "vocab", "must be positive");
  if (!vision && cfg.seq_len == 0) fail(where, "seq_len", "must be positive");
  if (cfg.channels == 0) fail(where, "channels", "must be positive");
  if (cfg.kv_heads == 0 || cfg.heads % cfg.kv_heads != 0)
    fail(where, "kv_heads",
         fmt::format("heads {} is not a multiple of kv_heads {}", cfg.heads, cfg.kv_heads));
  if (vision && (cfg.patch == 0 || cfg.image % cfg.patch != 0))
    fail(where, "patch", "the image size must be a multiple of a positive patch size");
  if (vision && cfg.decoder) fail(where, "architecture", "a vision front end needs an encoder");
  if (cfg.position == "learned" && !vision && cfg.max_positions < cfg.seq_len)
    fail(where, "max_positions", "smaller than seq_len");
  return cfg;
}

// Builds one pass. `q_len` is the number of new tokens (S, or 1 when decoding); with a cache the
// attention also reads `ctx` cached positions (T).
Graph build(const Config& cfg, bool decode_step) {
  GraphBuilder b;
  const Dim N = Dim::symbol("N");
  const std::int64_t d = cfg.hidden / cfg.heads;
  const std::int64_t H = cfg.hidden;
  const std::int64_t patches =
      cfg.image > 0 ? (cfg.image / cfg.patch) * (cfg.image / cfg.patch) + 1 : 0;
  const Dim S = decode_step ? Dim(1) : (cfg.image > 0 ? Dim(patches) : Dim::symbol("S"));
  const Dim T = Dim::symbol("T");
  const std::string embed_weight = "embed.weight";

  TensorRef x;
  if (cfg.image > 0) {
    const auto& img = b.input("image", {N, cfg.channels, cfg.image, cfg.image});
    const auto& p =
        b.add(make_conv2d("patch_embed", img, H, {cfg.patch, cfg.patch, cfg.patch, 0, 1, 1}, true));
    const std::int64_t grid = cfg.image / cfg.patch;
    const auto& flat = b.add(make_reshape("patch_flat", p, {N, H, grid * grid}));
    const auto& tokens =
        b.add(make_reshape("patch_tokens", flat, {N, grid * grid, H}));  // a strided view
    const auto& cat = b.add(make_concat("cls_concat", {tokens}, 1, {{"cls_token", {1, 1, H}}}));
    x = b.add(make_elementwise("pos_add", "add", {cat}, {{"pos_embed", {1, patches, H}}}));
  } else {
    const auto& ids = b.input("ids", {N, S});
    x = b.add(make_embedding("embed", ids, cfg.vocab, H, embed_weight));
    if (cfg.position == "learned") {
      const auto& pos_ids = b.input("positions", {1, S});
      const auto& pos = b.add(make_embedding("pos_embed", pos_ids, cfg.max_positions, H));
      x = b.add(make_elementwise("pos_add", "add", {x, pos}));
    }
    if (cfg.type_vocab > 0) {
      const auto& type_ids = b.input("token_types", {N, S});
      const auto& types = b.add(make_embedding("type_embed", type_ids, cfg.type_vocab, H));
      x = b.add(make_elementwise("type_add", "add", {x, types}));
    }
    if (cfg.embedding_norm) x = b.add(make_norm("embed_norm", cfg.norm, x));
  }

  const Shape heads_shape{N, cfg.heads, S, d};
  const Shape kv_shape{N, cfg.kv_heads, S, d};
  for (std::int64_t l = 0; l < cfg.layers; ++l) {
    const std::string p = fmt::format("layers.{}.", l);
    const TensorRef residual = x;
    TensorRef h = cfg.pre_norm ? b.add(make_norm(p + "attn_norm", cfg.norm, x)) : x;
    TensorRef q, k, v;
    const std::int64_t kv_width = cfg.kv_heads * d;
    if (cfg.fused_qkv) {
      const auto& qkv = b.add(make_linear(p + "qkv", h, H + 2 * kv_width, cfg.bias));
      q = b.add(make_slice(p + "q", qkv, heads_shape));
      k = b.add(make_slice(p + "k", qkv, kv_shape));
      v = b.add(make_slice(p + "v", qkv, kv_shape));
    } else {
      q = b.add(
          make_reshape(p + "q", b.add(make_linear(p + "q_proj", h, H, cfg.bias)), heads_shape));
      k = b.add(
          make_reshape(p + "k", b.add(make_linear(p + "k_proj", h, kv_width, cfg.bias)), kv_shape));
      v = b.add(
          make_reshape(p + "v", b.add(make_linear(p + "v_proj", h, kv_width, cfg.bias)), kv_shape));
    }
    if (cfg.position == "rope") {
      q = b.add(make_elementwise(p + "q_rope", "rope", {q}));
      k = b.add(make_elementwise(p + "k_rope", "rope", {k}));
    }
    std::vector<TensorRef> cache;
    if (decode_step) {
      cache = {{p + "k_cache", {N, cfg.kv_heads, T, d}}, {p + "v_cache", {N, cfg.kv_heads, T, d}}};
    }
    const auto& att =
        b.add(make_attention(p + "attn", q, k, v, cfg.decoder && !decode_step, cache));
    const auto& att_t = b.add(make_transpose(p + "attn_t", att, {0, 2, 1, 3}));
    const auto& merged = b.add(make_reshape(p + "attn_merge", att_t, {N, S, H}));
    const auto& proj = b.add(make_linear(p + "o_proj", merged, H, cfg.bias));
    x = b.add(make_elementwise(p + "attn_add", "add", {residual, proj}));
    if (!cfg.pre_norm) x = b.add(make_norm(p + "attn_norm", cfg.norm, x));

    const TensorRef residual2 = x;
    h = cfg.pre_norm ? b.add(make_norm(p + "mlp_norm", cfg.norm, x)) : x;
    TensorRef m;
    if (cfg.gated_mlp) {
      const auto& gate = b.add(make_linear(p + "gate_proj", h, cfg.ffn, cfg.bias));
      const auto& up = b.add(make_linear(p + "up_proj", h, cfg.ffn, cfg.bias));
      const auto& act = b.add(make_elementwise(p + "act", cfg.activation, {gate}));
      m = b.add(make_elementwise(p + "gate_mul", "mul", {act, up}));
    } else {
      const auto& up = b.add(make_linear(p + "up_proj", h, cfg.ffn, cfg.bias));
      m = b.add(make_elementwise(p + "act", cfg.activation, {up}));
    }
    const auto& down = b.add(make_linear(p + "down_proj", m, H, cfg.bias));
    x = b.add(make_elementwise(p + "mlp_add", "add", {residual2, down}));
    if (!cfg.pre_norm) x = b.add(make_norm(p + "mlp_norm", cfg.norm, x));
  }
  if (cfg.pre_norm) x = b.add(make_norm("final_norm", cfg.norm, x));
  if (cfg.image > 0) {
    const auto& cls = b.add(make_slice("cls", x, {N, H}));
    if (cfg.classes > 0) b.add(make_linear("head", cls, cfg.classes, true));
  } else if (cfg.pooler) {
    const auto& cls = b.add(make_slice("cls", x, {N, H}));
    const auto& pooled = b.add(make_linear("pooler", cls, H, true));
    b.add(make_elementwise("pooler_act", "tanh", {pooled}));
  }
  if (cfg.lm_head && cfg.image == 0) {
    b.add(make_linear("lm_head", x, cfg.vocab, false, cfg.tied_embeddings ? embed_weight : ""));
  }
  return b.take();
}

}  // namespace

void expand_transformer(const json& config, const std::string& where, Model& model) {
  const Config cfg = parse_config(config, where);
  model.kind = cfg.image > 0 ? "vision-transformer" : (cfg.decoder ? "decoder" : "encoder");
  try {
    model.forward = build(cfg, false);
    if (cfg.decoder) model.decode = build(cfg, true);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: transformer: {}", where, e.what()));
  }
  auto has = [&](const char* s) {
    for (const auto& [k, v] : model.defaults)
      if (k == s) return true;
    return false;
  };
  if (cfg.seq_len > 0 && !has("S")) model.defaults.emplace_back("S", cfg.seq_len);
}

}  // namespace truepeak::estimate
