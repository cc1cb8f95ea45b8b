//! Random ops with state.
//!
//! Seeded ops (`RandomUniform`, `RandomStandardNormal`, `TruncatedNormal`, `RandomUniformInt`,
//! `Multinomial`, `RandomShuffle`) keep one generator per node of a loaded model, as TensorFlow
//! keeps one per kernel: a resource of the model's resource manager named after the function
//! and node, made from the node's `seed` and `seed2` attrs on its first run, so that calls
//! from several signatures and loop iterations share it and the node's Nth run gives
//! TensorFlow's Nth values. Each run moves it on by 256 blocks per output value (TensorFlow's
//! GuardedPhiloxRandom). When both seeds are 0, TensorFlow seeds from the operating system;
//! so do these kernels.
//!
//! `tf.random.Generator` keeps its Philox state in an int64 variable (counter in elements 0
//! and 1, key in element 2): `RngReadAndSkip` and `RngSkip` move it on, and the older
//! `Stateful*` ops draw from it directly.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use super::dist::{self, Dist, SKIP_PER_OUTPUT};
use super::philox::Philox;
use super::{
    bounds, dtype_attr, index_dtype, logits, multinomial_output, output_shape, scalar_bits, Made,
    AUTO_SELECT, PHILOX, THREEFRY,
};
use crate::engine::context::RunContext;
use crate::engine::kernel::{
    boxed, fail, one, resource_input, tensor_input, KResult, NodeSpec, Registry,
};
use crate::engine::value::{Resource, ResourceKind};
use crate::engine::Value;
use crate::kernels::util::make;
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add_stateful("RandomUniform", |n| seeded(n, Dist::Uniform));
    r.add_stateful("RandomStandardNormal", |n| seeded(n, Dist::Normal));
    r.add_stateful("TruncatedNormal", |n| seeded(n, Dist::TruncatedNormal));
    r.add_stateful("RandomUniformInt", random_uniform_int);
    r.add_stateful("Multinomial", multinomial);
    r.add_stateful("RandomShuffle", random_shuffle);
    r.add_stateful("RngReadAndSkip", rng_read_and_skip);
    r.add_stateful("RngSkip", rng_skip);
    r.add_stateful("StatefulUniform", |n| generator_op(n, Dist::Uniform));
    r.add_stateful("StatefulStandardNormalV2", |n| {
        generator_op(n, Dist::Normal)
    });
    r.add_stateful("StatefulTruncatedNormal", |n| {
        generator_op(n, Dist::TruncatedNormal)
    });
    r.add_stateful("StatefulUniformFullInt", |n| generator_op(n, Dist::FullInt));
    r.add_stateful("StatefulUniformInt", stateful_uniform_int);
}

// ------------------------------------------------------------------ one generator per node

/// Where a seeded node's generator lives: the container no handle op can name.
const CONTAINER: &str = "\0random generators";

/// A seeded node: its name, op and seeds.
#[derive(Clone)]
struct SeededNode {
    name: String,
    op: String,
    seeds: (u64, u64),
}

impl SeededNode {
    fn new(node: &NodeSpec) -> Result<Self, String> {
        Ok(Self {
            name: node.name.to_string(),
            op: node.op.to_string(),
            seeds: (
                node.attrs.int_or("seed", 0)? as u64,
                node.attrs.int_or("seed2", 0)? as u64,
            ),
        })
    }

    /// A copy of the node's generator to draw from, after moving the node's own on by
    /// `blocks` (made on the node's first run in this loaded model).
    fn reserve(&self, ctx: &RunContext, blocks: u64) -> KResult<Philox> {
        let function = ctx.calls.map_or("", |c| c.function);
        let key = format!("{function}\0{}\0{}", self.name, self.op);
        let handle = ctx.resources.get_or_insert(CONTAINER, &key, || {
            let (seed, seed2) = match self.seeds {
                (0, 0) => (os_seed(), os_seed()),
                seeds => seeds,
            };
            let name = format!("random generator of node {:?}", self.name);
            Resource::other(name, Box::new(Philox::from_seeds(seed, seed2)))
        });
        let ResourceKind::Other(state) = &handle.0.kind else {
            return Err(fail(format!(
                "resource {} is not a generator",
                handle.name()
            )));
        };
        let mut state = state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let gen = state
            .downcast_mut::<Philox>()
            .ok_or_else(|| fail(format!("resource {} is not a generator", handle.name())))?;
        let start = *gen;
        gen.skip(blocks);
        Ok(start)
    }
}

/// 64 bits that differ from process to process and call to call (std's per-process random
/// hash keys, mixed with the time).
fn os_seed() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(now);
    hasher.finish()
}

fn per_output(outputs: usize) -> u64 {
    (outputs as u64).wrapping_mul(SKIP_PER_OUTPUT)
}

fn seeded(node: &NodeSpec, dist: Dist) -> Made {
    let dtype = dtype_attr(node, "dtype", |d| dist.allows(d))?;
    let seeded = SeededNode::new(node)?;
    Ok(boxed(move |ctx, inputs| {
        let (shape, count) = output_shape(&*tensor_input(inputs, 0)?, &seeded.op)?;
        let start = seeded.reserve(ctx, per_output(count))?;
        one(make(shape, dist::fill(&start, dist, dtype, count)?)?)
    }))
}

fn random_uniform_int(node: &NodeSpec) -> Made {
    let dtype = dtype_attr(node, "Tout", index_dtype)?;
    let seeded = SeededNode::new(node)?;
    Ok(boxed(move |ctx, inputs| {
        let op = &seeded.op;
        let (shape, count) = output_shape(&*tensor_input(inputs, 0)?, op)?;
        if count == 0 {
            seeded.reserve(ctx, 0)?;
            return one(make(
                shape,
                dist::fill(&Philox::new(0, 0, 0), Dist::FullInt, dtype, 0)?,
            )?);
        }
        let (low, high) = bounds(&*tensor_input(inputs, 1)?, &*tensor_input(inputs, 2)?, op)?;
        let start = seeded.reserve(ctx, per_output(count))?;
        one(make(
            shape,
            dist::uniform_int(&start, dtype, count, low, high)?,
        )?)
    }))
}

/// TensorFlow reserves 256 blocks per value of 2 * batch * samples rounded up to 4.
fn multinomial(node: &NodeSpec) -> Made {
    let dtype = dtype_attr(node, "output_dtype", index_dtype)?;
    let seeded = SeededNode::new(node)?;
    Ok(boxed(move |ctx, inputs| {
        let logits = logits(
            &*tensor_input(inputs, 0)?,
            &*tensor_input(inputs, 1)?,
            "Multinomial",
        )?;
        let outputs = logits.batch * logits.samples.div_ceil(4) * 4 * 2;
        let start = seeded.reserve(ctx, per_output(outputs))?;
        one(multinomial_output(&start, &logits, dtype)?)
    }))
}

/// The rows (first dimension) in an order from a Fisher-Yates shuffle whose step i swaps row i
/// with row i + (word i mod (rows - i)), reserving a word per step, as TensorFlow.
fn random_shuffle(node: &NodeSpec) -> Made {
    let seeded = SeededNode::new(node)?;
    Ok(boxed(move |ctx, inputs| {
        let value = tensor_input(inputs, 0)?;
        let rows = value.shape().first().copied().unwrap_or(1);
        if value.len() <= 1 || rows <= 1 {
            seeded.reserve(ctx, 0)?;
            return Ok(vec![Value::Tensor(value)]);
        }
        let start = seeded.reserve(ctx, (rows as u64 - 1).div_ceil(4))?;
        let words = start.words(rows - 1);
        let mut order: Vec<usize> = (0..rows).collect();
        for (i, &w) in words.iter().enumerate() {
            let j = i + (u64::from(w) % (rows - i) as u64) as usize;
            order.swap(i, j);
        }
        Ok(vec![Value::tensor(take_rows(&value, &order)?)])
    }))
}

/// The rows of `value` in `order` (a permutation of them).
fn take_rows(value: &Tensor, order: &[usize]) -> KResult<Tensor> {
    let row = value.len() / order.len().max(1);
    macro_rules! take {
        ($v:expr) => {{
            let mut out = Vec::with_capacity($v.len());
            for &r in order {
                let slice = $v
                    .get(r * row..(r + 1) * row)
                    .ok_or_else(|| fail("internal: row out of bounds"))?;
                out.extend_from_slice(slice);
            }
            out
        }};
    }
    let storage = match value.storage() {
        Storage::Float16(v) => Storage::Float16(take!(v)),
        Storage::BFloat16(v) => Storage::BFloat16(take!(v)),
        Storage::UInt16(v) => Storage::UInt16(take!(v)),
        Storage::Float32(v) => Storage::Float32(take!(v)),
        Storage::Float64(v) => Storage::Float64(take!(v)),
        Storage::Int8(v) => Storage::Int8(take!(v)),
        Storage::Int16(v) => Storage::Int16(take!(v)),
        Storage::Int32(v) => Storage::Int32(take!(v)),
        Storage::Int64(v) => Storage::Int64(take!(v)),
        Storage::UInt8(v) => Storage::UInt8(take!(v)),
        Storage::UInt32(v) => Storage::UInt32(take!(v)),
        Storage::UInt64(v) => Storage::UInt64(take!(v)),
        Storage::Bool(v) => Storage::Bool(take!(v)),
        Storage::Complex64(v) => Storage::Complex64(take!(v)),
        Storage::Complex128(v) => Storage::Complex128(take!(v)),
        Storage::String(v) => Storage::String(take!(v)),
    };
    make(value.shape().to_vec(), storage)
}

// ------------------------------------------------------------------ tf.random.Generator state

/// Reads a generator's state variable (input 0; algorithm input 1), writes it back moved on by
/// `blocks(state generator)` blocks, and returns the state read and its generator; the read
/// and the write are one step under the variable's lock.
fn advance_state(inputs: &[Value], op: &str, blocks: u64) -> KResult<(Arc<Tensor>, Philox)> {
    let algorithm =
        scalar_bits(&*tensor_input(inputs, 1)?, &format!("{op}: the algorithm"))? as i64;
    if algorithm == THREEFRY {
        return Err(fail(format!(
            "{op}: Non-XLA devices don't support the ThreeFry algorithm."
        )));
    }
    if algorithm != PHILOX && algorithm != AUTO_SELECT {
        return Err(fail(format!("{op}: Unsupported algorithm id: {algorithm}")));
    }
    let handle = resource_input(inputs, 0)?;
    let variable = handle.as_variable().ok_or_else(|| {
        fail(format!(
            "{op}: resource {} is not a variable",
            handle.name()
        ))
    })?;
    let mut read = None;
    variable.update(|old| {
        let old = old.ok_or_else(|| {
            fail(format!(
                "{op}: variable {} is not initialized",
                handle.name()
            ))
        })?;
        let (gen, moved) = state_generator(old, op, blocks)?;
        read = Some((Arc::clone(old), gen));
        Ok(Arc::new(moved))
    })?;
    read.ok_or_else(|| fail(format!("{op}: internal: the state was not read")))
}

/// The generator a state holds and the state moved on by `blocks`.
fn state_generator(state: &Tensor, op: &str, blocks: u64) -> KResult<(Philox, Tensor)> {
    let values = state.values::<i64>().ok_or_else(|| {
        fail(format!(
            "{op}: dtype of RNG state variable must be int64, not {}",
            state.dtype()
        ))
    })?;
    if state.rank() != 1 {
        return Err(fail(format!(
            "{op}: RNG state must have one and only one dimension, not {}",
            state.rank()
        )));
    }
    let &[low, high, key, ..] = values else {
        return Err(fail(format!(
            "{op}: For the Philox algorithm, the size of state must be at least 3; got {}",
            values.len()
        )));
    };
    let gen = Philox::new(key as u64, low as u64, high as u64);
    let mut moved_gen = gen;
    moved_gen.skip(blocks);
    let (low, high) = moved_gen.counter64();
    let mut moved = values.to_vec();
    moved[0] = low as i64;
    moved[1] = high as i64;
    Ok((gen, Tensor::from_vec(state.shape().to_vec(), moved)))
}

/// The Philox state [counter low, counter high, key] of a `tf.random.Generator`, before
/// moving its counter on by 256 blocks per `delta`.
fn rng_read_and_skip(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let op = "RngReadAndSkip";
        let delta = scalar_bits(&*tensor_input(inputs, 2)?, &format!("{op}: delta"))?;
        let (state, _) = advance_state(inputs, op, delta.wrapping_mul(SKIP_PER_OUTPUT))?;
        Ok(vec![Value::Tensor(state)])
    }))
}

fn rng_skip(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let op = "RngSkip";
        let delta = scalar_bits(&*tensor_input(inputs, 2)?, &format!("{op}: delta"))?;
        advance_state(inputs, op, delta.wrapping_mul(SKIP_PER_OUTPUT))?;
        Ok(Vec::new())
    }))
}

/// An op drawing from a `tf.random.Generator`'s state variable (what Generator methods used
/// before they became RngReadAndSkip + stateless V2 ops): inputs (state, algorithm, shape).
fn generator_op(node: &NodeSpec, dist: Dist) -> Made {
    let dtype = dtype_attr(node, "dtype", |d| dist.allows(d))?;
    let op = node.op.to_string();
    Ok(boxed(move |_, inputs| {
        let (shape, count) = output_shape(&*tensor_input(inputs, 2)?, &op)?;
        let (_, gen) = advance_state(inputs, &op, per_output(count))?;
        one(make(shape, dist::fill(&gen, dist, dtype, count)?)?)
    }))
}

fn stateful_uniform_int(node: &NodeSpec) -> Made {
    let dtype = dtype_attr(node, "dtype", index_dtype)?;
    Ok(boxed(move |_, inputs| {
        let op = "StatefulUniformInt";
        let (shape, count) = output_shape(&*tensor_input(inputs, 2)?, op)?;
        let (low, high) = bounds(&*tensor_input(inputs, 3)?, &*tensor_input(inputs, 4)?, op)?;
        let (_, gen) = advance_state(inputs, op, per_output(count))?;
        one(make(
            shape,
            dist::uniform_int(&gen, dtype, count, low, high)?,
        )?)
    }))
}
