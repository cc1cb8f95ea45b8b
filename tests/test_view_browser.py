"""`savedmodel view` pages in a real headless browser: Chromium from the system's packages,
driven by Selenium (the `browser` extra) through the system's chromedriver.

For a Keras CNN, an attention model and a stacked LSTM (all written by TensorFlow), each test
opens the page and checks what a user sees: a box for every layer, a layer that opens onto its
ops, a search that finds a node inside a closed layer and opens its side panel with shapes and
weight statistics, and screenshots whose pixels show the boxes where the DOM says they are.
Without a browser, a driver or Selenium the tests are skipped, unless
SAVEDMODEL_REQUIRE_BROWSER=1 (set by .ci/run), which makes that a failure.
Screenshots go to $SAVEDMODEL_SCREENSHOTS when it names a directory (to look at them).
"""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from conftest import DATA, REFERENCE
from savedmodel.views.viewer_page import write_view

REQUIRE_BROWSER = os.environ.get("SAVEDMODEL_REQUIRE_BROWSER") == "1"
MODELS = {
    "keras_cnn": REFERENCE / "savedmodels" / "keras_cnn",
    "attention": DATA / "models" / "attention",
    "lstm_stacked": DATA / "models" / "lstm_stacked",
}
LAYER_FILL = (0xF4, 0xEF, 0xFA)
"""The closed layer box's fill colour (viewer.css `.layer .frame`)."""
WINDOW = (1400, 900)

pytestmark = pytest.mark.browser


def _unavailable(reason: str):
    if REQUIRE_BROWSER:
        pytest.fail(f"SAVEDMODEL_REQUIRE_BROWSER=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _unavailable("Selenium is not installed (pip install savedmodel[browser])")
    chromium = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        _unavailable("no Chromium or chromedriver on PATH (apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     f"--window-size={WINDOW[0]},{WINDOW[1]}"):
        options.add_argument(argument)
    session = webdriver.Chrome(options=options, service=Service(driver))
    yield session
    session.quit()


@pytest.fixture(scope="module", params=sorted(MODELS))
def page(request, browser, tmp_path_factory):
    """The model's page, opened: (driver, the embedded document, where screenshots go)."""
    name = request.param
    out = tmp_path_factory.mktemp("view") / f"{name}.html"
    started = time.perf_counter()
    size = write_view(MODELS[name], out)
    written = time.perf_counter() - started
    started = time.perf_counter()
    browser.get(out.as_uri())
    ready = browser.execute_script("return document.body.dataset.ready")
    loaded = time.perf_counter() - started
    _report(request, f"view {name}: {size / 1024:.1f} KiB written in {written * 1000:.0f} ms, "
                     f"loaded by Chromium in {loaded * 1000:.0f} ms")
    assert ready == "1", browser.get_log("browser")
    document = json.loads(browser.execute_script("return document.getElementById('model-data').textContent"))
    shots = Path(os.environ.get("SAVEDMODEL_SCREENSHOTS") or tmp_path_factory.mktemp("shots"))
    return browser, document, shots / name


def _report(request, line: str) -> None:
    """A line in pytest's output even when it captures prints (sizes and times to read in CI's log)."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.ensure_newline()
            reporter.write_line(line)


def _rect(browser, element) -> dict:
    return browser.execute_script("const r = arguments[0].getBoundingClientRect();"
                                  "return {x: r.x, y: r.y, w: r.width, h: r.height};", element)


def _screenshot(browser, path: Path):
    from PIL import Image
    path.parent.mkdir(parents=True, exist_ok=True)
    png = browser.get_screenshot_as_png()
    path.with_suffix(".png").write_bytes(png)
    return Image.open(io.BytesIO(png)).convert("RGB")


def _inside(inner: dict, outer: dict) -> bool:
    return (inner["x"] >= outer["x"] - 0.5 and inner["y"] >= outer["y"] - 0.5
            and inner["x"] + inner["w"] <= outer["x"] + outer["w"] + 0.5
            and inner["y"] + inner["h"] <= outer["y"] + outer["h"] + 0.5)


def _overlap(a: dict, b: dict) -> bool:
    return (a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
            and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"])


def test_every_layer_has_a_box_on_screen(page):
    browser, document, shots = page
    from selenium.webdriver.common.by import By
    boxes = browser.find_elements(By.CSS_SELECTOR, "g.layer")
    names = [b.get_attribute("data-name") for b in boxes]
    assert names == [layer["name"] for layer in document["layers"]]
    # every weight belongs to a layer named in its variable's name (which the TensorFlow-written
    # object graph gives: `sequential_1/conv2d/kernel` -> `conv2d`)
    for v in document["variables"]:
        assert set(v["name"].split("/")[:-1]) & set(names), v["name"]
    canvas = _rect(browser, browser.find_element(By.ID, "canvas"))
    image = _screenshot(browser, shots.with_name(shots.name + "-closed"))
    assert len(image.getcolors(1 << 16) or ()) > 8, "the screenshot is (nearly) blank"
    for box in boxes:
        rect = _rect(browser, box.find_element(By.CSS_SELECTOR, "rect.frame"))
        assert rect["w"] > 20 and rect["h"] > 10 and _inside(rect, canvas), (box.get_attribute("data-name"), rect)
        # the pixels inside the box are the layer colour: it is drawn where the DOM says
        centre = (int(rect["x"] + rect["w"] / 2), int(rect["y"] + rect["h"] - 3))
        assert _near(image.getpixel(centre), LAYER_FILL), (box.get_attribute("data-name"), image.getpixel(centre))


def _near(pixel, colour, tolerance: int = 12) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, colour))


def test_a_layer_opens_onto_its_ops_and_closes(page):
    browser, document, shots = page
    from selenium.webdriver.common.by import By
    index = max(range(len(document["layers"])), key=lambda i: len(document["layers"][i]["nodes"]))
    layer = document["layers"][index]
    selector = f'g.layer[data-layer="{index}"]'
    closed = _rect(browser, browser.find_element(By.CSS_SELECTOR, selector + " rect.frame"))
    browser.find_element(By.CSS_SELECTOR, selector + " .layer-head").click()
    opened = browser.find_element(By.CSS_SELECTOR, selector)
    assert "open" in opened.get_attribute("class").split()
    frame = _rect(browser, opened.find_element(By.CSS_SELECTOR, "rect.frame"))
    ops = opened.find_elements(By.CSS_SELECTOR, "g.node")
    assert sorted(int(n.get_attribute("data-node")) for n in ops) == sorted(layer["nodes"])
    assert frame["w"] * frame["h"] > closed["w"] * closed["h"]
    rects = [_rect(browser, n.find_element(By.TAG_NAME, "rect")) for n in ops]
    assert all(_inside(r, frame) for r in rects)
    assert not any(_overlap(a, b) for i, a in enumerate(rects) for b in rects[i + 1:])
    others = browser.find_elements(By.CSS_SELECTOR, "g.layer:not(.open) rect.frame, #viewport > g.node > rect")
    assert others and not any(_overlap(_rect(browser, other), frame) for other in others)
    image = _screenshot(browser, shots.with_name(shots.name + "-open"))
    assert len(image.getcolors(1 << 16) or ()) > 8
    # the panel describes the layer as `savedmodel summary` does
    panel = browser.find_element(By.ID, "panel")
    assert panel.is_displayed() and panel.find_element(By.TAG_NAME, "h2").text == layer["name"]
    summary = panel.find_element(By.CSS_SELECTOR, "table.layer-summary").text
    assert f"params {layer['params']:,} (trainable {layer['trainable']:,})" in summary
    assert len(panel.find_elements(By.CSS_SELECTOR, "table.weights")) == len(layer["variables"])
    browser.find_element(By.CSS_SELECTOR, selector + " .layer-head").click()
    assert not browser.find_elements(By.CSS_SELECTOR, "g.layer.open")


def test_all_layers_open_at_once_without_overlapping(page):
    browser, document, shots = page
    from selenium.webdriver.common.by import By
    browser.find_element(By.ID, "open-all").click()
    frames = [_rect(browser, f) for f in browser.find_elements(By.CSS_SELECTOR, "g.layer.open rect.frame")]
    assert len(frames) == len(document["layers"])
    free = [_rect(browser, r) for r in browser.find_elements(By.CSS_SELECTOR, "#viewport > g.node > rect")]
    boxes = frames + free
    assert not any(_overlap(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    for index, frame in enumerate(frames):
        inner = browser.find_elements(By.CSS_SELECTOR, f'g.layer[data-layer="{index}"] g.node rect')
        assert len(inner) == len(document["layers"][index]["nodes"])
        assert all(_inside(_rect(browser, r), frame) for r in inner)
    assert len(browser.find_elements(By.CSS_SELECTOR, "g.node")) == len(document["nodes"])
    _screenshot(browser, shots.with_name(shots.name + "-all"))
    browser.find_element(By.ID, "close-all").click()


def test_search_finds_a_node_in_a_closed_layer_and_opens_its_panel(page):
    browser, document, shots = page
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    browser.find_element(By.ID, "close-all").click()
    # a node that reads weights, inside a layer: the panel then has every section
    index = next(i for i, n in enumerate(document["nodes"]) if n["variables"] and n["layer"] is not None)
    node = document["nodes"][index]
    search = browser.find_element(By.ID, "search")
    search.clear()
    search.send_keys(node["path"])
    results = [int(r.get_attribute("data-node")) for r in browser.find_elements(By.CSS_SELECTOR, "#results li")]
    assert results[0] == index and all(node["path"] in document["nodes"][i]["path"] for i in results)
    search.send_keys(Keys.ENTER)
    selected = browser.find_element(By.CSS_SELECTOR, f'g.node[data-node="{index}"]')
    assert "selected" in selected.get_attribute("class").split()
    layer = browser.find_element(By.CSS_SELECTOR, f'g.layer[data-layer="{node["layer"]}"]')
    assert "open" in layer.get_attribute("class").split()
    panel = browser.find_element(By.ID, "panel")
    assert panel.is_displayed() and _rect(browser, panel)["w"] > 100
    text = panel.text
    assert node["op"] in text and node["path"] in text
    for output in node["outputs"]:
        assert output["shape"] is None or output["shape"] in text
    weights = document["variables"][node["variables"][0]]
    table = panel.find_element(By.CSS_SELECTOR, "table.weights")
    for key, value in weights["stats"].items():
        assert re.search(rf"{key}\s+{re.escape(value)}", table.text), (key, value, table.text)
    _screenshot(browser, shots.with_name(shots.name + "-panel"))
    browser.find_element(By.ID, "close-panel").click()
    assert not panel.is_displayed() and not browser.find_elements(By.CSS_SELECTOR, "g.node.selected")
    search.clear()
    search.send_keys(node["op"])
    by_op = {int(r.get_attribute("data-node")) for r in browser.find_elements(By.CSS_SELECTOR, "#results li")}
    assert by_op == {i for i, n in enumerate(document["nodes"]) if node["op"].lower() in n["op"].lower()
                     or node["op"].lower() in n["path"].lower()}


def test_zoom_and_pan_move_the_drawing(page):
    browser, _, _ = page
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    viewport = browser.find_element(By.ID, "viewport")
    canvas = browser.find_element(By.ID, "canvas")
    before = _rect(browser, viewport)
    browser.execute_script("arguments[0].dispatchEvent(new WheelEvent('wheel', {deltaY: -400, "
                           "clientX: 300, clientY: 300, bubbles: true, cancelable: true}))", canvas)
    zoomed = _rect(browser, viewport)
    assert zoomed["w"] > before["w"] * 1.5
    ActionChains(browser).move_to_element(canvas).click_and_hold().move_by_offset(120, 80).release().perform()
    panned = _rect(browser, viewport)
    assert abs(panned["x"] - zoomed["x"] - 120) < 2 and abs(panned["y"] - zoomed["y"] - 80) < 2
    browser.find_element(By.ID, "fit").click()
