"""Random ops, with TensorFlow's values: its Philox-4x32-10 counter-based generator and its ways
of turning the generator's 32-bit words into numbers of each distribution.

A Philox generator is a 64-bit key and a 128-bit counter; one call gives four uint32 words (a
"block") and adds 1 to the counter. TensorFlow fills an output in groups: group g of a
distribution is made from block g after the start (uniform, normal, integers), or, for the
truncated normal, whose rejection loop takes a varying number of words, from the blocks
starting 256 (float) or 128 (double) blocks per group after the start, so that groups can be
filled in parallel. Blocks are computed here for all groups at once with numpy (uint64 products
give the 32x32 -> 64-bit multiplications), not word by word.

- Stateless ops (`StatelessRandom*`, V1 and V2) start from a key and counter that depend only on
  their seed or key/counter inputs: the same inputs always give the same numbers.
- Stateful ops (`RandomUniform`, `RandomStandardNormal`, `TruncatedNormal`, `RandomUniformInt`,
  `Multinomial`) keep one generator per node of a loaded model, seeded from the node's `seed`
  and `seed2` attrs, and move it on by 256 blocks per output element on each run (TensorFlow's
  GuardedPhiloxRandom), so the node's Nth run gives TensorFlow's Nth values. When both seeds are
  0, TensorFlow seeds from the operating system; so do these kernels.
- `RngReadAndSkip` / `RngSkip` move on the Philox state that `tf.random.Generator` keeps in a
  variable.

Box-Muller (normal and truncated normal) takes logarithms, sines and cosines; TensorFlow calls
the C library's (single precision for float, half and bfloat16), whose last bits no numpy
function reproduces. `_c_math` computes them with numpy and asks the C library (ctypes) for
the elements where the two may differ, so the values are TensorFlow's bit for bit on the
same C library (glibc on Linux), and within a unit in the last place without one.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

import ml_dtypes
import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel

_MASK32 = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1
_ROUND_MULTIPLIERS = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_KEY_INCREMENTS = (0x9E3779B9, 0xBB67AE85)
_STATELESS_KEY = (0x3EC8F720, 0x02461E29)
"""The key that scrambles a stateless op's seed into its key and counter (TensorFlow's GenerateKey)."""
_SKIP_PER_OUTPUT = 256
"""Blocks a stateful op reserves per output value; also the words a truncated normal value may
take (TensorFlow's kReservedSamplesPerOutput), which spaces its groups."""
PHILOX, THREEFRY, AUTO_SELECT = 1, 2, 3
_FLOATS = {"float16", "bfloat16", "float32", "float64"}
_INTS = {"int32", "int64"}
_FULL_INTS = {"int32", "int64", "uint32", "uint64"}


class Philox:
    """A Philox-4x32-10 generator: key (two uint32) and 128-bit counter, as Python ints."""

    __slots__ = ("key", "counter")

    def __init__(self, key: tuple[int, int], counter: int):
        self.key = (key[0] & _MASK32, key[1] & _MASK32)
        self.counter = counter & ((1 << 128) - 1)

    @classmethod
    def from_seeds(cls, seed: int, seed2: int) -> Philox:
        """TensorFlow's PhiloxRandom(seed, seed2): the first seed is the key, the second the
        counter's upper half."""
        seed, seed2 = seed & _MASK64, seed2 & _MASK64
        return cls((seed, seed >> 32), seed2 << 64)

    def copy(self) -> Philox:
        return Philox(self.key, self.counter)

    def skip(self, count: int) -> None:
        """Move the counter on by `count` blocks, as TensorFlow's PhiloxRandom::Skip does: a
        128-bit addition of the 64-bit count, except that a carry out of the count's low word
        into a high word of 0xFFFFFFFF is lost (as in TensorFlow)."""
        count &= _MASK64
        words = [(self.counter >> (32 * i)) & _MASK32 for i in range(4)]
        low, high = count & _MASK32, count >> 32
        words[0] = (words[0] + low) & _MASK32
        if words[0] < low:
            high = (high + 1) & _MASK32
        words[1] = (words[1] + high) & _MASK32
        if words[1] < high:
            words[2] = (words[2] + 1) & _MASK32
            if words[2] == 0:
                words[3] = (words[3] + 1) & _MASK32
        self.counter = sum(w << (32 * i) for i, w in enumerate(words))

    def blocks(self, offsets: np.ndarray) -> np.ndarray:
        """The four words of the blocks at `offsets` (uint64, counted from the counter), without
        moving the generator: shape offsets.shape + (4,), uint32."""
        low = np.uint64(self.counter & _MASK64)
        counter_low = low + offsets.astype(np.uint64)
        counter_high = np.uint64(self.counter >> 64) + (counter_low < low).astype(np.uint64)
        c = [counter_low & np.uint64(_MASK32), counter_low >> np.uint64(32),
             counter_high & np.uint64(_MASK32), counter_high >> np.uint64(32)]
        k0, k1 = self.key
        shift, mask = np.uint64(32), np.uint64(_MASK32)
        for round_index in range(10):
            key0 = np.uint64((k0 + round_index * _KEY_INCREMENTS[0]) & _MASK32)
            key1 = np.uint64((k1 + round_index * _KEY_INCREMENTS[1]) & _MASK32)
            p0 = _ROUND_MULTIPLIERS[0] * c[0]
            p1 = _ROUND_MULTIPLIERS[1] * c[2]
            c = [(p1 >> shift) ^ c[1] ^ key0, p1 & mask, (p0 >> shift) ^ c[3] ^ key1, p0 & mask]
        return np.stack(c, axis=-1).astype(np.uint32)

    def words(self, count: int) -> np.ndarray:
        """The first `count` words from the counter on (whole blocks, in order), flat."""
        blocks = -(-count // 4)
        return self.blocks(np.arange(blocks, dtype=np.uint64)).reshape(-1)[:count]


# ---------------------------------------------------------------------- words to numbers

def _unit_float32(words: np.ndarray) -> np.ndarray:
    """[0, 1) from the low 23 bits (TensorFlow's Uint32ToFloat)."""
    return ((words & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)).view(np.float32) - np.float32(1)


def _unit_float64(high: np.ndarray, low: np.ndarray) -> np.ndarray:
    """[0, 1) from 20 bits of one word and all of the next (TensorFlow's Uint64ToDouble)."""
    mantissa = ((high & np.uint32(0xFFFFF)).astype(np.uint64) << np.uint64(32)) | low.astype(np.uint64)
    return (mantissa | np.uint64(1023 << 52)).view(np.float64) - 1.0


def _unit_narrow(words: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """[0, 1) in half (10 low bits) or bfloat16 (7 low bits)."""
    if dtype == np.float16:
        bits = (words & np.uint32(0x3FF)) | np.uint32(15 << 10)
    else:
        bits = (words & np.uint32(0x7F)) | np.uint32(127 << 7)
    return bits.astype(np.uint16).view(dtype) - dtype.type(1)


def _box_muller_float(x0: np.ndarray, x1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two standard normal float32 arrays from two word arrays (TensorFlow's BoxMullerFloat)."""
    u1 = np.maximum(_unit_float32(x0), np.float32(1e-7))
    v1 = (2 * np.pi * _unit_float32(x1).astype(np.float64)).astype(np.float32)
    u2 = np.sqrt(np.float32(-2) * _c_math("logf", u1))
    return _c_math("sinf", v1) * u2, _c_math("cosf", v1) * u2


def _box_muller_double(x: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Two standard normal float64 arrays from four word arrays (TensorFlow's BoxMullerDouble)."""
    u1 = np.maximum(_unit_float64(x[0], x[1]), 1e-7)
    v1 = 2 * np.pi * _unit_float64(x[2], x[3])
    u2 = np.sqrt(-2.0 * _c_math("log", u1))
    return _c_math("sin", v1) * u2, _c_math("cos", v1) * u2


_PRECISE = {"logf": np.log, "sinf": np.sin, "cosf": np.cos, "log": np.log, "sin": np.sin, "cos": np.cos}
_TIE_DISTANCE = {"logf": 0.4, "sinf": 0.4, "cosf": 0.4, "log": 0.45, "sin": 0.45, "cos": 0.45}
"""How far from the rounded value (in units in the last place) the C library's result may start
to differ from the correctly rounded one (measured on glibc: it differs only near halfway
between two numbers, by at most a unit), except that glibc's logf errs by up to 0.8 units just
below 1, so logf of every value from 0.85 on is the C library's."""


def _c_math(name: str, x: np.ndarray) -> np.ndarray:
    """The C library function `name` of every element, as TensorFlow computes Box-Muller.

    numpy has no function that rounds as the C library does; the correctly rounded value
    (computed in a wider type) is the C library's except near a rounding tie, so only
    elements that near a tie are passed to the C library one by one (all of them for logf).
    Without a loadable C math library, the correctly rounded values are returned."""
    wide = np.float64 if x.dtype == np.float32 else np.longdouble
    precise = _PRECISE[name](x.astype(wide))
    rounded = precise.astype(x.dtype)
    function = _c_library_function(name)
    if function is None or x.size == 0:
        return rounded
    spacing = np.abs(np.spacing(rounded)).astype(wide)
    with np.errstate(all="ignore"):
        near_tie = ~(np.abs(precise - rounded.astype(wide)) <= _TIE_DISTANCE[name] * spacing)
    if name == "logf":
        near_tie |= x >= np.float32(0.85)
    chosen = x[near_tie]
    rounded[near_tie] = np.fromiter(map(function, chosen.tolist()), x.dtype, count=chosen.size)
    return rounded


@functools.lru_cache(maxsize=None)
def _c_library_function(name: str):
    """`name` from the C math library (through ctypes), or None where there is none."""
    library = _c_math_library()
    function = getattr(library, name, None) if library is not None else None
    if function is not None:
        c_type = ctypes.c_float if name.endswith("f") else ctypes.c_double
        function.restype, function.argtypes = c_type, [c_type]
    return function


@functools.lru_cache(maxsize=1)
def _c_math_library():
    try:
        return ctypes.CDLL("libm.so.6")
    except OSError:
        found = ctypes.util.find_library("m")
    try:
        return ctypes.CDLL(found) if found else None
    except OSError:
        return None


def _interleave(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """first[0], second[0], first[1], ... along a new last axis, flattened into it."""
    return np.stack([first, second], axis=-1).reshape(first.shape[:-1] + (-1,))


def _uniform(gen: Philox, size: int, dtype: np.dtype) -> np.ndarray:
    if dtype == np.float64:
        words = gen.words(-(-size // 2) * 4)
        return _unit_float64(words[0::2], words[1::2])[:size]
    words = gen.words(size)
    return _unit_float32(words) if dtype == np.float32 else _unit_narrow(words, dtype)


def _normal(gen: Philox, size: int, dtype: np.dtype) -> np.ndarray:
    if dtype == np.float64:
        blocks = gen.blocks(np.arange(-(-size // 2), dtype=np.uint64))
        d0, d1 = _box_muller_double([blocks[:, i] for i in range(4)])
        return _interleave(d0[:, None], d1[:, None]).reshape(-1)[:size]
    words = gen.words(-(-size // 4) * 4)
    f0, f1 = _box_muller_float(words[0::2], words[1::2])
    return _interleave(f0[:, None], f1[:, None]).reshape(-1)[:size].astype(dtype)


def _truncated_normal(gen: Philox, size: int, dtype: np.dtype) -> np.ndarray:
    """Standard normal values with |x| < 2, by rejection: group g (4 values, 2 for double)
    starts 256 words per value after the start and draws Box-Muller pairs until it has
    its values. Every group tries a few blocks first; the rare group that needs more tries
    again with more."""
    per_group = 2 if dtype == np.float64 else 4
    groups = -(-size // per_group)
    stride = per_group * _SKIP_PER_OUTPUT // 4
    out = np.empty((groups, per_group), np.float64 if dtype == np.float64 else np.float32)
    pending = np.arange(groups, dtype=np.uint64)
    tries = 2
    while pending.size:
        offsets = pending[:, None] * np.uint64(stride) + np.arange(tries, dtype=np.uint64)
        candidates = _truncated_candidates(gen.blocks(offsets), dtype)
        accepted = np.abs(candidates) < 2
        rank = np.cumsum(accepted, axis=1) - 1
        done = rank[:, -1] >= per_group - 1
        rows, cols = np.nonzero(accepted & (rank < per_group) & done[:, None])
        out[pending[rows].astype(np.intp), rank[rows, cols]] = candidates[rows, cols]
        pending = pending[~done]
        tries *= 4
    return out.reshape(-1)[:size].astype(dtype)


def _truncated_candidates(blocks: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The normal values the rejection loop tries, in its order: per block, one pair from four
    words (double) or two pairs from two words each."""
    if dtype == np.float64:
        d0, d1 = _box_muller_double([blocks[..., i] for i in range(4)])
        return _interleave(d0, d1)
    f0, f1 = _box_muller_float(blocks[..., 0::2], blocks[..., 1::2])
    return _interleave(f0.reshape(f0.shape[0], -1), f1.reshape(f1.shape[0], -1))


def _uniform_int(gen: Philox, size: int, dtype: np.dtype, low: int, high: int) -> np.ndarray:
    """low + (bits mod (high - low)), bits of 32 or 64 bits: no rejection, as in TensorFlow."""
    if dtype.itemsize == 4:
        span = np.uint32((high - low) & _MASK32)
        return (np.uint32(low & _MASK32) + gen.words(size) % span).view(dtype)
    bits = _words64(gen, size)
    return (np.uint64(low & _MASK64) + bits % np.uint64((high - low) & _MASK64)).view(dtype)


def _words64(gen: Philox, size: int) -> np.ndarray:
    words = gen.words(2 * size).astype(np.uint64)
    return words[0::2] | (words[1::2] << np.uint64(32))


def _full_int(gen: Philox, size: int, dtype: np.dtype) -> np.ndarray:
    if dtype.itemsize == 4:
        return gen.words(size).view(dtype)
    return _words64(gen, size).view(dtype)


def _multinomial(gen: Philox, logits: np.ndarray, num_samples: int, out_dtype: np.dtype) -> np.ndarray:
    """Samples per row: a uniform double (two words, in order through all rows) times the
    row's total, located in the running sum of exp(logit - max) over finite logits.

    TensorFlow splits the rows among threads when there is much work (batch * (samples *
    log2(classes) + classes) * 50 >= 20000 cycles by its estimate), each thread's rows
    starting at its own offset; its values then depend on its thread count. These are the
    values of one thread, TensorFlow's for every smaller input."""
    batch, classes = logits.shape
    if batch * num_samples == 0:
        return np.zeros((batch, num_samples), out_dtype)
    words = gen.words(2 * batch * num_samples)
    uniforms = _unit_float64(words[0::2], words[1::2]).reshape(batch, num_samples)
    finite = np.isfinite(logits)
    lowest = ml_dtypes.finfo(logits.dtype).min
    peak = np.where(finite, logits, lowest).max(axis=1, initial=lowest).astype(np.float64)
    with np.errstate(all="ignore"):
        weights = np.exp(logits.astype(np.float64) - peak[:, None])
    cdf = np.cumsum(np.where(finite, weights, 0.0), axis=1)
    out = np.empty((batch, num_samples), out_dtype)
    for row in range(batch):
        out[row] = np.searchsorted(cdf[row], uniforms[row] * cdf[row, -1], side="right")
    return out


# ---------------------------------------------------------------------- inputs

def _shape(shape, op: str) -> tuple[int, ...]:
    shape = np.asarray(shape)
    check(shape.ndim <= 1 and shape.dtype.kind in "iu",
          f"{op}: shape must be a vector of int32 or int64, got shape {shape.shape} of {shape.dtype}")
    dims = tuple(int(d) for d in shape.reshape(-1))
    check(all(d >= 0 for d in dims), f"{op}: dimensions of shape must be non-negative, got {list(dims)}")
    return dims


def _seeded(seed, op: str) -> Philox:
    """The generator of a stateless V1 op's seed (TensorFlow's GenerateKey): the seed, as the
    counter, is scrambled by one Philox call into the key and counter used."""
    seed = np.asarray(seed)
    check(seed.shape == (2,), f"{op}: seed must have shape [2], not {list(seed.shape)}")
    check(seed.dtype in (np.int32, np.int64), f"{op}: Invalid seed type: {seed.dtype}")
    first, second = (int(s) & _MASK64 for s in seed)
    mix = Philox(_STATELESS_KEY, first | (second << 64)).blocks(np.zeros(1, np.uint64))[0]
    return Philox((int(mix[0]), int(mix[1])), (int(mix[2]) << 64) | (int(mix[3]) << 96))


def _key_counter(key, counter, alg, op: str) -> Philox:
    """The generator of a V2 op's key, counter and algorithm inputs. Philox (and "auto
    select", which is Philox on the CPU) is the only algorithm TensorFlow's CPU kernels have."""
    alg = np.asarray(alg)
    check(alg.shape == () and alg.dtype == np.int32,
          f"{op}: input 3 (0-based) must be an int32 scalar, got shape {list(alg.shape)} of {alg.dtype}")
    algorithm = PHILOX if int(alg) == AUTO_SELECT else int(alg)
    key, counter = np.asarray(key), np.asarray(counter)
    check(key.shape == (1,), f"{op}: key must have shape [1], not {list(key.shape)}. "
          "(Note that batched keys are not supported yet.)")
    check(counter.ndim == 1 and counter.shape[0] >= 2,
          f"{op}: counter must be a vector with length at least 2; got shape: {list(counter.shape)}. "
          "(Note that batched counters are not supported yet.)")
    check(algorithm == PHILOX, f"{op}: Unsupported algorithm id: {algorithm}")
    key_bits = int(key.view(np.uint64)[0])
    low, high = (int(c) for c in counter.view(np.uint64)[:2])
    return Philox((key_bits, key_bits >> 32), low | (high << 64))


def _dtype(dtype, allowed: set[str], op: str) -> np.dtype:
    check(dtype.name in allowed, f"{op}: dtype {dtype.name} is not supported; "
          f"TensorFlow's CPU kernels take {', '.join(sorted(allowed))}")
    return np.dtype(dtype.numpy)


def _bounds(minval, maxval, op: str) -> tuple[int, int]:
    minval, maxval = np.asarray(minval), np.asarray(maxval)
    check(minval.ndim == 0, f"{op}: minval must be 0-D, got shape {list(minval.shape)}")
    check(maxval.ndim == 0, f"{op}: maxval must be 0-D, got shape {list(maxval.shape)}")
    low, high = int(minval), int(maxval)
    check(low < high, f"{op}: Need minval < maxval, got {low} >= {high}")
    return low, high


def _fill(shape: tuple[int, ...], dtype: np.dtype, make) -> tuple[np.ndarray]:
    size = int(np.prod(shape, dtype=np.int64))
    if size == 0:
        return (np.zeros(shape, dtype),)
    return (make(size).reshape(shape),)


# ---------------------------------------------------------------------- stateless ops

def _stateless(op: str, distribution, allowed: set[str]):
    def v1(shape, seed, *, dtype, **_):
        dims, numpy_type = _shape(shape, op), _dtype(dtype, allowed, op)
        gen = _seeded(seed, op)
        return _fill(dims, numpy_type, lambda size: distribution(gen, size, numpy_type))

    def v2(shape, key, counter, alg, *, dtype, **_):
        name = op + "V2"
        gen = _key_counter(key, counter, alg, name)
        dims, numpy_type = _shape(shape, name), _dtype(dtype, allowed, name)
        return _fill(dims, numpy_type, lambda size: distribution(gen, size, numpy_type))

    return v1, v2


_UNIFORM = _stateless("StatelessRandomUniform", _uniform, _FLOATS)
_NORMAL = _stateless("StatelessRandomNormal", _normal, _FLOATS)
_TRUNCATED = _stateless("StatelessTruncatedNormal", _truncated_normal, _FLOATS)
_FULL_INT = _stateless("StatelessRandomUniformFullInt", _full_int, _FULL_INTS)
kernel("StatelessRandomUniform")(_UNIFORM[0])
kernel("StatelessRandomUniformV2")(_UNIFORM[1])
kernel("StatelessRandomNormal")(_NORMAL[0])
kernel("StatelessRandomNormalV2")(_NORMAL[1])
kernel("StatelessTruncatedNormal")(_TRUNCATED[0])
kernel("StatelessTruncatedNormalV2")(_TRUNCATED[1])
kernel("StatelessRandomUniformFullInt")(_FULL_INT[0])
kernel("StatelessRandomUniformFullIntV2")(_FULL_INT[1])


@kernel("StatelessRandomUniformInt")
def stateless_random_uniform_int(shape, seed, minval, maxval, *, dtype, **_):
    op = "StatelessRandomUniformInt"
    dims, numpy_type = _shape(shape, op), _dtype(dtype, _INTS, op)
    gen = _seeded(seed, op)
    if 0 in dims:
        return (np.zeros(dims, numpy_type),)
    low, high = _bounds(minval, maxval, op)
    return _fill(dims, numpy_type, lambda size: _uniform_int(gen, size, numpy_type, low, high))


@kernel("StatelessRandomUniformIntV2")
def stateless_random_uniform_int_v2(shape, key, counter, alg, minval, maxval, *, dtype, **_):
    op = "StatelessRandomUniformIntV2"
    gen = _key_counter(key, counter, alg, op)
    dims, numpy_type = _shape(shape, op), _dtype(dtype, _INTS, op)
    if 0 in dims:
        return (np.zeros(dims, numpy_type),)
    low, high = _bounds(minval, maxval, op)
    return _fill(dims, numpy_type, lambda size: _uniform_int(gen, size, numpy_type, low, high))


@kernel("StatelessMultinomial")
def stateless_multinomial(logits, num_samples, seed, *, output_dtype, **_):
    op = "StatelessMultinomial"
    gen = _seeded(seed, op)
    samples = _multinomial_samples(logits, num_samples, op)
    return (_multinomial(gen, logits, samples, np.dtype(output_dtype.numpy)),)


def _multinomial_samples(logits: np.ndarray, num_samples, op: str) -> int:
    """The number of samples per row, once the inputs are checked as TensorFlow checks them."""
    num_samples = np.asarray(num_samples)
    check(logits.ndim == 2, f"{op}: logits should be a matrix, got shape {list(logits.shape)}")
    check(num_samples.ndim == 0, f"{op}: num_samples should be a scalar, got shape {list(num_samples.shape)}")
    samples = int(num_samples)
    check(samples >= 0, f"{op}: num_samples should be non-negative, got {samples}")
    check(logits.shape[1] > 0, f"{op}: num_classes should be positive, got {logits.shape[1]}")
    return samples


@kernel("StatelessRandomGetKeyCounter")
def stateless_random_get_key_counter(seed, **_):
    gen = _seeded(seed, "StatelessRandomGetKeyCounter")
    return _key_counter_outputs(gen)


@kernel("StatelessRandomGetKeyCounterAlg")
def stateless_random_get_key_counter_alg(seed, **_):
    gen = _seeded(seed, "StatelessRandomGetKeyCounterAlg")
    return _key_counter_outputs(gen) + (np.array(PHILOX, np.int32),)


@kernel("StatelessRandomGetAlg")
def stateless_random_get_alg(**_):
    """The algorithm the CPU kernels use: Philox."""
    return (np.array(PHILOX, np.int32),)


def _key_counter_outputs(gen: Philox) -> tuple[np.ndarray, np.ndarray]:
    key = np.array([gen.key[0] | (gen.key[1] << 32)], np.uint64)
    counter = np.array([gen.counter & _MASK64, gen.counter >> 64], np.uint64)
    return key, counter


# ---------------------------------------------------------------------- stateful ops

def _generator(ctx, op: str, node_name: str, node_function: str, seed: int, seed2: int,
               dtype: str) -> Philox:
    """The node's generator, made on its first run: one per node of a loaded model (its
    resources), as TensorFlow keeps one per kernel; run eagerly, one per op and attrs."""
    states = _states(ctx)
    key = (node_function, node_name, op, seed, seed2, dtype)
    found = states.get(key)
    if found is None:
        if seed == 0 and seed2 == 0:
            seed, seed2 = (int.from_bytes(os.urandom(8), "little") for _ in range(2))
        found = states[key] = Philox.from_seeds(seed, seed2)
    return found


_EAGER_STATES: dict = {}
"""Generators of stateful ops run eagerly (no loaded model): TensorFlow's eager kernel cache
keeps one kernel, hence one generator, per op and attrs, for the life of the process."""


def _states(ctx) -> dict:
    resources = getattr(ctx, "resources", None)
    return _EAGER_STATES if resources is None else resources.random_generators


def _reserve(gen: Philox, outputs: int) -> Philox:
    """A copy of the generator to fill `outputs` values from, and the generator moved on by
    256 blocks per value (TensorFlow's ReserveRandomOutputs)."""
    start = gen.copy()
    gen.skip(outputs * _SKIP_PER_OUTPUT)
    return start


def _stateful(op: str, distribution, allowed: set[str]):
    def run(ctx, shape, *, dtype, seed=0, seed2=0, node_name="", node_function="", **_):
        dims, numpy_type = _shape(shape, op), _dtype(dtype, allowed, op)
        gen = _generator(ctx, op, node_name, node_function or "", seed, seed2, dtype.name)
        size = int(np.prod(dims, dtype=np.int64))
        start = _reserve(gen, size)
        return _fill(dims, numpy_type, lambda count: distribution(start, count, numpy_type))

    run.__name__ = op
    return run


for _op, _distribution in (("RandomUniform", _uniform), ("RandomStandardNormal", _normal),
                           ("TruncatedNormal", _truncated_normal)):
    kernel(_op, context=True, stateful=True, named=True)(_stateful(_op, _distribution, _FLOATS))


@kernel("RandomUniformInt", context=True, stateful=True, named=True)
def random_uniform_int(ctx, shape, minval, maxval, *, Tout, seed=0, seed2=0, node_name="",
                       node_function="", **_):
    op = "RandomUniformInt"
    dims, numpy_type = _shape(shape, op), _dtype(Tout, _INTS, op)
    gen = _generator(ctx, op, node_name, node_function or "", seed, seed2, Tout.name)
    size = int(np.prod(dims, dtype=np.int64))
    if size == 0:
        return (np.zeros(dims, numpy_type),)
    low, high = _bounds(minval, maxval, op)
    start = _reserve(gen, size)
    return (_uniform_int(start, size, numpy_type, low, high).reshape(dims),)


@kernel("Multinomial", context=True, stateful=True, named=True)
def multinomial(ctx, logits, num_samples, *, output_dtype, seed=0, seed2=0, node_name="",
                node_function="", **_):
    """TensorFlow reserves 256 blocks per value of 2 * batch * samples rounded up to 4."""
    samples = _multinomial_samples(logits, num_samples, "Multinomial")
    gen = _generator(ctx, "Multinomial", node_name, node_function or "", seed, seed2, output_dtype.name)
    batch = logits.shape[0]
    start = _reserve(gen, batch * -(-samples // 4) * 4 * 2) if batch * samples else gen.copy()
    return (_multinomial(start, logits, samples, np.dtype(output_dtype.numpy)),)


@kernel("RandomShuffle", context=True, stateful=True, named=True)
def random_shuffle(ctx, value, *, seed=0, seed2=0, node_name="", node_function="", **_):
    """The rows (first dimension) in an order from a Fisher-Yates shuffle whose step i swaps
    row i with row i + (word i mod (rows - i)), reserving a word per step, as TensorFlow."""
    value = np.asarray(value)
    gen = _generator(ctx, "RandomShuffle", node_name, node_function or "", seed, seed2, value.dtype.str)
    if value.size <= 1 or value.shape[0] <= 1:
        return (value,)
    rows = value.shape[0]
    start = gen.copy()
    gen.skip(-(-(rows - 1) // 4))
    steps = np.arange(rows - 1, dtype=np.uint64)
    targets = (steps + start.words(rows - 1).astype(np.uint64) % (np.uint64(rows) - steps)).tolist()
    order = list(range(rows))
    for i, j in enumerate(targets):
        order[i], order[j] = order[j], order[i]
    return (value[np.array(order)],)


# ---------------------------------------------------------------------- tf.random.Generator state

@kernel("RngReadAndSkip", stateful=True)
def rng_read_and_skip(resource, alg, delta, **_):
    """The Philox state [counter low, counter high, key] of a `tf.random.Generator`, before
    moving its counter on by 256 blocks per `delta`."""
    state, gen = _state_generator(resource, alg, "RngReadAndSkip")
    _store_state(resource, state, gen, int(np.asarray(delta).astype(np.uint64)))
    return (state,)


@kernel("RngSkip", stateful=True)
def rng_skip(resource, algorithm, delta, **_):
    state, gen = _state_generator(resource, algorithm, "RngSkip")
    _store_state(resource, state, gen, int(np.asarray(delta).astype(np.int64)))
    return ()


def _stateful_v2(op: str, distribution, allowed: set[str]):
    """An op drawing from a `tf.random.Generator`'s state variable (the ops Generator methods
    used before they became RngReadAndSkip + stateless V2 ops)."""
    def run(resource, algorithm, shape, *, dtype, **_):
        dims, numpy_type = _shape(shape, op), _dtype(dtype, allowed, op)
        state, gen = _state_generator(resource, algorithm, op)
        size = int(np.prod(dims, dtype=np.int64))
        _store_state(resource, state, gen, size)
        return _fill(dims, numpy_type, lambda count: distribution(gen, count, numpy_type))

    run.__name__ = op
    return run


for _op, _distribution, _allowed in (("StatefulUniform", _uniform, _FLOATS),
                                     ("StatefulStandardNormalV2", _normal, _FLOATS),
                                     ("StatefulTruncatedNormal", _truncated_normal, _FLOATS),
                                     ("StatefulUniformFullInt", _full_int, _FULL_INTS)):
    kernel(_op, stateful=True)(_stateful_v2(_op, _distribution, _allowed))


@kernel("StatefulUniformInt", stateful=True)
def stateful_uniform_int(resource, algorithm, shape, minval, maxval, *, dtype, **_):
    op = "StatefulUniformInt"
    dims, numpy_type = _shape(shape, op), _dtype(dtype, _INTS, op)
    low, high = _bounds(minval, maxval, op)
    state, gen = _state_generator(resource, algorithm, op)
    size = int(np.prod(dims, dtype=np.int64))
    _store_state(resource, state, gen, size)
    return _fill(dims, numpy_type, lambda count: _uniform_int(gen, count, numpy_type, low, high))


def _state_generator(resource, alg, op: str) -> tuple[np.ndarray, Philox]:
    """A generator's state variable and the Philox generator it holds: counter in elements 0
    and 1, key in element 2 (int64 bit patterns)."""
    alg = np.asarray(alg)
    check(alg.ndim == 0, f"{op}: the algorithm must be a scalar, got shape {list(alg.shape)}")
    algorithm = int(alg)
    if algorithm == THREEFRY:
        raise KernelError(f"{op}: Non-XLA devices don't support the ThreeFry algorithm.")
    check(algorithm in (PHILOX, AUTO_SELECT), f"{op}: Unsupported algorithm id: {algorithm}")
    state = np.asarray(resource.read())
    check(state.dtype == np.int64, f"{op}: dtype of RNG state variable must be int64, not {state.dtype}")
    check(state.ndim == 1, f"{op}: RNG state must have one and only one dimension, not {state.ndim}")
    check(state.shape[0] >= 3, f"{op}: For the Philox algorithm, the size of state must be at least 3; "
          f"got {state.shape[0]}")
    words = [int(w) for w in state[:3].view(np.uint64)]
    return state, Philox((words[2], words[2] >> 32), words[0] | (words[1] << 64))


def _store_state(resource, state: np.ndarray, gen: Philox, outputs: int) -> None:
    """Write the state moved on by 256 blocks per output value (the generator is not moved)."""
    moved_gen = gen.copy()
    moved_gen.skip(outputs * _SKIP_PER_OUTPUT)
    moved = state.copy()
    moved[:2] = np.array([moved_gen.counter & _MASK64, moved_gen.counter >> 64], np.uint64).view(np.int64)
    resource.assign(moved)
