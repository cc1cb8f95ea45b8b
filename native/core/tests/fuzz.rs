//! Bounded property tests: damaging bytes of a checkpoint index or of a saved_model.pb gives a
//! result or an error, never a panic, a hang or an unbounded allocation.

mod common;

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use prost::Message;
use savedmodel_core::protos::{attr_value, BundleEntryProto, SavedModel};
use savedmodel_core::table::read_table;
use savedmodel_core::tensor_proto::{shape_proto, tensor_from_proto};
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

fn single() -> PathBuf {
    common::data_dir().join("reference/checkpoints/single")
}

/// Opens an index that `write` makes, beside the real shard, and reads every key it lists.
fn read_all_with_index(write: impl FnOnce(&Path)) {
    let temp = tempfile::tempdir().unwrap();
    write(&temp.path().join("ckpt.index"));
    let shard = "ckpt.data-00000-of-00001";
    std::os::unix::fs::symlink(single().join(shard), temp.path().join(shard)).unwrap();
    if let Ok(reader) = BundleReader::open(temp.path().join("ckpt")) {
        for key in reader.keys() {
            let _ = reader.read(key);
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn damaged_index_never_panics((edits, cut) in edits()) {
        let index = std::fs::read(single().join("ckpt.index")).unwrap();
        read_all_with_index(|path| std::fs::write(path, damage(&index, &edits, cut)).unwrap());
    }

    /// Damages one record's entry and rewrites the table with valid checksums, so that the
    /// damage reaches the entry checks instead of stopping at the block checksum.
    #[test]
    fn damaged_entries_never_panic(record in 0..10usize, (edits, cut) in edits()) {
        let mut records = read_table(&single().join("ckpt.index")).unwrap();
        let slot = record % records.len();
        records[slot].1 = damage(&records[slot].1, &edits, cut);
        read_all_with_index(|path| common::write_table(path, &records));
    }

    /// Arbitrary values in the fields of one entry (dtype, shape, shard, extent, checksum): an
    /// error or a tensor, and no allocation beyond what the shard holds (an over-allocation
    /// would abort the test process).
    #[test]
    fn arbitrary_entry_fields_never_panic(
        dtype in 0..25i32,
        dims in prop::collection::vec(prop_oneof![0..700i64, Just(-1i64), Just(1i64 << 40), Just(i64::MAX)], 0..3),
        shard_id in -1..2i32,
        offset in prop_oneof![0..1_300_000i64, Just(-1i64), Just(i64::MAX)],
        size in prop_oneof![0..1_300_000i64, Just(-1i64), Just(i64::MAX)],
        crc32c: u32,
    ) {
        let mut records = read_table(&single().join("ckpt.index")).unwrap();
        let kernel = b"model/inner/kernel/.ATTRIBUTES/VARIABLE_VALUE";
        let (_, value) = records.iter_mut().find(|(key, _)| key.as_slice() == kernel).unwrap();
        let mut entry = BundleEntryProto::decode(value.as_slice()).unwrap();
        entry.dtype = dtype;
        entry.shape = Some(shape_proto(&dims));
        (entry.shard_id, entry.offset, entry.size, entry.crc32c) = (shard_id, offset, size, crc32c);
        *value = entry.encode_to_vec();
        read_all_with_index(|path| common::write_table(path, &records));
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
