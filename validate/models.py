"""The validation models in PyTorch: random weights, random inputs, nothing downloaded.

Imported only in the child processes that have torch (the export and the torch runtimes)."""
import functools
import importlib.util
import math
import os

from validate.errors import usage_error
from validate.sets import TRANSFORMERS, user_model_spec

SEQ, CONTEXT = 128, 128  # the transformers' prefill length and the decode step's cache length


class Built:
    """A model at one batch: the module, its inputs, their ONNX names, and what kind it is."""

    def __init__(self, module, inputs, input_names, kind, seq=None, context=None):
        self.module, self.inputs, self.input_names = module, inputs, input_names
        self.kind, self.seq, self.context = kind, seq, context


def transformer_classes():
    import torch
    from torch import nn
    # Plain nn.LayerNorm, as a user writes it: a runtime that computes it otherwise (in f32 under
    # a bf16 model) does so in its own prepare().
    LayerNorm = nn.LayerNorm

    class Block(nn.Module):
        """One transformer layer, written as BERT/GPT-2 implementations write it."""

        def __init__(self, d, heads, ff, causal, pre_norm, gelu):
            super().__init__()
            self.d, self.h, self.hd = d, heads, d // heads
            self.causal, self.pre_norm = causal, pre_norm
            self.ln1, self.ln2 = LayerNorm(d), LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)
            self.act = nn.GELU(approximate=gelu)
            if causal:
                self.register_buffer("mask", torch.full((1024, 1024), float("-inf")).triu(1), persistent=False)

        def attention(self, x, past):
            b, s, _ = x.shape
            q, k, v = self.qkv(x).split(self.d, dim=-1)
            q = q.view(b, s, self.h, self.hd).transpose(1, 2)
            k = k.view(b, s, self.h, self.hd).transpose(1, 2)
            v = v.view(b, s, self.h, self.hd).transpose(1, 2)
            if past is not None:
                k = torch.cat([past[0], k], dim=2)
                v = torch.cat([past[1], v], dim=2)
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd)
            if self.causal and s > 1:
                scores = scores + self.mask[:s, :s].to(scores.dtype)
            probs = torch.softmax(scores, dim=-1)
            out = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, self.d)
            return self.proj(out), (k, v)

        def forward(self, x, past=None):
            if self.pre_norm:
                a, kv = self.attention(self.ln1(x), past)
                x = x + a
                x = x + self.fc2(self.act(self.fc1(self.ln2(x))))
            else:
                a, kv = self.attention(x, past)
                x = self.ln1(x + a)
                x = self.ln2(x + self.fc2(self.act(self.fc1(x))))
            return x, kv

    class Encoder(nn.Module):
        """BERT-base-like: 12 post-norm layers, d 768, 12 heads, FFN 3072, vocab 30522."""

        def __init__(self, layers=12, d=768, heads=12, ff=3072, vocab=30522, positions=512):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(positions, d)
            self.ln = LayerNorm(d)
            self.blocks = nn.ModuleList([Block(d, heads, ff, False, False, "none") for _ in range(layers)])

        def forward(self, ids):
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = self.ln(self.wte(ids) + self.wpe(pos))
            for block in self.blocks:
                x, _ = block(x)
            return x

    class Decoder(nn.Module):
        """GPT-2-small-like: 12 pre-norm causal layers, d 768, 12 heads, FFN 3072, vocab 50257,
        LM head tied to the token embedding; logits for every position (as HF's prefill does)."""

        def __init__(self, layers=12, d=768, heads=12, ff=3072, vocab=50257, positions=1024):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(positions, d)
            self.blocks = nn.ModuleList([Block(d, heads, ff, True, True, "tanh") for _ in range(layers)])
            self.ln_f = LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)
            self.head.weight = self.wte.weight

        def forward(self, ids, *past):
            start = past[0].shape[2] if past else 0
            pos = torch.arange(start, start + ids.shape[1], device=ids.device)
            x = self.wte(ids) + self.wpe(pos)
            present = []
            for i, block in enumerate(self.blocks):
                x, kv = block(x, (past[2 * i], past[2 * i + 1]) if past else None)
                present.extend(kv)
            logits = self.head(self.ln_f(x))
            return (logits, *present) if past else logits

    return Encoder, Decoder


def torchvision_image_size(name):
    """The crop of torchvision model `name`'s default weights (their metadata: nothing is
    downloaded), 224 where it has none, or None when torchvision has no such classifier."""
    import torchvision
    if name not in torchvision.models.list_models(module=torchvision.models):
        return None
    try:
        crop = torchvision.models.get_model_weights(name).DEFAULT.transforms().crop_size
        return int(crop[0] if isinstance(crop, (list, tuple)) else crop)
    except (AttributeError, ValueError, TypeError):
        return 224


@functools.lru_cache(maxsize=None)
def user_model_function(name):
    """FUNCTION of FILE.py:FUNCTION, loaded once a process; one line and exit 2 where it cannot be."""
    path, function = user_model_spec(name)
    if not os.path.isfile(path):
        usage_error(f"--models {name}: no such file {path}")
    spec = importlib.util.spec_from_file_location(f"truepeak_user_model_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the user's file: whatever it raises is one line
        usage_error(f"--models {name}: {path} failed to load: {type(error).__name__}: {error}")
    make = getattr(module, function, None)
    if not callable(make):
        usage_error(f"--models {name}: {path} has no function '{function}'")
    return make


def user_model(name, batch):
    """FUNCTION(batch): a torch.nn.Module and its inputs (a tensor or a tuple), batch first."""
    import torch
    try:
        module, inputs = user_model_function(name)(batch)
    except SystemExit:
        raise
    except Exception as error:  # the user's code
        usage_error(f"--models {name}: calling it with batch {batch} failed: {type(error).__name__}: {error}")
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    if not isinstance(module, torch.nn.Module) or not inputs or \
            not all(isinstance(t, torch.Tensor) and t.dim() >= 1 and t.shape[0] == batch for t in inputs):
        usage_error(f"--models {name}: expected (torch.nn.Module, inputs) with every input a tensor whose "
                    f"first dimension is the batch ({batch})")
    return module.eval(), inputs


def known_model(name):
    """True for the transformers here, torchvision's classifiers and FILE.py:FUNCTION."""
    return bool(user_model_spec(name)) or name in TRANSFORMERS or torchvision_image_size(name) is not None


# Images the batch norms' statistics are taken from.
NORM_BATCH = 4


def normalize_batch_norms(module, inputs):
    """`module` (in eval mode) with each batch norm's running statistics those of its own input
    over NORM_BATCH random images (the shape of `inputs`, floating ones only), as training leaves
    them: every normalized activation then has about unit scale. Random weights with a fresh
    norm's statistics (mean 0, variance 1) let a deep network's activations shrink layer by
    layer (to 1e-13 by EfficientNet-B0's last blocks), and the cost of some kernels depends on
    the values: scalar exp returns at once for tiny arguments, a clipped activation's branches
    follow the signs. A module without batch norms is returned as it is."""
    import torch
    norms = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
             and m.track_running_stats]
    if not norms or not all(x.is_floating_point() for x in inputs):
        return module
    images = tuple(torch.randn(NORM_BATCH, *x.shape[1:], dtype=x.dtype) for x in inputs)
    momenta = [m.momentum for m in norms]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average: one pass sets the statistics
        m.train()
    with torch.no_grad():
        module(*images)
    for m, momentum in zip(norms, momenta):
        m.momentum = momentum
    return module.eval()


def build(name, batch, seq=SEQ, context=CONTEXT):
    """Model `name` at `batch`, seeded: every process that builds it gets the same weights and
    inputs. Transformers and models whose first input is integer are kind "transformer"."""
    import torch
    torch.manual_seed(0)
    if user_model_spec(name):
        module, inputs = user_model(name, batch)
        kind = "cnn" if inputs[0].is_floating_point() else "transformer"
        if kind == "cnn":
            module = normalize_batch_norms(module, inputs)
        names = ["input"] if len(inputs) == 1 else [f"input_{i}" for i in range(len(inputs))]
        return Built(module, inputs, names, kind)
    if name not in TRANSFORMERS:
        size = torchvision_image_size(name)
        if size is None:
            usage_error(f"--models: unknown model '{name}' (known: {', '.join(TRANSFORMERS)}, torchvision's "
                        "classification models such as resnet34 or densenet121, and FILE.py:FUNCTION)")
        import torchvision
        # eval(): dropout off, batch norms on their running statistics, no auxiliary classifiers.
        module = torchvision.models.get_model(name, weights=None).eval()
        inputs = (torch.randn(batch, 3, size, size),)
        return Built(normalize_batch_norms(module, inputs), inputs, ["input"], "cnn")
    encoder, decoder = transformer_classes()
    if name == "bert_base":
        return Built(encoder().eval(), (torch.randint(0, 30522, (batch, seq)),), ["input_ids"], "transformer",
                     seq=seq)
    if name == "gpt2_prefill":
        return Built(decoder().eval(), (torch.randint(0, 50257, (batch, seq)),), ["input_ids"], "transformer",
                     seq=seq)
    ids = torch.randint(0, 50257, (batch, 1))
    past = tuple(torch.randn(batch, 12, context, 64) for _ in range(24))
    names = ["input_ids"] + [f"past_{kv}_{i}" for i in range(12) for kv in ("k", "v")]
    return Built(decoder().eval(), (ids, *past), names, "transformer", context=context)
