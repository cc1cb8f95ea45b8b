//! BiasAdd and BiasAddV1: a 1-D bias added along the channel axis (the last for NHWC, the
//! second for NCHW), as rows of channels or as runs of one channel.

use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::kernels::nn::num::{run_num, Num, NumOp};
use crate::kernels::util::make;
use crate::tensor::Tensor;

const TYPES: [DType; 14] = [
    DType::Float16,
    DType::BFloat16,
    DType::Float32,
    DType::Float64,
    DType::Int8,
    DType::Int16,
    DType::Int32,
    DType::Int64,
    DType::UInt8,
    DType::UInt16,
    DType::UInt32,
    DType::UInt64,
    DType::Complex64,
    DType::Complex128,
];

pub fn bias_add(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let channels_first = match node.attrs.string_or("data_format", "NHWC")? {
        "NHWC" => false,
        "NCHW" => true,
        other => return Err(format!("unsupported data_format {other:?}")),
    };
    Ok(boxed(move |_, inputs| {
        let value = tensor_input(inputs, 0)?;
        let bias = tensor_input(inputs, 1)?;
        one(add(&value, &bias, channels_first)?)
    }))
}

/// `value + bias` along the channel axis.
pub fn add(value: &Tensor, bias: &Tensor, channels_first: bool) -> KResult<Tensor> {
    if value.rank() < 2 || bias.rank() != 1 {
        return Err(fail(format!(
            "BiasAdd needs an input of rank >= 2 and a 1D bias: {:?}, {:?}",
            value.shape(),
            bias.shape()
        )));
    }
    let shape = value.shape();
    let axis = if channels_first { 1 } else { shape.len() - 1 };
    if bias.len() != shape[axis] {
        return Err(fail(format!(
            "Must provide as many biases as the channel dimension of the input tensor: \
             {:?} vs. {shape:?}",
            bias.shape()
        )));
    }
    let call = Call {
        inner: shape[axis + 1..].iter().product(),
    };
    make(
        shape.to_vec(),
        run_num(&call, &[value, bias], &TYPES, "BiasAdd")?,
    )
}

struct Call {
    /// Elements after the channel axis (1 when channels are last).
    inner: usize,
}

impl NumOp for Call {
    fn run<T: Num>(&self, inputs: &[&[T]]) -> KResult<Vec<T>> {
        let [value, bias] = inputs else {
            return Err(fail("BiasAdd takes 2 inputs"));
        };
        let mut out = value.to_vec();
        if out.is_empty() || bias.is_empty() {
            return Ok(out);
        }
        if self.inner == 1 {
            for row in out.chunks_exact_mut(bias.len()) {
                for (v, &b) in row.iter_mut().zip(*bias) {
                    *v = v.add(b);
                }
            }
            return Ok(out);
        }
        for (run, &b) in out.chunks_exact_mut(self.inner).zip(bias.iter().cycle()) {
            for v in run {
                *v = v.add(b);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_first_adds_per_run() {
        let value = Tensor::from_vec(vec![1, 2, 2], vec![1i64, 2, 3, 4]);
        let bias = Tensor::from_vec(vec![2], vec![10i64, 20]);
        let out = add(&value, &bias, true).unwrap();
        assert_eq!(out.values::<i64>().unwrap(), &[11, 12, 23, 24]);
        let out = add(&value, &bias, false).unwrap();
        assert_eq!(out.values::<i64>().unwrap(), &[11, 22, 13, 24]);
        assert!(add(&bias, &bias, false).is_err());
    }
}
