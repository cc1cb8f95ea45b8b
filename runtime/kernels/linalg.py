"""Linear algebra over batches of matrices (the innermost two dimensions): inverses, solves,
decompositions, determinants, Cross, and the first versions of the matrix-diagonal ops.

numpy.linalg runs LAPACK in the input's precision on every matrix of a batch; float16 (which
TensorFlow registers for MatrixInverse and Qr) is computed in float32 and rounded once. Where
TensorFlow fails a whole op (a singular matrix for MatrixInverse and MatrixSolve) so do these
kernels; where it answers per matrix (NaNs for a Cholesky factor that does not exist, inf and NaN
for a triangular solve with a zero on the diagonal) so do they. Decompositions whose factors are
not unique (the signs or phases of Qr's, Svd's and SelfAdjointEigV2's vectors) may differ from
TensorFlow's by those signs; what they determine (values, products, subspaces) does not.
"""
from __future__ import annotations

import numpy as np

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels import array as array_kernels
from savedmodel.runtime.kernels.math import HALF_TYPES, shape_text
from savedmodel.runtime.registry import kernel

Array = np.ndarray


def _square(x: Array, op: str, what: str = "Input") -> Array:
    """`x` as a batch of square matrices, half types widened to float32."""
    x = np.asarray(x)
    if x.ndim < 2:
        raise KernelError(f"{op}: {what} must have rank >= 2, got {shape_text(x)}")
    if x.shape[-1] != x.shape[-2]:
        raise KernelError(f"{op}: {what} matrices must be squares, got {x.shape[-2]} by "
                          f"{x.shape[-1]}")
    return x.astype(np.float32) if x.dtype in HALF_TYPES else x


def _adjoint(x: Array) -> Array:
    swapped = np.swapaxes(x, -1, -2)
    return np.conj(swapped) if x.dtype.kind == "c" else swapped


@kernel("MatrixInverse")
def matrix_inverse(input: Array, *, adjoint: bool = False, **_) -> tuple[Array]:
    """A matrix with an exactly zero pivot anywhere in the batch fails the op, as in TF."""
    dtype = np.asarray(input).dtype
    x = _square(input, "MatrixInverse")
    if x.size == 0:
        return (np.zeros(x.shape, dtype),)
    try:
        inverse = np.linalg.inv(_adjoint(x) if adjoint else x)
    except np.linalg.LinAlgError:
        raise KernelError("MatrixInverse: Input is not invertible.") from None
    return (inverse.astype(dtype, copy=False),)


@kernel("MatrixSolve")
def matrix_solve(matrix: Array, rhs: Array, *, adjoint: bool = False, **_) -> tuple[Array]:
    """X with matrix @ X = rhs (or adjoint(matrix) @ X = rhs); batch dimensions must be equal."""
    a = _square(matrix, "MatrixSolve")
    b = np.asarray(rhs)
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2]:
        raise KernelError(f"MatrixSolve: Input matrix and right-hand side must have the same "
                          f"batch dimensions: {shape_text(a)} vs. {shape_text(b)}")
    if b.shape[-2] != a.shape[-1]:
        raise KernelError(f"MatrixSolve: Input matrix and right-hand side must have the same "
                          f"number of rows: {a.shape[-2]} vs. {b.shape[-2]}")
    if a.size == 0 or b.size == 0:
        return (np.zeros(b.shape, b.dtype),)
    try:
        solution = np.linalg.solve(_adjoint(a) if adjoint else a, b)
    except np.linalg.LinAlgError:
        raise KernelError("MatrixSolve: Input matrix is not invertible.") from None
    return (solution.astype(b.dtype, copy=False),)


@kernel("MatrixTriangularSolve")
def matrix_triangular_solve(matrix: Array, rhs: Array, *, lower: bool = True,
                            adjoint: bool = False, **_) -> tuple[Array]:
    """Substitution with the lower (or upper) triangle of `matrix` alone, batch dimensions
    broadcast. Nothing checks the diagonal: a zero on it gives inf and NaN, as in TF."""
    a = _square(matrix, "MatrixTriangularSolve")
    b = np.asarray(rhs)
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise KernelError(f"MatrixTriangularSolve: Input matrix and right-hand side must have "
                          f"the same number of rows: {shape_text(a)} vs. {shape_text(b)}")
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise KernelError(f"MatrixTriangularSolve: Incompatible batch dimensions: "
                          f"{shape_text(a)} vs. {shape_text(b)}") from None
    triangle = np.tril(a) if lower else np.triu(a)
    if adjoint:
        triangle, lower = _adjoint(triangle), not lower
    out = np.zeros(batch + b.shape[-2:], b.dtype)
    if out.size:
        _substitute(np.broadcast_to(triangle, batch + a.shape[-2:]), b, out, lower)
    return (out,)


def _substitute(triangle: Array, rhs: Array, out: Array, lower: bool) -> None:
    """Forward (lower) or back substitution, one row of every matrix of the batch at a time."""
    size = triangle.shape[-1]
    for row in (range(size) if lower else range(size - 1, -1, -1)):
        known = slice(0, row) if lower else slice(row + 1, size)
        total = rhs[..., row, :] - (triangle[..., row:row + 1, known] @ out[..., known, :])[..., 0, :]
        out[..., row, :] = total / triangle[..., row, row][..., None]


@kernel("Cholesky")
def cholesky(input: Array, **_) -> tuple[Array]:
    """The lower factor from the lower triangle; a matrix that is not positive definite gets a
    lower triangle of NaNs (TensorFlow logs a warning and does the same) and its neighbours in
    the batch their factors."""
    x = _square(input, "Cholesky")
    if x.size == 0:
        return (x.copy(),)
    try:
        return (np.linalg.cholesky(x),)
    except np.linalg.LinAlgError:
        pass
    flat = x.reshape((-1,) + x.shape[-2:])
    out = np.empty_like(flat)
    failed = np.tril(np.full(x.shape[-2:], np.nan, x.dtype))
    for index, matrix in enumerate(flat):
        try:
            out[index] = np.linalg.cholesky(matrix)
        except np.linalg.LinAlgError:
            out[index] = failed
    return (out.reshape(x.shape),)


def _any_matrix(x: Array, op: str) -> Array:
    x = np.asarray(x)
    if x.ndim < 2:
        raise KernelError(f"{op}: input must have rank >= 2, got {shape_text(x)}")
    return x


@kernel("Qr")
def qr(input: Array, *, full_matrices: bool = False, **_) -> tuple[Array, Array]:
    """Householder QR: q is [.., M, M] (full_matrices) or [.., M, min(M, N)]."""
    dtype = np.asarray(input).dtype
    x = _any_matrix(input, "Qr")
    x = x.astype(np.float32) if x.dtype in HALF_TYPES else x
    rows, cols = x.shape[-2:]
    columns = rows if full_matrices else min(rows, cols)
    if x.size == 0:
        q = np.zeros(x.shape[:-2] + (rows, columns), dtype)
        q[..., np.arange(min(rows, columns)), np.arange(min(rows, columns))] = 1
        return q, np.zeros(x.shape[:-2] + (columns, cols), dtype)
    q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return q.astype(dtype, copy=False), r.astype(dtype, copy=False)


@kernel("Svd")
def svd(input: Array, *, compute_uv: bool = True, full_matrices: bool = False,
        **_) -> tuple[Array, Array, Array]:
    """s (descending, of the input's type even when complex), u and v (not v's adjoint).
    Without compute_uv, TF leaves u and v as uninitialized scalars; these are zeros."""
    x = _any_matrix(input, "Svd")
    real = x.dtype
    rows, cols = x.shape[-2:]
    batch = x.shape[:-2]
    if not compute_uv:
        values = np.linalg.svd(x, compute_uv=False) if x.size else np.zeros(
            batch + (min(rows, cols),), real)
        return values.astype(real, copy=False), np.zeros((), x.dtype), np.zeros((), x.dtype)
    if x.size == 0:
        u_cols, v_cols = (rows, cols) if full_matrices else (min(rows, cols),) * 2
        return (np.zeros(batch + (min(rows, cols),), real), _eye(batch, rows, u_cols, x.dtype),
                _eye(batch, cols, v_cols, x.dtype))
    u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    return s.astype(real, copy=False), u.astype(x.dtype, copy=False), _adjoint(vh).astype(
        x.dtype, copy=False)


def _eye(batch: tuple, rows: int, cols: int, dtype: np.dtype) -> Array:
    return np.broadcast_to(np.eye(rows, cols, dtype=dtype), batch + (rows, cols)).copy()


@kernel("SelfAdjointEigV2")
def self_adjoint_eig_v2(input: Array, *, compute_v: bool = True, **_) -> tuple[Array, Array]:
    """Eigenvalues ascending (in the input's type, complex ones with zero imaginary parts) from
    the lower triangle; without compute_v, v is a scalar zero (uninitialized in TF)."""
    x = _square(input, "SelfAdjointEigV2")
    if x.size == 0:
        return np.zeros(x.shape[:-1], x.dtype), (x.copy() if compute_v else np.zeros((), x.dtype))
    if not compute_v:
        return np.linalg.eigvalsh(x, UPLO="L").astype(x.dtype), np.zeros((), x.dtype)
    values, vectors = np.linalg.eigh(x, UPLO="L")
    return values.astype(x.dtype), vectors


@kernel("MatrixDeterminant")
def matrix_determinant(input: Array, **_) -> tuple[Array]:
    """From the LU factorization; a singular matrix gives 0 and an empty one 1."""
    x = _square(input, "MatrixDeterminant")
    if x.size == 0:
        return (np.ones(x.shape[:-2], x.dtype),)
    return (np.asarray(np.linalg.det(x)).astype(x.dtype, copy=False),)


@kernel("LogMatrixDeterminant")
def log_matrix_determinant(input: Array, **_) -> tuple[Array, Array]:
    """(sign, log|det|), both of the input's type: a complex sign is a unit phase; a singular
    matrix gives sign 0 and -inf."""
    x = _square(input, "LogMatrixDeterminant")
    if x.size == 0:
        return np.ones(x.shape[:-2], x.dtype), np.zeros(x.shape[:-2], x.dtype)
    sign, log_abs = np.linalg.slogdet(x)
    return np.asarray(sign).astype(x.dtype), np.asarray(log_abs).astype(x.dtype)


@kernel("Cross")
def cross(a: Array, b: Array, **_) -> tuple[Array]:
    """Pairwise cross products of 3-vectors along the innermost dimension; no broadcasting."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        raise KernelError(f"Cross: both inputs must be the same shape: {shape_text(a)} vs. "
                          f"{shape_text(b)}")
    if a.ndim < 1 or a.shape[-1] != 3:
        raise KernelError(f"Cross: the innermost dimension of the inputs must be 3, got "
                          f"{shape_text(a)}")
    x1, y1, z1 = a[..., 0], a[..., 1], a[..., 2]
    x2, y2, z2 = b[..., 0], b[..., 1], b[..., 2]
    return (np.stack([y1 * z2 - z1 * y2, z1 * x2 - x1 * z2, x1 * y2 - y1 * x2], axis=-1),)


# --- The first versions of the diagonal ops, in terms of the third ------------------------------
# V1 handles the main diagonal only; V2 has V3's arguments and packs diagonals LEFT_LEFT.

def _zero_of(x: Array) -> Array:
    return np.zeros((), np.asarray(x).dtype)


_MAIN = np.array(0, np.int32)
_INFER = np.array(-1, np.int32)


@kernel("MatrixDiag")
def matrix_diag(diagonal: Array, **_) -> tuple[Array]:
    return array_kernels.matrix_diag_v3(diagonal, _MAIN, _INFER, _INFER, _zero_of(diagonal))


@kernel("MatrixDiagV2")
def matrix_diag_v2(diagonal: Array, k: Array, num_rows: Array, num_cols: Array,
                   padding_value: Array, **_) -> tuple[Array]:
    return array_kernels.matrix_diag_v3(diagonal, k, num_rows, num_cols, padding_value,
                                        align="LEFT_LEFT")


@kernel("MatrixDiagPart")
def matrix_diag_part(input: Array, **_) -> tuple[Array]:
    return array_kernels.matrix_diag_part_v3(input, _MAIN, _zero_of(input))


@kernel("MatrixDiagPartV2")
def matrix_diag_part_v2(input: Array, k: Array, padding_value: Array, **_) -> tuple[Array]:
    return array_kernels.matrix_diag_part_v3(input, k, padding_value, align="LEFT_LEFT")


@kernel("MatrixSetDiag")
def matrix_set_diag(input: Array, diagonal: Array, **_) -> tuple[Array]:
    return array_kernels.matrix_set_diag_v3(input, diagonal, _MAIN)


@kernel("MatrixSetDiagV2")
def matrix_set_diag_v2(input: Array, diagonal: Array, k: Array, **_) -> tuple[Array]:
    return array_kernels.matrix_set_diag_v3(input, diagonal, k, align="LEFT_LEFT")
