//! Dtypes at the ABI: TensorFlow's `DataType` enum numbers, and their names as C strings.

use std::ffi::{c_char, c_int, CStr};

use savedmodel_core::DType;

/// `DT_INVALID`: what the dtype functions return on error.
pub(crate) const INVALID: c_int = 0;

/// The dtype of a `DataType` number, or an error naming `what` (the input it came with).
pub(crate) fn from_c(value: c_int, what: &str) -> Result<DType, String> {
    DType::from_proto(value).ok_or_else(|| {
        format!("{what}: dtype {value} is not a DataType the native engine supports")
    })
}

/// [`DType::name`] as a static C string.
pub(crate) fn c_name(dtype: DType) -> &'static CStr {
    match dtype {
        DType::Float16 => c"float16",
        DType::BFloat16 => c"bfloat16",
        DType::Float32 => c"float32",
        DType::Float64 => c"float64",
        DType::Int8 => c"int8",
        DType::Int16 => c"int16",
        DType::Int32 => c"int32",
        DType::Int64 => c"int64",
        DType::UInt8 => c"uint8",
        DType::UInt16 => c"uint16",
        DType::UInt32 => c"uint32",
        DType::UInt64 => c"uint64",
        DType::Bool => c"bool",
        DType::Complex64 => c"complex64",
        DType::Complex128 => c"complex128",
        DType::String => c"string",
    }
}

/// The name of `DataType` number `dtype` (numpy's spelling: "float32", "string"), a static
/// string; NULL for a number the engine does not support. Never fails, never sets the error.
#[no_mangle]
pub extern "C" fn sm_dtype_name(dtype: c_int) -> *const c_char {
    DType::from_proto(dtype).map_or(std::ptr::null(), |d| c_name(d).as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_names_are_the_core_names() {
        let mut seen = 0;
        for value in 0..64 {
            if let Some(dtype) = DType::from_proto(value) {
                assert_eq!(c_name(dtype).to_str(), Ok(dtype.name()));
                seen += 1;
            } else {
                assert!(sm_dtype_name(value).is_null());
            }
        }
        assert_eq!(seen, 16);
        assert!(sm_dtype_name(-1).is_null());
    }

    #[test]
    fn unknown_dtypes_are_errors_naming_the_input() {
        let err = from_c(20, "input \"x\"").unwrap_err();
        assert!(
            err.contains("input \"x\"") && err.contains("dtype 20"),
            "{err}"
        );
    }
}
