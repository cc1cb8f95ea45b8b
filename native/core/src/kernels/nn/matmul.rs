//! MatMul and BatchMatMul (V1: equal batch dims; V2: broadcast batch dims; V3: operands cast
//! to Tout first). Transposes and adjoints are strides of the product, not copies (complex
//! adjoints conjugate a copy). The batch runs as one batched GEMM.

use std::sync::Arc;

use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::kernels::nn::gemm::{Batch, Layout};
use crate::kernels::nn::num::{run_num, zeros, Num, NumOp};
use crate::kernels::util::{broadcast_offsets, broadcast_shape, f32_to_half, half_to_f32, make};
use crate::tensor::{element_count, Storage, Tensor};

/// The dtypes matrix products take.
const TYPES: [DType; 9] = [
    DType::Float16,
    DType::BFloat16,
    DType::Float32,
    DType::Float64,
    DType::Int16,
    DType::Int32,
    DType::Int64,
    DType::Complex64,
    DType::Complex128,
];

pub fn mat_mul(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let transpose_a = node.attrs.bool_or("transpose_a", false)?;
    let transpose_b = node.attrs.bool_or("transpose_b", false)?;
    Ok(boxed(move |_, inputs| {
        let a = tensor_input(inputs, 0)?;
        let b = tensor_input(inputs, 1)?;
        if a.rank() != b.rank() {
            return Err(fail(format!(
                "In[0] and In[1] has different ndims: {:?} vs. {:?}",
                a.shape(),
                b.shape()
            )));
        }
        if a.rank() != 2 {
            return Err(fail(format!(
                "In[0] and In[1] ndims must be == 2: {}",
                a.rank()
            )));
        }
        let sides = [Side::new(transpose_a, false), Side::new(transpose_b, false)];
        one(product(&a, &b, sides, false)?)
    }))
}

/// BatchMatMul (`broadcast` false), BatchMatMulV2 and V3.
fn batch(node: &NodeSpec, broadcast: bool) -> Result<Box<dyn Kernel>, String> {
    let adj_x = node.attrs.bool_or("adj_x", false)?;
    let adj_y = node.attrs.bool_or("adj_y", false)?;
    let tout = if node.op == "BatchMatMulV3" {
        Some(node.attrs.dtype("Tout")?)
    } else {
        None
    };
    Ok(boxed(move |_, inputs| {
        let mut x = tensor_input(inputs, 0)?;
        let mut y = tensor_input(inputs, 1)?;
        if let Some(tout) = tout {
            x = cast_operand(x, tout)?;
            y = cast_operand(y, tout)?;
        }
        if x.rank() < 2 || y.rank() < 2 {
            return Err(fail(format!(
                "In[0] and In[1] ndims must be >= 2: {:?}, {:?}",
                x.shape(),
                y.shape()
            )));
        }
        let sides = [Side::new(adj_x, true), Side::new(adj_y, true)];
        one(product(&x, &y, sides, broadcast)?)
    }))
}

pub fn batch_mat_mul(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    batch(node, false)
}

pub fn batch_mat_mul_v2(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    batch(node, true)
}

/// How an operand enters the product: transposed or not, conjugated when transposed (an
/// adjoint) or not (MatMul's plain transpose).
#[derive(Clone, Copy)]
pub struct Side {
    pub transpose: bool,
    pub conjugate: bool,
}

impl Side {
    pub fn new(transpose: bool, adjoint: bool) -> Self {
        Self {
            transpose,
            conjugate: transpose && adjoint,
        }
    }

    /// (rows, cols) of the operand as multiplied, and its layout, for a stored `shape`.
    fn matrix(&self, shape: &[usize]) -> (usize, usize, Layout) {
        let (r, c) = (shape[shape.len() - 2], shape[shape.len() - 1]);
        let stored = Layout::rows(0, c);
        if self.transpose {
            (c, r, stored.t())
        } else {
            (r, c, stored)
        }
    }
}

/// x × y over broadcast (or equal) batch dims.
pub fn product(x: &Tensor, y: &Tensor, sides: [Side; 2], broadcast: bool) -> KResult<Tensor> {
    let (xs, ys) = (x.shape(), y.shape());
    if xs.len() < 2 || ys.len() < 2 {
        return Err(fail(format!(
            "In[0] and In[1] ndims must be >= 2: {xs:?}, {ys:?}"
        )));
    }
    let (m, k, a) = sides[0].matrix(xs);
    let (k2, n, b) = sides[1].matrix(ys);
    let (bx, by) = (&xs[..xs.len() - 2], &ys[..ys.len() - 2]);
    let incompatible = || {
        fail(format!(
            "Matrix size-incompatible: In[0]: {xs:?}, In[1]: {ys:?}"
        ))
    };
    if k != k2 || (!broadcast && bx != by) {
        return Err(incompatible());
    }
    let batch = broadcast_shape(bx, by).map_err(|_| incompatible())?;
    let mut shape = batch.clone();
    shape.extend([m, n]);
    element_count(&shape).ok_or_else(|| fail(format!("output shape {shape:?} is too large")))?;
    let call = Call {
        a_offsets: scaled(broadcast_offsets(bx, &batch), m * k),
        b_offsets: scaled(broadcast_offsets(by, &batch), k * n),
        m,
        n,
        k,
        a,
        b,
        sides,
        count: element_count(&shape).unwrap_or(0),
    };
    make(shape, run_num(&call, &[x, y], &TYPES, "MatMul")?)
}

fn scaled(offsets: Vec<usize>, size: usize) -> Vec<usize> {
    offsets.into_iter().map(|o| o * size).collect()
}

struct Call {
    a_offsets: Vec<usize>,
    b_offsets: Vec<usize>,
    m: usize,
    n: usize,
    k: usize,
    a: Layout,
    b: Layout,
    sides: [Side; 2],
    count: usize,
}

impl NumOp for Call {
    fn run<T: Num>(&self, inputs: &[&[T]]) -> KResult<Vec<T>> {
        let [x, y] = inputs else {
            return Err(fail("a matrix product takes 2 inputs"));
        };
        let conjugated = |v: &[T], side: &Side| {
            (side.conjugate && T::COMPLEX).then(|| v.iter().map(|z| z.conj()).collect::<Vec<_>>())
        };
        let (cx, cy) = (conjugated(x, &self.sides[0]), conjugated(y, &self.sides[1]));
        let mut out = zeros(self.count)?;
        Batch {
            m: self.m,
            n: self.n,
            k: self.k,
            a: self.a,
            b: self.b,
            dst: Layout::rows(0, self.n),
            a_offsets: &self.a_offsets,
            b_offsets: &self.b_offsets,
        }
        .run(
            cx.as_deref().unwrap_or(x),
            cy.as_deref().unwrap_or(y),
            &mut out,
        )?;
        Ok(out)
    }
}

/// A BatchMatMulV3 operand converted to Tout: the same type as is, or int8/uint8 widened to
/// int32 (the mixed-type kernels TensorFlow registers).
fn cast_operand(t: Arc<Tensor>, tout: DType) -> KResult<Arc<Tensor>> {
    if t.dtype() == tout {
        return Ok(t);
    }
    let widened = match (t.storage(), tout) {
        (Storage::Int8(v), DType::Int32) => Storage::Int32(v.iter().map(|&x| x.into()).collect()),
        (Storage::UInt8(v), DType::Int32) => Storage::Int32(v.iter().map(|&x| x.into()).collect()),
        (_, DType::Float16 | DType::BFloat16) => half_to_f32(&t)
            .and_then(|v| f32_to_half(tout, &v))
            .ok_or_else(|| mixed(&t, tout))?,
        _ => return Err(mixed(&t, tout)),
    };
    Ok(Arc::new(make(t.shape().to_vec(), widened)?))
}

fn mixed(t: &Tensor, tout: DType) -> crate::error::Error {
    fail(format!(
        "BatchMatMulV3 has no kernel for a {} operand with Tout {tout}",
        t.dtype()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_batches_and_adjoints() {
        // x (2, 1, 1, 2) · y (3, 2, 1): out (2, 3, 1, 1), out[i, j] = x[i] · y[j].
        let x = Tensor::from_vec(vec![2, 1, 1, 2], vec![1.0f32, 2.0, 3.0, 4.0]);
        let y = Tensor::from_vec(vec![3, 2, 1], vec![1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0]);
        let sides = [Side::new(false, true); 2];
        let out = product(&x, &y, sides, true).unwrap();
        assert_eq!(out.shape(), &[2, 3, 1, 1]);
        assert_eq!(
            out.values::<f32>().unwrap(),
            &[1.0, 2.0, 3.0, 3.0, 4.0, 7.0]
        );
        assert!(product(&x, &y, sides, false).is_err());
        // The adjoint of [[i]] times [[i]] is -i · i = 1.
        let z = Tensor::from_vec(vec![1, 1], vec![[0.0f32, 1.0]]);
        let out = product(
            &z,
            &z,
            [Side::new(true, true), Side::new(false, true)],
            false,
        );
        assert_eq!(out.unwrap().values::<[f32; 2]>().unwrap(), &[[1.0, 0.0]]);
    }

    #[test]
    fn empty_inner_dimension_sums_to_zero() {
        let x = Tensor::from_vec(vec![2, 0], Vec::<i32>::new());
        let y = Tensor::from_vec(vec![0, 3], Vec::<i32>::new());
        let out = product(&x, &y, [Side::new(false, false); 2], false).unwrap();
        assert_eq!(out.values::<i32>().unwrap(), &[0; 6]);
    }
}
