"""Prometheus metrics for /monitoring/prometheus/metrics: request counts by model, signature,
API and outcome, and latency histograms by model, signature and API.

Each server has its own registry, so several servers in one process (tests) do not share counts.
"""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                   1.0, 2.5, 5.0, 10.0, float("inf"))
CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    def __init__(self):
        self.registry = CollectorRegistry()
        self._requests = Counter("savedmodel_serve_requests", "Requests by model, signature, API and status code",
                                 ["model_name", "signature_name", "api", "status"], registry=self.registry)
        self._latency = Histogram("savedmodel_serve_request_latency_seconds",
                                  "Time from a request's arrival to its answer",
                                  ["model_name", "signature_name", "api"], buckets=LATENCY_BUCKETS,
                                  registry=self.registry)
        self._children: dict[tuple, tuple] = {}

    def observe(self, model: str, signature: str, api: str, status: str, seconds: float) -> None:
        """Count one request. Callers pass only names the server knows (a model it serves, a
        signature that model has), so clients cannot grow the label sets without bound."""
        key = (model, signature, api, status)
        children = self._children.get(key)
        if children is None:
            children = self._children.setdefault(key, (
                self._requests.labels(model, signature, api, status),
                self._latency.labels(model, signature, api)))
        children[0].inc()
        children[1].observe(seconds)

    def page(self) -> bytes:
        return generate_latest(self.registry)
