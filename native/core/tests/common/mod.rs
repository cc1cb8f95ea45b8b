//! Helpers shared by the integration tests: fixture paths, a reader for the `.npz` files in
//! which the fixtures record TensorFlow's values (numpy's uncompressed zip of `.npy` files), and
//! NodeDefs for hand-built graphs.
#![allow(dead_code)] // each test binary uses its own subset

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use savedmodel_core::protos::attr_value::Value as A;
use savedmodel_core::protos::{AttrValue, NodeDef};
use savedmodel_core::Tensor;

/// A NodeDef of a hand-built graph.
pub fn node(name: &str, op: &str, inputs: &[&str], attrs: Vec<(&str, A)>) -> NodeDef {
    NodeDef {
        name: name.into(),
        op: op.into(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        attr: attrs
            .into_iter()
            .map(|(k, v)| (k.to_string(), AttrValue { value: Some(v) }))
            .collect(),
        ..Default::default()
    }
}

/// The repository's `tests/data`.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data")
}

/// The models `tests/data/models/numpy_only.txt` lists as needing ops the native engine lacks,
/// each with those op types (sorted).
pub fn numpy_only() -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(data_dir().join("models/numpy_only.txt"))
        .expect("tests/data/models/numpy_only.txt");
    let mut out = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let (name, ops) = line.split_once(':').expect("`name: Op, Op`");
        let mut ops: Vec<String> = ops.split(',').map(|op| op.trim().to_string()).collect();
        ops.sort();
        out.insert(name.trim().to_string(), ops);
    }
    out
}

/// The SavedModels the native engine runs: all but those `numpy_only` lists.
pub fn native_models() -> Vec<PathBuf> {
    let skipped = numpy_only();
    saved_models()
        .into_iter()
        .filter(|dir| {
            let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
            !name.is_some_and(|n| skipped.contains_key(&n))
        })
        .collect()
}

/// The fixtures' SavedModel directory called `name` (with its recorded `.io.npz`).
pub fn model_dir(name: &str) -> PathBuf {
    saved_models()
        .into_iter()
        .find(|dir| dir.ends_with(name))
        .unwrap_or_else(|| panic!("no SavedModel fixture named {name}"))
}

/// Every SavedModel directory the fixtures hold, with the `.io.npz` TensorFlow recorded for it.
pub fn saved_models() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for parent in ["reference/savedmodels", "models"] {
        for entry in std::fs::read_dir(data_dir().join(parent)).expect("fixture directory") {
            let path = entry.expect("directory entry").path();
            if path.join("saved_model.pb").is_file() {
                dirs.push(path);
            }
        }
    }
    dirs.sort();
    assert!(dirs.len() >= 19, "fixtures missing: {dirs:?}");
    dirs
}

/// The member names of an `.npz`, without `.npy`.
pub fn npz_names(path: &Path) -> Vec<String> {
    read_npz(path).into_keys().collect()
}

/// Every array of an `.npz`, by member name without `.npy`.
pub fn read_npz(path: &Path) -> BTreeMap<String, Tensor> {
    savedmodel_npy::read_npz_arrays(path)
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .collect()
}

/// Writes `records` (sorted by key) as a LevelDB-format table the way TensorFlow's writer lays
/// it out (one data block, an empty metaindex block, an index block, the footer), so that tests
/// can damage single fields of an index and still pass its checksums.
pub fn write_table(path: &Path, records: &[(Vec<u8>, Vec<u8>)]) {
    write_table_listing_data_block(path, records, 1);
}

/// [`write_table`] with an index that lists its one data block `times` times.
pub fn write_table_listing_data_block(path: &Path, records: &[(Vec<u8>, Vec<u8>)], times: usize) {
    use savedmodel_core::checksum::{crc32c, mask};
    fn varint(out: &mut Vec<u8>, mut value: u64) {
        while value >= 0x80 {
            out.push((value as u8) | 0x80);
            value >>= 7;
        }
        out.push(value as u8);
    }
    fn block(file: &mut Vec<u8>, records: &[(Vec<u8>, Vec<u8>)]) -> (u64, u64) {
        let mut body = Vec::new();
        for (key, value) in records {
            varint(&mut body, 0);
            varint(&mut body, key.len() as u64);
            varint(&mut body, value.len() as u64);
            body.extend(key);
            body.extend(value);
        }
        body.extend(0u32.to_le_bytes()); // one restart point, at 0
        body.extend(1u32.to_le_bytes());
        let handle = (file.len() as u64, body.len() as u64);
        body.push(0); // no compression
        let crc = mask(crc32c(&body));
        file.extend(&body);
        file.extend(crc.to_le_bytes());
        handle
    }
    let mut file = Vec::new();
    let data = block(&mut file, records);
    let meta = block(&mut file, &[]);
    let mut data_handle = Vec::new();
    varint(&mut data_handle, data.0);
    varint(&mut data_handle, data.1);
    let last_key = records.last().map(|(k, _)| k.clone()).unwrap_or_default();
    let index = block(&mut file, &vec![(last_key, data_handle); times]);
    let mut footer = Vec::new();
    for value in [meta.0, meta.1, index.0, index.1] {
        varint(&mut footer, value);
    }
    footer.resize(40, 0);
    footer.extend(0xDB47_7524_8B80_FB57u64.to_le_bytes());
    file.extend(footer);
    std::fs::write(path, file).unwrap();
}

/// Deterministic values in [-1, 1).
pub fn values(count: usize, seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// An integer list attribute.
pub fn ints(values: &[i64]) -> A {
    A::List(Box::new(savedmodel_core::protos::attr_value::ListValue {
        i: values.to_vec(),
        ..Default::default()
    }))
}

/// A float32 Const node holding `t`.
pub fn constant(name: &str, t: &Tensor) -> NodeDef {
    let proto = savedmodel_core::protos::TensorProto {
        dtype: savedmodel_core::DType::Float32.to_proto(),
        tensor_shape: Some(savedmodel_core::tensor_proto::shape_proto(
            &t.shape().iter().map(|&d| d as i64).collect::<Vec<_>>(),
        )),
        tensor_content: t.storage().to_le_bytes(),
        ..Default::default()
    };
    node(
        name,
        "Const",
        &[],
        vec![("dtype", A::Type(1)), ("value", A::Tensor(Box::new(proto)))],
    )
}
