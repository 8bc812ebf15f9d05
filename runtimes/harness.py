"""The measurement rules every runtime probe shares: warm-up, the stopping rule, chains, slopes,
output checks, the time budget and progress. Standard library only at import time: the
frameworks are imported by the runtime modules that need them, so that this logic can be tested
(and a missing framework reported) without them."""
import math
import os
import statistics
import sys
import time

SEED = 0  # every random input is drawn from this seed, so that two runs time the same values


class FrameworkMissing(Exception):
    """The runtime's framework is not importable here, or too old (exit 3). The message is one
    line naming the command that installs it."""


class UsageError(Exception):
    """Bad arguments (exit 2); the message is one line."""


class CheckFailed(Exception):
    """A probe's output disagreed with its reference: its times cannot be trusted (exit 1)."""


# ---- the time budget -------------------------------------------------------------------------

# The fewest samples of a point; a --quick run's, and any run's once its total is spent.
MIN_SAMPLES, FEWEST_SAMPLES = 5, 3


class Budget:
    """How long each point may sample, for a full or a --quick calibration. A runtime's whole
    calibration has a target (`total_s`); once it is spent, points take the fewest samples
    only, so that a slow machine overruns the target by little rather than by a multiple."""

    def __init__(self, quick, total_s=None, clock=time.perf_counter, started=None):
        self.quick = quick
        self.clock = clock
        self.started = clock() if started is None else started
        self.total_s = total_s if total_s is not None else (3.0 if quick else 19.0)
        self.base_point_s = 0.012 if quick else 0.12
        self.cv_target = 0.05 if quick else 0.03
        self.warmup = 1 if quick else 2

    def elapsed_s(self):
        return self.clock() - self.started

    def overdue(self):
        return self.elapsed_s() > self.total_s

    @property
    def min_samples(self):
        return FEWEST_SAMPLES if self.quick or self.overdue() else MIN_SAMPLES

    def point_s(self, weight=1.0):
        """The sampling time of one point (`weight` times the base), 0 once the total is spent."""
        return 0.0 if self.overdue() else self.base_point_s * weight


# ---- timing ----------------------------------------------------------------------------------

class Timing:
    """One point's samples in seconds: the fastest (what rates derive from: interference only
    ever adds time), the median beside it, their coefficient of variation and count."""

    def __init__(self, samples):
        if not samples:
            raise ValueError("a timing needs at least one sample")
        self.samples = list(samples)
        self.time_s = min(self.samples)
        self.median_s = statistics.median(self.samples)
        self.cv = coefficient_of_variation(self.samples)

    @property
    def count(self):
        return len(self.samples)

    def fields(self):
        """The point-format fields: time_s, median_s, cv, samples."""
        return {"time_s": self.time_s, "median_s": self.median_s, "cv": self.cv, "samples": self.count}


class Samples(list):
    """A point's samples, with their mean and squared deviations kept as they come (Welford's
    method): the stopping rule asks for the coefficient of variation after every round, and a
    point that samples for long holds thousands. Samples join through append or extend (+=);
    other ways of changing a list are refused, since they would leave the statistics stale."""

    def __init__(self, samples=()):
        super().__init__()
        self.mean, self.squares = 0.0, 0.0
        self.extend(samples)

    def append(self, x):
        super().append(x)
        delta = x - self.mean
        self.mean += delta / len(self)
        self.squares += delta * (x - self.mean)

    def extend(self, samples):
        for x in list(samples):
            self.append(x)

    def __iadd__(self, samples):
        self.extend(samples)
        return self

    def __reduce__(self):
        return (Samples, (list(self),))

    def _refused(self, *args, **kwargs):
        raise TypeError("Samples only grow: append or extend")

    insert = pop = remove = clear = sort = reverse = __setitem__ = __delitem__ = __imul__ = _refused

    def cv(self):
        n = len(self)
        if n < 2 or not self.mean > 0:
            return 0.0
        return math.sqrt(max(self.squares, 0.0) / (n - 1)) / self.mean


def coefficient_of_variation(samples):
    """Standard deviation (of a sample) over mean; 0 for fewer than two samples. In floats: the
    stopping rule asks it after every round of every point, and statistics.stdev's exact
    arithmetic took seconds of a calibration."""
    if isinstance(samples, Samples):
        return samples.cv()
    n = len(samples)
    if n < 2:
        return 0.0
    mean = math.fsum(samples) / n
    if not mean > 0:
        return 0.0
    return math.sqrt(math.fsum((x - mean) ** 2 for x in samples) / (n - 1)) / mean


def stop_sampling(samples, elapsed_s, budget_s, min_samples, cv_target, max_samples=100000):
    """The stopping rule: at least `min_samples`, then until the coefficient of variation falls
    under `cv_target` or the point's time budget is spent (or `max_samples` are taken)."""
    if len(samples) < min_samples:
        return False
    if len(samples) >= max_samples or elapsed_s >= budget_s:
        return True
    return coefficient_of_variation(samples) < cv_target


def time_calls(calls, budget, weight=1.0, clock=time.perf_counter, before=None):
    """Times each callable of `calls` (key -> callable) as one group, interleaved: every round
    runs each key once, so that a busy spell slows all of them alike (the chain timer and the
    slope fitter take differences between keys). Each key is warmed up first and its first call
    never timed. The group stops when every key meets the stopping rule, the group's budget
    being the point budget times the number of keys. `before`, when given, runs untimed before
    every timed call. Returns key -> Timing."""
    for call in calls.values():
        for _ in range(max(1, budget.warmup)):
            call()
    budget_s = budget.point_s(weight) * len(calls)
    min_samples = budget.min_samples
    samples = {key: Samples() for key in calls}
    start = clock()
    while True:
        for key, call in calls.items():
            if before is not None:
                before()
            t0 = clock()
            call()
            samples[key].append(clock() - t0)
        elapsed = clock() - start
        if all(stop_sampling(s, elapsed, budget_s, min_samples, budget.cv_target) for s in samples.values()):
            break
    return {key: Timing(s) for key, s in samples.items()}


# Sweeps over a grid's points: each point is timed once a sweep, at its share of its budget.
SWEEPS = 3


class Sweeps:
    """Keys (key -> callable) timed in sweeps that the caller starts, at moments of its choosing
    (a sweep between other probes is seconds from the next), each sweep at 1/`sweeps` of the
    keys' budget (`weight` times the point's), the samples of each key pooled (Timing). Each key
    runs back to back with itself (its operands as warm as a point timed alone has them); with
    `together`, a sweep times the whole group interleaved instead (time_calls), for the keys of
    one fit. `time_group` replaces time_calls (a GPU's device timer)."""

    def __init__(self, calls, time_group=None, sweeps=SWEEPS, weight=1.0, together=False):
        self.calls = calls
        self.time_group = time_group or time_calls
        self.sweeps = max(1, sweeps)
        self.share = weight / self.sweeps
        self.together = together
        self.samples = {key: [] for key in calls}
        self.done = 0

    def sweep(self, budget):
        self.done += 1
        if self.together:
            for key, timing in self.time_group(self.calls, budget, self.share).items():
                self.samples[key] += timing.samples
            return
        for key, call in self.calls.items():
            self.samples[key] += self.time_group({0: call}, budget, self.share)[0].samples

    def finish(self, budget):
        """The sweeps not yet run, then key -> Timing."""
        while self.done < self.sweeps:
            self.sweep(budget)
        return self.timings()

    def timings(self):
        return {key: Timing(s) for key, s in self.samples.items()}


def time_in_sweeps(calls, budget, time_group=None, sweeps=SWEEPS, weight=1.0, together=False):
    """Times each callable of `calls` (key -> callable) SWEEPS times over the whole group, one
    sweep after another (Sweeps): a point's fastest time comes from the best of several moments a
    few seconds apart, so a spell in which a shared machine ran slow takes no point's rate with
    it. Returns key -> Timing."""
    return Sweeps(calls, time_group, sweeps, weight, together).finish(budget)


def time_call(call, budget, weight=1.0, clock=time.perf_counter, before=None):
    """One callable's Timing (time_calls with one key)."""
    return time_calls({0: call}, budget, weight, clock, before)[0]


# ---- fits ------------------------------------------------------------------------------------

def chain_cost(one_link_s, links_s, links, ops_per_link=1):
    """Fixed cost of one op from chains of tiny ops: (time of `links` links - time of 1 link) /
    ((links - 1) * ops_per_link); each time is the fastest of its samples. The chain's fixed
    cost (the call into the runtime, its inputs and output) drops out. Noise can leave the long
    chain no slower than the short one: that is 0, not a negative cost."""
    if links < 2 or ops_per_link <= 0:
        raise ValueError("a chain needs at least 2 links and 1 op a link")
    return max(0.0, (links_s - one_link_s) / ((links - 1) * ops_per_link))


def pair_kernel_s(pair_s, follower_s, op_s, call_s):
    """A convolution point's kernel time from its pair (the point, then its follower,
    grids.follower): the pair's time less the follower's alone and one op, so that the graph's
    call and the layout changes at its ends drop out. The follower does the point's FLOPs, so
    where that difference is under half of the pair's mean (the pair's time less a call and two
    ops, halved), noise slowed the follower's time: the pair's mean stands instead. Returns
    (seconds, method)."""
    mean = (pair_s - call_s - 2 * op_s) / 2
    if mean <= 0:
        return pair_s / 2, "pair mean"
    difference = pair_s - follower_s - op_s
    if difference < 0.5 * mean:
        return mean, "pair mean"
    return difference, "difference"


# The slope is trusted when the work added over the grid takes at least this fraction of the
# smallest point's time; below it the difference is mostly noise.
SLOPE_MIN_GROWTH = 0.25
# ... and when the fixed cost it implies is at most this fraction of the largest point's time.
SLOPE_MAX_FIXED = 0.5


def within_cache(points, cache_bytes):
    """[(work, time_s)] of the points [(work, time_s, bytes moved)] whose bytes fit in
    `cache_bytes`, where at least two do; else of all of them. An own kernel's rate is what it
    does with its data at hand: the estimator charges the traffic past the caches apart, at the
    memory's bandwidth, and a point past them (fresh pages of a large output included) would
    charge it twice."""
    if cache_bytes:
        inside = [(w, t) for w, t, b in points if b <= cache_bytes]
        if len(inside) >= 2:
            return inside
    return [(w, t) for w, t, _ in points]


def slope_rate(points):
    """Rate of a runtime's own kernel over a grid of sizes: `points` = [(work, time_s)], work in
    elements (or FLOPs). The least-squares slope of time over work gives the rate with the
    kernel's fixed cost (charged per op elsewhere) dropped out. Where noise makes the slope
    meaningless (not positive, or the grid's added work takes under SLOPE_MIN_GROWTH of the
    smallest point's time), the largest point's work over its time: a rate that still holds its
    fixed cost, so it can only be low. Returns (rate, method), method "slope" or "largest"."""
    pts = sorted((float(w), float(t)) for w, t in points)
    if not pts or any(w <= 0 or t <= 0 or not math.isfinite(w) or not math.isfinite(t) for w, t in pts):
        raise ValueError(f"slope_rate needs positive finite points, got {points}")
    largest_w, largest_t = pts[-1]
    fallback = (largest_w / largest_t, "largest")
    if len(pts) < 2 or pts[0][0] == largest_w:
        return fallback
    mean_w = statistics.fmean(w for w, _ in pts)
    mean_t = statistics.fmean(t for _, t in pts)
    var_w = sum((w - mean_w) ** 2 for w, _ in pts)
    slope = sum((w - mean_w) * (t - mean_t) for w, t in pts) / var_w
    if slope <= 0 or slope * (largest_w - pts[0][0]) < SLOPE_MIN_GROWTH * pts[0][1]:
        return fallback
    # The grid's largest point is sized for its kernel to outweigh a call's fixed cost; a slope
    # that leaves more than SLOPE_MAX_FIXED of its time to the fixed cost came from noise.
    if largest_t - slope * largest_w > SLOPE_MAX_FIXED * largest_t:
        return fallback
    return 1.0 / slope, "slope"


# Rounds of a cold-call measurement (each call of a round after an eviction of its own), and the
# layers of a cold-call ring (each a shape of its own).
COLD_CALL_ROUNDS, COLD_CALL_ROUNDS_QUICK = 6, 2
COLD_RING = 16
# What an eviction writes where the OS gives no last-level cache size.
EVICTION_FALLBACK_BYTES = 64 * 2 ** 20


def eviction_bytes(llc_bytes):
    """Bytes that replace the caches' lines: the last-level cache's size (as many bytes as a
    pass that outgrows the cache moves between two calls of one layer), EVICTION_FALLBACK_BYTES
    where the OS does not give it."""
    return llc_bytes or EVICTION_FALLBACK_BYTES


def time_cold_rings(rings, writes, rounds, clock=time.perf_counter):
    """{key: Timing} of rings of calls (key -> [callables returning once their work is done], a
    ring's layers, each of a shape of its own): round r calls layer r of every ring (modulo its
    length), each call right after the next of `writes` (callables, in turn, each writing memory
    no layer uses; its time is not counted). A layer so comes back to its call after its ring's
    other layers, the other rings' calls and their writes, as a model's layer does a pass later;
    rounds visit every ring once, so that a spell of the host slows a few samples of each."""
    samples = {key: [] for key in rings}
    written = 0
    for r in range(max(1, rounds)):
        for key, ring in rings.items():
            writes[written % len(writes)]()
            written += 1
            start = clock()
            ring[r % len(ring)]()
            samples[key].append(clock() - start)
    return {key: Timing(s) for key, s in samples.items()}


def kernel_time_s(measured_s, fixed_s, floor_fraction=0.5):
    """A measured call's kernel time: its time less the fixed cost the estimator charges per op
    (so that it is not counted twice), at least `floor_fraction` of the measured time, since a
    fixed cost measured on tiny calls can exceed what a large call pays beside its kernel."""
    return max(measured_s - max(fixed_s, 0.0), floor_fraction * measured_s)


# ---- inputs and checks -----------------------------------------------------------------------

def random_input(framework, shape, dtype=None, device=None, seed=SEED, positive=False):
    """A tensor of random values from a fixed seed, never zeros (zeros run faster on some
    hardware and hide wrong indexing), of mean 0 and variance 1, or with `positive` uniform in
    [0.5, 1.5) (cheaper to draw: the large buffers of the memory probes). `framework`: "torch"
    (dtype a torch dtype, device a torch device; standard-normal) or "numpy" (dtype a numpy
    dtype, float32 by default; uniform over [-sqrt(3), sqrt(3)): numpy draws normal values at a
    fifth of the rate of uniform ones, and the weights of a convolution grid took seconds)."""
    shape = tuple(int(d) for d in shape)
    if framework == "torch":
        import torch
        generator = torch.Generator().manual_seed(seed)
        if positive:
            x = torch.rand(shape, generator=generator).add_(0.5)
        else:
            x = torch.randn(shape, generator=generator)
            x.masked_fill_(x == 0, 1.0)
        return x.to(device=device or "cpu", dtype=dtype or torch.float32)
    if framework == "numpy":
        import numpy
        dtype = numpy.dtype(dtype or numpy.float32)
        rng = numpy.random.default_rng(seed)
        single = dtype in (numpy.float32, numpy.float64)  # drawn in the type itself: no conversion
        if positive:
            x = (rng.random(shape, dtype=dtype) if single else rng.random(shape).astype(dtype)) + dtype.type(0.5)
        else:
            u = rng.random(shape, dtype=dtype) if single else rng.random(shape).astype(dtype)
            x = (u - dtype.type(0.5)) * dtype.type(12 ** 0.5)
            x[x == 0] = 1
        return x
    raise ValueError(f"unknown framework '{framework}'")


def as_floats(value):
    """A tensor or array (torch, numpy) or nested sequence as a flat list of Python floats."""
    if hasattr(value, "detach"):  # torch
        return value.detach().to("cpu").float().flatten().tolist()
    if hasattr(value, "ravel"):  # numpy
        return [float(v) for v in value.ravel().tolist()]
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            out.extend(as_floats(v) if isinstance(v, (list, tuple)) or hasattr(v, "ravel") else [float(v)])
        return out
    return [float(value)]


def _first_mismatch(got, want, rtol, atol):
    """None when `got` and `want` hold as many elements, all finite and within
    atol + rtol * |want|; else (index or None, got's element, want's element, got's count,
    want's count) of the first element that fails. Two tensors (torch) or two real arrays
    (numpy) compare in float64 by the framework itself (a Python loop over a convolution's
    output took seconds); other values element by element as Python floats (as_floats)."""
    real_arrays = type(got).__module__ == "numpy" and type(want).__module__ == "numpy"
    if real_arrays:
        import numpy
        real_arrays = not (numpy.iscomplexobj(got) or numpy.iscomplexobj(want))
    if hasattr(got, "detach") and hasattr(want, "detach"):  # torch
        g, w = got.detach().to("cpu").double().flatten(), want.detach().to("cpu").double().flatten()
        if g.numel() != w.numel():
            return None, None, None, int(g.numel()), int(w.numel())
        bad = ~(g.isfinite() & w.isfinite()) | ((g - w).abs() > atol + rtol * w.abs())
        first = lambda: int(bad.nonzero()[0][0])  # noqa: E731
    elif real_arrays:
        g, w = numpy.asarray(got, dtype=numpy.float64).ravel(), numpy.asarray(want, dtype=numpy.float64).ravel()
        if g.size != w.size:
            return None, None, None, int(g.size), int(w.size)
        with numpy.errstate(invalid="ignore", over="ignore"):
            bad = ~(numpy.isfinite(g) & numpy.isfinite(w)) | (numpy.abs(g - w) > atol + rtol * numpy.abs(w))
        first = lambda: int(numpy.flatnonzero(bad)[0])  # noqa: E731
    else:
        g, w = as_floats(got), as_floats(want)
        if len(g) != len(w):
            return None, None, None, len(g), len(w)
        for i, (a, b) in enumerate(zip(g, w)):
            if not (math.isfinite(a) and math.isfinite(b)) or abs(a - b) > atol + rtol * abs(b):
                return i, a, b, len(g), len(w)
        return None
    if not bool(bad.any()):
        return None
    i = first()
    return i, float(g[i]), float(w[i]), len(g), len(w)


def check_close(name, got, want, rtol=1e-4, atol=1e-5):
    """Raises CheckFailed unless `got` matches the reference `want` elementwise within
    atol + rtol * |want|, with the same number of elements, and both are finite. Two tensors or
    two arrays compare in float64 (a float32 output against its float64 reference as it is);
    other values element by element as Python floats. A probe's times are trusted only after
    its output passed this once."""
    found = _first_mismatch(got, want, rtol, atol)
    if found is None:
        return
    i, a, b, count_g, count_w = found
    if count_g != count_w:
        raise CheckFailed(f"{name}: output has {count_g} elements, the reference {count_w}")
    if not (math.isfinite(a) and math.isfinite(b)):
        raise CheckFailed(f"{name}: element {i} is not finite (output {a}, reference {b})")
    raise CheckFailed(f"{name}: element {i} is {a}, the reference {b} (rtol {rtol}, atol {atol})")


# ---- the machine -----------------------------------------------------------------------------

def parse_cache_size(text):
    """Bytes of a sysfs cache size ("32768K", "32M", "1024")."""
    text = text.strip().upper()
    scale = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(text[-1:], 1)
    digits = text[:-1] if text[-1:] in "KMG" else text
    return int(digits) * scale


def last_level_cache_bytes(sys_cpu="/sys/devices/system/cpu"):
    """Bytes of the last-level cache, all its instances together (one per cluster of cores
    sharing it), read from the OS; None where the OS does not say. A working set of 4x this
    measures main memory."""
    instances = {}
    try:
        cpus = [d for d in os.listdir(sys_cpu) if d.startswith("cpu") and d[3:].isdigit()]
    except OSError:
        return None
    for cpu in cpus:
        cache_dir = os.path.join(sys_cpu, cpu, "cache")
        try:
            indexes = [d for d in os.listdir(cache_dir) if d.startswith("index")]
        except OSError:
            continue
        for index in indexes:
            path = os.path.join(cache_dir, index)
            try:
                with open(os.path.join(path, "level")) as f:
                    level = int(f.read())
                with open(os.path.join(path, "type")) as f:
                    kind = f.read().strip()
                with open(os.path.join(path, "size")) as f:
                    size = parse_cache_size(f.read())
                shared = ""
                if os.path.exists(os.path.join(path, "shared_cpu_list")):
                    with open(os.path.join(path, "shared_cpu_list")) as f:
                        shared = f.read().strip()
            except (OSError, ValueError):
                continue
            if kind == "Instruction":
                continue
            instances[(level, shared or cpu)] = size
    if not instances:
        return None
    top = max(level for level, _ in instances)
    return sum(size for (level, _), size in instances.items() if level == top)


def dram_working_set_bytes(llc_bytes, floor_bytes=256 * 1024 ** 2):
    """The working set of a main-memory point: 4x the last-level cache, or `floor_bytes` where
    the OS does not give the cache's size."""
    return 4 * llc_bytes if llc_bytes else floor_bytes


def cpu_count():
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def physical_core_count(sys_cpu="/sys/devices/system/cpu"):
    """Physical cores among those this process may run on (SMT siblings counted once), from
    the OS topology; the logical count where the OS does not say."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:
        return cpu_count()
    cores = set()
    for cpu in cpus:
        topology = os.path.join(sys_cpu, f"cpu{cpu}", "topology")
        try:
            with open(os.path.join(topology, "physical_package_id")) as f:
                package = f.read().strip()
            with open(os.path.join(topology, "core_id")) as f:
                core = f.read().strip()
        except OSError:
            return len(cpus)
        cores.add((package, core))
    return len(cores) or len(cpus)


# ---- the host's speed through a calibration ----------------------------------------------------

# The host probe's product, HOST_PROBE_SIDE^3 in f32: long enough that a thread's wake-up is
# small beside it (a 128^3 product after a pause took up to 20x its fastest), short enough to
# take under a millisecond in a tuned BLAS and a few in a reference one (Debian's torch 1.13).
HOST_PROBE_SIDE = 256
# The calls of one moment of the host probe, after a warm-up call: the fastest is its time.
HOST_PROBE_CALLS = 5
# The name of a host probe's points begins with this (show reads them by it).
HOST_PROBE_PREFIX = "host "


class HostProbe:
    """A short fixed kernel of the runtime's, timed at moments through its calibration, between
    its probes: how far the host's speed moved while the runtime was measured. On a shared host
    a runtime calibrated in a slow spell has every figure slow with it; the moments are kept
    among the record's raw points (points()), so that a reader of the profile knows how quiet
    the machine was, as the device suite's sentinel says for the library's points. `make`
    returns the call, made anew for each moment and dropped after it (a session whose thread
    pool must not outlive its moment), or `call` is the call itself."""

    def __init__(self, name, shape, call=None, make=None, clock=time.perf_counter, started=None):
        if (call is None) == (make is None):
            raise ValueError("a host probe takes a call or a maker of one")
        self.name, self.shape, self.clock = name, shape, clock
        self.make = make or (lambda: call)
        self.started = clock() if started is None else started
        self.moments = []  # (seconds into the calibration, Timing)

    def __call__(self):
        """One moment: a warm-up call, then the fastest of HOST_PROBE_CALLS."""
        call = self.make()
        call()
        samples = []
        for _ in range(HOST_PROBE_CALLS):
            start = self.clock()
            call()
            samples.append(self.clock() - start)
        del call
        self.moments.append((self.clock() - self.started, Timing(samples)))

    def points(self):
        """The moments in the probe-point format: name HOST_PROBE_PREFIX + name, the shape, the
        Timing's fields and at_s, the seconds into the calibration."""
        return [dict({"name": HOST_PROBE_PREFIX + self.name, "shape": self.shape}, **timing.fields(), at_s=at_s)
                for at_s, timing in self.moments]


def host_spread(points):
    """What a record's host-probe points (HostProbe.points) say, as show says it: "<name>
    <shape> at N moments, the slowest Ax the fastest, the median Bx"; "" without two of them.
    Points that are not a host probe's, or have no positive finite time, are passed over."""
    host = []
    for p in points:
        if not isinstance(p, dict) or not isinstance(p.get("name"), str) or not p["name"].startswith(HOST_PROBE_PREFIX):
            continue
        t = p.get("time_s")
        if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and t > 0:
            host.append((p, t))
    if len(host) < 2:
        return ""
    times = [t for _, t in host]
    first, fastest = host[0][0], min(times)
    shape = first.get("shape") if isinstance(first.get("shape"), str) else ""
    return (f"{first['name'][len(HOST_PROBE_PREFIX):]}{' ' + shape if shape else ''} at {len(host)} moments, the "
            f"slowest {max(times) / fastest:.2f}x the fastest, the median {statistics.median(times) / fastest:.2f}x")


# ---- progress --------------------------------------------------------------------------------

class Progress:
    """Progress lines on stderr, each with the runtime's name and the seconds since it began;
    stdout carries the record alone."""

    def __init__(self, runtime, started=None, stream=None):
        self.runtime = runtime
        self.started = time.perf_counter() if started is None else started
        self.stream = stream

    def __call__(self, message):
        stream = self.stream or sys.stderr
        print(f"[{self.runtime} {time.perf_counter() - self.started:6.1f}s] {message}", file=stream, flush=True)
