//! Bounded property tests: damaging bytes of a checkpoint index or of a saved_model.pb gives a
//! result or an error, never a panic, a hang or an unbounded allocation.

mod common;

use std::path::Path;

use proptest::prelude::*;
use prost::Message;
use savedmodel_core::protos::{attr_value, SavedModel};
use savedmodel_core::table::read_table;
use savedmodel_core::tensor_proto::tensor_from_proto;
use savedmodel_core::BundleReader;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Up to 4 (position fraction, xor mask) edits and an optional cut, applied to `data`.
fn damage(data: &[u8], edits: &[(f64, u8)], cut: Option<f64>) -> Vec<u8> {
    let mut out = data.to_vec();
    if out.is_empty() {
        return out;
    }
    for &(at, mask) in edits {
        let i = ((out.len() - 1) as f64 * at) as usize;
        out[i] ^= mask;
    }
    if let Some(fraction) = cut {
        out.truncate((out.len() as f64 * fraction) as usize);
    }
    out
}

fn edits() -> impl Strategy<Value = (Vec<(f64, u8)>, Option<f64>)> {
    (
        prop::collection::vec((0.0..1.0f64, 1..=255u8), 1..4),
        prop::option::weighted(0.2, 0.0..1.0f64),
    )
}

/// Opens the damaged index beside the real shard and reads every key it still lists.
fn read_all(prefix: &Path) {
    if let Ok(reader) = BundleReader::open(prefix) {
        for key in reader.keys() {
            let _ = reader.read(key);
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn damaged_index_never_panics((edits, cut) in edits()) {
        let source = common::data_dir().join("reference/checkpoints/single");
        let temp = tempfile::tempdir().unwrap();
        let index = std::fs::read(source.join("ckpt.index")).unwrap();
        std::fs::write(temp.path().join("ckpt.index"), damage(&index, &edits, cut)).unwrap();
        std::os::unix::fs::symlink(
            source.join("ckpt.data-00000-of-00001"),
            temp.path().join("ckpt.data-00000-of-00001"),
        )
        .unwrap();
        read_all(&temp.path().join("ckpt"));
    }

    /// Damages one record's entry and rewrites the table with valid checksums, so that the
    /// damage reaches the entry checks instead of stopping at the block checksum.
    #[test]
    fn damaged_entries_never_panic(record in 0..10usize, (edits, cut) in edits()) {
        let source = common::data_dir().join("reference/checkpoints/single");
        let temp = tempfile::tempdir().unwrap();
        let mut records = read_table(&source.join("ckpt.index")).unwrap();
        let slot = record % records.len();
        records[slot].1 = damage(&records[slot].1, &edits, cut);
        common::write_table(&temp.path().join("ckpt.index"), &records);
        std::os::unix::fs::symlink(
            source.join("ckpt.data-00000-of-00001"),
            temp.path().join("ckpt.data-00000-of-00001"),
        )
        .unwrap();
        read_all(&temp.path().join("ckpt"));
    }

    #[test]
    fn damaged_saved_model_never_panics((edits, cut) in edits()) {
        let path = common::data_dir().join("reference/savedmodels/seeds/saved_model.pb");
        let data = damage(&std::fs::read(path).unwrap(), &edits, cut);
        if let Ok(model) = SavedModel::decode(data.as_slice()) {
            let graphs = model.meta_graphs.iter().filter_map(|m| m.graph_def.as_ref());
            let nodes = graphs.flat_map(|g| {
                let functions = g.library.iter().flat_map(|l| &l.function);
                g.node.iter().chain(functions.flat_map(|f| &f.node_def))
            });
            for node in nodes {
                for attr in node.attr.values() {
                    if let Some(attr_value::Value::Tensor(tensor)) = &attr.value {
                        let _ = tensor_from_proto(tensor, &node.name);
                    }
                }
            }
        }
    }
}
