"""A tf-keras (Keras 2) TextVectorization export (tests/data/models/make_models_tf_keras.py):
its SavedModel keeps the layer's `adapt_step` function, which reads a dataset iterator no
signature feeds; loading must not need it (issue 14: it made the whole model unloadable)."""
from __future__ import annotations

import numpy as np

from conftest import DATA
from savedmodel.runtime import load
from savedmodel.runtime.saved_model_file import read_saved_model

MODEL = DATA / "models" / "tf_keras_text_vectorization"


def test_the_export_keeps_adapt_step():
    library = read_saved_model(MODEL).meta_graphs[0].graph_def.library
    assert any("adapt_step" in function.signature.name for function in library.function)


def test_loads_and_runs_on_every_engine_choice_that_can():
    recorded = np.load(MODEL.with_name(MODEL.name + ".io.npz"))
    text = recorded["sig/serving_default/in/text"]
    for engine in ("numpy", "auto"):
        outputs = load(MODEL, engine=engine).signatures["serving_default"](text=text)
        np.testing.assert_array_equal(outputs["embed"], recorded["sig/serving_default/out/embed"])
