//! Every TensorFlow-written checkpoint in the fixtures reads, and its values equal the ones
//! TensorFlow recorded (expected.npz, expected_keys.json, expected_strings.json).

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use savedmodel_core::bundle::OBJECT_GRAPH_KEY;
use savedmodel_core::{BundleReader, Storage};

fn checkpoints() -> PathBuf {
    common::data_dir().join("reference/checkpoints")
}

fn expected_shapes() -> BTreeMap<String, Vec<usize>> {
    let text = std::fs::read_to_string(checkpoints().join("expected_keys.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn expected_strings() -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(checkpoints().join("expected_strings.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A checkpoint holding the values TensorFlow recorded: every key, shape and value equal.
fn assert_equals_recorded(prefix: &str) {
    let reader = BundleReader::open(checkpoints().join(prefix)).unwrap();
    let shapes = expected_shapes();
    let strings = expected_strings();
    let values = common::read_npz(&checkpoints().join("expected.npz"));
    let keys: Vec<&String> = shapes.keys().collect();
    let mut ours: Vec<&String> = reader.keys().iter().collect();
    ours.sort();
    assert_eq!(ours, keys);
    for key in reader.keys() {
        if key == OBJECT_GRAPH_KEY {
            continue;
        }
        let tensor = reader.read(key).unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(tensor.shape(), shapes[key].as_slice(), "{key}");
        match strings.get(key) {
            Some(expected) => {
                let expected: Vec<Vec<u8>> =
                    expected.iter().map(|s| s.as_bytes().to_vec()).collect();
                assert_eq!(tensor.storage(), &Storage::String(expected), "{key}");
            }
            None => assert_eq!(tensor, values[&key.replace('/', "|")], "{key}"),
        }
    }
}

#[test]
fn single_shard_values_equal_tensorflows() {
    assert_equals_recorded("single/ckpt");
}

#[test]
fn sharded_values_equal_tensorflows_including_a_partitioned_tensor() {
    let reader = BundleReader::open(checkpoints().join("sharded/ckpt")).unwrap();
    assert_eq!(reader.header().num_shards, 4);
    let big = reader
        .entry("model/big/.ATTRIBUTES/VARIABLE_VALUE")
        .unwrap();
    assert!(
        big.slices.len() > 1,
        "the fixture no longer holds a partitioned tensor"
    );
    assert_equals_recorded("sharded/ckpt");
}

#[test]
fn managed_checkpoints_read_whole() {
    let shapes = expected_shapes();
    for prefix in ["managed/ckpt-3", "managed/ckpt-4"] {
        let reader = BundleReader::open(checkpoints().join(prefix)).unwrap();
        for key in reader.keys() {
            let tensor = reader.read(key).unwrap_or_else(|err| panic!("{err}"));
            if let Some(shape) = shapes.get(key) {
                assert_eq!(tensor.shape(), shape.as_slice(), "{prefix}: {key}");
            }
        }
    }
}

#[test]
fn every_saved_models_variables_read_with_checksums_verified() {
    let mut read = 0;
    for dir in common::saved_models() {
        let prefix = dir.join("variables/variables");
        if !prefix.with_extension("index").exists() {
            continue; // a model without variables (tf1_tables)
        }
        let reader = BundleReader::open(prefix).unwrap();
        assert!(!reader.keys().is_empty(), "{}", dir.display());
        read += 1;
        for key in reader.keys() {
            reader.read(key).unwrap_or_else(|err| panic!("{err}"));
        }
    }
    assert!(read >= 18, "only {read} SavedModels with variables");
}
