"""Qr, Svd and SelfAdjointEigV2 cases: every registered dtype, full and reduced factors, wide,
tall and square matrices, batches, empty matrices, and repeated singular values or eigenvalues
(where only the subspace is determined)."""
import numpy as np

_rng = np.random.default_rng(1414)
TYPES = (np.float32, np.float64, np.complex64, np.complex128)


def _random(*shape, dtype=np.float32):
    values = _rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        values = values + 1j * _rng.standard_normal(shape)
    return values.astype(dtype)


def _hermitian(*shape, dtype=np.float32):
    a = _random(*shape, dtype=dtype)
    return ((a + np.conj(np.swapaxes(a, -1, -2))) / 2).astype(dtype)


def _name(dtype) -> str:
    return np.dtype(dtype).name


def _qr():
    found = []
    for dtype in TYPES + (np.float16,):
        for full in (False, True):
            for shape in ((2, 4, 3), (3, 5), (2, 2, 2)):
                found.append(case("Qr", name=f"{_name(dtype)}_{'x'.join(map(str, shape))}_{full}",
                                  input=_random(*shape, dtype=dtype), full_matrices=full))
    found += [case("Qr", name="empty_rows", input=_random(0, 3), full_matrices=False),
              case("Qr", name="empty_batch", input=_random(0, 3, 2), full_matrices=True),
              case("Qr", name="rank_deficient", input=np.ones((3, 3), np.float64),
                   full_matrices=False)]
    return found


def _svd():
    found = []
    for dtype in TYPES:
        for full in (False, True):
            for shape in ((2, 4, 3), (3, 5), (3, 3)):
                found.append(case("Svd", name=f"{_name(dtype)}_{'x'.join(map(str, shape))}_{full}",
                                  input=_random(*shape, dtype=dtype), full_matrices=full,
                                  compute_uv=True))
        found.append(case("Svd", name=f"{_name(dtype)}_values_only",
                          input=_random(2, 3, 4, dtype=dtype), compute_uv=False))
    found += [case("Svd", name="repeated", input=np.diag([2.0, 2.0, 1.0]), compute_uv=True),
              case("Svd", name="rank_deficient", input=np.ones((4, 3), np.float32),
                   compute_uv=True, full_matrices=True),
              case("Svd", name="empty_batch", input=_random(0, 3, 2), compute_uv=True)]
    return found


def _eig():
    found = [case("SelfAdjointEigV2", name=_name(d), input=_hermitian(2, 4, 4, dtype=d))
             for d in TYPES]
    lower_only = _hermitian(3, 3, dtype=np.float64) + np.triu(np.full((3, 3), 50.0), 1)
    found += [case("SelfAdjointEigV2", name="values_only", input=_hermitian(3, 3),
                   compute_v=False),
              case("SelfAdjointEigV2", name="lower_triangle", input=lower_only),
              case("SelfAdjointEigV2", name="repeated", input=np.eye(3, dtype=np.float32)),
              case("SelfAdjointEigV2", name="empty", input=_random(0, 0))]
    return found


def _general_eig():
    found = [case("Eig", name=_name(d), input=_random(2, 4, 4, dtype=d),
                  Tout=np.complex64 if d in (np.float32, np.complex64) else np.complex128)
             for d in TYPES]
    found += [case("Eig", name="rotation", input=np.array([[0.0, 1], [-1, 0]]),
                   Tout=np.complex128),
              case("Eig", name="values_only", input=_random(3, 3), compute_v=False,
                   Tout=np.complex64)]
    return found


CASES = _qr() + _svd() + _eig() + _general_eig()
