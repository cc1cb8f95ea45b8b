"""Kernel cases for the convolution family beyond nn.py's: SpaceToBatchND / BatchToSpaceND (what
dilated convolutions export as), SpaceToBatch / BatchToSpace, DepthToSpace / SpaceToDepth,
Conv3D, Conv3DBackpropInputV2, MaxPool3D, AvgPool3D, LRN, MaxPoolWithArgmax, and more
Conv2DBackpropInput edge cases.

Record with TF_ENABLE_ONEDNN_OPTS=0: TensorFlow's own (Eigen) CPU kernels are the oracle, as in
tests/conftest.py. They refuse dilated and NCDHW Conv3D (and NCDHW 3-D pooling), which GPU
kernels (and oneDNN's CPU kernels) accept and our kernels compute, so those have no cases here;
they matched oneDNN's results when recorded with it. MaxPool3D and AvgPool3D are registered on
the CPU for float32 and bfloat16 only, LRN for float16 and float32.
"""
import ml_dtypes
import numpy as np

_rng = np.random.default_rng(1414)
nan, inf = np.nan, np.inf
_BF16 = ml_dtypes.bfloat16


def _r(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _i(values, dtype=np.int32):
    return np.array(values, dtype)


def _seq(*shape, dtype=np.float32):
    return np.arange(np.prod(shape)).reshape(shape).astype(dtype)


SPACE_BATCH = [
    case("SpaceToBatchND", name="conv1d_dilation", input=_r(2, 9, 3), block_shape=_i([2]),
         paddings=_i([[2, 3]])),
    case("SpaceToBatchND", name="2d_int64", input=_seq(1, 4, 6, 2, dtype=np.int64),
         block_shape=_i([2, 3], np.int64), paddings=_i([[0, 2], [1, 2]], np.int64)),
    case("SpaceToBatchND", name="block1_rest_dims", input=_r(2, 3, 2, 2), block_shape=_i([1]),
         paddings=_i([[1, 0]])),
    case("SpaceToBatchND", name="3d_uint16", input=_seq(1, 2, 2, 4, 1, dtype=np.uint16),
         block_shape=_i([2, 2, 2]),
         paddings=_i([[0, 0], [0, 0], [0, 0]])),
    case("SpaceToBatchND", name="uint64", input=_seq(1, 2, 1, dtype=np.uint64),
         block_shape=_i([2]), paddings=_i([[0, 0]])),
    case("SpaceToBatchND", name="empty_batch", input=_r(0, 4, 2), block_shape=_i([2]),
         paddings=_i([[0, 0]])),
    case("SpaceToBatchND", name="float16", input=_r(1, 4, 4, 1, dtype=np.float16),
         block_shape=_i([2, 2]), paddings=_i([[0, 0], [0, 0]])),
    case("SpaceToBatchND", name="error_not_divisible", input=_r(1, 5, 2), block_shape=_i([2]),
         paddings=_i([[0, 0]]), error=True),
    case("SpaceToBatchND", name="error_negative_padding", input=_r(1, 4, 2), block_shape=_i([2]),
         paddings=_i([[-2, 2]]), error=True),
    case("SpaceToBatchND", name="error_block_zero", input=_r(1, 4, 2), block_shape=_i([0]),
         paddings=_i([[0, 0]]), error=True),
    case("BatchToSpaceND", name="conv1d_dilation", input=_r(4, 7, 3), block_shape=_i([2]),
         crops=_i([[0, 3]])),
    case("BatchToSpaceND", name="2d_int32", input=_seq(6, 2, 3, 2, dtype=np.int32),
         block_shape=_i([2, 3]), crops=_i([[1, 0], [2, 3]])),
    case("BatchToSpaceND", name="3d_float64", input=_r(8, 1, 2, 1, 2, dtype=np.float64),
         block_shape=_i([2, 2, 2], np.int64), crops=_i([[0, 1], [1, 1], [0, 0]], np.int64)),
    case("BatchToSpaceND", name="crop_all", input=_r(2, 2, 1), block_shape=_i([2]),
         crops=_i([[2, 2]])),
    case("BatchToSpaceND", name="error_batch_not_divisible", input=_r(3, 2, 1),
         block_shape=_i([2]), crops=_i([[0, 0]]), error=True),
    case("BatchToSpaceND", name="error_crop_too_large", input=_r(2, 2, 1), block_shape=_i([2]),
         crops=_i([[3, 2]]), error=True),
    case("BatchToSpaceND", name="error_negative_crop", input=_r(2, 2, 1), block_shape=_i([2]),
         crops=_i([[-1, 0]]), error=True),
    case("SpaceToBatch", name="float32", input=_r(1, 4, 6, 2), paddings=_i([[0, 0], [1, 1]]),
         block_size=2),
    case("BatchToSpace", name="float32", input=_r(4, 2, 3, 2), crops=_i([[0, 1], [1, 0]]),
         block_size=2),
]

DEPTH = [
    case("DepthToSpace", name="float32", input=_r(2, 2, 3, 8), block_size=2),
    case("DepthToSpace", name="int8_block3", input=_seq(1, 2, 1, 18, dtype=np.int8), block_size=3),
    case("DepthToSpace", name="bfloat16", input=_r(1, 1, 2, 4, dtype=_BF16), block_size=2),
    case("DepthToSpace", name="empty", input=_r(0, 2, 2, 4), block_size=2),
    case("DepthToSpace", name="error_depth", input=_r(1, 2, 2, 6), block_size=2, error=True,
         dynamic=True),
    case("SpaceToDepth", name="float32", input=_r(2, 4, 6, 3), block_size=2),
    case("SpaceToDepth", name="uint8_block3", input=_seq(1, 3, 6, 2, dtype=np.uint8), block_size=3),
    case("SpaceToDepth", name="float16", input=_r(1, 2, 2, 1, dtype=np.float16), block_size=2),
    case("SpaceToDepth", name="error_size", input=_r(1, 3, 4, 1), block_size=2, error=True,
         dynamic=True),
]

_W3 = _r(2, 3, 2, 3, 4)
CONV3D = [
    case("Conv3D", name="same", input=_r(2, 4, 5, 6, 3), filter=_W3, strides=[1] * 5,
         padding="SAME", atol=1e-5),
    case("Conv3D", name="valid_strided", input=_r(1, 5, 7, 6, 3), filter=_W3,
         strides=[1, 2, 1, 2, 1], padding="VALID", atol=1e-5),
    case("Conv3D", name="float64", input=_r(1, 3, 4, 4, 3, dtype=np.float64),
         filter=_W3.astype(np.float64), strides=[1] * 5, padding="VALID"),
    case("Conv3D", name="float16", input=_r(1, 3, 4, 4, 3, dtype=np.float16),
         filter=_W3.astype(np.float16), strides=[1] * 5, padding="SAME", atol=2e-2, rtol=1e-2),
    case("Conv3D", name="bfloat16", input=_r(1, 3, 4, 4, 3, dtype=_BF16),
         filter=_W3.astype(_BF16), strides=[1] * 5, padding="SAME", atol=1e-1, rtol=3e-2),
    case("Conv3D", name="error_depth", input=_r(1, 3, 4, 4, 2), filter=_W3, strides=[1] * 5,
         padding="SAME", error=True, dynamic=True),
    case("Conv3D", name="empty_batch", input=_r(0, 3, 4, 4, 3), filter=_W3, strides=[1] * 5,
         padding="SAME"),
    case("Conv3D", name="window_larger_valid", input=_r(1, 1, 4, 4, 3), filter=_W3,
         strides=[1] * 5, padding="VALID", dynamic=True),
    case("Conv3DBackpropInputV2", name="error_shape", input_sizes=_i([1, 4, 4, 4, 3]),
         filter=_W3, out_backprop=_r(1, 3, 2, 2, 4), strides=[1, 2, 2, 2, 1], padding="SAME",
         error=True, dynamic=True),
    case("Conv3DBackpropInputV2", name="same_strided", input_sizes=_i([2, 5, 6, 7, 3]),
         filter=_W3, out_backprop=_r(2, 3, 3, 4, 4), strides=[1, 2, 2, 2, 1], padding="SAME",
         atol=1e-5),
    case("Conv3DBackpropInputV2", name="valid_unused", input_sizes=_i([1, 6, 6, 5, 3], np.int64),
         filter=_W3, out_backprop=_r(1, 3, 2, 2, 4), strides=[1, 2, 2, 2, 1], padding="VALID",
         atol=1e-5),
    case("Conv3DBackpropInputV2", name="stride_gt_kernel", input_sizes=_i([1, 7, 7, 7, 3]),
         filter=_W3, out_backprop=_r(1, 3, 3, 3, 4), strides=[1, 3, 3, 3, 1], padding="SAME",
         atol=1e-5),
    case("Conv3DBackpropInputV2", name="float64", input_sizes=_i([1, 4, 4, 4, 3]),
         filter=_W3.astype(np.float64), out_backprop=_r(1, 2, 2, 2, 4, dtype=np.float64),
         strides=[1, 2, 2, 2, 1], padding="SAME"),
]

_NAN_CUBE = np.array([nan, 1, -inf, 2, -inf, -inf, -inf, -inf], np.float32).reshape(1, 2, 2, 2, 1)
POOL3D = [
    case("MaxPool3D", name="same", input=_r(2, 4, 5, 6, 3), ksize=[1, 2, 2, 2, 1],
         strides=[1, 2, 2, 2, 1], padding="SAME"),
    case("MaxPool3D", name="valid_overlap", input=_r(1, 5, 5, 4, 2), ksize=[1, 3, 2, 2, 1],
         strides=[1, 1, 2, 1, 1], padding="VALID"),
    case("MaxPool3D", name="bfloat16", input=_r(1, 4, 4, 4, 2, dtype=_BF16),
         ksize=[1, 2, 2, 2, 1], strides=[1, 2, 2, 2, 1], padding="SAME"),
    case("MaxPool3D", name="nan_inf", input=_NAN_CUBE, ksize=[1, 2, 2, 2, 1],
         strides=[1, 1, 1, 1, 1], padding="SAME"),
    case("MaxPool3D", name="empty", input=_r(0, 2, 2, 2, 1), ksize=[1, 2, 2, 2, 1],
         strides=[1] * 5, padding="SAME"),
    case("AvgPool3D", name="same", input=_r(2, 4, 5, 6, 3), ksize=[1, 2, 3, 2, 1],
         strides=[1, 2, 2, 2, 1], padding="SAME"),
    case("AvgPool3D", name="valid", input=_r(1, 5, 5, 4, 2), ksize=[1, 3, 2, 2, 1],
         strides=[1, 1, 2, 1, 1], padding="VALID"),
    case("AvgPool3D", name="bfloat16", input=_r(1, 4, 4, 4, 2, dtype=_BF16),
         ksize=[1, 2, 2, 2, 1], strides=[1, 2, 2, 2, 1], padding="SAME", atol=2e-2),
    case("AvgPool3D", name="nan_inf", input=_NAN_CUBE, ksize=[1, 2, 2, 2, 1],
         strides=[1, 1, 1, 1, 1], padding="SAME"),
]

LRN = [
    case("LRN", name="default", input=_r(2, 3, 4, 12)),
    case("LRN", name="radius2", input=_r(1, 2, 3, 7), depth_radius=2, bias=2.0, alpha=1e-2,
         beta=0.75),
    case("LRN", name="radius_wide", input=_r(1, 2, 2, 3), depth_radius=8, bias=0.5, alpha=0.3,
         beta=1.2),
    case("LRN", name="float16", input=_r(1, 2, 2, 6, dtype=np.float16), depth_radius=1),
    case("LRN", name="empty", input=_r(0, 2, 2, 6)),
    case("LRN", name="nan_inf",
         input=np.array([nan, 1, inf, 2, -inf, 3], np.float32).reshape(1, 1, 2, 3),
         depth_radius=1),
]

_TIES = np.array([1, 3, 3, 2, 3, 0, 5, 5, 5], np.float32).reshape(1, 3, 3, 1)
ARGMAX = [
    case("MaxPoolWithArgmax", name="same", input=_r(2, 5, 6, 3), ksize=[1, 2, 2, 1],
         strides=[1, 2, 2, 1], padding="SAME"),
    case("MaxPoolWithArgmax", name="valid_batch_index", input=_r(2, 5, 6, 3), ksize=[1, 3, 2, 1],
         strides=[1, 1, 2, 1], padding="VALID", include_batch_in_index=True),
    case("MaxPoolWithArgmax", name="int32_argmax", input=_r(1, 4, 4, 2), ksize=[1, 2, 2, 1],
         strides=[1, 2, 2, 1], padding="VALID", Targmax="int32"),
    case("MaxPoolWithArgmax", name="ties", input=_TIES, ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1],
         padding="SAME"),
    case("MaxPoolWithArgmax", name="nan_inf",
         input=np.array([nan, 1, 2, nan, -inf, -inf, 3, nan, nan], np.float32).reshape(1, 3, 3, 1),
         ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="SAME"),
    case("MaxPoolWithArgmax", name="float64", input=_r(1, 4, 4, 2, dtype=np.float64),
         ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME"),
    case("MaxPoolWithArgmax", name="int32", input=_seq(1, 3, 3, 2, dtype=np.int32) % 5,
         ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="VALID"),
    case("MaxPoolWithArgmax", name="float16", input=_r(1, 4, 4, 2, dtype=np.float16),
         ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME"),
]

_BPI_W = _r(3, 3, 2, 3)
BACKPROP = [
    case("Conv2DBackpropInput", name="explicit_asymmetric_strided", input_sizes=_i([1, 7, 6, 2]),
         filter=_BPI_W, out_backprop=_r(1, 4, 4, 3), strides=[1, 2, 2, 1], padding="EXPLICIT",
         explicit_paddings=[0, 0, 2, 0, 1, 2, 0, 0], atol=1e-5),
    case("Conv2DBackpropInput", name="stride_gt_kernel_valid", input_sizes=_i([1, 9, 8, 2]),
         filter=_BPI_W, out_backprop=_r(1, 2, 2, 3), strides=[1, 4, 5, 1], padding="VALID",
         atol=1e-5),
    case("Conv2DBackpropInput", name="explicit_stride_gt_kernel", input_sizes=_i([1, 8, 8, 2]),
         filter=_BPI_W, out_backprop=_r(1, 3, 2, 3), strides=[1, 4, 5, 1], padding="EXPLICIT",
         explicit_paddings=[0, 0, 1, 2, 0, 1, 0, 0], atol=1e-5),
]

CASES = SPACE_BATCH + DEPTH + CONV3D + POOL3D + LRN + ARGMAX + BACKPROP
