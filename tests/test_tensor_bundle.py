"""Reading TensorFlow-written checkpoints: values equal TensorFlow's, damage is a clear error."""
from __future__ import annotations

import json
import shutil
import struct

import numpy as np
import pytest

from conftest import CHECKPOINTS, CHECKPOINT_PREFIXES, SAVEDMODELS
from savedmodel.runtime.checksums import crc32c, mask
from savedmodel.runtime.errors import FileFormatError
from savedmodel.runtime.table import BLOCK_TRAILER_SIZE, FOOTER_SIZE, NO_COMPRESSION, TABLE_MAGIC, read_table
from savedmodel.runtime.table_writer import RESTART_INTERVAL, _Block
from savedmodel.runtime.tensor_bundle import OBJECT_GRAPH_KEY, BundleReader
from savedmodel.runtime.varint import encode_varint

EXPECTED = dict(np.load(CHECKPOINTS / "expected.npz"))
EXPECTED_STRINGS = json.loads((CHECKPOINTS / "expected_strings.json").read_text())
EXPECTED_SHAPES = json.loads((CHECKPOINTS / "expected_keys.json").read_text())
SINGLE = CHECKPOINTS / "single" / "ckpt"


def _expected(key: str) -> np.ndarray:
    if key in EXPECTED_STRINGS:
        return np.array([s.encode("utf-8") for s in EXPECTED_STRINGS[key]], dtype=object)
    return EXPECTED[key.replace("/", "|")]


def test_single_shard_values_equal_tensorflows():
    reader = BundleReader(SINGLE)
    assert sorted(reader.keys()) == sorted(EXPECTED_SHAPES)
    for key in reader.keys():
        if key == OBJECT_GRAPH_KEY:
            continue
        value, expected = reader.read(key), _expected(key)
        assert value.dtype == expected.dtype and value.shape == tuple(EXPECTED_SHAPES[key]), key
        assert value.dtype is np.dtype(value.dtype.type), f"{key}: not numpy's own dtype object"
        np.testing.assert_array_equal(value, expected, err_msg=key)


def test_sharded_unsliced_values_equal_tensorflows():
    reader = BundleReader(CHECKPOINTS / "sharded" / "ckpt")
    assert reader.header.num_shards == 4
    for key in reader.keys():
        if key != OBJECT_GRAPH_KEY and not reader.entry(key).slices:
            np.testing.assert_array_equal(reader.read(key), _expected(key), err_msg=key)


@pytest.mark.parametrize("prefix", CHECKPOINT_PREFIXES + [m / "variables" / "variables" for m in SAVEDMODELS],
                         ids=lambda p: "/".join(p.parts[-3:]))
def test_every_unsliced_tensor_equals_tensorflows_reading(tf, prefix):
    reader = BundleReader(prefix)
    theirs = tf.train.load_checkpoint(str(prefix))
    assert set(reader.keys()) == set(theirs.get_variable_to_shape_map())
    for key in reader.keys():
        if reader.entry(key).slices:
            continue
        expected = theirs.get_tensor(key)
        value = reader.read(key)
        assert value.shape == np.shape(expected), key
        if value.dtype == object:
            assert value.ravel().tolist() == np.asarray(expected, dtype=object).ravel().tolist(), key
        else:
            assert value.dtype == expected.dtype, key
            np.testing.assert_array_equal(value, expected, err_msg=key)


@pytest.fixture
def copy_of_single(tmp_path):
    for path in SINGLE.parent.iterdir():
        shutil.copy(path, tmp_path / path.name)
    return tmp_path / "ckpt"


def _flip_byte(path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


def _shard(prefix):
    return prefix.parent / "ckpt.data-00000-of-00001"


def _data_offset(key: str) -> int:
    entry = BundleReader(SINGLE).entry(key)
    return entry.offset + entry.size // 2


def test_corrupt_index_block_names_the_file(copy_of_single):
    index = copy_of_single.parent / "ckpt.index"
    _flip_byte(index, 10)
    with pytest.raises(FileFormatError, match=r"ckpt\.index: checksum mismatch in data block"):
        BundleReader(copy_of_single)


@pytest.mark.parametrize("key", ["model/inner/kernel/.ATTRIBUTES/VARIABLE_VALUE",
                                 "model/words/.ATTRIBUTES/VARIABLE_VALUE"])
def test_corrupt_tensor_names_file_and_key(copy_of_single, key):
    _flip_byte(_shard(copy_of_single), _data_offset(key))
    reader = BundleReader(copy_of_single)
    with pytest.raises(FileFormatError, match=f"{key}.*checksum mismatch"):
        reader.read(key)


def test_truncated_shard_is_an_error_before_reading(copy_of_single):
    shard = _shard(copy_of_single)
    shard.write_bytes(shard.read_bytes()[:100])
    with pytest.raises(FileFormatError, match=r"big/.*outside the 100-byte shard"):
        BundleReader(copy_of_single).read("model/big/.ATTRIBUTES/VARIABLE_VALUE")


def test_missing_shard_is_named(copy_of_single):
    _shard(copy_of_single).unlink()
    with pytest.raises(FileFormatError, match=r"data shard .*ckpt\.data-00000-of-00001 is missing"):
        BundleReader(copy_of_single).read("model/step/.ATTRIBUTES/VARIABLE_VALUE")


@pytest.mark.parametrize("size", [0, 20, 47])
def test_truncated_index_is_an_error(copy_of_single, size):
    index = copy_of_single.parent / "ckpt.index"
    index.write_bytes(index.read_bytes()[:size])
    with pytest.raises(FileFormatError, match=r"ckpt\.index: .*(too short|magic)"):
        BundleReader(copy_of_single)


def test_missing_index_is_named(tmp_path):
    with pytest.raises(FileFormatError, match=r"nothing\.index: no such file"):
        BundleReader(tmp_path / "nothing")


# An index whose blocks or keys are out of order. The single checkpoint's records are laid out
# again in data blocks of our choosing, every block with its correct checksum, so that only the
# order checks can refuse the table.

def _append_block(out: bytearray, block: bytes) -> tuple[int, int]:
    """Append `block` and its trailer to `out`; its handle (offset, size)."""
    offset = len(out)
    out += block + bytes([NO_COMPRESSION]) + struct.pack("<I", mask(crc32c(block + bytes([NO_COMPRESSION]))))
    return offset, len(block)


def _data_block(records) -> bytes:
    block = _Block(RESTART_INTERVAL)
    for key, value in records:
        block.add(key, value)
    return block.finish()


def _write_index(prefix, blocks, listed=None) -> None:
    """Write `prefix`.index with a data block for each list of records in `blocks` (in that
    order in the file) and an index listing the handles `listed(handles)` (default: all)."""
    out = bytearray()
    handles = [_append_block(out, _data_block(records)) for records in blocks]
    metaindex = _append_block(out, _data_block([]))
    index = _Block(1)
    for n, (offset, size) in enumerate(listed(handles) if listed else handles):
        index.add(b"%08d" % n, encode_varint(offset) + encode_varint(size))
    index_handle = _append_block(out, index.finish())
    footer = b"".join(encode_varint(v) for v in (*metaindex, *index_handle))
    out += footer + bytes(FOOTER_SIZE - 8 - len(footer)) + struct.pack("<Q", TABLE_MAGIC)
    (prefix.parent / f"{prefix.name}.index").write_bytes(bytes(out))


def _halves():
    records = read_table(f"{SINGLE}.index")
    return records[:len(records) // 2], records[len(records) // 2:]


def test_an_index_laid_out_again_in_two_blocks_reads_as_before(copy_of_single):
    """The control of the tests below: their tables are well formed but for what each breaks."""
    _write_index(copy_of_single, _halves())
    assert read_table(f"{copy_of_single}.index") == read_table(f"{SINGLE}.index")
    for key in BundleReader(SINGLE).keys():
        np.testing.assert_array_equal(BundleReader(copy_of_single).read(key), BundleReader(SINGLE).read(key))


OVERLAP = r"ckpt\.index: data block at offset \d+ overlaps the data block listed before it, which ends at \d+"


@pytest.mark.parametrize("listed", [pytest.param(lambda handles: handles * 1000, id="repeated"),
                                    pytest.param(lambda handles: handles[::-1], id="out of order")])
def test_an_index_listing_data_blocks_out_of_file_order_is_refused(copy_of_single, listed):
    _write_index(copy_of_single, _halves(), listed)
    with pytest.raises(FileFormatError, match=OVERLAP):
        BundleReader(copy_of_single)


def test_an_index_listing_a_block_inside_another_is_refused(copy_of_single):
    """The hidden block is a valid one (checksum and all), stored as the value of the second
    block's last record."""
    first, second = _halves()
    hidden = bytearray()
    _append_block(hidden, _data_block([(b"\xff\xff", b"")]))
    second = second + [(b"\xff", bytes(hidden))]
    offset = len(_data_block(first)) + BLOCK_TRAILER_SIZE + _data_block(second).find(hidden)
    hidden_handle = (offset, len(hidden) - BLOCK_TRAILER_SIZE)
    _write_index(copy_of_single, [first, second], lambda handles: [*handles, hidden_handle])
    with pytest.raises(FileFormatError, match=OVERLAP):
        BundleReader(copy_of_single)


@pytest.mark.parametrize("blocks", [
    pytest.param(lambda first, second: [first + first[-1:], second], id="repeated key"),
    pytest.param(lambda first, second: [first[::-1], second], id="decreasing in a block"),
    pytest.param(lambda first, second: [second, first], id="decreasing across blocks")])
def test_an_index_whose_keys_do_not_strictly_increase_is_refused(copy_of_single, blocks):
    first, second = _halves()
    _write_index(copy_of_single, blocks(first, second))
    with pytest.raises(FileFormatError, match=r"ckpt\.index: data block at offset \d+: key b'.*' does not "
                                              r"sort after the key before it, b'.*'; a table's keys"):
        read_table(f"{copy_of_single}.index")


def test_unknown_key_is_named():
    with pytest.raises(KeyError, match="no tensor named 'model/absent'"):
        BundleReader(SINGLE).read("model/absent")
