//! Stateless random ops: the same seed (V1) or key, counter and algorithm (V2) always give the
//! same numbers. A V1 seed pair is scrambled by one Philox call into the key and counter used;
//! `StatelessRandomGetKeyCounter` exposes that pair, which Keras feeds to the V2 ops.

use super::dist::{self, Dist};
use super::philox::Philox;
use super::{
    bounds, dtype_attr, index_dtype, logits, multinomial_output, output_shape, scalar_bits, Made,
    AUTO_SELECT, PHILOX,
};
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec, Registry};
use crate::engine::Value;
use crate::kernels::util::make;
use crate::tensor::{Storage, Tensor};
use crate::DType;

pub fn register(r: &mut Registry) {
    r.add("StatelessRandomUniform", |n| v1(n, Dist::Uniform));
    r.add("StatelessRandomNormal", |n| v1(n, Dist::Normal));
    r.add("StatelessTruncatedNormal", |n| v1(n, Dist::TruncatedNormal));
    r.add("StatelessRandomUniformFullInt", |n| v1(n, Dist::FullInt));
    r.add("StatelessRandomUniformV2", |n| v2(n, Dist::Uniform));
    r.add("StatelessRandomNormalV2", |n| v2(n, Dist::Normal));
    r.add("StatelessTruncatedNormalV2", |n| {
        v2(n, Dist::TruncatedNormal)
    });
    r.add("StatelessRandomUniformFullIntV2", |n| v2(n, Dist::FullInt));
    r.add("StatelessRandomUniformInt", |n| uniform_int(n, false));
    r.add("StatelessRandomUniformIntV2", |n| uniform_int(n, true));
    r.add("StatelessMultinomial", stateless_multinomial);
    r.add("StatelessRandomGetKeyCounter", |_| get_key_counter(false));
    r.add("StatelessRandomGetKeyCounterAlg", |_| get_key_counter(true));
    r.add("StatelessRandomGetAlg", |_| {
        Ok(boxed(|_, _| one(Tensor::scalar(PHILOX as i32))))
    });
}

/// The generator of a V1 op's seed input (shape [2], int32 or int64).
fn seeded(seed: &Tensor, op: &str) -> KResult<Philox> {
    let pair: Vec<u64> = match seed.storage() {
        Storage::Int32(v) => v.iter().map(|&s| i64::from(s) as u64).collect(),
        Storage::Int64(v) => v.iter().map(|&s| s as u64).collect(),
        _ => return Err(fail(format!("{op}: Invalid seed type: {}", seed.dtype()))),
    };
    match (seed.shape(), pair.as_slice()) {
        ([2], &[first, second]) => Ok(Philox::from_stateless_seed(first, second)),
        _ => Err(fail(format!(
            "{op}: seed must have shape [2], not {:?}",
            seed.shape()
        ))),
    }
}

/// The generator of a V2 op's key ([1] uint64), counter ([>= 2] uint64) and algorithm (int32
/// scalar) inputs: Philox (or "auto select", Philox on the CPU) is the only algorithm
/// TensorFlow's CPU kernels have.
fn key_counter(key: &Tensor, counter: &Tensor, alg: &Tensor, op: &str) -> KResult<Philox> {
    if alg.rank() != 0 || alg.dtype() != DType::Int32 {
        return Err(fail(format!(
            "{op}: input 3 (0-based) must be an int32 scalar, got shape {:?} of {}",
            alg.shape(),
            alg.dtype()
        )));
    }
    let algorithm = match scalar_bits(alg, op)? as i64 {
        AUTO_SELECT => PHILOX,
        other => other,
    };
    let key = match (key.shape(), key.values::<u64>()) {
        ([1], Some(&[k])) => k,
        _ => {
            return Err(fail(format!(
                "{op}: key must have shape [1] of uint64, not {:?} of {}. \
                 (Note that batched keys are not supported yet.)",
                key.shape(),
                key.dtype()
            )))
        }
    };
    let (low, high) = match (counter.rank(), counter.values::<u64>()) {
        (1, Some(&[low, high, ..])) => (low, high),
        _ => {
            return Err(fail(format!(
                "{op}: counter must be a uint64 vector with length at least 2; got shape: \
                 {:?} of {}. (Note that batched counters are not supported yet.)",
                counter.shape(),
                counter.dtype()
            )))
        }
    };
    if algorithm != PHILOX {
        return Err(fail(format!("{op}: Unsupported algorithm id: {algorithm}")));
    }
    Ok(Philox::new(key, low, high))
}

fn filled(gen: &Philox, dist: Dist, dtype: DType, shape: Vec<usize>, count: usize) -> KResult {
    one(make(shape, dist::fill(gen, dist, dtype, count)?)?)
}

fn v1(node: &NodeSpec, dist: Dist) -> Made {
    let dtype = dtype_attr(node, "dtype", |d| dist.allows(d))?;
    let op = node.op.to_string();
    Ok(boxed(move |_, inputs| {
        let (shape, count) = output_shape(&*tensor_input(inputs, 0)?, &op)?;
        let gen = seeded(&*tensor_input(inputs, 1)?, &op)?;
        filled(&gen, dist, dtype, shape, count)
    }))
}

fn v2(node: &NodeSpec, dist: Dist) -> Made {
    let dtype = dtype_attr(node, "dtype", |d| dist.allows(d))?;
    let op = node.op.to_string();
    Ok(boxed(move |_, inputs| {
        let gen = v2_generator(inputs, &op)?;
        let (shape, count) = output_shape(&*tensor_input(inputs, 0)?, &op)?;
        filled(&gen, dist, dtype, shape, count)
    }))
}

fn v2_generator(inputs: &[Value], op: &str) -> KResult<Philox> {
    key_counter(
        &*tensor_input(inputs, 1)?,
        &*tensor_input(inputs, 2)?,
        &*tensor_input(inputs, 3)?,
        op,
    )
}

/// StatelessRandomUniformInt(shape, seed, minval, maxval), and V2 with key, counter and alg
/// in place of the seed. An empty output needs no valid bounds.
fn uniform_int(node: &NodeSpec, v2: bool) -> Made {
    let dtype = dtype_attr(node, "dtype", index_dtype)?;
    let op = node.op.to_string();
    Ok(boxed(move |_, inputs| {
        let (gen, bounds_at) = if v2 {
            (v2_generator(inputs, &op)?, 4)
        } else {
            (seeded(&*tensor_input(inputs, 1)?, &op)?, 2)
        };
        let (shape, count) = output_shape(&*tensor_input(inputs, 0)?, &op)?;
        if count == 0 {
            return one(make(shape, dist::fill(&gen, Dist::FullInt, dtype, 0)?)?);
        }
        let (low, high) = bounds(
            &*tensor_input(inputs, bounds_at)?,
            &*tensor_input(inputs, bounds_at + 1)?,
            &op,
        )?;
        one(make(
            shape,
            dist::uniform_int(&gen, dtype, count, low, high)?,
        )?)
    }))
}

fn stateless_multinomial(node: &NodeSpec) -> Made {
    let dtype = dtype_attr(node, "output_dtype", index_dtype)?;
    Ok(boxed(move |_, inputs| {
        let op = "StatelessMultinomial";
        let gen = seeded(&*tensor_input(inputs, 2)?, op)?;
        let logits = logits(&*tensor_input(inputs, 0)?, &*tensor_input(inputs, 1)?, op)?;
        one(multinomial_output(&gen, &logits, dtype)?)
    }))
}

/// The key ([1] uint64) and counter ([2] uint64) a seed pair gives, and with `alg` the
/// algorithm (Philox).
fn get_key_counter(alg: bool) -> Made {
    Ok(boxed(move |_, inputs| {
        let gen = seeded(&*tensor_input(inputs, 0)?, "StatelessRandomGetKeyCounter")?;
        let (low, high) = gen.counter64();
        let mut out = vec![
            Value::tensor(Tensor::from_vec(vec![1], vec![gen.key64()])),
            Value::tensor(Tensor::from_vec(vec![2], vec![low, high])),
        ];
        if alg {
            out.push(Value::tensor(Tensor::scalar(PHILOX as i32)));
        }
        Ok(out)
    }))
}
