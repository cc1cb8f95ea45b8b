//! Neural-network kernels: matrix products (MatMul, BatchMatMul*, Einsum), BiasAdd,
//! convolutions (Conv2D, DepthwiseConv2dNative, Conv2DBackpropInput, and the 3-D Conv3D and
//! Conv3DBackpropInputV2), pooling (2-D and 3-D), batch normalization and CTC decoding.
//! Products go through the `gemm` crate; convolutions are im2col + GEMM or direct
//! channel-vectorized loops over NHWC (NDHWC). `conv_fused` and `depthwise_fused` run a fused
//! op's bias and activation on each block of output while it is still in cache.

use crate::engine::kernel::Registry;

pub use conv::{conv_fused, conv_out_shape, Epilogue, PackedFilter};
pub use depthwise::{depthwise_fused, depthwise_out_shape};
pub use matmul::{product, Side};
pub use pool::ZERO_PADDING;
pub use window::{conv_spec, Spec};

mod backprop;
mod batchnorm;
#[cfg(test)]
pub(crate) mod bench;
mod bias;
pub(crate) mod conv;
mod conv3d;
mod ctc;
pub(crate) mod depthwise;
mod einsum;
pub(crate) mod gemm;
mod gemv;
pub(crate) mod kept;
mod layout;
mod matmul;
mod narrow;
mod num;
pub(crate) mod output;
pub(crate) mod panels;
mod pool;
mod pool3d;
mod pool_row;
pub(crate) mod prefetch;
#[cfg(target_arch = "x86_64")]
mod vector;
mod volume;
mod window;
mod winograd;

pub fn register(r: &mut Registry) {
    r.add("Conv2D", conv::conv2d);
    r.add("DepthwiseConv2dNative", depthwise::depthwise_conv2d);
    r.add("Conv2DBackpropInput", backprop::conv2d_backprop_input);
    r.add("BiasAdd", bias::bias_add);
    r.add("BiasAddV1", bias::bias_add);
    r.add("MaxPool", pool::max_pool);
    r.add("MaxPoolV2", pool::max_pool_v2);
    r.add("AvgPool", pool::avg_pool);
    r.add("Conv3D", conv3d::conv3d);
    r.add("Conv3DBackpropInputV2", conv3d::conv3d_backprop_input_v2);
    r.add("MaxPool3D", pool3d::max_pool3d);
    r.add("AvgPool3D", pool3d::avg_pool3d);
    for op in ["FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"] {
        r.add(op, batchnorm::fused_batch_norm);
    }
    r.add("Einsum", einsum::einsum);
    r.add("MatMul", matmul::mat_mul);
    r.add("BatchMatMul", matmul::batch_mat_mul);
    r.add("BatchMatMulV2", matmul::batch_mat_mul_v2);
    // V3 is V2 with operands cast to its Tout attr, which the factory reads for that op.
    r.add("BatchMatMulV3", matmul::batch_mat_mul_v2);
    r.add("CTCGreedyDecoder", ctc::greedy_decoder);
    r.add("CTCBeamSearchDecoder", ctc::beam_search_decoder);
}
