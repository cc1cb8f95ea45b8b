//! Helpers shared by the C ABI's integration tests: tiny models written from the core's protobuf
//! types (Placeholder → Identity graphs, which only need the state kernels), and calls into the
//! library that hide the C plumbing.
#![allow(dead_code)] // each test binary uses its own subset

pub mod npz;

use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr, CString};
use std::path::{Path, PathBuf};

use prost::Message;
use savedmodel::*;
use savedmodel_core::protos::attr_value::Value as A;
use savedmodel_core::protos::meta_graph_def::MetaInfoDef;
use savedmodel_core::protos::tensor_shape_proto::Dim;
use savedmodel_core::protos::{
    tensor_info, AttrValue, GraphDef, MetaGraphDef, NodeDef, SavedModel, SignatureDef, TensorInfo,
    TensorShapeProto,
};

pub const DT_FLOAT: i32 = 1;
pub const DT_DOUBLE: i32 = 2;
pub const DT_INT32: i32 = 3;
pub const DT_STRING: i32 = 7;
pub const DT_HALF: i32 = 19;

fn attr(value: A) -> AttrValue {
    AttrValue { value: Some(value) }
}

/// None for an unknown rank.
fn shape(dims: Option<&[i64]>) -> TensorShapeProto {
    TensorShapeProto {
        dim: dims
            .unwrap_or_default()
            .iter()
            .map(|&size| Dim {
                size,
                name: String::new(),
            })
            .collect(),
        unknown_rank: dims.is_none(),
    }
}

fn placeholder(name: &str, dtype: i32, dims: Option<&[i64]>) -> NodeDef {
    NodeDef {
        name: name.into(),
        op: "Placeholder".into(),
        attr: HashMap::from([
            ("dtype".to_string(), attr(A::Type(dtype))),
            ("shape".to_string(), attr(A::Shape(shape(dims)))),
        ]),
        ..Default::default()
    }
}

fn identity(name: &str, input: &str, dtype: i32) -> NodeDef {
    NodeDef {
        name: name.into(),
        op: "Identity".into(),
        input: vec![input.into()],
        attr: HashMap::from([("T".to_string(), attr(A::Type(dtype)))]),
        ..Default::default()
    }
}

/// Two echoes: float `x` [-1, 2] → `y`, string `s` [-1] → `t`; plus, for the SavedModel,
/// float16 scalar `h` → `h_out` and int32 of unknown rank `a` → `a_out`.
fn graph(with_extras: bool) -> GraphDef {
    let mut node = vec![
        placeholder("x", DT_FLOAT, Some(&[-1, 2])),
        placeholder("s", DT_STRING, Some(&[-1])),
        identity("y", "x", DT_FLOAT),
        identity("t", "s", DT_STRING),
    ];
    if with_extras {
        node.extend([
            placeholder("h", DT_HALF, Some(&[])),
            identity("h_out", "h", DT_HALF),
            placeholder("a", DT_INT32, None),
            identity("a_out", "a", DT_INT32),
        ]);
    }
    GraphDef {
        node,
        ..Default::default()
    }
}

/// A frozen GraphDef file of one placeholder read by a node of op `op`, which no kernel has.
pub fn unsupported_graph(dir: &Path, op: &str) -> PathBuf {
    let path = dir.join("unsupported.pb");
    let mut node = identity("f", "x", DT_FLOAT);
    node.op = op.into();
    let graph = GraphDef {
        node: vec![placeholder("x", DT_FLOAT, Some(&[])), node],
        ..Default::default()
    };
    std::fs::write(&path, graph.encode_to_vec()).unwrap();
    path
}

/// A frozen GraphDef file of the two echoes, in `dir`.
pub fn frozen_graph(dir: &Path) -> PathBuf {
    let path = dir.join("echo.pb");
    std::fs::write(&path, graph(false).encode_to_vec()).unwrap();
    path
}

fn info(tensor: &str, dtype: i32, dims: Option<&[i64]>) -> TensorInfo {
    TensorInfo {
        dtype,
        tensor_shape: Some(shape(dims)),
        encoding: Some(tensor_info::Encoding::Name(tensor.into())),
    }
}

fn signature(inputs: Vec<(&str, TensorInfo)>, outputs: Vec<(&str, TensorInfo)>) -> SignatureDef {
    let map = |list: Vec<(&str, TensorInfo)>| {
        list.into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect::<HashMap<_, _>>()
    };
    SignatureDef {
        inputs: map(inputs),
        outputs: map(outputs),
        method_name: "tensorflow/serving/predict".into(),
        defaults: HashMap::new(),
    }
}

/// A SavedModel directory tagged `serve` with signatures `serving_default` (the two echoes,
/// like the frozen graph), `half` (float16 scalar) and `any_rank` (int32, unknown rank).
pub fn saved_model(dir: &Path) -> PathBuf {
    let path = dir.join("echo_model");
    std::fs::create_dir_all(&path).unwrap();
    let signatures = HashMap::from([
        (
            "serving_default".to_string(),
            signature(
                vec![
                    ("x", info("x:0", DT_FLOAT, Some(&[-1, 2]))),
                    ("s", info("s:0", DT_STRING, Some(&[-1]))),
                ],
                vec![
                    ("y", info("y:0", DT_FLOAT, Some(&[-1, 2]))),
                    ("t", info("t:0", DT_STRING, Some(&[-1]))),
                ],
            ),
        ),
        (
            "half".to_string(),
            signature(
                vec![("h", info("h:0", DT_HALF, Some(&[])))],
                vec![("h_out", info("h_out:0", DT_HALF, Some(&[])))],
            ),
        ),
        (
            "any_rank".to_string(),
            signature(
                vec![("a", info("a:0", DT_INT32, None))],
                vec![("a_out", info("a_out:0", DT_INT32, None))],
            ),
        ),
    ]);
    let meta_graph = MetaGraphDef {
        meta_info_def: Some(MetaInfoDef {
            tags: vec!["serve".into()],
            ..Default::default()
        }),
        graph_def: Some(graph(true)),
        signature_def: signatures,
        ..Default::default()
    };
    let model = SavedModel {
        saved_model_schema_version: 1,
        meta_graphs: vec![meta_graph],
    };
    std::fs::write(path.join("saved_model.pb"), model.encode_to_vec()).unwrap();
    path
}

pub fn c(text: &str) -> CString {
    CString::new(text).unwrap()
}

/// A string the library returned, or None for NULL.
pub fn text(ptr: *const c_char) -> Option<String> {
    // SAFETY: the library returns NULL or a NUL-terminated string that stays valid until the
    // handle it came from is freed, or (sm_last_error) until the next call on this thread.
    (!ptr.is_null()).then(|| unsafe { CStr::from_ptr(ptr) }.to_str().unwrap().to_string())
}

pub fn last_error() -> Option<String> {
    text(sm_last_error())
}

/// Loads `path` or panics with the library's error.
pub fn load(path: &Path, tags: Option<&str>) -> *mut SmModel {
    let path = c(path.to_str().unwrap());
    let tags = tags.map(c);
    let model = sm_model_load(
        path.as_ptr(),
        tags.as_ref().map_or(std::ptr::null(), |t| t.as_ptr()),
    );
    assert!(!model.is_null(), "load: {:?}", last_error());
    model
}

/// One input for [`run`]: key, dtype, shape and bytes.
pub struct Feed {
    pub key: CString,
    pub dtype: i32,
    pub shape: Vec<i64>,
    pub bytes: Vec<u8>,
}

pub fn feed(key: &str, dtype: i32, shape: &[i64], bytes: Vec<u8>) -> Feed {
    Feed {
        key: c(key),
        dtype,
        shape: shape.to_vec(),
        bytes,
    }
}

pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Strings in the packed layout of the header.
pub fn packed(items: &[&[u8]]) -> Vec<u8> {
    let mut out: Vec<u8> = items
        .iter()
        .flat_map(|s| (s.len() as u64).to_le_bytes())
        .collect();
    for item in items {
        out.extend_from_slice(item);
    }
    out
}

/// Runs `signature` on `feeds`; NULL on error (then see [`last_error`]).
pub fn run(model: *mut SmModel, signature: &str, feeds: &[Feed]) -> *mut SmOutputs {
    let signature = c(signature);
    let keys: Vec<*const c_char> = feeds.iter().map(|f| f.key.as_ptr()).collect();
    let dtypes: Vec<i32> = feeds.iter().map(|f| f.dtype).collect();
    let shapes: Vec<*const i64> = feeds.iter().map(|f| f.shape.as_ptr()).collect();
    let ranks: Vec<i32> = feeds.iter().map(|f| f.shape.len() as i32).collect();
    let data: Vec<*const c_void> = feeds.iter().map(|f| f.bytes.as_ptr().cast()).collect();
    let lengths: Vec<usize> = feeds.iter().map(|f| f.bytes.len()).collect();
    sm_model_run(
        model,
        signature.as_ptr(),
        feeds.len(),
        keys.as_ptr(),
        dtypes.as_ptr(),
        shapes.as_ptr(),
        ranks.as_ptr(),
        data.as_ptr(),
        lengths.as_ptr(),
    )
}

/// The bytes of output `index`.
pub fn output_bytes(outputs: *const SmOutputs, index: usize) -> Vec<u8> {
    let ptr = sm_outputs_data(outputs, index).cast::<u8>();
    let len = sm_outputs_byte_length(outputs, index);
    assert!(!ptr.is_null(), "{:?}", last_error());
    // SAFETY: the library returns a pointer to `len` bytes owned by the outputs, valid until
    // they are freed (after this copy).
    unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec()
}

/// The dims of output `index`.
pub fn output_dims(outputs: *const SmOutputs, index: usize) -> Vec<i64> {
    let rank = usize::try_from(sm_outputs_rank(outputs, index)).unwrap();
    let ptr = sm_outputs_dims(outputs, index);
    // SAFETY: the library returns `rank` dims owned by the outputs (not read for rank 0).
    (0..rank).map(|d| unsafe { *ptr.add(d) }).collect()
}
