//! `_SavedModelLstmCell`: one step of an LSTM cell as Keras writes it into a While body, which
//! the plan optimizer (engine::fuse_lstm) rewrites the cell's fifteen ops into. Inputs
//! `x, kernel, h, recurrent_kernel, bias, c, split_dim`; outputs `h', c'`:
//!
//! ```text
//! z = BiasAdd(x·kernel + h·recurrent_kernel, bias);  i, f, g, o = Split(split_dim, z, 4)
//! c' = sigmoid(f)·c + sigmoid(i)·tanh(g);  h' = sigmoid(o)·tanh(c')
//! ```
//!
//! Why: at batch 1 each of those ops costs more in the run loop (an output allocated, a step
//! dispatched) than in arithmetic, and a recurrent layer runs them once per time step. The fast
//! path (float32 matrices whose shapes fit without broadcasting, split along the last axis)
//! computes the step in one pass with the same formulas as the separate kernels; anything else
//! runs those ops' own kernels one after another, so results and errors stay theirs.

use std::sync::Arc;

use crate::engine::kernel::{fail, tensor_input, KResult, Kernel, NodeSpec, Registry};
use crate::engine::{RunContext, Value};
use crate::kernels::nn::{product, Side};
use crate::kernels::rnn_gates::lstm_step;
use crate::tensor::{Storage, Tensor};

/// The fused op's name (internal: no TensorFlow op has it, and docs/ops.md leaves out names
/// starting with `_`).
pub const LSTM_CELL: &str = "_SavedModelLstmCell";

/// Products smaller than this many multiply-adds run as a plain loop (no GEMM setup).
pub(crate) const SMALL_PRODUCT: usize = 1 << 15;

pub fn register(r: &mut Registry) {
    if [
        "MatMul", "AddV2", "BiasAdd", "Split", "Sigmoid", "Tanh", "Mul",
    ]
    .iter()
    .all(|op| r.contains(op))
    {
        r.add(LSTM_CELL, lstm_cell);
    }
}

/// The kernels of the ops the cell stands for, for what the fast path does not take.
struct Cell {
    matmul: Box<dyn Kernel>,
    add: Box<dyn Kernel>,
    bias_add: Box<dyn Kernel>,
    split: Box<dyn Kernel>,
    sigmoid: Box<dyn Kernel>,
    tanh: Box<dyn Kernel>,
    mul: Box<dyn Kernel>,
}

fn lstm_cell(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let registry = crate::kernels::registry();
    let make = |op: &str, num_inputs: usize| -> Result<Box<dyn Kernel>, String> {
        let info = registry
            .get(op)
            .ok_or_else(|| format!("no kernel for {op}, which the LSTM cell runs"))?;
        (info.factory)(&NodeSpec {
            name: node.name,
            op,
            attrs: crate::engine::attrs::Attrs::new(node.attrs.map()),
            num_inputs,
        })
    };
    Ok(Box::new(Cell {
        matmul: make("MatMul", 2)?,
        add: make("AddV2", 2)?,
        bias_add: make("BiasAdd", 2)?,
        split: make("Split", 2)?,
        sigmoid: make("Sigmoid", 1)?,
        tanh: make("Tanh", 1)?,
        mul: make("Mul", 2)?,
    }))
}

impl Kernel for Cell {
    fn run(&self, ctx: &RunContext, inputs: &[Value]) -> KResult {
        if inputs.len() != 7 {
            return Err(fail(format!(
                "the LSTM cell takes 7 inputs, got {}",
                inputs.len()
            )));
        }
        let tensors = (0..7)
            .map(|i| tensor_input(inputs, i))
            .collect::<KResult<Vec<Arc<Tensor>>>>()?;
        if let Some((h, c)) = fast(&tensors) {
            return Ok(vec![Value::tensor(h), Value::tensor(c)]);
        }
        self.separately(ctx, inputs)
    }
}

impl Cell {
    /// The cell's ops one by one, as the unfused graph runs them.
    fn separately(&self, ctx: &RunContext, inputs: &[Value]) -> KResult {
        let [x, w, h, u, b, c, dim] = inputs else {
            return Err(fail("the LSTM cell takes 7 inputs"));
        };
        let one = |kernel: &dyn Kernel, args: &[Value]| -> KResult<Value> {
            kernel
                .run(ctx, args)?
                .into_iter()
                .next()
                .ok_or_else(|| fail("an op of the LSTM cell gave no output"))
        };
        let xw = one(&*self.matmul, &[x.clone(), w.clone()])?;
        let hu = one(&*self.matmul, &[h.clone(), u.clone()])?;
        let z = one(&*self.add, &[xw, hu])?;
        let z = one(&*self.bias_add, &[z, b.clone()])?;
        let gates = self.split.run(ctx, &[dim.clone(), z])?;
        let [zi, zf, zg, zo] = gates.as_slice() else {
            return Err(fail("the LSTM cell's split gave other than 4 gates"));
        };
        let i = one(&*self.sigmoid, std::slice::from_ref(zi))?;
        let f = one(&*self.sigmoid, std::slice::from_ref(zf))?;
        let g = one(&*self.tanh, std::slice::from_ref(zg))?;
        let o = one(&*self.sigmoid, std::slice::from_ref(zo))?;
        let kept = one(&*self.mul, &[f, c.clone()])?;
        let added = one(&*self.mul, &[i, g])?;
        let c_next = one(&*self.add, &[kept, added])?;
        let squashed = one(&*self.tanh, std::slice::from_ref(&c_next))?;
        let h_next = one(&*self.mul, &[o, squashed])?;
        Ok(vec![h_next, c_next])
    }
}

/// `(h', c')` when every input is float32 and the shapes need no broadcasting: x `[n, k]`,
/// kernel `[k, 4u]`, h `[n, j]`, recurrent kernel `[j, 4u]`, bias `[4u]`, c `[n, u]`, split
/// along axis 1 (or -1). None otherwise (the separate kernels then decide).
fn fast(t: &[Arc<Tensor>]) -> Option<(Tensor, Tensor)> {
    let [x, w, h, u, b, c, dim] = t else {
        return None;
    };
    let axis = match dim.storage() {
        Storage::Int32(v) if dim.rank() == 0 => i64::from(*v.first()?),
        Storage::Int64(v) if dim.rank() == 0 => *v.first()?,
        _ => return None,
    };
    let (&[n, k], &[k2, gates]) = (x.shape(), w.shape()) else {
        return None;
    };
    let (&[n2, j], &[j2, gates2], &[gates3]) = (h.shape(), u.shape(), b.shape()) else {
        return None;
    };
    let units = gates / 4;
    if !(axis == 1 || axis == -1)
        || k != k2
        || j != j2
        || n != n2
        || gates != gates2
        || gates != gates3
        || gates % 4 != 0
        || c.shape() != [n, units]
    {
        return None;
    }
    let (xv, wv, hv, uv) = (x.values()?, w.values()?, h.values()?, u.values()?);
    let (bv, cv): (&[f32], &[f32]) = (b.values()?, c.values()?);
    let xw = matmul(x, w, xv, wv, [n, k, gates])?;
    let hu = matmul(h, u, hv, uv, [n, j, gates])?;
    let mut c_next = cv.to_vec();
    let mut h_next = vec![0f32; n * units];
    if units > 0 {
        lstm_step(
            units,
            [&xw, &hu, bv],
            &mut c_next,
            &mut h_next,
            &mut Vec::new(),
        )?;
    }
    Some((
        Tensor::from_vec(vec![n, units], h_next),
        Tensor::from_vec(vec![n, units], c_next),
    ))
}

/// `a [m, k] × b [k, n]`: a plain loop for small products, the MatMul kernel's GEMM otherwise.
pub(crate) fn matmul(
    a: &Tensor,
    b: &Tensor,
    av: &[f32],
    bv: &[f32],
    [m, k, n]: [usize; 3],
) -> Option<Vec<f32>> {
    if m * k * n > SMALL_PRODUCT {
        let plain = Side::new(false, false);
        let out = product(a, b, [plain, plain], false).ok()?;
        return out.values::<f32>().map(<[f32]>::to_vec);
    }
    let mut out = vec![0f32; m * n];
    small_product(av, bv, k, n, &mut out);
    Some(out)
}

/// `out = a · b` for `a` of rows `k` long and `b` `[k, n]` (`out` has `n`-long rows), by plain
/// loops over `b`'s rows: the products of small recurrent cells, where a GEMM's packing costs
/// more than the arithmetic. Compiled also for AVX-512 and AVX2 (chosen at run time), so each
/// row of `b` is a few whole vectors.
#[multiversion::multiversion(targets(
    "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
    "x86_64+avx2+fma"
))]
pub(crate) fn small_product(a: &[f32], b: &[f32], k: usize, n: usize, out: &mut [f32]) {
    out.fill(0.0);
    if n == 0 {
        return;
    }
    for (row, a_row) in out.chunks_exact_mut(n).zip(a.chunks_exact(k.max(1))) {
        for (&x, b_row) in a_row.iter().zip(b.chunks_exact(n)) {
            for (o, &y) in row.iter_mut().zip(b_row) {
                *o += x * y;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::library::Library;

    fn values(seed: u32, count: usize) -> Vec<f32> {
        crate::kernels::test_util::values(seed, count, 1)
    }

    fn tensor(seed: u32, shape: &[usize]) -> Value {
        let count = shape.iter().product();
        Value::tensor(Tensor::from_vec(shape.to_vec(), values(seed, count)))
    }

    fn cell() -> Box<dyn Kernel> {
        let mut attrs = std::collections::HashMap::new();
        attrs.insert(
            "num_split".to_string(),
            crate::protos::AttrValue {
                value: Some(crate::protos::attr_value::Value::I(4)),
            },
        );
        let spec = NodeSpec {
            name: "cell",
            op: LSTM_CELL,
            attrs: crate::engine::attrs::Attrs::new(&attrs),
            num_inputs: 7,
        };
        let kernel = lstm_cell(&spec).map_err(|e| e.to_string());
        kernel.unwrap_or_else(|e| panic!("{e}"))
    }

    fn floats(v: &Value) -> Vec<f32> {
        match v {
            Value::Tensor(t) => t.values::<f32>().unwrap_or_default().to_vec(),
            _ => Vec::new(),
        }
    }

    fn inputs(n: usize, k: usize, units: usize, c_shape: &[usize]) -> Vec<Value> {
        vec![
            tensor(1, &[n, k]),
            tensor(2, &[k, 4 * units]),
            tensor(3, &[n, units]),
            tensor(4, &[units, 4 * units]),
            tensor(5, &[4 * units]),
            tensor(6, c_shape),
            Value::tensor(Tensor::scalar(1i32)),
        ]
    }

    #[test]
    fn lstm_cell_fast_path_matches_the_separate_ops() {
        let library = Library::new(None, &[], crate::kernels::registry(), Default::default());
        let ctx = library.context();
        let kernel = cell();
        let cell = Cell {
            matmul: registry_kernel("MatMul"),
            add: registry_kernel("AddV2"),
            bias_add: registry_kernel("BiasAdd"),
            split: registry_kernel("Split"),
            sigmoid: registry_kernel("Sigmoid"),
            tanh: registry_kernel("Tanh"),
            mul: registry_kernel("Mul"),
        };
        for (n, k, units) in [(1, 3, 8), (2, 8, 5), (3, 40, 64)] {
            let args = inputs(n, k, units, &[n, units]);
            let fused = kernel.run(&ctx, &args).unwrap_or_default();
            let separate = cell.separately(&ctx, &args).unwrap_or_default();
            assert_eq!(fused.len(), 2);
            for (a, b) in fused.iter().zip(&separate) {
                let (a, b) = (floats(a), floats(b));
                assert_eq!(a.len(), n * units);
                for (x, y) in a.iter().zip(&b) {
                    assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "{x} vs {y}");
                }
            }
        }
    }

    #[test]
    fn lstm_cell_broadcasts_and_fails_as_the_separate_ops() {
        let library = Library::new(None, &[], crate::kernels::registry(), Default::default());
        let ctx = library.context();
        let kernel = cell();
        // A cell state of one row broadcasts over the batch, as Mul does.
        let out = kernel
            .run(&ctx, &inputs(3, 2, 4, &[1, 4]))
            .unwrap_or_default();
        assert_eq!(out.len(), 2);
        assert_eq!(floats(&out[0]).len(), 12);
        // Mismatched inner dimensions: MatMul's own error.
        let mut bad = inputs(2, 3, 4, &[2, 4]);
        bad[1] = tensor(9, &[5, 16]);
        let err = kernel.run(&ctx, &bad).err().map(|e| e.to_string());
        assert!(
            err.as_deref()
                .unwrap_or("")
                .contains("Matrix size-incompatible"),
            "{err:?}"
        );
    }

    fn registry_kernel(op: &str) -> Box<dyn Kernel> {
        let mut attrs = std::collections::HashMap::new();
        attrs.insert(
            "num_split".to_string(),
            crate::protos::AttrValue {
                value: Some(crate::protos::attr_value::Value::I(4)),
            },
        );
        let registry = crate::kernels::registry();
        let info = registry.get(op).map(|i| i.factory);
        let spec = NodeSpec {
            name: op,
            op,
            attrs: crate::engine::attrs::Attrs::new(&attrs),
            num_inputs: 2,
        };
        match info.map(|f| f(&spec)) {
            Some(Ok(k)) => k,
            _ => panic!("no kernel for {op}"),
        }
    }
}
