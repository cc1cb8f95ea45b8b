"""The JPEG cases TensorFlow-recorded fixtures cannot express: what the JPEG kernels refuse
rather than answer differently from TensorFlow, and the error without the optional Pillow."""
from __future__ import annotations

import base64
import json
import sys

import numpy as np
import pytest

from conftest import DATA
from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels import codecs


def _fixture_input(case_id: str) -> np.ndarray:
    """The JPEG bytes a recorded case decodes (TensorFlow or Pillow made them)."""
    record = next(r for r in json.loads((DATA / "ops" / "jpeg.json").read_text()) if r["id"] == case_id)
    return np.array(base64.b64decode(record["inputs"][0]["b64"][0]), dtype=object)


def test_truncated_jpeg_is_an_error_even_when_tensorflow_would_recover_it():
    whole = _fixture_input("DecodeJpeg/tf420_r1_default_fancy").item()
    truncated = np.array(whole[:len(whole) * 2 // 3], dtype=object)
    for attrs in ({"try_recover_truncated": True}, {"acceptable_fraction": 0.5}):
        with pytest.raises(KernelError, match="truncated.*not supported"):
            codecs.decode_jpeg(truncated, **attrs)


def test_accurate_idct_without_an_exact_route_is_refused():
    """4:2:2 chroma, INTEGER_ACCURATE, ratio 1: exact only with fancy upscaling, uncropped."""
    jpeg = _fixture_input("DecodeJpeg/pil422_r1_default_fancy")
    with pytest.raises(KernelError, match="have no exact decoding here"):
        codecs.decode_and_crop_jpeg(jpeg, np.array([0, 1, 4, 5], np.int32), dct_method="INTEGER_ACCURATE")
    with pytest.raises(KernelError, match="have no exact decoding here"):
        codecs.decode_jpeg(jpeg, dct_method="INTEGER_ACCURATE", fancy_upscaling=False)


def test_without_pillow_the_error_names_the_op_and_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(KernelError, match=r"DecodeJpeg needs Pillow.*savedmodel\[image\]"):
        codecs.decode_jpeg(_fixture_input("DecodeJpeg/tf420_r1_default_fancy"))
    with pytest.raises(KernelError, match="EncodeJpeg needs Pillow"):
        codecs.encode_jpeg(np.zeros((2, 2, 3), np.uint8))


def test_bmp_needs_no_pillow(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    pixels = bytes([1, 2, 3, 0])  # one BGR pixel, row padded to 4 bytes
    header = b"BM" + (58).to_bytes(4, "little") + bytes(4) + (54).to_bytes(4, "little")
    info = (40).to_bytes(4, "little") + (1).to_bytes(4, "little") + (1).to_bytes(4, "little") + \
        (1).to_bytes(2, "little") + (24).to_bytes(2, "little") + bytes(24)
    (image,) = codecs.decode_bmp(np.array(header + info + pixels, dtype=object))
    assert image.tolist() == [[[3, 2, 1]]]


@pytest.mark.parametrize("case_id", ["DecodeJpeg/tf420_r1_default_fancy", "DecodeJpeg/pil_progressive_r1_default_fancy",
                                     "DecodeJpeg/pil422_r1_default_fancy", "DecodeJpeg/cmyk",
                                     "DecodeGif/animated_optimized", "DecodeBmp/bgr24"])
def test_damaged_files_decode_or_fail_cleanly(case_id):
    """Truncated, overwritten and spliced copies: an image or a KernelError, never another
    exception (Pillow's, numpy's) and never a hang."""
    whole = _fixture_input(case_id).item()
    rng = np.random.default_rng(len(whole))
    for attempt in range(60):
        data = bytearray(whole)
        if attempt % 3 == 0:
            data = data[:rng.integers(0, len(data))]
        elif attempt % 3 == 1:
            for _ in range(rng.integers(1, 6)):
                data[rng.integers(0, len(data))] = rng.integers(0, 256)
        else:
            at = rng.integers(0, len(data))
            data = data[:at] + bytes(rng.integers(0, 256, rng.integers(1, 20)).astype(np.uint8)) + data[at:]
        contents = np.array(bytes(data), dtype=object)
        for call in (lambda: codecs.decode_image(contents), lambda: codecs.extract_jpeg_shape(contents),
                     lambda: codecs.decode_jpeg(contents, dct_method="INTEGER_ACCURATE", fancy_upscaling=False),
                     lambda: codecs.decode_and_crop_jpeg(contents, np.array([1, 1, 3, 3], np.int32))):
            try:
                call()
            except KernelError:
                pass


def test_encoding_an_empty_image_is_an_error():
    """TensorFlow fails with InternalError ("JPEG encoding failed"), which the op fixtures do
    not record."""
    with pytest.raises(KernelError, match="empty image"):
        codecs.encode_jpeg(np.zeros((0, 4, 3), np.uint8))
