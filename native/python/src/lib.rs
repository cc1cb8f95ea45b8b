//! `savedmodel._native`: the native engine for `savedmodel.runtime.load(dir, engine=...)`.
//!
//! A thin layer: it converts numpy arrays to the core's tensors and back, releases the GIL while
//! a model loads or runs, and turns the core's errors into one exception type whose `kind` the
//! Python side maps onto the numpy engine's exception classes (so both engines raise alike).

use std::sync::Arc;
use std::time::{Duration, Instant};

use numpy::ndarray::{Array, IxDyn};
use numpy::{Element as NpElement, PyArray, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods};
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use savedmodel_core::engine::TensorSpec;
use savedmodel_core::{DType, Error, LoadOptions, Model, RunOptions, Storage, Tensor};

create_exception!(
    _native,
    NativeError,
    PyException,
    "An error of the native engine: args are (kind, message, missing ops)."
);

/// Where a model uses an op: `(op, node, function)`, function "" for the top-level graph.
type OpUse = (String, String, String);

/// The core's error as a `NativeError(kind, message, missing)`; `missing` lists
/// `(op, node, function)` for an unsupported-ops error and is empty otherwise.
fn to_py(err: Error) -> PyErr {
    let kind = match &err {
        Error::UnsupportedOps { .. } => "unsupported_ops",
        Error::Graph { .. } => "graph",
        Error::Run { .. } => "run",
        Error::Feed { .. } => "feed",
        Error::DeadlineExceeded { .. } => "deadline",
        Error::FileAccess { .. } => "file_access",
        Error::UnknownSignature { .. } => "unknown_signature",
        Error::Missing { .. } => "missing_file",
        _ => "file_format",
    };
    let missing: Vec<OpUse> = match &err {
        Error::UnsupportedOps { missing } => missing
            .iter()
            .map(|m| (m.op.clone(), m.node.clone(), m.function.clone()))
            .collect(),
        _ => Vec::new(),
    };
    NativeError::new_err((kind, err.to_string(), missing))
}

/// Runs `f`, turning a panic (a defect of the engine) into an error instead of letting it reach
/// Python as a PanicException.
fn guarded<T>(f: impl FnOnce() -> savedmodel_core::Result<T>) -> savedmodel_core::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(Error::Run {
            detail: format!(
                "internal error in the native engine: {what} (a defect: please report it)"
            ),
        })
    })
}

fn feed_error(detail: String) -> PyErr {
    to_py(Error::Feed { detail })
}

/// A loaded model; safe to call from several Python threads at once (the core model is
/// `Send + Sync`, and variables are shared state behind locks).
#[pyclass(frozen, module = "savedmodel._native")]
struct NativeModel {
    model: Arc<Model>,
}

fn options(tags: Vec<String>, allow_file_access: bool, output_dir: Option<String>) -> LoadOptions {
    LoadOptions {
        tags,
        allow_file_access,
        output_dir: output_dir.map(Into::into),
    }
}

/// A signature input or output as `(key, tensor_name, dtype, shape or None)`.
type SpecTuple = (String, String, &'static str, Option<Vec<i64>>);

fn spec_tuple(spec: &TensorSpec) -> SpecTuple {
    (
        spec.key.clone(),
        spec.tensor_name.clone(),
        spec.dtype.name(),
        spec.shape.clone(),
    )
}

#[pymethods]
impl NativeModel {
    /// Loads the MetaGraphDef of `export_dir` tagged exactly `tags`.
    #[staticmethod]
    #[pyo3(signature = (export_dir, tags, allow_file_access=false, output_dir=None))]
    fn load(
        py: Python<'_>,
        export_dir: String,
        tags: Vec<String>,
        allow_file_access: bool,
        output_dir: Option<String>,
    ) -> PyResult<Self> {
        let options = options(tags, allow_file_access, output_dir);
        let model = py
            .detach(|| guarded(|| Model::load(&export_dir, &options)))
            .map_err(to_py)?;
        savedmodel_alloc::release_freed();
        Ok(Self {
            model: Arc::new(model),
        })
    }

    /// Loads a frozen GraphDef file with its synthesized `serving_default` signature.
    #[staticmethod]
    #[pyo3(signature = (path, allow_file_access=false, output_dir=None))]
    fn load_graph_def(
        py: Python<'_>,
        path: String,
        allow_file_access: bool,
        output_dir: Option<String>,
    ) -> PyResult<Self> {
        let options = options(Vec::new(), allow_file_access, output_dir);
        let model = py
            .detach(|| guarded(|| Model::load_graph_def(&path, &options)))
            .map_err(to_py)?;
        savedmodel_alloc::release_freed();
        Ok(Self {
            model: Arc::new(model),
        })
    }

    /// The MetaGraphDef's SavedObjectGraph, serialized (None for a frozen GraphDef): what the
    /// Python side needs of the file for `functions`, without parsing the whole file again.
    fn object_graph<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        Some(PyBytes::new(py, &self.model.object_graph_bytes()?))
    }

    /// The object graph's concrete functions that need ops without a native kernel, as
    /// `(function, [(op, node, function)])`: the model loaded, calling one of them fails.
    fn unavailable(&self) -> Vec<(String, Vec<OpUse>)> {
        self.model
            .unavailable()
            .iter()
            .map(|(name, missing)| {
                let uses = missing
                    .iter()
                    .map(|m| (m.op.clone(), m.node.clone(), m.function.clone()))
                    .collect();
                (name.clone(), uses)
            })
            .collect()
    }

    /// Every signature as `(name, method_name, inputs, outputs)`, specs sorted by key.
    fn signatures(&self) -> Vec<(String, String, Vec<SpecTuple>, Vec<SpecTuple>)> {
        self.model
            .signatures()
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    s.method_name.clone(),
                    s.inputs.iter().map(spec_tuple).collect(),
                    s.outputs.iter().map(spec_tuple).collect(),
                )
            })
            .collect()
    }

    /// What runs signature `name` (see [`SignatureRunner`]); `takes` converts a caller's value
    /// for each input (in the signature's order) that is not already an array of the input's
    /// dtype and shape.
    fn runner(
        &self,
        py: Python<'_>,
        name: &str,
        takes: Vec<Py<PyAny>>,
    ) -> PyResult<SignatureRunner> {
        let signature = self.model.signature(name).map_err(to_py)?;
        if takes.len() != signature.inputs.len() {
            return Err(feed_error(format!(
                "signature {name:?} has {} inputs, got {} conversions",
                signature.inputs.len(),
                takes.len()
            )));
        }
        Ok(SignatureRunner {
            model: self.model.clone(),
            name: signature.name.clone(),
            inputs: signature
                .inputs
                .iter()
                .zip(takes)
                .map(|(s, take)| Input {
                    key: PyString::intern(py, &s.key).unbind(),
                    dtype: s.dtype,
                    shape: s.shape.clone(),
                    take,
                })
                .collect(),
            output_keys: signature
                .outputs
                .iter()
                .map(|s| PyString::intern(py, &s.key).unbind())
                .collect(),
        })
    }

    /// Calls concrete function `name` of the object graph on flat arguments (`(dtype, array)`,
    /// each array as [`to_tensor`] reads it); outputs as `(dtype, value)`.
    #[pyo3(signature = (name, args, timeout=None))]
    fn call_function<'py>(
        &self,
        py: Python<'py>,
        name: String,
        args: Vec<(String, Bound<'py, PyAny>)>,
        timeout: Option<f64>,
    ) -> PyResult<Vec<(&'static str, Py<PyAny>)>> {
        let inputs = args
            .iter()
            .enumerate()
            .map(|(i, (dtype, value))| to_tensor(&format!("argument {i}"), dtype, value))
            .collect::<PyResult<Vec<_>>>()?;
        let deadline = deadline_after(timeout);
        let model = self.model.clone();
        let outputs = py
            .detach(move || guarded(|| model.call_function(&name, inputs, deadline)))
            .map_err(to_py)?;
        outputs
            .into_iter()
            .map(|tensor| Ok((tensor.dtype().name(), to_numpy(py, tensor)?)))
            .collect()
    }

    /// The current value of every variable, by object-graph path (TensorFlow 2 models) or
    /// shared name (TensorFlow 1 models), as `(name, dtype, value)`.
    fn variables(&self, py: Python<'_>) -> PyResult<Vec<(String, &'static str, Py<PyAny>)>> {
        self.model
            .variables()
            .map_err(to_py)?
            .into_iter()
            .map(|(name, tensor)| {
                let dtype = tensor.dtype().name();
                Ok((name, dtype, to_numpy(py, tensor)?))
            })
            .collect()
    }
}

/// One signature input: its key, dtype and shape (None: any; -1: any size), and the caller's
/// conversion for values that are not already an array of that dtype and shape.
struct Input {
    key: Py<PyString>,
    dtype: DType,
    shape: Option<Vec<i64>>,
    take: Py<PyAny>,
}

impl Input {
    /// The tensor for the caller's `value`: an array of the input's dtype and shape as it is,
    /// anything else as the input's conversion makes it (which raises what the numpy engine
    /// raises for a value it rejects).
    fn tensor(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Tensor> {
        let key = self.key.bind(py).to_cow()?;
        if let Some(tensor) = self.as_is(&key, value)? {
            return Ok(tensor);
        }
        let converted = self.take.bind(py).call1((value,))?;
        tensor_of(&key, self.dtype, &converted)
    }

    /// `value` as a tensor if it already is a numpy array of the input's (plain numeric) dtype
    /// and of a shape the input takes; None otherwise.
    fn as_is(&self, key: &str, value: &Bound<'_, PyAny>) -> PyResult<Option<Tensor>> {
        let Ok(array) = value.cast::<PyUntypedArray>() else {
            return Ok(None);
        };
        let fits = self.shape.as_ref().is_none_or(|dims| {
            dims.len() == array.ndim()
                && dims
                    .iter()
                    .zip(array.shape())
                    .all(|(&d, &n)| d < 0 || usize::try_from(d) == Ok(n))
        });
        let plain = !matches!(
            self.dtype,
            DType::Float16 | DType::BFloat16 | DType::Complex64 | DType::Complex128 | DType::String
        );
        if !fits
            || !plain
            || !array
                .dtype()
                .is_equiv_to(&dtype_descr(value.py(), self.dtype))
        {
            return Ok(None);
        }
        tensor_of(key, self.dtype, value).map(Some)
    }
}

/// numpy's descriptor of a plain numeric dtype.
fn dtype_descr(py: Python<'_>, of: DType) -> Bound<'_, numpy::PyArrayDescr> {
    use numpy::dtype;
    match of {
        DType::Float64 => dtype::<f64>(py),
        DType::Int8 => dtype::<i8>(py),
        DType::Int16 => dtype::<i16>(py),
        DType::Int32 => dtype::<i32>(py),
        DType::Int64 => dtype::<i64>(py),
        DType::UInt8 => dtype::<u8>(py),
        DType::UInt16 => dtype::<u16>(py),
        DType::UInt32 => dtype::<u32>(py),
        DType::UInt64 => dtype::<u64>(py),
        DType::Bool => dtype::<bool>(py),
        _ => dtype::<f32>(py),
    }
}

/// An output the Python side still reinterprets: its key and dtype.
type Reinterpret = (Py<PyString>, &'static str);

/// One signature, bound once so that a call passes only its arrays: the signature's name,
/// each input's key and dtype, and its output keys as Python strings are looked up here, not
/// per call.
#[pyclass(frozen, module = "savedmodel._native")]
struct SignatureRunner {
    model: Arc<Model>,
    name: String,
    /// Each input, in the signature's order (sorted by key).
    inputs: Vec<Input>,
    output_keys: Vec<Py<PyString>>,
}

#[pymethods]
impl SignatureRunner {
    /// Runs the signature on `feeds` (a dict holding exactly the signature's input keys, which
    /// the caller checked), within `timeout` seconds. Returns the outputs as `{key: array}` and
    /// `[(key, dtype)]` of those whose dtype the caller still reinterprets (16-bit floats,
    /// complex numbers, strings; usually none).
    #[pyo3(signature = (feeds, timeout=None))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        feeds: &Bound<'py, PyDict>,
        timeout: Option<f64>,
    ) -> PyResult<(Bound<'py, PyDict>, Vec<Reinterpret>)> {
        let inputs = self
            .inputs
            .iter()
            .map(|input| {
                let key = input.key.bind(py);
                match feeds.get_item(key)? {
                    Some(value) => input.tensor(py, &value),
                    None => Err(feed_error(format!(
                        "signature {:?}: no feed for input {key}",
                        self.name
                    ))),
                }
            })
            .collect::<PyResult<Vec<_>>>()?;
        let options = RunOptions {
            deadline: deadline_after(timeout),
            profile: None,
        };
        let model = &self.model;
        let name = &self.name;
        let outputs = py
            .detach(|| guarded(|| model.run_ordered(name, inputs, &options)))
            .map_err(to_py)?;
        let dict = PyDict::new(py);
        let mut special = Vec::new();
        for (key, tensor) in self.output_keys.iter().zip(outputs) {
            let dtype = tensor.dtype();
            if matches!(
                dtype,
                DType::Float16
                    | DType::BFloat16
                    | DType::Complex64
                    | DType::Complex128
                    | DType::String
            ) {
                special.push((key.clone_ref(py), dtype.name()));
            }
            dict.set_item(key.bind(py), to_numpy(py, tensor)?)?;
        }
        Ok((dict, special))
    }
}

/// The instant `timeout` seconds from now (None, negative or not finite: no limit).
fn deadline_after(timeout: Option<f64>) -> Option<Instant> {
    timeout
        .filter(|t| t.is_finite() && *t >= 0.0)
        .map(|t| Instant::now() + Duration::from_secs_f64(t))
}

/// A numpy array of element type `T`, its elements in row-major order (one copy into the
/// core's buffer; the copy is made while this thread holds the GIL, so no borrow of the array
/// needs tracking).
fn array_values<T: NpElement + Copy>(key: &str, value: &Bound<'_, PyAny>) -> PyResult<Vec<T>> {
    let array = value
        .cast::<PyArrayDyn<T>>()
        .map_err(|_| feed_error(format!("input {key:?}: not an array of the expected dtype")))?;
    if array.is_c_contiguous() {
        if let Ok(values) = array.to_vec() {
            return Ok(values);
        }
    }
    // Any other layout (Fortran order, strided views): element by element, in logical order.
    Ok(array.to_owned_array().iter().copied().collect())
}

fn array_shape(value: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let array = value.cast::<PyUntypedArray>()?;
    Ok(array.shape().to_vec())
}

/// The tensor a feed describes; `dtype` is numpy's name (float16/bfloat16 arrive as uint16
/// bit patterns, complex as (real, imaginary) float pairs, strings as a flat list of bytes).
fn to_tensor(key: &str, dtype: &str, value: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    match DTYPES.iter().find(|d| d.name() == dtype) {
        Some(&d) => tensor_of(key, d, value),
        None => Err(feed_error(format!("input {key:?}: unknown dtype {dtype}"))),
    }
}

/// The tensor of `dtype` a feed describes (see [`to_tensor`]).
fn tensor_of(key: &str, dtype: DType, value: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if dtype == DType::String {
        let (shape, items): (Vec<usize>, Vec<Vec<u8>>) = value.extract()?;
        return Tensor::new(shape, Storage::String(items))
            .ok_or_else(|| feed_error(format!("input {key:?}: shape does not match its strings")));
    }
    let mut shape = array_shape(value)?;
    let storage = match dtype {
        DType::Float16 => Storage::Float16(array_values(key, value)?),
        DType::BFloat16 => Storage::BFloat16(array_values(key, value)?),
        DType::Float32 => Storage::Float32(array_values(key, value)?),
        DType::Float64 => Storage::Float64(array_values(key, value)?),
        DType::Int8 => Storage::Int8(array_values(key, value)?),
        DType::Int16 => Storage::Int16(array_values(key, value)?),
        DType::Int32 => Storage::Int32(array_values(key, value)?),
        DType::Int64 => Storage::Int64(array_values(key, value)?),
        DType::UInt8 => Storage::UInt8(array_values(key, value)?),
        DType::UInt16 => Storage::UInt16(array_values(key, value)?),
        DType::UInt32 => Storage::UInt32(array_values(key, value)?),
        DType::UInt64 => Storage::UInt64(array_values(key, value)?),
        DType::Bool => Storage::Bool(array_values(key, value)?),
        DType::Complex64 => {
            shape.pop();
            Storage::Complex64(pairs(array_values::<f32>(key, value)?))
        }
        DType::Complex128 => {
            shape.pop();
            Storage::Complex128(pairs(array_values::<f64>(key, value)?))
        }
        other => {
            let other = other.name();
            return Err(feed_error(format!("input {key:?}: unknown dtype {other}")));
        }
    };
    Tensor::new(shape, storage)
        .ok_or_else(|| feed_error(format!("input {key:?}: shape does not match its data")))
}

fn pairs<T: Copy + Default>(flat: Vec<T>) -> Vec<[T; 2]> {
    flat.chunks_exact(2).map(|c| [c[0], c[1]]).collect()
}

/// A numpy array that takes over the tensor's buffer without copying it when the engine holds
/// no other reference (the usual case for outputs); strings become `(shape, [bytes])`.
fn to_numpy(py: Python<'_>, tensor: Arc<Tensor>) -> PyResult<Py<PyAny>> {
    let tensor = Arc::try_unwrap(tensor).unwrap_or_else(|shared| (*shared).clone());
    let shape = tensor.shape().to_vec();
    Ok(match tensor.into_storage() {
        Storage::Float16(v) | Storage::BFloat16(v) | Storage::UInt16(v) => shaped(py, v, &shape)?,
        Storage::Float32(v) => shaped(py, v, &shape)?,
        Storage::Float64(v) => shaped(py, v, &shape)?,
        Storage::Int8(v) => shaped(py, v, &shape)?,
        Storage::Int16(v) => shaped(py, v, &shape)?,
        Storage::Int32(v) => shaped(py, v, &shape)?,
        Storage::Int64(v) => shaped(py, v, &shape)?,
        Storage::UInt8(v) => shaped(py, v, &shape)?,
        Storage::UInt32(v) => shaped(py, v, &shape)?,
        Storage::UInt64(v) => shaped(py, v, &shape)?,
        Storage::Bool(v) => shaped(py, v, &shape)?,
        Storage::Complex64(v) => shaped(py, v.concat(), &with_pair(&shape))?,
        Storage::Complex128(v) => shaped(py, v.concat(), &with_pair(&shape))?,
        Storage::String(v) => {
            let items: Vec<Bound<'_, PyBytes>> = v.iter().map(|b| PyBytes::new(py, b)).collect();
            let list = PyList::new(py, items)?;
            PyTuple::new(py, [shape.into_pyobject(py)?.into_any(), list.into_any()])?
                .into_any()
                .unbind()
        }
    })
}

fn with_pair(shape: &[usize]) -> Vec<usize> {
    let mut out = shape.to_vec();
    out.push(2);
    out
}

/// The array of `shape` that owns `values` (one array object, no copy).
fn shaped<T: NpElement>(py: Python<'_>, values: Vec<T>, shape: &[usize]) -> PyResult<Py<PyAny>> {
    let array = Array::from_shape_vec(IxDyn(shape), values).map_err(|err| {
        to_py(Error::Run {
            detail: format!("internal error in the native engine: an output's shape: {err}"),
        })
    })?;
    Ok(PyArray::from_owned_array(py, array).into_any().unbind())
}

/// Every op the native engine has a kernel for, sorted.
#[pyfunction]
fn ops() -> Vec<&'static str> {
    savedmodel_core::kernels::registry().op_names()
}

/// The dtype names the engine knows (numpy's spelling), for the Python side's checks.
#[pyfunction]
fn dtypes() -> Vec<&'static str> {
    DTYPES.iter().map(|d| d.name()).collect()
}

const DTYPES: [DType; 16] = [
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
    DType::Bool,
    DType::Complex64,
    DType::Complex128,
    DType::String,
];

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    savedmodel_alloc::keep_freed();
    m.add_class::<NativeModel>()?;
    m.add_class::<SignatureRunner>()?;
    m.add_function(wrap_pyfunction!(ops, m)?)?;
    m.add_function(wrap_pyfunction!(dtypes, m)?)?;
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    Ok(())
}
