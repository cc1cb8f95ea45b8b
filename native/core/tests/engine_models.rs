//! Every signature of every TensorFlow-written SavedModel in the fixtures, run through the
//! native engine, gives the outputs TensorFlow recorded beside it (`<model>.io.npz`).

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use savedmodel_core::{Error, LoadOptions, Model, RunOptions, Storage, Tensor};

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
    for dir in common::native_models() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        // A freshly loaded model per signature, as TensorFlow recorded them: the signatures of
        // one model share its random generators' state.
        for (signature, (inputs, expected)) in recorded(&dir) {
            let model = match Model::load(&dir, &LoadOptions::default()) {
                Ok(model) => model,
                Err(err) => {
                    report.push(format!("{name}: load: {err}"));
                    break;
                }
            };
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

/// What the Python module calls: inputs by position in the signature's (sorted) order,
/// outputs in its order; each signature on a freshly loaded model, as in the test above.
#[test]
fn inputs_in_the_signatures_order_give_tensorflows_outputs() {
    let mut report = Vec::new();
    let mut passed = 0;
    for dir in common::native_models() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        for (signature, (inputs, expected)) in recorded(&dir) {
            let Ok(model) = Model::load(&dir, &LoadOptions::default()) else {
                break; // every_signature_gives_tensorflows_outputs reports it
            };
            let spec = model.signature(&signature).unwrap();
            let mut by_key: BTreeMap<String, Tensor> = inputs.into_iter().collect();
            let ordered: Vec<Tensor> = spec
                .inputs
                .iter()
                .filter_map(|s| by_key.remove(&s.key))
                .collect();
            let keys: Vec<String> = spec.outputs.iter().map(|s| s.key.clone()).collect();
            match model.run_ordered(&signature, ordered, &RunOptions::default()) {
                Ok(outputs) => {
                    assert_eq!(outputs.len(), keys.len(), "{name} {signature}");
                    for (key, value) in keys.iter().zip(outputs) {
                        match expected.get(key).map(|e| close(&value, e)) {
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
    assert!(passed > 0);
}

#[test]
fn inputs_by_position_are_counted_and_checked() {
    let dir = common::model_dir("keras_mlp");
    let model = Model::load(&dir, &LoadOptions::default()).unwrap();
    let options = RunOptions::default();
    let err = model
        .run_ordered("serving_default", Vec::new(), &options)
        .unwrap_err();
    assert!(matches!(err, Error::Feed { .. }), "{err}");
    assert!(err.to_string().contains("takes 1 inputs"), "{err}");
    let wrong = Tensor::new(vec![1, 8], Storage::Float64(vec![0.0; 8])).unwrap();
    let err = model
        .run_ordered("serving_default", vec![wrong], &options)
        .unwrap_err();
    assert!(
        err.to_string().contains("expected float32, got float64"),
        "{err}"
    );
}

/// One image at a time, swish_cnn's squeeze-and-excitation Mul folds into the weights of the
/// convolution after it (engine::fuse_scale: one factor per channel of a batch of one); each
/// image's output is the row TensorFlow recorded for it in the batch.
#[test]
fn squeeze_excitation_folded_into_weights_gives_tensorflows_rows() {
    let dir = common::model_dir("swish_cnn");
    let model = Model::load(&dir, &LoadOptions::default()).unwrap();
    let (inputs, expected) = recorded(&dir).remove("serving_default").unwrap();
    let ([(key, images)], Some(rows)) = (inputs.as_slice(), expected.get("output_0")) else {
        panic!("swish_cnn records one input and output_0");
    };
    let row = |t: &Tensor, i: usize| {
        let size = t.len() / t.shape()[0];
        let values = t.values::<f32>().unwrap()[i * size..(i + 1) * size].to_vec();
        Tensor::from_vec([&[1], &t.shape()[1..]].concat(), values)
    };
    for i in 0..images.shape()[0] {
        let outputs = model
            .run("serving_default", vec![(key.clone(), row(images, i))])
            .unwrap();
        let [(name, output)] = outputs.as_slice() else {
            panic!("one output expected, got {}", outputs.len());
        };
        assert_eq!(name, "output_0");
        close(output, &row(rows, i)).unwrap_or_else(|why| panic!("image {i}: {why}"));
    }
}

/// A model the native engine cannot run yet fails to load naming exactly the op types
/// `numpy_only.txt` lists for it, so that the list shrinks as the engine gains kernels.
#[test]
fn models_listed_as_numpy_only_name_the_ops_they_lack() {
    for (name, ops) in common::numpy_only() {
        let dir = common::data_dir().join("models").join(&name);
        match Model::load(&dir, &LoadOptions::default()) {
            Err(Error::UnsupportedOps { missing }) => {
                let mut found: Vec<String> = missing.into_iter().map(|m| m.op).collect();
                found.sort();
                found.dedup();
                assert_eq!(
                    found, ops,
                    "{name}: update tests/data/models/numpy_only.txt"
                );
            }
            Err(err) => panic!("{name}: {err}"),
            Ok(_) => panic!("{name} now loads natively: remove it from numpy_only.txt"),
        }
    }
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
