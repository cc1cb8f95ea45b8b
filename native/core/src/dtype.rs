//! The element types a tensor can hold, numbered as TensorFlow's `DataType` enum numbers them.

use crate::protos::DataType;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    Float16,
    BFloat16,
    Float32,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    Bool,
    Complex64,
    Complex128,
    String,
}

impl DType {
    /// The dtype of a `DataType` enum number as files store it; None for numbers that are not
    /// a tensor element type this crate holds (resource, variant, quantized and `_REF` types).
    pub fn from_proto(value: i32) -> Option<Self> {
        Some(match DataType::try_from(value).ok()? {
            DataType::DtHalf => Self::Float16,
            DataType::DtBfloat16 => Self::BFloat16,
            DataType::DtFloat => Self::Float32,
            DataType::DtDouble => Self::Float64,
            DataType::DtInt8 => Self::Int8,
            DataType::DtInt16 => Self::Int16,
            DataType::DtInt32 => Self::Int32,
            DataType::DtInt64 => Self::Int64,
            DataType::DtUint8 => Self::UInt8,
            DataType::DtUint16 => Self::UInt16,
            DataType::DtUint32 => Self::UInt32,
            DataType::DtUint64 => Self::UInt64,
            DataType::DtBool => Self::Bool,
            DataType::DtComplex64 => Self::Complex64,
            DataType::DtComplex128 => Self::Complex128,
            DataType::DtString => Self::String,
            _ => return None,
        })
    }

    /// The `DataType` enum number files store for this dtype.
    pub fn to_proto(self) -> i32 {
        let value = match self {
            Self::Float16 => DataType::DtHalf,
            Self::BFloat16 => DataType::DtBfloat16,
            Self::Float32 => DataType::DtFloat,
            Self::Float64 => DataType::DtDouble,
            Self::Int8 => DataType::DtInt8,
            Self::Int16 => DataType::DtInt16,
            Self::Int32 => DataType::DtInt32,
            Self::Int64 => DataType::DtInt64,
            Self::UInt8 => DataType::DtUint8,
            Self::UInt16 => DataType::DtUint16,
            Self::UInt32 => DataType::DtUint32,
            Self::UInt64 => DataType::DtUint64,
            Self::Bool => DataType::DtBool,
            Self::Complex64 => DataType::DtComplex64,
            Self::Complex128 => DataType::DtComplex128,
            Self::String => DataType::DtString,
        };
        value as i32
    }

    /// numpy's name for the dtype (`float32`, `bfloat16`, `string` for byte strings).
    pub fn name(self) -> &'static str {
        match self {
            Self::Float16 => "float16",
            Self::BFloat16 => "bfloat16",
            Self::Float32 => "float32",
            Self::Float64 => "float64",
            Self::Int8 => "int8",
            Self::Int16 => "int16",
            Self::Int32 => "int32",
            Self::Int64 => "int64",
            Self::UInt8 => "uint8",
            Self::UInt16 => "uint16",
            Self::UInt32 => "uint32",
            Self::UInt64 => "uint64",
            Self::Bool => "bool",
            Self::Complex64 => "complex64",
            Self::Complex128 => "complex128",
            Self::String => "string",
        }
    }

    /// Bytes per element in a shard or `tensor_content`; None for strings, which vary.
    pub fn item_size(self) -> Option<usize> {
        Some(match self {
            Self::Int8 | Self::UInt8 | Self::Bool => 1,
            Self::Float16 | Self::BFloat16 | Self::Int16 | Self::UInt16 => 2,
            Self::Float32 | Self::Int32 | Self::UInt32 => 4,
            Self::Float64 | Self::Int64 | Self::UInt64 | Self::Complex64 => 8,
            Self::Complex128 => 16,
            Self::String => return None,
        })
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
