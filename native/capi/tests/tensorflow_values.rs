//! Real models through the C interface against the outputs TensorFlow recorded beside them:
//! every fixture SavedModel's recorded signatures and the frozen Keras graphs.

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
    let floats = |b: &[u8]| -> Vec<f64> {
        b.chunks_exact(4)
            .map(|c| f64::from(f32::from_le_bytes(c.try_into().unwrap())))
            .collect()
    };
    close(&floats(ours), &floats(expected), 1e-5, 1e-4)
}

/// Whether float64 bytes `ours` match TensorFlow's within float64 tolerance (the engines'
/// linear algebra and special functions round differently in the last bits).
fn close_f64(ours: &[u8], expected: &[u8]) -> Result<(), String> {
    let floats = |b: &[u8]| -> Vec<f64> {
        b.chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    close(&floats(ours), &floats(expected), 1e-9, 1e-7)
}

fn close(ours: &[f64], expected: &[f64], atol: f64, rtol: f64) -> Result<(), String> {
    for (i, (x, y)) in ours.iter().zip(expected).enumerate() {
        if (x - y).abs() > atol + rtol * y.abs() && !(x.is_nan() && y.is_nan()) {
            return Err(format!("element {i}: {x}, expected {y}"));
        }
    }
    Ok(())
}

/// Runs `signature` on the recorded `inputs` (named by key); each output must match the
/// recorded array of its key. Failures are collected in `report`, labelled `label`.
fn check_signature(
    model: *mut SmModel,
    signature: &str,
    inputs: &[(String, &Array)],
    expected: &[(String, &Array)],
    label: &str,
    report: &mut Vec<String>,
) {
    let feeds: Vec<Feed> = inputs
        .iter()
        .map(|(key, a)| feed(key, a.dtype(), &a.shape, a.bytes.clone()))
        .collect();
    let outputs = run(model, signature, &feeds);
    if outputs.is_null() {
        report.push(format!("{label}: {}", last_error().unwrap_or_default()));
        return;
    }
    for i in 0..sm_outputs_count(outputs) {
        let key = text(sm_outputs_key(outputs, i)).unwrap();
        let Some((_, want)) = expected.iter().find(|(k, _)| *k == key) else {
            report.push(format!("{label} {key}: not recorded"));
            continue;
        };
        let ours = output_bytes(outputs, i);
        let matched = if sm_outputs_dtype(outputs, i) != want.dtype() {
            Err(format!(
                "dtype {}, expected {}",
                sm_outputs_dtype(outputs, i),
                want.dtype()
            ))
        } else if output_dims(outputs, i) != want.shape {
            Err(format!(
                "shape {:?}, expected {:?}",
                output_dims(outputs, i),
                want.shape
            ))
        } else if want.dtype() == DT_FLOAT {
            close_f32(&ours, &want.bytes)
        } else if want.dtype() == DT_DOUBLE {
            close_f64(&ours, &want.bytes)
        } else if ours == want.bytes {
            Ok(())
        } else {
            Err("values differ".into())
        };
        if let Err(why) = matched {
            report.push(format!("{label} {key}: {why}"));
        }
    }
    sm_outputs_free(outputs);
}

/// The recorded arrays whose name starts with `prefix`, keyed by the rest of the name.
fn under<'a>(arrays: &'a [Array], prefix: &str) -> Vec<(String, &'a Array)> {
    arrays
        .iter()
        .filter_map(|a| Some((a.name.strip_prefix(prefix)?.to_string(), a)))
        .collect()
}

/// Runs frozen graph `name` on its recorded `in/*` arrays; every `out/*` array must match.
fn frozen_graph_matches_tensorflow(name: &str) {
    let dir = data_dir().join("frozen");
    let model = load(&dir.join(format!("{name}.pb")), None);
    let arrays = npz::read(&dir.join(format!("{name}.io.npz")));
    let expected = under(&arrays, "out/");
    assert_eq!(
        sm_model_num_outputs(model, c("serving_default").as_ptr()),
        expected.len()
    );
    let mut report = Vec::new();
    let inputs = under(&arrays, "in/");
    check_signature(
        model,
        "serving_default",
        &inputs,
        &expected,
        name,
        &mut report,
    );
    sm_model_free(model);
    assert!(report.is_empty(), "{}", report.join("\n"));
}

#[test]
fn frozen_keras_mlp_gives_tensorflows_outputs() {
    frozen_graph_matches_tensorflow("keras_mlp");
}

#[test]
fn frozen_keras_cnn_gives_tensorflows_outputs() {
    frozen_graph_matches_tensorflow("keras_cnn");
}

/// The models `tests/data/models/numpy_only.txt` lists: ops the native engine lacks (the core's
/// tests check the list).
fn numpy_only() -> Vec<String> {
    std::fs::read_to_string(data_dir().join("models/numpy_only.txt"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| Some(l.split_once(':')?.0.trim().to_string()))
        .collect()
}

/// Every SavedModel of the fixtures the native engine runs: each signature TensorFlow recorded
/// (`sig/<name>/in|out/`).
#[test]
fn every_saved_model_gives_tensorflows_outputs() {
    let mut report = Vec::new();
    let skipped = numpy_only();
    for parent in ["models", "reference/savedmodels"] {
        let mut dirs: Vec<_> = std::fs::read_dir(data_dir().join(parent))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("saved_model.pb").is_file())
            .filter(|p| !skipped.iter().any(|n| p.ends_with(n)))
            .collect();
        dirs.sort();
        for dir in dirs {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            let path = c(dir.to_str().unwrap());
            let arrays = npz::read(&dir.with_extension("io.npz"));
            let mut signatures: Vec<&str> = arrays
                .iter()
                .filter_map(|a| a.name.strip_prefix("sig/")?.split('/').next())
                .collect();
            signatures.sort_unstable();
            signatures.dedup();
            // A freshly loaded model per signature, as TensorFlow recorded them: signatures of
            // one model share its random generators' state.
            for signature in signatures {
                let label = format!("{name} {signature}");
                let model = sm_model_load(path.as_ptr(), std::ptr::null());
                if model.is_null() {
                    report.push(format!(
                        "{label}: load: {}",
                        last_error().unwrap_or_default()
                    ));
                    continue;
                }
                let inputs = under(&arrays, &format!("sig/{signature}/in/"));
                let expected = under(&arrays, &format!("sig/{signature}/out/"));
                check_signature(model, signature, &inputs, &expected, &label, &mut report);
                sm_model_free(model);
            }
        }
    }
    assert!(report.is_empty(), "failures:\n{}", report.join("\n"));
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

#[test]
fn recorded_byte_strings_read_as_packed_strings() {
    let arrays = npz::read(&data_dir().join("models/keras_string_lookup.io.npz"));
    let words = arrays
        .iter()
        .find(|a| a.name == "sig/serving_default/in/words")
        .unwrap();
    assert_eq!(words.dtype(), DT_STRING);
    let count: i64 = words.shape.iter().product();
    let lengths: u64 = words.bytes[..8 * count as usize]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .sum();
    assert_eq!(words.bytes.len() as u64, 8 * count as u64 + lengths);
}
