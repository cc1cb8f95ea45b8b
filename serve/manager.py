"""Which versions of which models are served, and loading, switching and unloading them.

A model's versions are the numeric folders of its base path (`DIR/<version>/saved_model.pb`).
Its version policy picks the ones to serve: the latest N (default 1), all, or specific ones;
labels name versions (`stable` -> 2). Each poll (`poll_once`, every
`--file_system_poll_wait_seconds`) loads a wanted version that is not loaded yet beside the old
ones, on a loader thread, then swaps the model's table of versions in one assignment (requests
see the old table or the new one, never a mix) and only then drops the versions no longer
wanted: requests in flight keep their Servable and finish on it. A version that fails to load
stays in the status with its error (state END) and is not retried until its files change; the
versions already serving keep serving.
"""
from __future__ import annotations

import asyncio
import logging
import os
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from savedmodel.runtime import load
from savedmodel.serve.batching import BatchingParameters
from savedmodel.serve.errors import ServingError
from savedmodel.serve.servable import Servable, read_signature_defs

log = logging.getLogger("savedmodel.serve")

STATES = ("START", "LOADING", "AVAILABLE", "UNLOADING", "END")
"""ModelVersionStatus.State names, as TensorFlow Serving reports them."""


@dataclass(frozen=True)
class VersionPolicy:
    """`kind` latest (the `count` highest versions), all, or specific (`versions`)."""

    kind: str = "latest"
    count: int = 1
    versions: tuple[int, ...] = ()

    def pick(self, available: list[int]) -> set[int]:
        if self.kind == "all":
            return set(available)
        if self.kind == "specific":
            return set(self.versions) & set(available)
        return set(sorted(available)[-self.count:]) if self.count > 0 else set()


@dataclass(frozen=True)
class ModelConfig:
    """One entry of the model config list (TensorFlow Serving's ModelConfig)."""

    name: str
    base_path: Path
    policy: VersionPolicy = VersionPolicy()
    labels: dict[str, int] = field(default_factory=dict)


@dataclass
class VersionStatus:
    """One version's ModelVersionStatus: state, and "OK" or the error that ended it."""

    version: int
    state: str
    error_code: str = "OK"
    error_message: str = ""


@dataclass
class _Model:
    config: ModelConfig
    servables: dict[int, Servable] = field(default_factory=dict)
    """Replaced, never changed in place: readers take the current table without a lock."""
    statuses: dict[int, VersionStatus] = field(default_factory=dict)
    failed: dict[int, tuple] = field(default_factory=dict)
    """Versions that failed to load -> the modification time of the files they failed with."""


_LOADER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="savedmodel-load")
"""One loading thread for the whole process, never shut down: models load one at a time, off
the event loop, and always on the same thread (the native engine has crashed when a model
loaded on a new thread after the thread of an earlier load had exited)."""


class ModelManager:
    """The models a server serves. `resolve` a request's servable, `status` its versions."""

    def __init__(self, configs: list[ModelConfig], *, batching: BatchingParameters | None = None,
                 timeout: float | None = None, executor: Executor | None = None, engine: str = "auto"):
        names = [c.name for c in configs]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise ValueError(f"model names must be unique; repeated: {', '.join(duplicated)}")
        self._models = {c.name: _Model(c) for c in configs}
        self._batching = batching
        self._timeout = timeout
        self._engine = engine
        self.executor = executor or ThreadPoolExecutor(max_workers=max(4, os.cpu_count() or 1),
                                                       thread_name_prefix="savedmodel-serve")
        self._poll_lock = asyncio.Lock()

    def model_names(self) -> list[str]:
        return sorted(self._models)

    def resolve(self, name: str, version: int | None = None, label: str | None = None) -> Servable:
        """The servable a request names: a version, a label, or the latest available one."""
        model = self._models.get(name)
        if model is None:
            raise ServingError("NOT_FOUND", f"Servable not found for request: Latest({name})")
        if label is not None:
            version = self._labelled(model, label)
        servables = model.servables
        if version is None:
            if not servables:
                raise ServingError("NOT_FOUND", f"Servable not found for request: Latest({name})")
            return servables[max(servables)]
        servable = servables.get(version)
        if servable is None:
            raise ServingError("NOT_FOUND", f"Servable not found for request: Specific({name}, {version})")
        return servable

    @staticmethod
    def _labelled(model: _Model, label: str) -> int:
        if label not in model.config.labels:
            raise ServingError("INVALID_ARGUMENT", f"Unrecognized servable version label: {label}")
        return model.config.labels[label]

    def status(self, name: str, version: int | None = None, label: str | None = None) -> list[VersionStatus]:
        """The status of every version seen (or of the one asked for), highest first."""
        model = self._models.get(name)
        if model is None or not model.statuses:
            raise ServingError("NOT_FOUND", f"Could not find any versions of model {name}")
        if label is not None:
            version = self._labelled(model, label)
        if version is not None:
            if version not in model.statuses:
                raise ServingError("NOT_FOUND", f"Could not find version {version} of model {name}")
            return [model.statuses[version]]
        return [model.statuses[v] for v in sorted(model.statuses, reverse=True)]

    async def poll_once(self) -> None:
        """Bring every model's served versions in line with its folders and policy."""
        async with self._poll_lock:
            for model in self._models.values():
                await self._poll_model(model)

    async def poll_forever(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                await self.poll_once()
            except Exception:  # a poll that fails must not stop the next one
                log.exception("polling the model folders failed")

    async def _poll_model(self, model: _Model) -> None:
        found = _version_folders(model.config.base_path)
        wanted = model.config.policy.pick(list(found))
        for version in sorted(wanted - model.servables.keys(), reverse=True):
            stamp = _stamp(found[version])
            if model.failed.get(version) == stamp:
                continue
            model.statuses[version] = VersionStatus(version, "LOADING")
            try:
                servable = await asyncio.get_running_loop().run_in_executor(
                    _LOADER, self._load, model.config.name, version, found[version])
            except Exception as err:  # any failure is this version's, reported in its status
                code = err.code if isinstance(err, ServingError) else "INVALID_ARGUMENT"
                model.statuses[version] = VersionStatus(version, "END", code, f"{type(err).__name__}: {err}"
                                                        if not isinstance(err, ServingError) else str(err))
                model.failed[version] = stamp
                log.warning("model %s version %d failed to load: %s", model.config.name, version, err)
                continue
            model.failed.pop(version, None)
            model.servables = {**model.servables, version: servable}
            model.statuses[version] = VersionStatus(version, "AVAILABLE")
            log.info("model %s version %d is available", model.config.name, version)
        unwanted = model.servables.keys() - wanted
        if unwanted and (wanted & model.servables.keys() or not wanted):
            # Only once a wanted version serves (availability first), unless none is wanted.
            for version in unwanted:
                model.statuses[version] = VersionStatus(version, "UNLOADING")
            model.servables = {v: s for v, s in model.servables.items() if v not in unwanted}
            for version in unwanted:
                model.statuses[version] = VersionStatus(version, "END")
                log.info("model %s version %d is unloaded", model.config.name, version)

    def _load(self, name: str, version: int, path: Path) -> Servable:
        model = load(path, engine=self._engine)
        return Servable(name, version, model, read_signature_defs(path), self.executor,
                        batching=self._batching, timeout=self._timeout)

    def close(self) -> None:
        self.executor.shutdown(wait=True)


def _version_folders(base_path: Path) -> dict[int, Path]:
    """Numeric subfolders of the base path (hidden and non-numeric ones are not versions)."""
    try:
        entries = list(os.scandir(base_path))
    except OSError as err:
        log.warning("cannot list model base path %s: %s", base_path, err)
        return {}
    return {int(e.name): Path(e.path) for e in entries
            if e.name.isdigit() and e.is_dir() and len(e.name) < 19}


def _stamp(path: Path) -> tuple[float, int]:
    """When a version's files last changed, and how many there are, to retry a failed load only
    after they did (a copy that was still being written when the load failed)."""
    latest, count = 0.0, 0
    for folder, _, files in os.walk(path):
        for name in (folder, *(os.path.join(folder, f) for f in files)):
            try:
                latest = max(latest, os.stat(name).st_mtime)
            except OSError:
                continue
            count += 1
    return latest, count
