//! Damaged checkpoints give the error variant that names the fault, never a panic or wrong
//! values: the corruption cases of tests/test_tensor_bundle.py plus single damaged fields of
//! index entries (written back with valid table checksums so that the entry itself is tested).

mod common;

use std::path::{Path, PathBuf};

use prost::Message;
use savedmodel_core::protos::{BundleEntryProto, BundleHeaderProto, TensorShapeProto};
use savedmodel_core::table::read_table;
use savedmodel_core::tensor_proto::shape_proto;
use savedmodel_core::{BundleReader, Error};

const KERNEL: &str = "model/inner/kernel/.ATTRIBUTES/VARIABLE_VALUE";
const WORDS: &str = "model/words/.ATTRIBUTES/VARIABLE_VALUE";
const BIG: &str = "model/big/.ATTRIBUTES/VARIABLE_VALUE";
const STEP: &str = "model/step/.ATTRIBUTES/VARIABLE_VALUE";

/// A private copy of the single-shard checkpoint; returns (temp dir, prefix).
fn copy_of_single() -> (tempfile::TempDir, PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let source = common::data_dir().join("reference/checkpoints/single");
    for entry in std::fs::read_dir(source).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, temp.path().join(path.file_name().unwrap())).unwrap();
    }
    let prefix = temp.path().join("ckpt");
    (temp, prefix)
}

fn index(prefix: &Path) -> PathBuf {
    prefix.with_extension("index")
}

fn shard(prefix: &Path) -> PathBuf {
    prefix.with_extension("data-00000-of-00001")
}

fn flip_byte(path: &Path, offset: usize) {
    let mut data = std::fs::read(path).unwrap();
    data[offset] ^= 0x40;
    std::fs::write(path, data).unwrap();
}

fn data_offset(prefix: &Path, key: &str) -> usize {
    let entry = BundleReader::open(prefix)
        .unwrap()
        .entry(key)
        .unwrap()
        .clone();
    (entry.offset + entry.size / 2) as usize
}

#[test]
fn corrupt_index_block_names_the_file_and_block() {
    let (_temp, prefix) = copy_of_single();
    flip_byte(&index(&prefix), 10);
    let err = BundleReader::open(&prefix).err().unwrap();
    assert!(matches!(err, Error::Checksum { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("ckpt.index: checksum mismatch in data block"),
        "{err}"
    );
}

#[test]
fn corrupt_tensor_names_shard_and_key() {
    for key in [KERNEL, WORDS] {
        let (_temp, prefix) = copy_of_single();
        flip_byte(&shard(&prefix), data_offset(&prefix, key));
        let err = BundleReader::open(&prefix).unwrap().read(key).unwrap_err();
        assert!(matches!(err, Error::Checksum { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains("ckpt.data-00000-of-00001") && text.contains(key),
            "{text}"
        );
    }
}

#[test]
fn truncated_shard_is_an_error_before_reading() {
    let (_temp, prefix) = copy_of_single();
    let data = std::fs::read(shard(&prefix)).unwrap();
    std::fs::write(shard(&prefix), &data[..100]).unwrap();
    let err = BundleReader::open(&prefix).unwrap().read(BIG).unwrap_err();
    assert!(matches!(err, Error::Truncated { .. }), "{err:?}");
    assert!(
        err.to_string().contains("lies outside the 100-byte shard"),
        "{err}"
    );
}

#[test]
fn missing_shard_is_named() {
    let (_temp, prefix) = copy_of_single();
    std::fs::remove_file(shard(&prefix)).unwrap();
    let err = BundleReader::open(&prefix).unwrap().read(STEP).unwrap_err();
    assert!(matches!(err, Error::MissingShard { .. }), "{err:?}");
    assert!(
        err.to_string().contains("data shard")
            && err
                .to_string()
                .contains("ckpt.data-00000-of-00001 is missing"),
        "{err}"
    );
}

#[test]
fn truncated_index_is_an_error() {
    for size in [0, 20, 47] {
        let (_temp, prefix) = copy_of_single();
        let data = std::fs::read(index(&prefix)).unwrap();
        std::fs::write(index(&prefix), &data[..size]).unwrap();
        let err = BundleReader::open(&prefix).err().unwrap();
        assert!(matches!(err, Error::Truncated { .. }), "{size}: {err:?}");
        assert!(
            err.to_string().contains("too short for a table footer"),
            "{err}"
        );
    }
    let (_temp, prefix) = copy_of_single();
    let data = std::fs::read(index(&prefix)).unwrap();
    std::fs::write(index(&prefix), &data[..data.len() - 1]).unwrap();
    assert!(matches!(
        BundleReader::open(&prefix),
        Err(Error::BadMagic { .. })
    ));
}

/// An index listing one data block twice would multiply the records it yields.
#[test]
fn an_index_listing_a_data_block_twice_is_corrupt() {
    let (_temp, prefix) = copy_of_single();
    let records = read_table(&index(&prefix)).unwrap();
    common::write_table_listing_data_block(&index(&prefix), &records, 2);
    let err = BundleReader::open(&prefix).err().unwrap();
    assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("data block at offset 0: overlaps the data block before it"),
        "{err}"
    );
}

/// Keys out of order (or repeated) mean a damaged table, not a later key hiding an earlier one.
#[test]
fn an_index_with_keys_out_of_order_is_corrupt() {
    let (_temp, prefix) = copy_of_single();
    let mut records = read_table(&index(&prefix)).unwrap();
    records.swap(2, 3);
    common::write_table(&index(&prefix), &records);
    let err = BundleReader::open(&prefix).err().unwrap();
    assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("does not sort after the key before it"),
        "{err}"
    );
}

#[test]
fn an_entry_that_is_not_a_bundle_entry_names_its_key() {
    let (_temp, prefix) = copy_of_single();
    let mut records = read_table(&index(&prefix)).unwrap();
    let (_, value) = records
        .iter_mut()
        .find(|(name, _)| name.as_slice() == KERNEL.as_bytes())
        .unwrap();
    *value = vec![0xFF, 0xFF];
    common::write_table(&index(&prefix), &records);
    let err = BundleReader::open(&prefix).err().unwrap();
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");
    let expected = format!("ckpt.index: cannot parse BundleEntryProto under key \"{KERNEL}\": ");
    assert!(err.to_string().contains(&expected), "{err}");
}

#[test]
fn missing_index_and_unknown_key_are_named() {
    let temp = tempfile::tempdir().unwrap();
    let err = BundleReader::open(temp.path().join("nothing"))
        .err()
        .unwrap();
    assert!(matches!(err, Error::Missing { .. }));
    assert!(
        err.to_string().ends_with("nothing.index: no such file"),
        "{err}"
    );
    let (_temp, prefix) = copy_of_single();
    let err = BundleReader::open(&prefix)
        .unwrap()
        .read("model/absent")
        .unwrap_err();
    assert!(matches!(err, Error::UnknownKey { .. }));
    assert!(
        err.to_string()
            .ends_with("no tensor named \"model/absent\""),
        "{err}"
    );
}

/// Rewrites the index with `edit` applied to the entry of `key`, and reads that key.
fn read_with_entry(key: &str, edit: impl FnOnce(&mut BundleEntryProto)) -> Result<(), Error> {
    let (_temp, prefix) = copy_of_single();
    let mut records = read_table(&index(&prefix)).unwrap();
    let (_, value) = records
        .iter_mut()
        .find(|(name, _)| name.as_slice() == key.as_bytes())
        .unwrap();
    let mut entry = BundleEntryProto::decode(value.as_slice()).unwrap();
    edit(&mut entry);
    *value = entry.encode_to_vec();
    common::write_table(&index(&prefix), &records);
    BundleReader::open(&prefix)?.read(key).map(|_| ())
}

fn shape(dims: &[i64]) -> Option<TensorShapeProto> {
    Some(shape_proto(dims))
}

#[test]
fn a_rewritten_but_undamaged_index_still_reads() {
    // Guards the helper: the cases below fail for their edit, not for the rewrite.
    assert!(read_with_entry(KERNEL, |_| {}).is_ok());
}

#[test]
fn damaged_entries_name_the_fault() {
    type Edit = Box<dyn FnOnce(&mut BundleEntryProto)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "wrong size",
            Box::new(|e| e.shape = shape(&[3, 5])),
            "needs 15 x 4",
        ),
        (
            "negative dim",
            Box::new(|e| e.shape = shape(&[-1, 4])),
            "negative dimension",
        ),
        (
            "overflowing shape",
            Box::new(|e| e.shape = shape(&[1 << 40, 1 << 40])),
            "overflows",
        ),
        (
            "unknown rank",
            Box::new(|e| {
                e.shape = Some(TensorShapeProto {
                    dim: vec![],
                    unknown_rank: true,
                })
            }),
            "unknown rank",
        ),
        (
            "shard id",
            Box::new(|e| e.shard_id = 3),
            "shard id 3 is outside the 1 shards",
        ),
        (
            "offset",
            Box::new(|e| e.offset = 1 << 50),
            "lies outside the",
        ),
        (
            "negative size",
            Box::new(|e| e.size = -4),
            "lies outside the",
        ),
        ("crc", Box::new(|e| e.crc32c ^= 1), "checksum mismatch"),
        (
            "dtype",
            Box::new(|e| e.dtype = 20),
            "DataType 20 cannot be read",
        ),
    ];
    for (name, edit, message) in cases {
        let err = read_with_entry(KERNEL, edit).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains(message) && text.contains(KERNEL),
            "{name}: {text}"
        );
    }
}

#[test]
fn damaged_string_entry_names_the_fault() {
    let err = read_with_entry(WORDS, |e| e.shape = shape(&[1000])).unwrap_err();
    assert!(
        err.to_string().contains("cannot hold 1000 strings"),
        "{err}"
    );
    let err = read_with_entry(WORDS, |e| e.shape = shape(&[2])).unwrap_err();
    assert!(matches!(err, Error::Checksum { .. }), "{err:?}");
}

#[test]
fn a_slice_without_its_record_is_missing_data() {
    use savedmodel_core::protos::{
        tensor_slice_proto::{extent::HasLengthHack, Extent},
        TensorSliceProto,
    };
    let half = |start| TensorSliceProto {
        extent: vec![
            Extent {
                start,
                has_length_hack: Some(HasLengthHack::Length(300)),
            },
            Extent {
                start: 0,
                has_length_hack: None,
            },
        ],
    };
    let err = read_with_entry(BIG, |e| e.slices = vec![half(0), half(300)]).unwrap_err();
    assert!(
        err.to_string()
            .contains("slice 0,300:-: the index has no record for this slice"),
        "{err}"
    );
}

/// Opens a copy of the single checkpoint whose header `edit` changed.
fn open_with_header(
    edit: impl FnOnce(&mut BundleHeaderProto),
) -> (tempfile::TempDir, Result<BundleReader, Error>) {
    let (temp, prefix) = copy_of_single();
    let mut records = read_table(&index(&prefix)).unwrap();
    let mut header = BundleHeaderProto::decode(records[0].1.as_slice()).unwrap();
    edit(&mut header);
    records[0].1 = header.encode_to_vec();
    common::write_table(&index(&prefix), &records);
    let reader = BundleReader::open(&prefix);
    (temp, reader)
}

/// A slice record may claim a huge shape over a few bytes; that is an error before the
/// tensor's memory is allocated.
#[test]
fn a_slice_claiming_more_than_its_bytes_is_an_error_before_allocating() {
    use savedmodel_core::bundle::slice_key;
    use savedmodel_core::protos::{tensor_slice_proto::Extent, TensorSliceProto};
    let (_temp, prefix) = copy_of_single();
    let mut records = read_table(&index(&prefix)).unwrap();
    let whole = TensorSliceProto {
        extent: vec![Extent {
            start: 0,
            has_length_hack: None,
        }],
    };
    let claimed = shape(&[1 << 36]);
    let (_, value) = records
        .iter_mut()
        .find(|(name, _)| name.as_slice() == BIG.as_bytes())
        .unwrap();
    let mut entry = BundleEntryProto::decode(value.as_slice()).unwrap();
    let slice = BundleEntryProto {
        shape: claimed.clone(),
        size: 4,
        ..entry.clone()
    };
    entry.shape = claimed;
    entry.slices = vec![whole.clone()];
    *value = entry.encode_to_vec();
    records.insert(
        1,
        (slice_key(BIG.as_bytes(), &whole), slice.encode_to_vec()),
    );
    common::write_table(&index(&prefix), &records);
    let err = BundleReader::open(&prefix).unwrap().read(BIG).unwrap_err();
    assert!(
        err.to_string()
            .contains("holds 4 bytes, but shape [68719476736] of float32"),
        "{err}"
    );
}

#[test]
fn a_bad_header_is_named() {
    let err = open_with_header(|h| h.num_shards = 0).1.err().unwrap();
    assert!(err.to_string().contains("claims 0 shards"), "{err}");
    let err = open_with_header(|h| h.endianness = 1).1.err().unwrap();
    assert!(matches!(err, Error::Unsupported { .. }), "{err:?}");
}

/// A header may claim any number of shards; nothing is allocated per claimed shard.
#[test]
fn a_huge_shard_count_costs_nothing_until_a_shard_is_used() {
    let (_temp, reader) = open_with_header(|h| h.num_shards = i32::MAX);
    let err = reader.unwrap().read(STEP).unwrap_err();
    assert!(matches!(err, Error::MissingShard { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("ckpt.data-00000-of-2147483647 is missing"),
        "{err}"
    );
}
