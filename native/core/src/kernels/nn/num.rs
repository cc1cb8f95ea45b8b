//! The element types nn kernels compute in, and dispatch from a tensor's dtype to a kernel
//! generic over them. float16 and bfloat16 inputs are widened to f32, computed, and rounded
//! back once at the end, as TensorFlow's CPU kernels accumulate half types in f32.

use std::mem::MaybeUninit;

use crate::dtype::DType;
use crate::engine::kernel::{fail, KResult};
use crate::kernels::nn::gemm::{self, Product};
use crate::kernels::nn::output::zeroed;
use crate::kernels::util::{f32_to_half, half_to_f32};
use crate::tensor::{Storage, Tensor};

/// A ring element: what matrix products, convolutions and bias additions need. Integer
/// arithmetic wraps, as TensorFlow's does.
pub trait Num: Copy + Send + Sync + Default + 'static {
    /// Whether [`Num::conj`] changes values.
    const COMPLEX: bool = false;
    fn add(self, other: Self) -> Self;
    fn mul(self, other: Self) -> Self;
    /// The complex conjugate (the identity for real types), for adjoint matrix products.
    fn conj(self) -> Self {
        self
    }
    /// `dst = a × b` as `p` describes them; f32 and f64 go to the gemm crate.
    fn product(
        p: &Product,
        a: &[Self],
        b: &[Self],
        dst: &mut [Self],
        parallel: bool,
    ) -> KResult<()> {
        let _ = parallel;
        gemm::fallback(p, a, b, dst)
    }
    /// [`Num::product`] into uninitialized memory that is exactly its row-major result,
    /// returned initialized; f32 and f64 write it directly (no zeroing first).
    fn product_into<'d>(
        p: &Product,
        a: &[Self],
        b: &[Self],
        dst: &'d mut [MaybeUninit<Self>],
        parallel: bool,
    ) -> KResult<&'d mut [Self]> {
        let dst = zeroed(dst);
        Self::product(p, a, b, dst, parallel)?;
        Ok(dst)
    }
    /// These values as f32 when `Self` is f32 (None otherwise): how a generic kernel takes a
    /// hand-tuned f32 path without unsafe casts.
    fn as_f32(values: &[Self]) -> Option<&[f32]> {
        let _ = values;
        None
    }
    /// [`Num::as_f32`] for a mutable slice.
    fn as_f32_mut(values: &mut [Self]) -> Option<&mut [f32]> {
        let _ = values;
        None
    }
    /// [`Num::as_f32`] for an output not yet written.
    fn as_f32_uninit(values: &mut [MaybeUninit<Self>]) -> Option<&mut [MaybeUninit<f32>]> {
        let _ = values;
        None
    }
}

/// An ordered real element: what max pooling needs.
pub trait Real: Num + PartialOrd {
    /// The smallest finite value, where max pooling starts.
    const LOWEST: Self;
}

/// A floating-point element: what averages and normalizations need.
pub trait Float: Real + std::ops::Div<Output = Self> {
    fn from_f64(x: f64) -> Self;
}

macro_rules! float {
    ($t:ty $(, { $($extra:tt)* })?) => {
        impl Num for $t {
            $($($extra)*)?
            #[inline(always)]
            fn add(self, other: Self) -> Self {
                self + other
            }
            #[inline(always)]
            fn mul(self, other: Self) -> Self {
                self * other
            }
            fn product(
                p: &Product,
                a: &[Self],
                b: &[Self],
                dst: &mut [Self],
                parallel: bool,
            ) -> KResult<()> {
                gemm::fast(p, a, b, dst, parallel)
            }
            fn product_into<'d>(
                p: &Product,
                a: &[Self],
                b: &[Self],
                dst: &'d mut [MaybeUninit<Self>],
                parallel: bool,
            ) -> KResult<&'d mut [Self]> {
                gemm::fast_into(p, a, b, dst, parallel)
            }
        }
        impl Real for $t {
            const LOWEST: Self = <$t>::MIN;
        }
        impl Float for $t {
            fn from_f64(x: f64) -> Self {
                x as $t
            }
        }
    };
}

float!(f32, {
    fn as_f32(values: &[Self]) -> Option<&[f32]> {
        Some(values)
    }
    fn as_f32_mut(values: &mut [Self]) -> Option<&mut [f32]> {
        Some(values)
    }
    fn as_f32_uninit(values: &mut [MaybeUninit<Self>]) -> Option<&mut [MaybeUninit<f32>]> {
        Some(values)
    }
});
float!(f64);

macro_rules! int {
    ($($t:ty),*) => {$(
        impl Num for $t {
            #[inline(always)]
            fn add(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
            #[inline(always)]
            fn mul(self, other: Self) -> Self {
                self.wrapping_mul(other)
            }
        }
        impl Real for $t {
            const LOWEST: Self = <$t>::MIN;
        }
    )*};
}

int!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! complex {
    ($t:ty) => {
        impl Num for [$t; 2] {
            const COMPLEX: bool = true;
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                [self[0] + o[0], self[1] + o[1]]
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                [
                    self[0] * o[0] - self[1] * o[1],
                    self[0] * o[1] + self[1] * o[0],
                ]
            }
            fn conj(self) -> Self {
                [self[0], -self[1]]
            }
        }
    };
}

complex!(f32);
complex!(f64);

/// A float32 tensor's elements, or an error naming `what` and its dtype.
pub fn f32_values<'a>(t: &'a Tensor, what: &str) -> KResult<&'a [f32]> {
    t.values::<f32>()
        .ok_or_else(|| fail(format!("{what} must be float32, got {}", t.dtype())))
}

/// `x` and `filter` as float32, when `T` is f32 and they hold at least `lens` values: how a
/// float32-only kernel (Winograd's, the narrow direct one) declines other element types and
/// buffers that do not match its shapes, leaving the convolution to the general path.
pub fn f32_inputs<'a, T: Num>(
    x: &'a [T],
    filter: &'a [T],
    lens: (usize, usize),
) -> Option<(&'a [f32], &'a [f32])> {
    let (x, filter) = (T::as_f32(x)?, T::as_f32(filter)?);
    (x.len() >= lens.0 && filter.len() >= lens.1).then_some((x, filter))
}

/// `count` zeros (default values), or an error rather than an abort when memory runs out.
pub fn zeros<T: Default + Clone>(count: usize) -> KResult<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(count)
        .map_err(|_| fail(format!("cannot allocate an output of {count} elements")))?;
    v.resize(count, T::default());
    Ok(v)
}

/// A kernel body generic over [`Num`] element types: gets every same-dtype input's elements.
pub trait NumOp {
    fn run<T: Num>(&self, inputs: &[&[T]]) -> KResult<Vec<T>>;
}

/// A kernel body generic over [`Real`] element types.
pub trait RealOp {
    fn run<T: Real>(&self, inputs: &[&[T]]) -> KResult<Vec<T>>;
}

/// A kernel body generic over [`Float`] element types (f32, f64; half types as f32).
pub trait FloatOp {
    fn run<T: Float>(&self, inputs: &[&[T]]) -> KResult<Vec<T>>;
}

/// The common dtype of `inputs`, which must be one of `allowed`.
pub fn common_dtype(inputs: &[&Tensor], allowed: &[DType], op: &str) -> KResult<DType> {
    let Some(first) = inputs.first() else {
        return Err(fail("no inputs"));
    };
    let dtype = first.dtype();
    if let Some((i, t)) = inputs.iter().enumerate().find(|(_, t)| t.dtype() != dtype) {
        return Err(fail(format!(
            "input {i} must be {dtype} like input 0, got {}",
            t.dtype()
        )));
    }
    if !allowed.contains(&dtype) {
        return Err(fail(format!("{op} has no kernel for {dtype}")));
    }
    Ok(dtype)
}

/// The same variant's buffer of every input, or an error if one holds another dtype.
fn slices<'a, T>(
    inputs: &[&'a Tensor],
    get: fn(&'a Storage) -> Option<&'a [T]>,
) -> KResult<Vec<&'a [T]>> {
    inputs
        .iter()
        .map(|t| get(t.storage()).ok_or_else(|| fail("inputs have different dtypes")))
        .collect()
}

/// Every input widened from float16/bfloat16 to f32.
fn widened(inputs: &[&Tensor]) -> KResult<Vec<Vec<f32>>> {
    inputs
        .iter()
        .map(|t| half_to_f32(t).ok_or_else(|| fail("inputs have different dtypes")))
        .collect()
}

/// The f32 results rounded to the half type `dtype`.
fn narrowed(dtype: DType, values: &[f32]) -> KResult<Storage> {
    f32_to_half(dtype, values).ok_or_else(|| fail(format!("internal: {dtype} is not a half type")))
}

/// Generates a dispatcher from a dtype to `$trait::run::<T>` over the listed storage variants.
macro_rules! dispatcher {
    ($name:ident, $trait:ident, $(($variant:ident, $t:ty)),*) => {
        /// Runs `op` on `inputs` (which share one of `allowed`'s dtypes) in their element type.
        pub fn $name(
            op: &impl $trait,
            inputs: &[&Tensor],
            allowed: &[DType],
            name: &str,
        ) -> KResult<Storage> {
            let dtype = common_dtype(inputs, allowed, name)?;
            match dtype {
                DType::Float16 | DType::BFloat16 => {
                    let wide = widened(inputs)?;
                    let views: Vec<&[f32]> = wide.iter().map(Vec::as_slice).collect();
                    narrowed(dtype, &op.run::<f32>(&views)?)
                }
                $(DType::$variant => {
                    let views = slices(inputs, |s| match s {
                        Storage::$variant(v) => Some(v.as_slice()),
                        _ => None,
                    })?;
                    Ok(Storage::$variant(op.run::<$t>(&views)?))
                })*
                other => Err(fail(format!("{name} has no kernel for {other}"))),
            }
        }
    };
}

dispatcher!(
    run_num,
    NumOp,
    (Float32, f32),
    (Float64, f64),
    (Int8, i8),
    (Int16, i16),
    (Int32, i32),
    (Int64, i64),
    (UInt8, u8),
    (UInt16, u16),
    (UInt32, u32),
    (UInt64, u64),
    (Complex64, [f32; 2]),
    (Complex128, [f64; 2])
);

dispatcher!(
    run_real,
    RealOp,
    (Float32, f32),
    (Float64, f64),
    (Int8, i8),
    (Int16, i16),
    (Int32, i32),
    (Int64, i64),
    (UInt8, u8),
    (UInt16, u16),
    (UInt32, u32),
    (UInt64, u64)
);

dispatcher!(run_float, FloatOp, (Float32, f32), (Float64, f64));

/// The float types every nn float kernel takes.
pub const FLOATS: [DType; 4] = [
    DType::Float16,
    DType::BFloat16,
    DType::Float32,
    DType::Float64,
];
