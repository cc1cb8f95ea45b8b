//! The numeric traits the math kernels are generic over (`Real` for f32/f64, `Int` for the
//! eight integer types), and the macros that dispatch a tensor's storage to a generic function
//! of the right element type. float16 and bfloat16 go through f32 and are rounded back once per
//! op, as TensorFlow's CPU kernels (Eigen's half types) compute them.

use std::fmt::Debug;

use rayon::prelude::*;

use crate::tensor::Element;

/// Elementwise work below this many elements stays on the calling thread.
pub const PARALLEL_MIN: usize = 32 * 1024;

/// `f` over every element, across threads when the work is large enough to pay for them.
pub fn par_map<T: Copy + Sync, O: Send>(v: &[T], f: impl Fn(T) -> O + Sync + Send) -> Vec<O> {
    if v.len() < PARALLEL_MIN {
        return v.iter().copied().map(f).collect();
    }
    let mut out = Vec::with_capacity(v.len());
    v.par_iter()
        .with_min_len(PARALLEL_MIN / 4)
        .map(|&x| f(x))
        .collect_into_vec(&mut out);
    out
}

/// f32 and f64: num-traits' `Float` plus what it lacks.
pub trait Real: num_traits::Float + Element + Default + Debug {
    fn erf(self) -> Self;
    fn erfc(self) -> Self;
    /// Round half to even (TensorFlow's Round and Rint).
    fn rint(self) -> Self;
    fn of(x: f64) -> Self;
}

impl Real for f32 {
    fn erf(self) -> Self {
        libm::erff(self)
    }
    fn erfc(self) -> Self {
        libm::erfcf(self)
    }
    fn rint(self) -> Self {
        self.round_ties_even()
    }
    fn of(x: f64) -> Self {
        x as f32
    }
}

impl Real for f64 {
    fn erf(self) -> Self {
        libm::erf(self)
    }
    fn erfc(self) -> Self {
        libm::erfc(self)
    }
    fn rint(self) -> Self {
        self.round_ties_even()
    }
    fn of(x: f64) -> Self {
        x
    }
}

/// The integer types, with TensorFlow's wrapping arithmetic. Divisions are only called with
/// non-zero divisors (kernels check first, as TensorFlow does).
pub trait Int:
    Copy
    + PartialOrd
    + Ord
    + Default
    + Debug
    + Send
    + Sync
    + 'static
    + std::ops::BitAnd<Output = Self>
    + std::ops::BitOr<Output = Self>
    + std::ops::BitXor<Output = Self>
    + std::ops::Not<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;
    const MIN: Self;
    const MAX: Self;
    const BITS: u32;
    fn wadd(self, o: Self) -> Self;
    fn wsub(self, o: Self) -> Self;
    fn wmul(self, o: Self) -> Self;
    fn wneg(self) -> Self;
    fn wabs(self) -> Self;
    fn negative(self) -> bool;
    /// C's division, toward zero; MIN / -1 wraps to MIN.
    fn tdiv(self, o: Self) -> Self;
    /// C's remainder, with the sign of self.
    fn trem(self, o: Self) -> Self;
    fn shl(self, n: u32) -> Self;
    fn shr(self, n: u32) -> Self;
    fn as_i128(self) -> i128;
    /// The low bits of `x` (wrapping, as C's conversions between integer types).
    fn wrap(x: i128) -> Self;
}

macro_rules! int_impl {
    ($($t:ty),*) => {$(
        impl Int for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const MIN: Self = <$t>::MIN;
            const MAX: Self = <$t>::MAX;
            const BITS: u32 = <$t>::BITS;
            fn wadd(self, o: Self) -> Self { self.wrapping_add(o) }
            fn wsub(self, o: Self) -> Self { self.wrapping_sub(o) }
            fn wmul(self, o: Self) -> Self { self.wrapping_mul(o) }
            fn wneg(self) -> Self { self.wrapping_neg() }
            #[allow(unused_comparisons)]
            fn wabs(self) -> Self { if self < 0 { self.wrapping_neg() } else { self } }
            #[allow(unused_comparisons)]
            fn negative(self) -> bool { self < 0 }
            fn tdiv(self, o: Self) -> Self { self.wrapping_div(o) }
            fn trem(self, o: Self) -> Self { self.wrapping_rem(o) }
            fn shl(self, n: u32) -> Self { self.wrapping_shl(n) }
            fn shr(self, n: u32) -> Self { self.wrapping_shr(n) }
            fn as_i128(self) -> i128 { self as i128 }
            fn wrap(x: i128) -> Self { x as $t }
        }
    )*};
}

int_impl!(i8, i16, i32, i64, u8, u16, u32, u64);

/// `$f` (a closure or generic function, instantiated per element type) over f32/f64 tensors,
/// half types through f32, giving the same dtype: `Option<KResult<Tensor>>`, None for other
/// dtypes.
macro_rules! float_unary {
    ($t:expr, $f:expr) => {{
        use $crate::kernels::util::{f32_to_half, half_to_f32, make};
        use $crate::tensor::Storage as S;
        let t: &$crate::tensor::Tensor = $t;
        use $crate::kernels::math::num::par_map;
        let storage = match t.storage() {
            S::Float32(v) => Some(S::Float32(par_map(v, $f))),
            S::Float64(v) => Some(S::Float64(par_map(v, $f))),
            S::Float16(_) | S::BFloat16(_) => half_to_f32(t).and_then(|w| {
                let out: Vec<f32> = par_map(&w, $f);
                f32_to_half(t.dtype(), &out)
            }),
            _ => None,
        };
        storage.map(|s| make(t.shape().to_vec(), s))
    }};
}

/// `$f` over float tensors (half types widened), giving a bool tensor.
macro_rules! float_test {
    ($t:expr, $f:expr) => {{
        use $crate::kernels::util::{half_to_f32, make};
        use $crate::tensor::Storage as S;
        let t: &$crate::tensor::Tensor = $t;
        let out: Option<Vec<bool>> = match t.storage() {
            S::Float32(v) => Some(v.iter().copied().map($f).collect()),
            S::Float64(v) => Some(v.iter().copied().map($f).collect()),
            S::Float16(_) | S::BFloat16(_) => {
                half_to_f32(t).map(|w| w.into_iter().map($f).collect())
            }
            _ => None,
        };
        out.map(|v| make(t.shape().to_vec(), S::Bool(v)))
    }};
}

/// `$f` over integer tensors, same dtype out.
macro_rules! int_unary {
    ($t:expr, $f:expr) => {{
        use $crate::kernels::util::make;
        use $crate::tensor::Storage as S;
        let t: &$crate::tensor::Tensor = $t;
        let storage = match t.storage() {
            S::Int8(v) => Some(S::Int8(v.iter().copied().map($f).collect())),
            S::Int16(v) => Some(S::Int16(v.iter().copied().map($f).collect())),
            S::Int32(v) => Some(S::Int32(v.iter().copied().map($f).collect())),
            S::Int64(v) => Some(S::Int64(v.iter().copied().map($f).collect())),
            S::UInt8(v) => Some(S::UInt8(v.iter().copied().map($f).collect())),
            S::UInt16(v) => Some(S::UInt16(v.iter().copied().map($f).collect())),
            S::UInt32(v) => Some(S::UInt32(v.iter().copied().map($f).collect())),
            S::UInt64(v) => Some(S::UInt64(v.iter().copied().map($f).collect())),
            _ => None,
        };
        storage.map(|s| make(t.shape().to_vec(), s))
    }};
}

/// `$f` (Complex<T> -> Complex<T>) over complex tensors.
macro_rules! complex_unary {
    ($t:expr, $f:expr) => {{
        use num_complex::Complex;
        use $crate::kernels::util::make;
        use $crate::tensor::Storage as S;
        let t: &$crate::tensor::Tensor = $t;
        let storage = match t.storage() {
            S::Complex64(v) => Some(S::Complex64(
                v.iter()
                    .map(|c| {
                        let z: Complex<f32> = ($f)(Complex::new(c[0], c[1]));
                        [z.re, z.im]
                    })
                    .collect(),
            )),
            S::Complex128(v) => Some(S::Complex128(
                v.iter()
                    .map(|c| {
                        let z: Complex<f64> = ($f)(Complex::new(c[0], c[1]));
                        [z.re, z.im]
                    })
                    .collect(),
            )),
            _ => None,
        };
        storage.map(|s| make(t.shape().to_vec(), s))
    }};
}

/// `$f(x, y)` over two float tensors of one dtype with broadcasting, same dtype out.
macro_rules! float_binary {
    ($a:expr, $b:expr, $f:expr) => {{
        use $crate::kernels::math::broadcast::map2;
        use $crate::kernels::util::{f32_to_half, half_to_f32, make};
        use $crate::tensor::Storage as S;
        let (a, b): (&$crate::tensor::Tensor, &$crate::tensor::Tensor) = ($a, $b);
        match (a.storage(), b.storage()) {
            (S::Float32(p), S::Float32(q)) => {
                Some(map2(p, a.shape(), q, b.shape(), $f).and_then(|(s, v)| make(s, S::Float32(v))))
            }
            (S::Float64(p), S::Float64(q)) => {
                Some(map2(p, a.shape(), q, b.shape(), $f).and_then(|(s, v)| make(s, S::Float64(v))))
            }
            (S::Float16(_), S::Float16(_)) | (S::BFloat16(_), S::BFloat16(_)) => {
                let p = half_to_f32(a).unwrap_or_default();
                let q = half_to_f32(b).unwrap_or_default();
                Some(map2(&p, a.shape(), &q, b.shape(), $f).and_then(|(s, v)| {
                    let storage = f32_to_half(a.dtype(), &v).unwrap_or(S::Float32(v));
                    make(s, storage)
                }))
            }
            _ => None,
        }
    }};
}

/// `$f(x, y)` over two float tensors, bool out.
macro_rules! float_compare {
    ($a:expr, $b:expr, $f:expr) => {{
        use $crate::kernels::math::broadcast::map2;
        use $crate::kernels::util::{half_to_f32, make};
        use $crate::tensor::Storage as S;
        let (a, b): (&$crate::tensor::Tensor, &$crate::tensor::Tensor) = ($a, $b);
        match (a.storage(), b.storage()) {
            (S::Float32(p), S::Float32(q)) => Some(map2(p, a.shape(), q, b.shape(), $f)),
            (S::Float64(p), S::Float64(q)) => Some(map2(p, a.shape(), q, b.shape(), $f)),
            (S::Float16(_), S::Float16(_)) | (S::BFloat16(_), S::BFloat16(_)) => {
                let p = half_to_f32(a).unwrap_or_default();
                let q = half_to_f32(b).unwrap_or_default();
                Some(map2(&p, a.shape(), &q, b.shape(), $f))
            }
            _ => None,
        }
        .map(|r| r.and_then(|(s, v)| make(s, S::Bool(v))))
    }};
}

/// `$f(x, y)` over two integer tensors of one dtype; `$out` wraps the result vector (`same`
/// for the operands' dtype, `bool` for comparisons).
macro_rules! int_binary {
    ($a:expr, $b:expr, $f:expr) => {
        int_binary!(@arms $a, $b, $f, same)
    };
    ($a:expr, $b:expr, $f:expr, bool) => {
        int_binary!(@arms $a, $b, $f, bool)
    };
    (@wrap same, $variant:ident, $v:expr) => { S::$variant($v) };
    (@wrap bool, $variant:ident, $v:expr) => { S::Bool($v) };
    (@arms $a:expr, $b:expr, $f:expr, $out:ident) => {{
        use $crate::kernels::math::broadcast::map2;
        use $crate::kernels::util::make;
        use $crate::tensor::Storage as S;
        let (a, b): (&$crate::tensor::Tensor, &$crate::tensor::Tensor) = ($a, $b);
        macro_rules! arm {
            ($p:expr, $q:expr, $variant:ident) => {
                Some(map2($p, a.shape(), $q, b.shape(), $f)
                    .and_then(|(s, v)| make(s, int_binary!(@wrap $out, $variant, v))))
            };
        }
        match (a.storage(), b.storage()) {
            (S::Int8(p), S::Int8(q)) => arm!(p, q, Int8),
            (S::Int16(p), S::Int16(q)) => arm!(p, q, Int16),
            (S::Int32(p), S::Int32(q)) => arm!(p, q, Int32),
            (S::Int64(p), S::Int64(q)) => arm!(p, q, Int64),
            (S::UInt8(p), S::UInt8(q)) => arm!(p, q, UInt8),
            (S::UInt16(p), S::UInt16(q)) => arm!(p, q, UInt16),
            (S::UInt32(p), S::UInt32(q)) => arm!(p, q, UInt32),
            (S::UInt64(p), S::UInt64(q)) => arm!(p, q, UInt64),
            _ => None,
        }
    }};
}

/// `$f(x, y)` over two complex tensors (as `Complex<T>`), complex out.
macro_rules! complex_binary {
    ($a:expr, $b:expr, $f:expr) => {{
        use num_complex::Complex;
        use $crate::kernels::math::broadcast::map2;
        use $crate::kernels::util::make;
        use $crate::tensor::Storage as S;
        let (a, b): (&$crate::tensor::Tensor, &$crate::tensor::Tensor) = ($a, $b);
        match (a.storage(), b.storage()) {
            (S::Complex64(p), S::Complex64(q)) => Some(
                map2(p, a.shape(), q, b.shape(), |x: [f32; 2], y: [f32; 2]| {
                    let z: Complex<f32> = ($f)(Complex::new(x[0], x[1]), Complex::new(y[0], y[1]));
                    [z.re, z.im]
                })
                .and_then(|(s, v)| make(s, S::Complex64(v))),
            ),
            (S::Complex128(p), S::Complex128(q)) => Some(
                map2(p, a.shape(), q, b.shape(), |x: [f64; 2], y: [f64; 2]| {
                    let z: Complex<f64> = ($f)(Complex::new(x[0], x[1]), Complex::new(y[0], y[1]));
                    [z.re, z.im]
                })
                .and_then(|(s, v)| make(s, S::Complex128(v))),
            ),
            _ => None,
        }
    }};
}

pub(crate) use {
    complex_binary, complex_unary, float_binary, float_compare, float_test, float_unary,
    int_binary, int_unary,
};

/// `$body`, an expression giving a `Vec<T>` from a slice `$v: &[T]`, for an f32 or f64 tensor
/// (half types through f32, rounded back once): `Option<Storage>` of the tensor's dtype, None
/// for other dtypes.
macro_rules! real_map {
    ($t:expr, |$v:ident| $body:expr) => {{
        use $crate::kernels::util::{f32_to_half, half_to_f32};
        use $crate::tensor::Storage as S;
        let t: &$crate::tensor::Tensor = $t;
        match t.storage() {
            S::Float32($v) => Some(S::Float32($body)),
            S::Float64($v) => Some(S::Float64($body)),
            S::Float16(_) | S::BFloat16(_) => {
                let wide = half_to_f32(t).unwrap_or_default();
                let $v: &[f32] = &wide;
                let out: Vec<f32> = $body;
                f32_to_half(t.dtype(), &out)
            }
            _ => None,
        }
    }};
}

/// The elements of a float tensor as f64 (half types exactly), None for other dtypes.
pub fn wide_floats(t: &crate::tensor::Tensor) -> Option<Vec<f64>> {
    use crate::tensor::Storage as S;
    match t.storage() {
        S::Float32(v) => Some(v.iter().map(|&x| f64::from(x)).collect()),
        S::Float64(v) => Some(v.clone()),
        S::Float16(_) | S::BFloat16(_) => {
            crate::kernels::util::half_to_f32(t).map(|v| v.into_iter().map(f64::from).collect())
        }
        _ => None,
    }
}

/// f64 values rounded to the float dtype `dtype` (through f32 for the half types).
pub fn narrow_floats(dtype: crate::dtype::DType, values: Vec<f64>) -> crate::tensor::Storage {
    use crate::tensor::Storage as S;
    if dtype == crate::dtype::DType::Float64 {
        return S::Float64(values);
    }
    let narrow: Vec<f32> = values.into_iter().map(|x| x as f32).collect();
    crate::kernels::util::f32_to_half(dtype, &narrow).unwrap_or(S::Float32(narrow))
}

pub(crate) use real_map;
