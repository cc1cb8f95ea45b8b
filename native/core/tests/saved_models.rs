//! Every TensorFlow-written SavedModel in the fixtures parses, its signatures are the ones
//! TensorFlow recorded beside it (`<model>.io.npz` holds `sig/<name>/in|out/<key>.npy` for each
//! signature it called), its constants decode, and damaged files are errors naming the file.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use prost::Message;
use savedmodel_core::protos::{attr_value, FunctionDef, NodeDef};
use savedmodel_core::saved_model::{find_meta_graph, read_graph_def, read_saved_model, signatures};
use savedmodel_core::tensor_proto::tensor_from_proto;
use savedmodel_core::{DType, Error};

type Keys = (Vec<String>, Vec<String>);

/// The signatures TensorFlow called when it recorded `dir`'s inputs and outputs.
fn recorded_signatures(dir: &Path) -> BTreeMap<String, Keys> {
    let mut out: BTreeMap<String, Keys> = BTreeMap::new();
    for name in common::npz_names(&dir.with_extension("io.npz")) {
        let parts: Vec<&str> = name.trim_end_matches(".npy").splitn(4, '/').collect();
        if let ["sig", signature, side, key] = parts.as_slice() {
            let keys = out.entry(signature.to_string()).or_default();
            let list = if *side == "in" {
                &mut keys.0
            } else {
                &mut keys.1
            };
            list.push(key.to_string());
        }
    }
    for (inputs, outputs) in out.values_mut() {
        inputs.sort();
        outputs.sort();
    }
    out
}

#[test]
fn every_saved_models_signatures_are_the_ones_tensorflow_called() {
    for dir in common::saved_models() {
        let model = read_saved_model(&dir).unwrap_or_else(|err| panic!("{err}"));
        let meta_graph = find_meta_graph(&model, &["serve"], &dir).unwrap();
        let ours: BTreeMap<&str, Keys> = signatures(meta_graph)
            .into_iter()
            .map(|(name, sig)| {
                let mut inputs: Vec<String> = sig.inputs.keys().cloned().collect();
                let mut outputs: Vec<String> = sig.outputs.keys().cloned().collect();
                inputs.sort();
                outputs.sort();
                (name, (inputs, outputs))
            })
            .collect();
        let recorded = recorded_signatures(&dir);
        assert!(!recorded.is_empty(), "{}: nothing recorded", dir.display());
        for (name, keys) in &recorded {
            assert_eq!(
                ours.get(name.as_str()),
                Some(keys),
                "{}: signature {name}",
                dir.display()
            );
        }
    }
}

/// Every Const node of a graph and of its functions decodes to the dtype its `dtype` attr says.
#[test]
fn every_constant_decodes_to_its_declared_dtype() {
    let mut decoded = 0;
    for dir in common::saved_models() {
        let model = read_saved_model(&dir).unwrap();
        for meta_graph in &model.meta_graphs {
            let graph = meta_graph.graph_def.clone().unwrap_or_default();
            let functions = graph.library.clone().unwrap_or_default().function;
            let bodies = functions.iter().map(|f: &FunctionDef| {
                (
                    f.signature.as_ref().map_or("", |s| s.name.as_str()),
                    &f.node_def,
                )
            });
            for (function, nodes) in std::iter::once(("graph", &graph.node)).chain(bodies) {
                for node in nodes.iter().filter(|n| n.op == "Const") {
                    decoded += check_constant(&dir, function, node);
                }
            }
        }
    }
    assert!(decoded > 500, "only {decoded} constants");
}

fn check_constant(dir: &Path, function: &str, node: &NodeDef) -> usize {
    let place = format!("{}: {function}/{}", dir.display(), node.name);
    let value = match node.attr.get("value").and_then(|a| a.value.as_ref()) {
        Some(attr_value::Value::Tensor(tensor)) => tensor,
        _ => panic!("{place}: no value attr"),
    };
    let tensor = tensor_from_proto(value, &place).unwrap_or_else(|err| panic!("{err}"));
    let declared = match node.attr.get("dtype").and_then(|a| a.value.as_ref()) {
        Some(attr_value::Value::Type(t)) => *t,
        _ => panic!("{place}: no dtype attr"),
    };
    assert_eq!(Some(tensor.dtype()), DType::from_proto(declared), "{place}");
    1
}

fn copy_model(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let pb = temp.path().join("saved_model.pb");
    std::fs::copy(
        common::data_dir()
            .join("reference/savedmodels")
            .join(name)
            .join("saved_model.pb"),
        &pb,
    )
    .unwrap();
    (temp, pb)
}

#[test]
fn truncated_saved_model_is_a_decode_error_naming_the_file() {
    let (temp, pb) = copy_model("keras_mlp");
    let data = std::fs::read(&pb).unwrap();
    for cut in [1, 7, data.len() / 3, data.len() / 2, data.len() - 1] {
        std::fs::write(&pb, &data[..cut]).unwrap();
        match read_saved_model(temp.path()) {
            Err(err @ Error::Decode { .. }) => {
                assert!(
                    err.to_string()
                        .contains("saved_model.pb: cannot parse SavedModel"),
                    "{err}"
                )
            }
            other => panic!("cut at {cut}: {other:?}"),
        }
    }
}

#[test]
fn garbled_saved_model_is_a_decode_error() {
    let (temp, pb) = copy_model("keras_mlp");
    let mut data = std::fs::read(&pb).unwrap();
    data[..64].fill(0xFF);
    std::fs::write(&pb, &data).unwrap();
    assert!(matches!(
        read_saved_model(temp.path()),
        Err(Error::Decode { .. })
    ));
}

#[test]
fn an_empty_saved_model_has_no_meta_graph_and_says_so() {
    let (temp, pb) = copy_model("keras_mlp");
    std::fs::write(&pb, b"").unwrap();
    let model = read_saved_model(temp.path()).unwrap();
    let err = find_meta_graph(&model, &["serve"], &pb).unwrap_err();
    assert!(matches!(err, Error::NoMetaGraph { .. }));
    assert!(
        err.to_string()
            .ends_with("no MetaGraphDef with tag-set 'serve' (tag-sets present: none)"),
        "{err}"
    );
}

#[test]
fn an_unknown_tag_set_lists_the_present_ones() {
    let dir = common::data_dir().join("reference/savedmodels/seeds");
    let model = read_saved_model(&dir).unwrap();
    let err = find_meta_graph(&model, &["train", "serve"], &dir).unwrap_err();
    assert!(
        err.to_string()
            .contains("tag-set 'serve,train' (tag-sets present: serve)"),
        "{err}"
    );
}

#[test]
fn missing_and_text_only_saved_models_are_named() {
    let temp = tempfile::tempdir().unwrap();
    assert!(matches!(
        read_saved_model(temp.path()),
        Err(Error::Missing { .. })
    ));
    std::fs::write(temp.path().join("saved_model.pbtxt"), "meta_graphs {}").unwrap();
    assert!(matches!(
        read_saved_model(temp.path()),
        Err(Error::Unsupported { .. })
    ));
}

#[test]
fn a_directory_in_place_of_the_file_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    std::fs::create_dir(temp.path().join("saved_model.pb")).unwrap();
    assert!(matches!(
        read_saved_model(temp.path()),
        Err(Error::NotRegularFile { .. })
    ));
}

#[cfg(unix)]
#[test]
fn a_fifo_in_place_of_the_file_is_refused_without_blocking() {
    let temp = tempfile::tempdir().unwrap();
    let fifo = temp.path().join("saved_model.pb");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let (send, receive) = mpsc::channel();
    let dir = temp.path().to_path_buf();
    std::thread::spawn(move || send.send(read_saved_model(&dir).map(|_| ())));
    let result = receive
        .recv_timeout(Duration::from_secs(10))
        .expect("reading a FIFO blocked");
    assert!(
        matches!(result, Err(Error::NotRegularFile { .. })),
        "{result:?}"
    );
}

/// A TensorFlow 1 graph (from the tf1_ref fixture) written as a frozen `.pb` reads back whole;
/// cut short it is a decode error naming the file.
#[test]
fn frozen_graph_def_reads_and_truncation_is_named() {
    let model = read_saved_model(&common::data_dir().join("models/tf1_ref")).unwrap();
    let graph = model.meta_graphs[0].graph_def.clone().unwrap();
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("frozen.pb");
    let bytes = graph.encode_to_vec();
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(read_graph_def(&path).unwrap(), graph);
    std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
    let err = read_graph_def(&path).unwrap_err();
    assert!(
        err.to_string().contains("frozen.pb: cannot parse GraphDef"),
        "{err}"
    );
}
