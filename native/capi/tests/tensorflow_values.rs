//! Real models through the C interface against the outputs TensorFlow recorded beside them.
//! Ignored until the kernel families these graphs need (MatMul, BiasAdd, Relu, Conv2D, ...)
//! are registered; run with `cargo test --release -p savedmodel-capi -- --ignored`.

mod common;

use std::path::Path;

use common::npz::{self, Array};
use common::*;
use savedmodel::*;

fn data_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data"))
}

/// Whether float32 bytes `ours` match TensorFlow's within float32 tolerance.
fn close_f32(ours: &[u8], expected: &[u8]) -> Result<(), String> {
    let floats = |b: &[u8]| -> Vec<f32> {
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    for (i, (x, y)) in floats(ours).into_iter().zip(floats(expected)).enumerate() {
        if (x - y).abs() > 1e-5 + 1e-4 * y.abs() {
            return Err(format!("element {i}: {x}, expected {y}"));
        }
    }
    Ok(())
}

/// Runs frozen graph `name` on its recorded `in/*` arrays; every `out/*` array must match.
fn frozen_graph_matches_tensorflow(name: &str) {
    let dir = data_dir().join("frozen");
    let model = load(&dir.join(format!("{name}.pb")), None);
    let arrays = npz::read(&dir.join(format!("{name}.io.npz")));
    let (inputs, expected): (Vec<&Array>, Vec<&Array>) =
        arrays.iter().partition(|a| a.name.starts_with("in/"));
    let feeds: Vec<Feed> = inputs
        .iter()
        .map(|a| feed(&a.name[3..], a.dtype(), &a.shape, a.bytes.clone()))
        .collect();
    let outputs = run(model, "serving_default", &feeds);
    assert!(!outputs.is_null(), "{name}: {:?}", last_error());
    assert_eq!(sm_outputs_count(outputs), expected.len());
    for i in 0..expected.len() {
        let key = text(sm_outputs_key(outputs, i)).unwrap();
        let want = expected
            .iter()
            .find(|a| a.name == format!("out/{key}"))
            .unwrap_or_else(|| panic!("{name}: output {key} not recorded"));
        assert_eq!(sm_outputs_dtype(outputs, i), want.dtype(), "{name} {key}");
        assert_eq!(output_dims(outputs, i), want.shape, "{name} {key}");
        let ours = output_bytes(outputs, i);
        let matched = if want.dtype() == DT_FLOAT {
            close_f32(&ours, &want.bytes)
        } else if ours == want.bytes {
            Ok(())
        } else {
            Err("values differ".into())
        };
        matched.unwrap_or_else(|why| panic!("{name} {key}: {why}"));
    }
    sm_outputs_free(outputs);
    sm_model_free(model);
}

#[test]
#[ignore = "needs the math/nn kernel families (MatMul, BiasAdd, Relu, Softmax)"]
fn frozen_keras_mlp_gives_tensorflows_outputs() {
    frozen_graph_matches_tensorflow("keras_mlp");
}

#[test]
#[ignore = "needs the math/nn/array kernel families (Conv2D, MaxPool, Reshape, MatMul, ...)"]
fn frozen_keras_cnn_gives_tensorflows_outputs() {
    frozen_graph_matches_tensorflow("keras_cnn");
}

#[test]
fn recorded_arrays_read_as_raw_bytes() {
    let arrays = npz::read(&data_dir().join("frozen/keras_mlp.io.npz"));
    let shapes: Vec<(&str, &[i64], usize, i32)> = arrays
        .iter()
        .map(|a| {
            (
                a.name.as_str(),
                a.shape.as_slice(),
                a.bytes.len(),
                a.dtype(),
            )
        })
        .collect();
    assert_eq!(
        shapes,
        [
            ("in/features", &[3i64, 8][..], 96, DT_FLOAT),
            ("out/Identity", &[3, 4][..], 48, DT_FLOAT)
        ]
    );
}
