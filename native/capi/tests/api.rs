//! The C entry points called from Rust (through the rlib) on tiny generated models: signature
//! introspection, runs of every dtype layout, and every error path returning the error value
//! with a message that names what is wrong.

mod common;

use std::ptr::{null, null_mut};

use common::*;
use savedmodel::*;

fn expect_error(what: &str, needle: &str) {
    let message = last_error().unwrap_or_else(|| panic!("{what}: no error recorded"));
    assert!(
        message.contains(needle),
        "{what}: {message:?} lacks {needle:?}"
    );
}

#[test]
fn a_saved_model_lists_its_signatures_inputs_and_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let model = load(&saved_model(dir.path()), None);
    assert_eq!(sm_model_num_signatures(model), 3);
    let names: Vec<String> = (0..3)
        .map(|i| text(sm_model_signature_name(model, i)).unwrap())
        .collect();
    assert_eq!(names, ["any_rank", "half", "serving_default"]);
    let sig = c("serving_default");
    assert_eq!(sm_model_num_inputs(model, sig.as_ptr()), 2);
    assert_eq!(sm_model_num_outputs(model, sig.as_ptr()), 2);
    assert_eq!(
        text(sm_model_input_key(model, sig.as_ptr(), 0)).unwrap(),
        "s"
    );
    assert_eq!(
        text(sm_model_input_key(model, sig.as_ptr(), 1)).unwrap(),
        "x"
    );
    assert_eq!(
        text(sm_model_output_key(model, sig.as_ptr(), 1)).unwrap(),
        "y"
    );
    assert_eq!(sm_model_input_dtype(model, sig.as_ptr(), 0), DT_STRING);
    assert_eq!(sm_model_output_dtype(model, sig.as_ptr(), 1), DT_FLOAT);
    assert_eq!(sm_model_input_rank(model, sig.as_ptr(), 1), 2);
    let dims = sm_model_input_dims(model, sig.as_ptr(), 1);
    // SAFETY: rank 2 was just reported for these dims, owned by the live model.
    assert_eq!(unsafe { [*dims, *dims.add(1)] }, [-1, 2]);
    assert_eq!(last_error(), None);

    let any = c("any_rank");
    assert_eq!(sm_model_input_rank(model, any.as_ptr(), 0), RANK_UNKNOWN);
    assert!(sm_model_input_dims(model, any.as_ptr(), 0).is_null());
    assert_eq!(last_error(), None, "an unknown rank is not an error");
    let half = c("half");
    assert_eq!(sm_model_output_rank(model, half.as_ptr(), 0), 0);
    assert!(!sm_model_output_dims(model, half.as_ptr(), 0).is_null());
    sm_model_free(model);
}

#[test]
fn a_run_returns_numeric_and_string_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let model = load(&frozen_graph(dir.path()), None);
    let x = f32_bytes(&[1.5, -2.0, 3.0, 4.25]);
    let s = packed(&[b"ab", b"", b"\0z"]);
    let outputs = run(
        model,
        "serving_default",
        &[
            feed("x", DT_FLOAT, &[2, 2], x.clone()),
            feed("s", DT_STRING, &[3], s.clone()),
        ],
    );
    assert!(!outputs.is_null(), "{:?}", last_error());
    sm_model_free(model); // outputs outlive their model
    assert_eq!(sm_outputs_count(outputs), 2);
    assert_eq!(text(sm_outputs_key(outputs, 0)).unwrap(), "t");
    assert_eq!(sm_outputs_dtype(outputs, 0), DT_STRING);
    assert_eq!(output_dims(outputs, 0), [3]);
    assert_eq!(output_bytes(outputs, 0), s, "strings come back packed");
    let mut len = 99;
    let elem = sm_outputs_string(outputs, 0, 2, &mut len);
    // SAFETY: element 2 is `len` bytes owned by the live outputs.
    assert_eq!(
        unsafe { std::slice::from_raw_parts(elem.cast::<u8>(), len) },
        b"\0z"
    );
    assert!(!sm_outputs_string(outputs, 0, 1, null_mut()).is_null());

    assert_eq!(text(sm_outputs_key(outputs, 1)).unwrap(), "y");
    assert_eq!(sm_outputs_dtype(outputs, 1), DT_FLOAT);
    assert_eq!(sm_outputs_rank(outputs, 1), 2);
    assert_eq!(output_dims(outputs, 1), [2, 2]);
    assert_eq!(sm_outputs_num_elements(outputs, 1), 4);
    assert_eq!(output_bytes(outputs, 1), x);
    assert_eq!(last_error(), None);
    sm_outputs_free(outputs);
}

#[test]
fn float16_scalars_and_unknown_ranks_pass_through() {
    let dir = tempfile::tempdir().unwrap();
    let model = load(&saved_model(dir.path()), Some(" serve "));
    let one = 0x3c00u16.to_le_bytes().to_vec();
    let outputs = run(model, "half", &[feed("h", DT_HALF, &[], one.clone())]);
    assert!(!outputs.is_null(), "{:?}", last_error());
    assert_eq!(output_bytes(outputs, 0), one);
    assert_eq!(sm_outputs_rank(outputs, 0), 0);
    assert_eq!(
        text(sm_dtype_name(sm_outputs_dtype(outputs, 0))).unwrap(),
        "float16"
    );
    sm_outputs_free(outputs);

    let empty = run(
        model,
        "any_rank",
        &[feed("a", DT_INT32, &[0, 3], Vec::new())],
    );
    assert!(!empty.is_null(), "{:?}", last_error());
    assert_eq!(output_dims(empty, 0), [0, 3]);
    assert_eq!(sm_outputs_byte_length(empty, 0), 0);
    sm_outputs_free(empty);
    sm_model_free(model);
}

#[test]
fn load_errors_name_the_problem() {
    assert!(sm_model_load(null(), null()).is_null());
    expect_error("NULL path", "path is NULL");
    let bad = [0xffu8, 0];
    assert!(sm_model_load(bad.as_ptr().cast(), null()).is_null());
    expect_error("invalid UTF-8", "not valid UTF-8");
    let missing = c("/nonexistent/model.pb");
    assert!(sm_model_load(missing.as_ptr(), null()).is_null());
    expect_error("missing file", "/nonexistent/model.pb");

    let dir = tempfile::tempdir().unwrap();
    let path = c(saved_model(dir.path()).to_str().unwrap());
    let tags = c("serve,gpu");
    assert!(sm_model_load(path.as_ptr(), tags.as_ptr()).is_null());
    expect_error("wrong tags", "no MetaGraphDef with tag-set");
}

#[test]
fn unsupported_ops_are_named_with_their_node() {
    let dir = tempfile::tempdir().unwrap();
    let path = c(unsupported_graph(dir.path(), "FancyOp").to_str().unwrap());
    assert!(sm_model_load(path.as_ptr(), null()).is_null());
    expect_error(
        "unsupported op",
        "the native engine has no kernel for op FancyOp (node \"f\" in the graph)",
    );
}

#[test]
fn null_handles_and_out_of_range_indices_are_errors() {
    let sig = c("serving_default");
    assert_eq!(sm_model_num_signatures(null()), 0);
    expect_error("NULL model", "model is NULL");
    assert!(sm_model_signature_name(null(), 0).is_null());
    assert_eq!(sm_model_num_inputs(null(), sig.as_ptr()), 0);
    assert_eq!(sm_model_input_rank(null(), sig.as_ptr(), 0), RANK_ERROR);
    assert_eq!(sm_model_output_dtype(null(), sig.as_ptr(), 0), 0);
    assert!(run(null_mut(), "serving_default", &[]).is_null());
    expect_error("NULL model run", "model is NULL");
    assert_eq!(sm_outputs_count(null()), 0);
    expect_error("NULL outputs", "outputs is NULL");
    assert!(sm_outputs_data(null(), 0).is_null());
    sm_model_free(null_mut());
    sm_outputs_free(null_mut());

    let dir = tempfile::tempdir().unwrap();
    let model = load(&frozen_graph(dir.path()), None);
    assert!(sm_model_signature_name(model, 1).is_null());
    expect_error(
        "signature index",
        "signature index 1 is out of range: the model has 1",
    );
    assert!(sm_model_output_key(model, sig.as_ptr(), 2).is_null());
    expect_error("output index", "output index 2 is out of range");
    assert_eq!(sm_model_num_inputs(model, null()), 0);
    expect_error("NULL signature", "signature is NULL");

    let outputs = run(
        model,
        "serving_default",
        &[
            feed("x", DT_FLOAT, &[0, 2], Vec::new()),
            feed("s", DT_STRING, &[0], Vec::new()),
        ],
    );
    assert!(!outputs.is_null(), "{:?}", last_error());
    assert!(sm_outputs_key(outputs, 2).is_null());
    expect_error(
        "outputs index",
        "output index 2 is out of range: the run returned 2",
    );
    assert!(sm_outputs_string(outputs, 1, 0, null_mut()).is_null());
    expect_error("string of float", "is float32, not string");
    assert!(sm_outputs_string(outputs, 0, 0, null_mut()).is_null());
    expect_error("string element", "element 0 is out of range");
    let mut cells = [0usize; 2];
    let misaligned = cells
        .as_mut_ptr()
        .cast::<u8>()
        .wrapping_add(1)
        .cast::<usize>();
    let s = packed(&[b"a"]);
    let strings = run(
        model,
        "serving_default",
        &[
            feed("x", DT_FLOAT, &[0, 2], Vec::new()),
            feed("s", DT_STRING, &[1], s),
        ],
    );
    assert!(sm_outputs_string(strings, 0, 0, misaligned).is_null());
    expect_error("misaligned length", "length is not aligned");
    sm_outputs_free(strings);
    sm_outputs_free(outputs);
    sm_model_free(model);
}

#[test]
fn run_errors_name_the_input_dtype_and_shape() {
    let dir = tempfile::tempdir().unwrap();
    let model = load(&frozen_graph(dir.path()), None);
    let s = || feed("s", DT_STRING, &[1], packed(&[b"a"]));
    let x = |dtype, shape: &[i64], bytes| feed("x", dtype, shape, bytes);
    let good = || f32_bytes(&[1.0, 2.0]);

    assert!(run(model, "nope", &[]).is_null());
    expect_error(
        "unknown signature",
        "no signature \"nope\"; available: serving_default",
    );
    assert!(run(model, "serving_default", &[s()]).is_null());
    expect_error("missing input", "missing [\"x\"]");
    assert!(run(
        model,
        "serving_default",
        &[s(), x(DT_FLOAT, &[1, 2], good()), s()]
    )
    .is_null());
    expect_error("repeated key", "key \"s\" is given twice");
    assert!(run(model, "serving_default", &[s(), x(20, &[1, 2], good())]).is_null());
    expect_error("bad dtype", "input 1 (\"x\"): dtype 20 is not a DataType");
    assert!(run(
        model,
        "serving_default",
        &[s(), x(DT_INT32, &[1, 2], good())]
    )
    .is_null());
    expect_error("wrong dtype", "expected float32, got int32");
    assert!(run(
        model,
        "serving_default",
        &[s(), x(DT_FLOAT, &[2, 2], good())]
    )
    .is_null());
    expect_error("byte length", "float32 [2, 2] takes 16 bytes, got 8");
    assert!(run(
        model,
        "serving_default",
        &[s(), x(DT_FLOAT, &[2, 1], good())]
    )
    .is_null());
    expect_error("shape mismatch", "expected shape");
    assert!(run(
        model,
        "serving_default",
        &[s(), x(DT_FLOAT, &[1, -2], good())]
    )
    .is_null());
    expect_error("negative dim", "dimension -2 is negative");
    let bad_strings = feed("s", DT_STRING, &[2], packed(&[b"a"]));
    assert!(run(
        model,
        "serving_default",
        &[bad_strings, x(DT_FLOAT, &[1, 2], good())]
    )
    .is_null());
    expect_error("packed strings", "input 0 (\"s\"): 2 strings need");
    sm_model_free(model);
}

#[test]
fn null_arrays_are_errors_unless_empty() {
    let dir = tempfile::tempdir().unwrap();
    let model = load(&frozen_graph(dir.path()), None);
    let sig = c("serving_default");
    let outputs = sm_model_run(
        model,
        sig.as_ptr(),
        1,
        null(),
        null(),
        null(),
        null(),
        null(),
        null(),
    );
    assert!(outputs.is_null());
    expect_error("NULL keys", "keys is NULL but 1 elements were promised");
    let none = sm_model_run(
        model,
        sig.as_ptr(),
        0,
        null(),
        null(),
        null(),
        null(),
        null(),
        null(),
    );
    assert!(none.is_null());
    expect_error("no inputs", "missing [\"s\", \"x\"]");
    let x = feed("x", DT_FLOAT, &[1, 2], f32_bytes(&[1.0, 2.0]));
    let key = x.key.as_ptr();
    let (dtype, rank, len) = (DT_FLOAT, 2, 8usize);
    let shape = x.shape.as_ptr();
    let data: *const std::ffi::c_void = null();
    let outputs = sm_model_run(
        model,
        sig.as_ptr(),
        1,
        &key,
        &dtype,
        &shape,
        &rank,
        &data,
        &len,
    );
    assert!(outputs.is_null());
    expect_error(
        "NULL data",
        "input 0 (\"x\") is NULL but 8 elements were promised",
    );
    sm_model_free(model);
}

#[test]
fn the_header_numbers_dtypes_as_tensorflow_does() {
    let header = include_str!("../include/savedmodel.h");
    let mut checked = 0;
    for line in header.lines() {
        let Some(rest) = line.trim().strip_prefix("SM_DT_") else {
            continue;
        };
        let (name, value) = rest.trim_end_matches(',').split_once(" = ").unwrap();
        let value: i32 = value.parse().unwrap();
        if name == "INVALID" {
            assert!(sm_dtype_name(value).is_null());
            continue;
        }
        let dtype = text(sm_dtype_name(value)).unwrap_or_else(|| panic!("SM_DT_{name}"));
        let expected = match name {
            "FLOAT" => "float32",
            "DOUBLE" => "float64",
            "HALF" => "float16",
            other => &other.to_lowercase(),
        };
        assert_eq!(dtype, expected, "SM_DT_{name} = {value}");
        checked += 1;
    }
    assert_eq!(checked, 16);
}

#[test]
fn models_run_from_several_threads_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let model = load(&frozen_graph(dir.path()), None) as usize;
    let threads: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..50 {
                    let v = (t * 100 + i) as f32;
                    let feeds = [
                        feed("x", DT_FLOAT, &[1, 2], f32_bytes(&[v, -v])),
                        feed("s", DT_STRING, &[0], Vec::new()),
                    ];
                    let outputs = run(model as *mut SmModel, "serving_default", &feeds);
                    assert!(!outputs.is_null(), "{:?}", last_error());
                    assert_eq!(output_bytes(outputs, 1), f32_bytes(&[v, -v]));
                    sm_outputs_free(outputs);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    sm_model_free(model as *mut SmModel);
}
