//! Every signature of every TensorFlow-written SavedModel in the fixtures, run through the
//! native engine, gives the outputs TensorFlow recorded beside it (`<model>.io.npz`).

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use savedmodel_core::{LoadOptions, Model, Storage, Tensor};

/// A signature's recorded inputs, and its outputs by key.
type Call = (Vec<(String, Tensor)>, BTreeMap<String, Tensor>);

/// Each recorded signature's call.
fn recorded(dir: &Path) -> BTreeMap<String, Call> {
    let mut out: BTreeMap<String, Call> = BTreeMap::new();
    for (name, tensor) in common::read_npz(&dir.with_extension("io.npz")) {
        let parts: Vec<&str> = name.splitn(4, '/').collect();
        if let ["sig", signature, side, key] = parts.as_slice() {
            let entry = out.entry(signature.to_string()).or_default();
            if *side == "in" {
                entry.0.push((key.to_string(), tensor));
            } else {
                entry.1.insert(key.to_string(), tensor);
            }
        }
    }
    out
}

/// Whether `ours` equals TensorFlow's `expected`: floats within float32 tolerance, the rest
/// exactly.
fn close(ours: &Tensor, expected: &Tensor) -> Result<(), String> {
    if ours.shape() != expected.shape() {
        return Err(format!(
            "shape {:?}, expected {:?}",
            ours.shape(),
            expected.shape()
        ));
    }
    match (ours.storage(), expected.storage()) {
        (Storage::Float32(a), Storage::Float32(b)) => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                if (x - y).abs() > 1e-5 + 1e-4 * y.abs() && !(x.is_nan() && y.is_nan()) {
                    return Err(format!("element {i}: {x}, expected {y}"));
                }
            }
            Ok(())
        }
        (Storage::Float64(a), Storage::Float64(b)) => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                if (x - y).abs() > 1e-9 + 1e-7 * y.abs() {
                    return Err(format!("element {i}: {x}, expected {y}"));
                }
            }
            Ok(())
        }
        (a, b) if a == b => Ok(()),
        (a, b) if a.dtype() != b.dtype() => {
            Err(format!("dtype {}, expected {}", a.dtype(), b.dtype()))
        }
        _ => Err(format!("values differ: {ours:?} vs {expected:?}")),
    }
}

#[test]
fn every_signature_gives_tensorflows_outputs() {
    let mut report = Vec::new();
    let mut passed = 0;
    for dir in common::saved_models() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let model = match Model::load(&dir, &LoadOptions::default()) {
            Ok(model) => model,
            Err(err) => {
                report.push(format!("{name}: load: {err}"));
                continue;
            }
        };
        for (signature, (inputs, expected)) in recorded(&dir) {
            match model.run(&signature, inputs) {
                Ok(outputs) => {
                    for (key, value) in outputs {
                        match expected.get(&key).map(|e| close(&value, e)) {
                            Some(Ok(())) => passed += 1,
                            Some(Err(why)) => {
                                report.push(format!("{name} {signature} {key}: {why}"))
                            }
                            None => report.push(format!("{name} {signature} {key}: not recorded")),
                        }
                    }
                }
                Err(err) => report.push(format!("{name} {signature}: {err}")),
            }
        }
    }
    assert!(
        report.is_empty(),
        "{passed} outputs matched; failures:\n{}",
        report.join("\n")
    );
}

#[test]
fn frozen_graphs_give_tensorflows_outputs() {
    let dir = common::data_dir().join("frozen");
    for name in ["keras_mlp", "keras_cnn"] {
        let model = Model::load_graph_def(dir.join(format!("{name}.pb")), &LoadOptions::default())
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        let recorded = common::read_npz(&dir.join(format!("{name}.io.npz")));
        let inputs: Vec<(String, Tensor)> = recorded
            .iter()
            .filter_map(|(k, t)| Some((k.strip_prefix("in/")?.to_string(), t.clone())))
            .collect();
        let outputs = model
            .run("serving_default", inputs)
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        assert_eq!(
            outputs.len(),
            recorded.keys().filter(|k| k.starts_with("out/")).count()
        );
        for (key, value) in outputs {
            let expected = &recorded[&format!("out/{key}")];
            close(&value, expected).unwrap_or_else(|why| panic!("{name} {key}: {why}"));
        }
    }
}

#[test]
fn a_frozen_graph_lists_its_placeholders_and_sinks() {
    let path = common::data_dir().join("frozen/keras_mlp.pb");
    let model = Model::load_graph_def(&path, &LoadOptions::default()).unwrap();
    let signature = model.signature("serving_default").unwrap();
    let keys: Vec<&str> = signature.inputs.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(keys, ["features"]);
    let outputs: Vec<&str> = signature.outputs.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(outputs, ["Identity"]);
}
