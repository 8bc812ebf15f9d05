"""The record a runtime probe prints (docs/runtimes.md, "The record"): its assembly, the checks
calibrate applies again before storing it, and its output. Standard library only."""
import json
import math
import re
import platform
import sys

# The record's fields in the order they are written.
FIELDS = ("runtime", "device", "framework", "versions", "python", "threads", "dtypes", "settings", "op_s",
          "kind_op_s", "own_kernels", "layout", "conv_layout", "linears_as_convolutions", "in_place",
          "fuse_activations", "memory", "gemm", "conv", "probes", "calibration_s")

# What a runtime's optional `fusion` field says: which chains run as one kernel.
FUSION_RULES = ("pointwise", "into_reductions", "into_products")

# What a runtime's optional `conv_dispatch` field holds: the implementation of small convolutions
# and the conditions, all of which a call meets to run there (torch_common.find_conv_dispatch).
CONV_DISPATCH_BOUNDS = ("max_batch", "max_window")
CONV_DISPATCH_FLAGS = ("strided", "grouped", "depthwise")
WINDOW_SIDES = ("larger", "smaller")
# Its optional per-call costs of the two paths (torch_common.dispatch_path_costs), in seconds.
CONV_DISPATCH_COSTS = ("op_s", "others_op_s")

DTYPES = ("f32", "f16", "bf16", "int8", "fp8")

# The allocator every runtime is measured with: the C library's, as a plain script has it.
DEFAULT_ALLOCATOR = "glibc default"


def probe_point(name, shape, timing=None, **fields):
    """One raw point behind a fitted figure: its name, its shape as text, and its Timing's fields
    where it was timed (time_s, median_s, cv, samples); `fields` adds what else it measured."""
    point = {"name": name, "shape": shape}
    if timing is not None:
        point.update(timing.fields())
    point.update(fields)
    return point


def build_record(runtime, device, framework, versions, threads, dtypes, settings, op_s, probes,
                 calibration_s, kind_op_s=(), own_kernels=(), layout=None, conv_layout="",
                 linears_as_convolutions=False, in_place=(), fuse_activations=False, memory_levels=(),
                 gemm=(), conv=(), fusion=None, conv_dispatch=None, conv_batchnorm_apart=None,
                 fused_activations=None, cold_op_s=None):
    """The record, its fields in docs/runtimes.md's order. `versions` gets the interpreter's
    version where it lacks one; `settings` the allocator (the C library's default: the probes
    never change it)."""
    versions = dict(versions)
    versions.setdefault("python", platform.python_version())
    settings = dict(settings)
    settings.setdefault("allocator", DEFAULT_ALLOCATOR)
    record = {
        "runtime": runtime,
        "device": device,
        "framework": framework,
        "versions": versions,
        "python": sys.executable,
        "threads": threads,
        "dtypes": list(dtypes),
        "settings": settings,
        "op_s": op_s,
        "kind_op_s": sorted(kind_op_s, key=lambda k: (k["kind"], k.get("dtype") or "")),
        "own_kernels": sorted(own_kernels, key=lambda k: (k["kind"], k["dtype"])),
        "layout": layout,
        "conv_layout": conv_layout,
        "linears_as_convolutions": bool(linears_as_convolutions),
        "in_place": sorted(in_place),
        "fuse_activations": bool(fuse_activations),
        "memory": {"levels": list(memory_levels)},
        "gemm": list(gemm),
        "conv": list(conv),
        "probes": list(probes),
        "calibration_s": calibration_s,
    }
    out = {key: record[key] for key in FIELDS}
    if fusion is not None:
        out["fusion"] = dict(fusion)
    if conv_dispatch is not None:
        out["conv_dispatch"] = dict(conv_dispatch)
    if conv_batchnorm_apart is not None:
        out["conv_batchnorm_apart"] = bool(conv_batchnorm_apart)
    if fused_activations:
        out["fused_activations"] = sorted(fused_activations)
    if cold_op_s is not None:
        out["cold_op_s"] = cold_op_s
    return out


def _numbers(value, path):
    """(path, number) for every number inside `value` (booleans are not numbers)."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield path, value
    elif isinstance(value, dict):
        for key, v in value.items():
            yield from _numbers(v, f"{path}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _numbers(v, f"{path}[{i}]")


def _may_be_zero(path):
    """op_s and kind_op_s may be 0 (noise can leave an op's cost unmeasurable), and so what a
    GEMM or convolution point had taken off for it; so may a coefficient of variation, a
    convolution's padding and what a probe point records beside its times."""
    return (path in ("op_s", "cold_op_s", "fusion.graph_s", "conv_dispatch.op_s", "conv_dispatch.others_op_s") or
            path.startswith("kind_op_s[") or path.endswith(".cv") or
            re.fullmatch(r"(gemm|conv)\[\d+\]\.fixed_s_taken_off", path) is not None or
            re.fullmatch(r"conv\[\d+\]\.pad", path) is not None or
            (path.startswith("probes[") and not path.endswith((".time_s", ".median_s"))))


def problems(record):
    """What is wrong with a record, one line each; empty when it passes."""
    out = []
    for key in FIELDS:
        if key not in record:
            out.append(f"missing field '{key}'")
    if out:
        return out
    for key in ("runtime", "device", "framework", "python", "conv_layout"):
        if not isinstance(record[key], str):
            out.append(f"{key}: not a string")
    for key in ("runtime", "device", "framework", "python"):
        if isinstance(record[key], str) and not record[key]:
            out.append(f"{key}: empty")
    if not isinstance(record["threads"], int) or isinstance(record["threads"], bool) or record["threads"] < 1:
        out.append("threads: not a positive integer")
    if not record["dtypes"] or any(d not in DTYPES for d in record["dtypes"]):
        out.append(f"dtypes: {record['dtypes']} (each one of {', '.join(DTYPES)})")
    for path, number in _numbers({k: v for k, v in record.items() if k != "threads"}, ""):
        path = path.lstrip(".")
        if not math.isfinite(number):
            out.append(f"{path}: {number} is not finite")
        elif number < 0 or (number == 0 and not _may_be_zero(path)):
            out.append(f"{path}: {number} is not positive")
    for i, entry in enumerate(record["kind_op_s"]):
        if not isinstance(entry.get("kind"), str) or "op_s" not in entry or "dtype" not in entry:
            out.append(f"kind_op_s[{i}]: needs kind, dtype (null for every dtype) and op_s")
        elif entry["dtype"] is not None and entry["dtype"] not in DTYPES:
            out.append(f"kind_op_s[{i}].dtype: {entry['dtype']}")
    for i, entry in enumerate(record["own_kernels"]):
        if not isinstance(entry.get("kind"), str) or entry.get("dtype") not in DTYPES or "elements_per_s" not in entry:
            out.append(f"own_kernels[{i}]: needs kind, dtype and elements_per_s")
    layout = record["layout"]
    if layout is not None:
        for key in ("blocked_ops", "to_plain_copies", "to_blocked_copies", "expand_broadcast", "group_reorder_widths"):
            if key not in layout:
                out.append(f"layout: missing '{key}'")
        if not isinstance(layout.get("broadcast_plain", False), bool):
            out.append(f"layout.broadcast_plain: {layout['broadcast_plain']!r} (true or false)")
        # The channel rule is optional (absent: every convolution runs blocked).
        for key, least in (("conv_channel_multiple", 1), ("conv_small_input_channels", 0)):
            value = layout.get(key, least)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                out.append(f"layout.{key}: {value!r} (an integer, at least {least})")
    # conv_batchnorm_apart is optional (absent: false); the others are required (checked above).
    for key in ("linears_as_convolutions", "fuse_activations", "conv_batchnorm_apart"):
        if not isinstance(record.get(key, False), bool):
            out.append(f"{key}: not true or false")
    fused = record.get("fused_activations", [])
    if not isinstance(fused, list) or not all(isinstance(a, str) and re.fullmatch(r"[a-z0-9_]+", a) for a in fused):
        out.append(f"fused_activations: {fused!r} (a list of activation names, e.g. relu)")
    fusion = record.get("fusion")
    if fusion is not None:
        if not isinstance(fusion, dict):
            out.append("fusion: not an object")
        else:
            for key in FUSION_RULES:
                if not isinstance(fusion.get(key), bool):
                    out.append(f"fusion.{key}: not true or false")
            if "graph_s" not in fusion:
                out.append("fusion: missing 'graph_s'")
    out += _conv_dispatch_problems(record.get("conv_dispatch"))
    for i, level in enumerate(record["memory"].get("levels", [])):
        if not isinstance(level.get("name"), str) or "Bps" not in level or "bytes" not in level:
            out.append(f"memory.levels[{i}]: needs name, bytes (null: unbounded) and Bps")
    for table, keys in (("gemm", ("dtype", "m", "n", "k", "batch")),
                        ("conv", ("dtype", "n", "c", "h", "w", "k", "r", "s", "stride", "pad", "dilation",
                                  "groups", "layout"))):
        for i, point in enumerate(record[table]):
            missing = [k for k in keys + ("time_s", "median_s", "flops_per_s", "cv", "samples", "impl")
                       if k not in point]
            if missing:
                out.append(f"{table}[{i}]: missing {', '.join(missing)}")
            elif not isinstance(point["impl"], str) or point["dtype"] not in DTYPES:
                out.append(f"{table}[{i}]: impl must be a string and dtype one of {', '.join(DTYPES)}")
            elif table == "conv" and (not isinstance(point["layout"], str) or not point["layout"]):
                out.append(f"{table}[{i}].layout: not a layout name")
    return out


def _conv_dispatch_problems(rule):
    if rule is None:
        return []
    if not isinstance(rule, dict):
        return ["conv_dispatch: not an object"]
    out = []
    if not isinstance(rule.get("impl"), str) or not rule.get("impl"):
        out.append("conv_dispatch.impl: not an implementation name")
    bound = rule.get("max_input_elements", "missing")
    if bound is not None and (not isinstance(bound, int) or isinstance(bound, bool) or bound < 1):
        out.append("conv_dispatch.max_input_elements: not a positive integer or null")
    for key in CONV_DISPATCH_BOUNDS:
        value = rule.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            out.append(f"conv_dispatch.{key}: not a positive integer")
    for key in CONV_DISPATCH_FLAGS:
        if not isinstance(rule.get(key), bool):
            out.append(f"conv_dispatch.{key}: not true or false")
    if rule.get("window_side") not in WINDOW_SIDES:
        out.append(f"conv_dispatch.window_side: not one of {', '.join(WINDOW_SIDES)}")
    for key in CONV_DISPATCH_COSTS:
        value = rule.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or
                                  not 0 <= value < 1):
            out.append(f"conv_dispatch.{key}: not a time of at least 0 s and under 1 s")
    return out


def write_record(record, stream=None):
    """The record as one JSON document on stdout (or `stream`)."""
    stream = stream or sys.stdout
    stream.write(json.dumps(record, indent=1, allow_nan=False) + "\n")
    stream.flush()
