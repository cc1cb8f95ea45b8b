"""A layered (Sugiyama-style) layout of a directed graph, drawn top to bottom.

Steps: reverse the edges that close cycles; put each node one layer below its deepest
producer (longest path from the inputs), then, from the bottom up, move each node that has at
least as many consumers as producers down to just above its first consumer (which shortens its
edges in total), so constants, variable handles and their reads sit next to where they are
used instead of piling up in the top rows; break
edges that span several layers into chains of dummy points; order each layer by the mean
position of its neighbours, sweeping down and up a few times and keeping the order with the
fewest crossings; then place each layer's nodes (top-aligned, so that a tall node does not
leave its short neighbours floating) as close to the mean x of their neighbours as
their order and spacing allow (an isotonic regression solved exactly by pooling adjacent
violators). Edges are routed through their dummy points.

Everything is O((nodes + dummies) * sweeps * log) so several hundred nodes take milliseconds.
"""
from __future__ import annotations

from dataclasses import dataclass

Point = tuple[float, float]

DUMMY_WIDTH = 6.0


@dataclass(frozen=True)
class Layout:
    """Top-left corner of every node, and per edge (in the order given) the points of its route
    from the source's bottom to the target's top (empty for a self-loop)."""

    positions: dict[str, Point]
    routes: list[tuple[Point, ...]]
    width: float
    height: float


def layered_layout(sizes: dict[str, tuple[float, float]], edges: list[tuple[str, str]], *,
                   gap_x: float = 24.0, gap_y: float = 44.0, margin: float = 0.0,
                   sweeps: int = 8) -> Layout:
    """Lay out nodes of the given (width, height), in the given order, joined by `edges`."""
    graph = _Graph(list(sizes), [sizes[n] for n in sizes], edges)
    graph.assign_layers()
    graph.add_dummies()
    graph.order_layers(sweeps)
    graph.place(gap_x, gap_y, margin)
    return graph.result(edges, margin)


class _Graph:
    """Nodes are indices; dummies are appended after the real nodes."""

    def __init__(self, names: list[str], sizes: list[tuple[float, float]], edges: list[tuple[str, str]]):
        self.names = names
        self.index = {name: i for i, name in enumerate(names)}
        self.width = [w for w, _ in sizes]
        self.height = [h for _, h in sizes]
        self.count = len(names)
        pairs = list(dict.fromkeys((self.index[s], self.index[t]) for s, t in edges if s != t))
        self.reversed = _back_edges(self.count, pairs)
        self.dag = list(dict.fromkeys((t, s) if (s, t) in self.reversed else (s, t) for s, t in pairs))
        self.layer: list[int] = []
        self.chains: dict[tuple[int, int], list[int]] = {}
        self.layers: list[list[int]] = []
        self.x: list[float] = []
        self.layer_top: list[float] = []
        self.layer_height: list[float] = []

    def assign_layers(self) -> None:
        preds = [[] for _ in range(self.count)]
        succs = [[] for _ in range(self.count)]
        for s, t in self.dag:
            preds[t].append(s)
            succs[s].append(t)
        layer = [0] * self.count
        order = _topological(self.count, succs, preds)
        for v in order:
            layer[v] = max((layer[p] + 1 for p in preds[v]), default=0)
        for v in reversed(order):
            if succs[v] and len(succs[v]) >= len(preds[v]):
                layer[v] = min(layer[s] for s in succs[v]) - 1
        self.layer = layer

    def add_dummies(self) -> None:
        for s, t in self.dag:
            chain = [s]
            for depth in range(self.layer[s] + 1, self.layer[t]):
                self.layer.append(depth)
                self.width.append(DUMMY_WIDTH)
                self.height.append(0.0)
                chain.append(len(self.layer) - 1)
            chain.append(t)
            self.chains[(s, t)] = chain
        self.up = [[] for _ in self.layer]
        self.down = [[] for _ in self.layer]
        for chain in self.chains.values():
            for a, b in zip(chain, chain[1:]):
                self.down[a].append(b)
                self.up[b].append(a)
        self.layers = [[] for _ in range(max(self.layer, default=-1) + 1)]
        for v in range(len(self.layer)):
            self.layers[self.layer[v]].append(v)

    def order_layers(self, sweeps: int) -> None:
        position = self._positions()
        best, best_crossings = [list(layer) for layer in self.layers], self._crossings(position)
        for sweep in range(sweeps):
            downward = sweep % 2 == 0
            rows = range(1, len(self.layers)) if downward else range(len(self.layers) - 2, -1, -1)
            neighbours = self.up if downward else self.down
            for row in rows:
                layer = self.layers[row]
                layer.sort(key=lambda v: (_mean([position[u] for u in neighbours[v]], position[v]), position[v]))
                for i, v in enumerate(layer):
                    position[v] = i
            crossings = self._crossings(position)
            if crossings < best_crossings:
                best, best_crossings = [list(layer) for layer in self.layers], crossings
        self.layers = best

    def _positions(self) -> list[int]:
        position = [0] * len(self.layer)
        for layer in self.layers:
            for i, v in enumerate(layer):
                position[v] = i
        return position

    def _crossings(self, position: list[int]) -> int:
        total = 0
        for layer in self.layers[:-1]:
            pairs = sorted((position[u], position[v]) for u in layer for v in self.down[u])
            total += _inversions([b for _, b in pairs])
        return total

    def place(self, gap_x: float, gap_y: float, margin: float) -> None:
        self.x = [0.0] * len(self.layer)
        for layer in self.layers:
            left = 0.0
            for v in layer:
                self.x[v] = left + self.width[v] / 2
                left += self.width[v] + gap_x
        for sweep in range(8):
            neighbours = self.up if sweep % 2 == 0 else self.down
            for layer in self.layers:
                wanted = [_mean([self.x[u] for u in neighbours[v]], self.x[v]) for v in layer]
                weights = [2.0 if v >= self.count else 1.0 for v in layer]
                self._fit(layer, wanted, weights, gap_x)
        left = min((self.x[v] - self.width[v] / 2 for v in range(len(self.layer))), default=0.0)
        self.x = [x - left + margin for x in self.x]
        top = margin
        for layer in self.layers:
            self.layer_top.append(top)
            self.layer_height.append(max(self.height[v] for v in layer))
            top += self.layer_height[-1] + gap_y

    def _fit(self, layer: list[int], wanted: list[float], weights: list[float], gap_x: float) -> None:
        """Centres closest to `wanted` that keep the layer's order and spacing."""
        offsets = [0.0]
        for a, b in zip(layer, layer[1:]):
            offsets.append(offsets[-1] + (self.width[a] + self.width[b]) / 2 + gap_x)
        fitted = _isotonic([w - o for w, o in zip(wanted, offsets)], weights)
        for v, value, offset in zip(layer, fitted, offsets):
            self.x[v] = value + offset

    def result(self, edges: list[tuple[str, str]], margin: float) -> Layout:
        positions = {}
        for v in range(self.count):
            row = self.layer[v]
            positions[self.names[v]] = (self.x[v] - self.width[v] / 2, self.layer_top[row])
        routes = [self._route(self.index[s], self.index[t], positions) for s, t in edges]
        _spread_ports(routes, edges, positions, dict(zip(self.names, zip(self.width, self.height))))
        width = max((self.x[v] + self.width[v] / 2 for v in range(len(self.layer))), default=0.0) + margin
        height = (self.layer_top[-1] + self.layer_height[-1] + margin) if self.layers else 2 * margin
        return Layout(positions, routes, width, height)

    def _route(self, s: int, t: int, positions: dict[str, Point]) -> tuple[Point, ...]:
        if s == t:
            return ()
        flipped = (s, t) in self.reversed
        chain = self.chains[(t, s) if flipped else (s, t)]
        first, last = chain[0], chain[-1]
        x0, y0 = positions[self.names[first]]
        x1, y1 = positions[self.names[last]]
        points = [(x0 + self.width[first] / 2, y0 + self.height[first])]
        for d in chain[1:-1]:
            row = self.layer[d]
            points += [(self.x[d], self.layer_top[row]), (self.x[d], self.layer_top[row] + self.layer_height[row])]
        points.append((x1 + self.width[last] / 2, y1))
        return tuple(reversed(points)) if flipped else tuple(points)


def _spread_ports(routes: list, edges: list[tuple[str, str]], positions: dict[str, Point],
                  sizes: dict[str, tuple[float, float]]) -> None:
    """Edges meeting a node's top or bottom side spread along it in the order of their other
    ends, instead of all meeting at the centre."""
    ends: dict[tuple[str, int], list[int]] = {}
    for i, (route, (source, target)) in enumerate(zip(routes, edges)):
        if route:
            ends.setdefault((source, 0), []).append(i)
            ends.setdefault((target, -1), []).append(i)
    for (name, end), members in ends.items():
        if len(members) < 2:
            continue
        left, width = positions[name][0], sizes[name][0]
        neighbour = 1 if end == 0 else -2
        members.sort(key=lambda i: routes[i][neighbour][0])
        for k, i in enumerate(members):
            points = list(routes[i])
            x = left + width * (0.15 + 0.7 * (k + 0.5) / len(members))
            points[end] = (x, points[end][1])
            routes[i] = tuple(points)


def _back_edges(count: int, pairs: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """Edges that close a cycle in a depth-first walk from the nodes in order."""
    succs = [[] for _ in range(count)]
    for s, t in pairs:
        succs[s].append(t)
    state = [0] * count
    back = set()
    for root in range(count):
        if state[root]:
            continue
        state[root] = 1
        stack = [(root, iter(succs[root]))]
        while stack:
            v, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[v] = 2
                stack.pop()
            elif state[child] == 1:
                back.add((v, child))
            elif state[child] == 0:
                state[child] = 1
                stack.append((child, iter(succs[child])))
    return back


def _topological(count: int, succs: list[list[int]], preds: list[list[int]]) -> list[int]:
    waiting = [len(p) for p in preds]
    ready = [v for v in range(count) if not waiting[v]]
    order = []
    while ready:
        v = ready.pop()
        order.append(v)
        for s in succs[v]:
            waiting[s] -= 1
            if not waiting[s]:
                ready.append(s)
    return order


def _mean(values: list[float], default: float) -> float:
    return sum(values) / len(values) if values else default


def _inversions(values: list[int]) -> int:
    """Pairs i < j with values[i] > values[j] (a Fenwick tree over the values)."""
    size = max(values, default=0) + 2
    tree = [0] * (size + 1)
    count = 0
    for seen, value in enumerate(values):
        i = value + 1
        below = 0
        while i > 0:
            below += tree[i]
            i -= i & -i
        count += seen - below
        i = value + 1
        while i <= size:
            tree[i] += 1
            i += i & -i
    return count


def _isotonic(targets: list[float], weights: list[float]) -> list[float]:
    """The non-decreasing sequence closest to `targets` in weighted least squares."""
    blocks: list[list[float]] = []
    for value, weight in zip(targets, weights):
        blocks.append([value * weight, weight, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, mass, length = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += mass
            blocks[-1][2] += length
    fitted = []
    for total, mass, length in blocks:
        fitted += [total / mass] * length
    return fitted
