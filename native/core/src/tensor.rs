//! The tensor the readers produce: a shape over one typed buffer.
//!
//! float16 and bfloat16 are kept as their raw 16-bit patterns (no arithmetic happens here);
//! complex numbers as (real, imaginary) pairs; strings as arbitrary bytes.

use crate::dtype::DType;
use crate::wire::le_array;

/// The elements of a tensor in row-major order, one variant per dtype.
#[derive(Clone, Debug, PartialEq)]
pub enum Storage {
    Float16(Vec<u16>),
    BFloat16(Vec<u16>),
    Float32(Vec<f32>),
    Float64(Vec<f64>),
    Int8(Vec<i8>),
    Int16(Vec<i16>),
    Int32(Vec<i32>),
    Int64(Vec<i64>),
    UInt8(Vec<u8>),
    UInt16(Vec<u16>),
    UInt32(Vec<u32>),
    UInt64(Vec<u64>),
    Bool(Vec<bool>),
    Complex64(Vec<[f32; 2]>),
    Complex128(Vec<[f64; 2]>),
    String(Vec<Vec<u8>>),
}

/// Applies `$body` to the buffer of any variant, bound as `$v`.
macro_rules! each_storage {
    ($storage:expr, $v:ident => $body:expr) => {
        match $storage {
            Storage::Float16($v) | Storage::BFloat16($v) | Storage::UInt16($v) => $body,
            Storage::Float32($v) => $body,
            Storage::Float64($v) => $body,
            Storage::Int8($v) => $body,
            Storage::Int16($v) => $body,
            Storage::Int32($v) => $body,
            Storage::Int64($v) => $body,
            Storage::UInt8($v) => $body,
            Storage::UInt32($v) => $body,
            Storage::UInt64($v) => $body,
            Storage::Bool($v) => $body,
            Storage::Complex64($v) => $body,
            Storage::Complex128($v) => $body,
            Storage::String($v) => $body,
        }
    };
}

impl Storage {
    pub fn dtype(&self) -> DType {
        match self {
            Self::Float16(_) => DType::Float16,
            Self::BFloat16(_) => DType::BFloat16,
            Self::Float32(_) => DType::Float32,
            Self::Float64(_) => DType::Float64,
            Self::Int8(_) => DType::Int8,
            Self::Int16(_) => DType::Int16,
            Self::Int32(_) => DType::Int32,
            Self::Int64(_) => DType::Int64,
            Self::UInt8(_) => DType::UInt8,
            Self::UInt16(_) => DType::UInt16,
            Self::UInt32(_) => DType::UInt32,
            Self::UInt64(_) => DType::UInt64,
            Self::Bool(_) => DType::Bool,
            Self::Complex64(_) => DType::Complex64,
            Self::Complex128(_) => DType::Complex128,
            Self::String(_) => DType::String,
        }
    }

    pub fn len(&self) -> usize {
        each_storage!(self, v => v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Decodes raw little-endian elements (a shard extent or `tensor_content`). None for
    /// strings, which are not fixed-width; a trailing partial element is ignored, so callers
    /// check the length against the shape first.
    pub fn from_le_bytes(dtype: DType, bytes: &[u8]) -> Option<Self> {
        fn decode<const N: usize, T>(bytes: &[u8], from: fn([u8; N]) -> T) -> Vec<T> {
            bytes.chunks_exact(N).map(|c| from(le_array(c))).collect()
        }
        fn pair<const N: usize, const H: usize, T>(b: [u8; N], from: fn([u8; H]) -> T) -> [T; 2] {
            [from(le_array(&b[..H])), from(le_array(&b[H..]))]
        }
        Some(match dtype {
            DType::Float16 => Self::Float16(decode(bytes, u16::from_le_bytes)),
            DType::BFloat16 => Self::BFloat16(decode(bytes, u16::from_le_bytes)),
            DType::Float32 => Self::Float32(decode(bytes, f32::from_le_bytes)),
            DType::Float64 => Self::Float64(decode(bytes, f64::from_le_bytes)),
            DType::Int8 => Self::Int8(decode(bytes, i8::from_le_bytes)),
            DType::Int16 => Self::Int16(decode(bytes, i16::from_le_bytes)),
            DType::Int32 => Self::Int32(decode(bytes, i32::from_le_bytes)),
            DType::Int64 => Self::Int64(decode(bytes, i64::from_le_bytes)),
            DType::UInt8 => Self::UInt8(bytes.to_vec()),
            DType::UInt16 => Self::UInt16(decode(bytes, u16::from_le_bytes)),
            DType::UInt32 => Self::UInt32(decode(bytes, u32::from_le_bytes)),
            DType::UInt64 => Self::UInt64(decode(bytes, u64::from_le_bytes)),
            DType::Bool => Self::Bool(bytes.iter().map(|&b| b != 0).collect()),
            DType::Complex64 => {
                Self::Complex64(decode(bytes, |b: [u8; 8]| pair(b, f32::from_le_bytes)))
            }
            DType::Complex128 => {
                Self::Complex128(decode(bytes, |b: [u8; 16]| pair(b, f64::from_le_bytes)))
            }
            DType::String => return None,
        })
    }

    /// The elements as raw little-endian bytes (the inverse of [`Storage::from_le_bytes`]);
    /// empty for strings, which are not fixed-width.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        fn encode<T: Copy, const N: usize>(values: &[T], to: fn(T) -> [u8; N]) -> Vec<u8> {
            values.iter().flat_map(|&v| to(v)).collect()
        }
        match self {
            Self::Float16(v) | Self::BFloat16(v) | Self::UInt16(v) => encode(v, u16::to_le_bytes),
            Self::Float32(v) => encode(v, f32::to_le_bytes),
            Self::Float64(v) => encode(v, f64::to_le_bytes),
            Self::Int8(v) => encode(v, i8::to_le_bytes),
            Self::Int16(v) => encode(v, i16::to_le_bytes),
            Self::Int32(v) => encode(v, i32::to_le_bytes),
            Self::Int64(v) => encode(v, i64::to_le_bytes),
            Self::UInt8(v) => v.clone(),
            Self::UInt32(v) => encode(v, u32::to_le_bytes),
            Self::UInt64(v) => encode(v, u64::to_le_bytes),
            Self::Bool(v) => v.iter().map(|&b| u8::from(b)).collect(),
            Self::Complex64(v) => v.iter().flat_map(|c| encode(c, f32::to_le_bytes)).collect(),
            Self::Complex128(v) => v.iter().flat_map(|c| encode(c, f64::to_le_bytes)).collect(),
            Self::String(_) => Vec::new(),
        }
    }
}

/// A dense tensor: a fully defined shape and its elements.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    shape: Vec<usize>,
    storage: Storage,
}

impl Tensor {
    /// A tensor of `shape` over `storage`; None if the element counts differ.
    pub fn new(shape: Vec<usize>, storage: Storage) -> Option<Self> {
        (element_count(&shape) == Some(storage.len())).then_some(Self { shape, storage })
    }

    pub fn dtype(&self) -> DType {
        self.storage.dtype()
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    pub fn into_storage(self) -> Storage {
        self.storage
    }
}

/// The number of elements of `shape`, None if it overflows.
pub fn element_count(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// An element type kernels can be generic over: how to view a [`Storage`] as a slice of it and
/// how to wrap a vector of it back into one. float16/bfloat16 are not elements (they are bit
/// patterns; kernels widen them to f32 first).
pub trait Element: Copy + Send + Sync + 'static {
    const DTYPE: DType;
    fn slice(storage: &Storage) -> Option<&[Self]>;
    fn slice_mut(storage: &mut Storage) -> Option<&mut [Self]>;
    fn wrap(values: Vec<Self>) -> Storage;
}

macro_rules! element {
    ($t:ty, $variant:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            fn slice(storage: &Storage) -> Option<&[Self]> {
                match storage {
                    Storage::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn slice_mut(storage: &mut Storage) -> Option<&mut [Self]> {
                match storage {
                    Storage::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn wrap(values: Vec<Self>) -> Storage {
                Storage::$variant(values)
            }
        }
    };
}

element!(f32, Float32);
element!(f64, Float64);
element!(i8, Int8);
element!(i16, Int16);
element!(i32, Int32);
element!(i64, Int64);
element!(u8, UInt8);
element!(u32, UInt32);
element!(u64, UInt64);
element!(bool, Bool);
element!([f32; 2], Complex64);
element!([f64; 2], Complex128);

impl Tensor {
    /// A tensor of `shape` holding `values`; the caller guarantees the count matches (kernels
    /// compute both from the same shape), which debug builds check.
    pub fn from_vec<T: Element>(shape: Vec<usize>, values: Vec<T>) -> Self {
        debug_assert_eq!(element_count(&shape), Some(values.len()));
        Self {
            shape,
            storage: T::wrap(values),
        }
    }

    /// A scalar.
    pub fn scalar<T: Element>(value: T) -> Self {
        Self::from_vec(Vec::new(), vec![value])
    }

    /// A tensor of byte strings.
    pub fn strings(shape: Vec<usize>, values: Vec<Vec<u8>>) -> Self {
        debug_assert_eq!(element_count(&shape), Some(values.len()));
        Self {
            shape,
            storage: Storage::String(values),
        }
    }

    /// The elements as a slice of `T`, None if the dtype is another.
    pub fn values<T: Element>(&self) -> Option<&[T]> {
        T::slice(&self.storage)
    }

    /// The elements as a mutable slice of `T` (for kernels that update their own output in
    /// place), None if the dtype is another.
    pub fn values_mut<T: Element>(&mut self) -> Option<&mut [T]> {
        T::slice_mut(&mut self.storage)
    }

    /// The byte strings of a string tensor.
    pub fn string_values(&self) -> Option<&[Vec<u8>]> {
        match &self.storage {
            Storage::String(v) => Some(v),
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        self.storage.len()
    }

    pub fn is_empty(&self) -> bool {
        self.storage.is_empty()
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The same elements under another shape with the same element count.
    pub fn reshaped(self, shape: Vec<usize>) -> Option<Self> {
        Self::new(shape, self.storage)
    }

    /// Gives these elements `shape` in place; false (and nothing changed) if the element
    /// counts differ.
    pub fn set_shape(&mut self, shape: Vec<usize>) -> bool {
        let fits = element_count(&shape) == Some(self.storage.len());
        if fits {
            self.shape = shape;
        }
        fits
    }
}
