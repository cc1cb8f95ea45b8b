// The interactive model viewer (`savedmodel view`): draws the document that
// savedmodel/views/viewer.py embeds in the page. All layout happens in Python; this file only
// draws, opens and closes layers, zooms, pans, searches and fills the side panel.
//
// Opening a layer inserts space into the precomputed layout instead of laying it out again:
// every point right of the layer's box moves right by the extra width, every point below it
// moves down by the extra height. Rows are laid out top to bottom, so nothing overlaps, and
// several layers can be open at once.
"use strict";
(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const HEADER = 22, PAD = 10, MAX_RESULTS = 200;
  const doc = JSON.parse(document.getElementById("model-data").textContent);
  const svg = document.getElementById("canvas");
  const viewport = document.getElementById("viewport");
  const panel = document.getElementById("panel");
  const open = new Set();
  let view = { x: 0, y: 0, k: 1 };
  let selected = null;

  function el(name, attrs, parent) {
    const node = document.createElementNS(SVG, name);
    for (const key in attrs) node.setAttribute(key, attrs[key]);
    if (parent) parent.appendChild(node);
    return node;
  }

  function text(parent, x, y, value, cls) {
    const node = el("text", { x: x, y: y, class: cls }, parent);
    node.textContent = value;
    return node;
  }

  // The space each open layer inserts: cuts at its right and bottom sides.
  function cuts() {
    const list = [];
    open.forEach(function (index) {
      const layer = doc.layers[index];
      list.push({ right: layer.x + layer.w, bottom: layer.y + layer.h,
                  dx: Math.max(0, layer.open_w - layer.w), dy: Math.max(0, layer.open_h - layer.h) });
    });
    return list;
  }

  function mover(list) {
    return function (x, y) {
      let dx = 0, dy = 0;
      for (const cut of list) {
        if (x >= cut.right - 0.01) dx += cut.dx;
        if (y >= cut.bottom - 0.01) dy += cut.dy;
      }
      return [x + dx, y + dy];
    };
  }

  function edgePath(points, move, ox, oy) {
    const p = points.map(function (q) { return move(q[0], q[1]); });
    let d = "M" + (p[0][0] + ox) + "," + (p[0][1] + oy);
    for (let i = 1; i < p.length; i++) {
      const a = p[i - 1], b = p[i], bend = (b[1] - a[1]) / 2;
      d += " C" + (a[0] + ox) + "," + (a[1] + bend + oy) + " " + (b[0] + ox) + "," + (b[1] - bend + oy) +
           " " + (b[0] + ox) + "," + (b[1] + oy);
    }
    return { d: d, mid: p[Math.floor((p.length - 1) / 2)], next: p[Math.floor((p.length - 1) / 2) + 1] };
  }

  function drawEdge(parent, edge, move, ox, oy) {
    const path = edgePath(edge.points, move, ox, oy);
    el("path", { d: path.d, class: "edge", "marker-end": "url(#arrow)" }, parent);
    if (edge.label) {
      const x = (path.mid[0] + path.next[0]) / 2 + ox + 4, y = (path.mid[1] + path.next[1]) / 2 + oy + 3;
      text(parent, x, y, edge.label, "edge-label");
    }
  }

  function drawNode(parent, index, x, y, w, h) {
    const node = doc.nodes[index];
    const g = el("g", { class: "node" + (node.kind !== "op" ? " " + node.kind : ""), "data-node": index,
                        "data-name": node.name, "data-op": node.op }, parent);
    el("rect", { x: x, y: y, width: w, height: h, rx: node.kind === "op" ? 4 : h / 2 }, g);
    text(g, x + w / 2, y + (node.label ? 14 : 21), node.op, "op");
    if (node.label) text(g, x + w / 2, y + 27, node.label, "name");
    el("title", {}, g).textContent = node.path;
    g.addEventListener("click", function (event) { event.stopPropagation(); select(index); });
    if (selected === index) g.classList.add("selected");
    return g;
  }

  function drawLayer(parent, index, move) {
    const layer = doc.layers[index];
    const isOpen = open.has(index);
    const [x, y] = move(layer.x, layer.y);
    const w = isOpen ? Math.max(layer.w, layer.open_w) : layer.w;
    const h = isOpen ? Math.max(layer.h, layer.open_h) : layer.h;
    const g = el("g", { class: "layer" + (isOpen ? " open" : ""), "data-layer": index,
                        "data-name": layer.name }, parent);
    el("rect", { x: x, y: y, width: w, height: h, rx: 6, class: "frame" }, g);
    const head = el("g", { class: "layer-head" }, g);
    el("rect", { x: x, y: y, width: w, height: isOpen ? HEADER : h, rx: 6, class: "head" }, head);
    text(head, x + PAD, y + 15, (isOpen ? "\u25be " : "\u25b8 ") + layer.name, "layer-name");
    if (!isOpen) {
      text(head, x + PAD, y + 31, layer.type, "layer-type");
      if (layer.params) text(head, x + w - PAD, y + 31, layer.params.toLocaleString("en-US") + " params", "layer-params");
    }
    el("title", {}, head).textContent = layer.name + " (" + layer.nodes.length + " nodes): click to " +
      (isOpen ? "close" : "open");
    head.addEventListener("click", function (event) {
      event.stopPropagation();
      toggle(index);
      showLayer(index);
    });
    if (isOpen) {
      const ox = x + PAD, oy = y + HEADER;
      const same = function (px, py) { return [px, py]; };
      for (const edge of layer.edges) drawEdge(g, edge, same, ox, oy);
      for (const key in layer.positions) {
        const p = layer.positions[key];
        drawNode(g, Number(key), p[0] + ox, p[1] + oy, p[2], p[3]);
      }
    }
    return g;
  }

  function render() {
    while (viewport.firstChild) viewport.removeChild(viewport.firstChild);
    const move = mover(cuts());
    const edges = el("g", { class: "edges" }, viewport);
    for (const edge of doc.edges) drawEdge(edges, edge, move, 0, 0);
    for (const item of doc.items) {
      if (item.layer !== undefined) drawLayer(viewport, item.layer, move);
      else {
        const [x, y] = move(item.x, item.y);
        drawNode(viewport, item.node, x, y, item.w, item.h);
      }
    }
    applyView();
  }

  function applyView() {
    viewport.setAttribute("transform", "translate(" + view.x + "," + view.y + ") scale(" + view.k + ")");
  }

  // Scales the drawing to fit the window; at most down to `least` (the first view of a tall
  // model starts at its top at a readable size instead of as a thin line).
  function fit(least) {
    const box = svg.getBoundingClientRect();
    const k = Math.min(1.5, (box.width - 40) / doc.width, (box.height - 40) / doc.height);
    view = { k: Math.max(k, least || 0.02), x: 0, y: 20 };
    view.x = Math.max(20, (box.width - doc.width * view.k) / 2);
    applyView();
  }

  function toggle(index) {
    if (open.has(index)) open.delete(index); else open.add(index);
    render();
  }

  function center(index) {
    const g = viewport.querySelector('g.node[data-node="' + index + '"]');
    if (!g) return;
    const box = g.getBBox(), screen = svg.getBoundingClientRect();
    view.k = Math.max(view.k, 1);
    view.x = screen.width / 2 - (box.x + box.width / 2) * view.k;
    view.y = screen.height / 2 - (box.y + box.height / 2) * view.k;
    applyView();
  }

  // Shows node `index`: opens its layer if needed, selects it, fills the panel.
  function reveal(index) {
    document.getElementById("results").innerHTML = "";
    const layer = doc.nodes[index].layer;
    if (layer !== null && !open.has(layer)) open.add(layer);
    select(index);
    center(index);
  }

  function select(index) {
    selected = index;
    render();
    showPanel(doc.nodes[index]);
  }

  function row(table, key, value, cls) {
    const tr = document.createElement("tr");
    const th = document.createElement("th");
    const td = document.createElement("td");
    th.textContent = key;
    td.textContent = value;
    if (cls) td.className = cls;
    tr.appendChild(th);
    tr.appendChild(td);
    table.appendChild(tr);
  }

  function section(title) {
    const h = document.createElement("h3");
    h.textContent = title;
    panel.appendChild(h);
    const table = document.createElement("table");
    panel.appendChild(table);
    return table;
  }

  function tensor(t) { return t.dtype + (t.shape === null ? "" : " " + t.shape); }

  // Empties the side panel and gives it a close button, a title and a subtitle.
  function openPanel(heading, subtitle) {
    panel.innerHTML = "";
    panel.classList.add("visible");
    const close = document.createElement("button");
    close.id = "close-panel";
    close.textContent = "\u00d7";
    close.title = "Close (Esc)";
    close.addEventListener("click", closePanel);
    panel.appendChild(close);
    const title = document.createElement("h2");
    title.textContent = heading;
    panel.appendChild(title);
    const name = document.createElement("div");
    name.className = "full-name";
    name.textContent = subtitle;
    panel.appendChild(name);
  }

  function closePanel() {
    panel.classList.remove("visible");
    selected = null;
    render();
  }

  function showWeights(v) {
    const variable = doc.variables[v];
    const table = section("Weights: " + variable.name);
    table.className = "weights";
    row(table, "dtype", variable.dtype);
    row(table, "shape", variable.shape);
    if (variable.stats) for (const key of ["min", "max", "mean", "std"]) row(table, key, variable.stats[key]);
    if (variable.error) row(table, "stats", variable.error);
  }

  function showPanel(node) {
    openPanel(node.op, node.path);
    if (node.layer !== null) row(section("Layer"), "layer", doc.layers[node.layer].name);
    const inputs = section("Inputs");
    node.inputs.forEach(function (input) {
      row(inputs, input.source, tensor(input) + (input.value ? " = " + input.value : ""), "tensor");
    });
    const outputs = section("Outputs");
    node.outputs.forEach(function (output, i) { row(outputs, String(i), tensor(output), "tensor"); });
    if (node.attrs.length) {
      const attrs = section("Attributes");
      for (const [key, value] of node.attrs) row(attrs, key, value);
    }
    node.variables.forEach(showWeights);
  }

  // A layer as `savedmodel summary` describes it, and its weights.
  function showLayer(index) {
    const layer = doc.layers[index];
    openPanel(layer.name, layer.type + " layer, " + layer.nodes.length + " drawn ops");
    const table = section("Layer");
    table.className = "layer-summary";
    const count = function (n) { return n.toLocaleString("en-US"); };
    row(table, "params", count(layer.params) + " (trainable " + count(layer.trainable) + ")");
    row(table, "FLOPs", layer.flops === null ? "?" : count(layer.flops));
    layer.outputs.forEach(function (shape, i) { row(table, "output " + i, shape, "tensor"); });
    layer.variables.forEach(showWeights);
  }

  // Nodes whose path or op contains the query: exact names and ops first, then in graph order.
  function search(query) {
    const results = document.getElementById("results");
    results.innerHTML = "";
    const q = query.trim().toLowerCase();
    if (!q) return;
    const found = [];
    doc.nodes.forEach(function (node, index) {
      const path = node.path.toLowerCase(), op = node.op.toLowerCase();
      if (path.indexOf(q) < 0 && op.indexOf(q) < 0) return;
      const exact = path === q || node.name.toLowerCase() === q || op === q;
      found.push({ index: index, rank: exact ? 0 : 1 });
    });
    found.sort(function (a, b) { return a.rank - b.rank || a.index - b.index; });
    for (const hit of found.slice(0, MAX_RESULTS)) {
      const node = doc.nodes[hit.index];
      const li = document.createElement("li");
      li.textContent = node.op + "  " + node.path;
      li.dataset.node = hit.index;
      li.addEventListener("click", function () { reveal(hit.index); });
      results.appendChild(li);
    }
  }

  svg.addEventListener("wheel", function (event) {
    event.preventDefault();
    const box = svg.getBoundingClientRect();
    const px = event.clientX - box.left, py = event.clientY - box.top;
    const factor = Math.exp(-event.deltaY * 0.0015);
    const k = Math.min(8, Math.max(0.02, view.k * factor));
    view.x = px - (px - view.x) * k / view.k;
    view.y = py - (py - view.y) * k / view.k;
    view.k = k;
    applyView();
  }, { passive: false });

  let drag = null;
  svg.addEventListener("mousedown", function (event) {
    drag = { x: event.clientX - view.x, y: event.clientY - view.y };
  });
  window.addEventListener("mousemove", function (event) {
    if (!drag) return;
    view.x = event.clientX - drag.x;
    view.y = event.clientY - drag.y;
    applyView();
  });
  window.addEventListener("mouseup", function () { drag = null; });

  const input = document.getElementById("search");
  input.addEventListener("input", function () { search(input.value); });
  input.addEventListener("keydown", function (event) {
    const first = document.querySelector("#results li");
    if (event.key === "Enter" && first) reveal(Number(first.dataset.node));
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && panel.classList.contains("visible")) closePanel();
  });
  document.getElementById("fit").addEventListener("click", function () { fit(); });
  document.getElementById("open-all").addEventListener("click", function () {
    doc.layers.forEach(function (_, i) { open.add(i); });
    render();
  });
  document.getElementById("close-all").addEventListener("click", function () { open.clear(); render(); });

  render();
  fit(0.6);
  document.body.dataset.ready = "1";
})();
