"""Linear algebra over batches of matrices (the innermost two dimensions): inverses, solves
(general, triangular, banded, tridiagonal, least squares), decompositions (Cholesky, LU, QR,
SVD, eigen), determinants, square roots and logarithms, Cross, and the first versions of the
matrix-diagonal ops.

numpy.linalg runs LAPACK in the input's precision on every matrix of a batch; float16 (which
TensorFlow registers for MatrixInverse and Qr) is computed in float32 and rounded once. Where
TensorFlow fails a whole op (a singular matrix for MatrixInverse and MatrixSolve) so do these
kernels; where it answers per matrix (NaNs for a Cholesky factor that does not exist, inf and NaN
for a triangular solve with a zero on the diagonal) so do they. Decompositions whose factors are
not unique (the signs or phases of Qr's, Svd's, SelfAdjointEigV2's and Eig's vectors, and Eig's
order) may differ from TensorFlow's by those; what they determine (values, products, subspaces)
does not (tests/test_linalg_decompositions.py).
"""
from __future__ import annotations

from collections.abc import Callable

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


@kernel("BandedTriangularSolve")
def banded_triangular_solve(matrix: Array, rhs: Array, *, lower: bool = True,
                            adjoint: bool = False, **_) -> tuple[Array]:
    """Substitution with a triangular band matrix stored as [..., K, M] diagonals, aligned as
    MatrixSetDiagV3's LEFT_RIGHT: for lower, row 0 the main diagonal and row j the j-th
    subdiagonal (right-aligned); for upper, row K-1 the main diagonal and row K-1-j the j-th
    superdiagonal (left-aligned); bands beyond the matrix are ignored. Batch dimensions
    broadcast; unlike MatrixTriangularSolve, a zero on the diagonal fails the op, as in TF."""
    bands, b = np.asarray(matrix), np.asarray(rhs)
    if bands.ndim < 2 or b.ndim < 2 or bands.shape[-1] != b.shape[-2]:
        raise KernelError(f"BandedTriangularSolve: expected bands [..., K, M] and rhs [..., M, N], "
                          f"got {shape_text(bands)} and {shape_text(b)}")
    try:
        batch = np.broadcast_shapes(bands.shape[:-2], b.shape[:-2])
    except ValueError:
        raise KernelError(f"BandedTriangularSolve: Incompatible batch dimensions: "
                          f"{shape_text(bands)} vs. {shape_text(b)}") from None
    if adjoint and bands.dtype.kind == "c":
        bands = np.conj(bands)
    if bands.size == 0:
        raise KernelError(f"BandedTriangularSolve: In[0] must not be an empty tensor: "
                          f"{shape_text(bands)}")
    count, size = bands.shape[-2:]
    out = np.zeros(batch + b.shape[-2:], b.dtype)
    if out.size == 0:
        return (out,)
    if not np.all(bands[..., 0 if lower else count - 1, :]):
        raise KernelError("BandedTriangularSolve: Input matrix is not invertible.")

    def coefficient(i: int, j: int) -> Array:
        """Row i's coefficient of the unknown j places before (forward) or after it."""
        if lower:
            return bands[..., j, i + j if adjoint else i, None]
        return bands[..., count - 1 - j, i - j if adjoint else i, None]
    forward = lower != adjoint
    for i in (range(size) if forward else range(size - 1, -1, -1)):
        total = b[..., i, :]
        for j in range(1, min(count - 1, i if forward else size - 1 - i) + 1):
            total = total - coefficient(i, j) * out[..., i - j if forward else i + j, :]
        out[..., i, :] = total / coefficient(i, 0)
    return (out,)


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


@kernel("Eig")
def eig(input: Array, *, Tout=None, compute_v: bool = True, **_) -> tuple[Array, Array]:
    """Eigenvalues and unit eigenvectors of general matrices, as complex numbers (in no
    particular order: LAPACK's may differ from TensorFlow's, as may each vector's phase);
    without compute_v, v is a scalar zero (uninitialized in TF)."""
    x = _square(input, "Eig")
    out_type = Tout.numpy if Tout is not None else np.result_type(x.dtype, np.complex64)
    if x.size == 0:
        values = np.zeros(x.shape[:-1], out_type)
        return values, (np.zeros(x.shape, out_type) if compute_v else np.zeros((), out_type))
    values, vectors = np.linalg.eig(x)
    vectors = vectors.astype(out_type) if compute_v else np.zeros((), out_type)
    return values.astype(out_type), vectors


def _matrix_function(x: Array, fn: Callable[[Array], Array]) -> Array:
    """fn applied to a batch of diagonalizable matrices through their eigenvectors,
    V fn(diag(e)) V^-1 (complex). A matrix without a well-conditioned eigenvector basis (a
    defective one, such as a nonzero nilpotent matrix) has no result this way: NaN."""
    values, vectors = np.linalg.eig(x)
    with np.errstate(all="ignore"):
        mapped = fn(values.astype(np.complex128))
    conditioned = np.linalg.cond(vectors) < 1e8
    safe_vectors = np.where(conditioned[..., None, None], vectors, np.eye(x.shape[-1]))
    result = (safe_vectors * mapped[..., None, :]) @ np.linalg.inv(safe_vectors)
    return np.where(conditioned[..., None, None], result, np.nan)


@kernel("MatrixSquareRoot")
def matrix_square_root(input: Array, **_) -> tuple[Array]:
    """The principal square root (eigenvalues with non-negative real parts). A real matrix with
    a negative real eigenvalue has no real one: all NaN, as TensorFlow gives."""
    x = _square(input, "MatrixSquareRoot")
    if x.size == 0:
        return (x.copy(),)
    root = _matrix_function(x, np.sqrt)
    if x.dtype.kind == "c":
        return (root.astype(x.dtype),)
    values = np.linalg.eigvals(x)
    negative = np.any((values.real < 0) & (np.abs(values.imag) <= 1e-12 * np.abs(values.real)),
                      axis=-1)
    return (np.where(negative[..., None, None], np.nan, root.real).astype(x.dtype),)


@kernel("MatrixLogarithm")
def matrix_logarithm(input: Array, **_) -> tuple[Array]:
    """The principal logarithm of complex matrices (eigenvalue imaginary parts in (-pi, pi])."""
    x = _square(input, "MatrixLogarithm")
    if x.size == 0:
        return (x.copy(),)
    return (_matrix_function(x, np.log).astype(x.dtype),)


@kernel("Lu")
def lu(input: Array, *, output_idx_type=None, **_) -> tuple[Array, Array]:
    """Gaussian elimination with partial pivoting (the largest magnitude in each column, the
    first of equals): L (unit diagonal, below) and U packed in one matrix, and p with
    input[..., p, :] = L U. An exactly zero pivot fails the op, as in TensorFlow."""
    dtype = np.asarray(input).dtype
    x = _square(input, "Lu")
    index_type = output_idx_type.numpy if output_idx_type is not None else np.dtype(np.int32)
    size = x.shape[-1]
    if x.size == 0:
        return np.zeros(x.shape, dtype), np.zeros(x.shape[:-1], index_type)
    packed = x.reshape((-1, size, size)).copy()
    order = np.broadcast_to(np.arange(size), packed.shape[:-1]).copy()
    rows = np.arange(packed.shape[0])
    for k in range(size):
        pivot = k + np.argmax(np.abs(packed[:, k:, k]), axis=-1)
        packed[rows, [k], :], packed[rows, pivot, :] = packed[rows, pivot, :], packed[rows, [k], :]
        order[rows, k], order[rows, pivot] = order[rows, pivot], order[rows, k]
        packed[:, k + 1:, k] /= packed[:, k, k][:, None]
        packed[:, k + 1:, k + 1:] -= packed[:, k + 1:, k:k + 1] * packed[:, k:k + 1, k + 1:]
    if size and not np.all(np.diagonal(packed, axis1=-2, axis2=-1)):
        raise KernelError("Lu: Input is not invertible.")
    return packed.reshape(x.shape).astype(dtype), order.reshape(x.shape[:-1]).astype(index_type)


@kernel("MatrixSolveLs")
def matrix_solve_ls(matrix: Array, rhs: Array, l2_regularizer: Array, *, fast: bool = True,
                    **_) -> tuple[Array]:
    """Least squares through the regularized normal equations (fast: A^H A + l2 I for tall and
    square A, A A^H + l2 I for wide ones), or the minimum-norm solution (fast=False)."""
    a, b = _any_matrix(matrix, "MatrixSolveLs"), np.asarray(rhs)
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2] or b.shape[-2] != a.shape[-2]:
        raise KernelError(f"MatrixSolveLs: matrix and rhs must have the same batch dimensions "
                          f"and number of rows: {shape_text(a)} vs. {shape_text(b)}")
    rows, cols = a.shape[-2:]
    out_shape = a.shape[:-2] + (cols, b.shape[-1])
    if a.size == 0 or b.size == 0:
        return (np.zeros(out_shape, b.dtype),)
    if not fast:
        return ((np.linalg.pinv(a) @ b).astype(b.dtype, copy=False),)
    regularizer = float(np.asarray(l2_regularizer))
    adjoint = _adjoint(a)
    tall = rows >= cols
    gram = adjoint @ a if tall else a @ adjoint
    gram = gram + regularizer * np.eye(gram.shape[-1], dtype=gram.dtype)
    try:
        factor = np.linalg.cholesky(gram)
    except np.linalg.LinAlgError:
        raise KernelError("MatrixSolveLs: Input matrix was rank deficient or ill-conditioned. "
                          "Try setting fast=False or provide a larger l2_regularizer > 0.") from None
    out = _cholesky_solve(factor, adjoint @ b) if tall else adjoint @ _cholesky_solve(factor, b)
    return (out.astype(b.dtype, copy=False),)


def _cholesky_solve(factor: Array, rhs: Array) -> Array:
    """X with L L^H X = rhs, by two triangular substitutions."""
    middle = np.zeros(np.broadcast_shapes(factor.shape[:-2], rhs.shape[:-2]) + rhs.shape[-2:],
                      np.result_type(factor, rhs))
    _substitute(factor, rhs, middle, lower=True)
    out = np.zeros_like(middle)
    _substitute(_adjoint(factor), middle, out, lower=False)
    return out


@kernel("TridiagonalSolve")
def tridiagonal_solve(diagonals: Array, rhs: Array, *, partial_pivoting: bool = True,
                      perturb_singular: bool = False, **_) -> tuple[Array]:
    """Systems given by [.., 3, M] diagonals (super, main, sub; super's last and sub's first
    element unused). A singular system gives NaNs, as in TensorFlow; without partial pivoting,
    elimination runs in order and a zero pivot gives inf and NaN."""
    d, b = np.asarray(diagonals), np.asarray(rhs)
    if d.ndim < 2 or d.shape[-2] != 3 or b.ndim != d.ndim or b.shape[-2] != d.shape[-1] \
            or b.shape[:-2] != d.shape[:-2]:
        raise KernelError(f"TridiagonalSolve: expected diagonals [..., 3, M] and rhs [..., M, K] "
                          f"with equal batch dimensions, got {shape_text(d)} and {shape_text(b)}")
    if perturb_singular:
        raise KernelError("TridiagonalSolve: perturb_singular=True is not supported")
    if b.size == 0:
        return (np.zeros(b.shape, b.dtype),)
    if not partial_pivoting:
        return (_thomas(d, b),)
    return (_pivoting_tridiagonal(d, b),)


def _pivoting_tridiagonal(d: Array, b: Array) -> Array:
    """Elimination with partial pivoting between each row and the next (swapping when the next
    row's subdiagonal element is the larger, which fills a second superdiagonal), then back
    substitution; a system left with a zero pivot is all NaN."""
    dtype = np.result_type(d, b)
    upper, main = d[..., 0, :].astype(dtype), d[..., 1, :].astype(dtype)
    lower = d[..., 2, 1:].astype(dtype)          # lower[i] couples row i + 1 to column i
    second = np.zeros_like(upper)
    x = b.astype(dtype)
    size = d.shape[-1]
    for i in range(size - 1):
        swap = np.abs(main[..., i]) < np.abs(lower[..., i])
        keep_factor = lower[..., i] / np.where(swap, 1, main[..., i])
        swap_factor = main[..., i] / np.where(swap, lower[..., i], 1)
        next_upper = upper[..., i + 1].copy() if i + 1 < size - 1 else np.zeros_like(upper[..., i])
        main_next = np.where(swap, upper[..., i] - swap_factor * main[..., i + 1],
                             main[..., i + 1] - keep_factor * upper[..., i])
        upper_i = np.where(swap, main[..., i + 1], upper[..., i])
        if i + 1 < size - 1:
            upper[..., i + 1] = np.where(swap, -swap_factor * next_upper, next_upper)
        second[..., i] = np.where(swap, next_upper, 0)
        main[..., i] = np.where(swap, lower[..., i], main[..., i])
        main[..., i + 1], upper[..., i] = main_next, upper_i
        row, next_row = x[..., i, :].copy(), x[..., i + 1, :].copy()
        flip = swap[..., None]
        x[..., i, :] = np.where(flip, next_row, row)
        x[..., i + 1, :] = np.where(flip, row - swap_factor[..., None] * next_row,
                                    next_row - keep_factor[..., None] * row)
    for i in range(size - 1, -1, -1):
        if i + 1 < size:
            x[..., i, :] -= upper[..., i, None] * x[..., i + 1, :]
        if i + 2 < size:
            x[..., i, :] -= second[..., i, None] * x[..., i + 2, :]
        x[..., i, :] /= main[..., i, None]
    singular = np.any(main == 0, axis=-1)
    return np.where(singular[..., None, None], np.nan, x).astype(b.dtype, copy=False)


def _thomas(d: Array, b: Array) -> Array:
    """The tridiagonal (Thomas) elimination without pivoting, one row of every system at a time."""
    upper, main, lower = d[..., 0, :, None], d[..., 1, :, None], d[..., 2, :, None]
    size = d.shape[-1]
    scaled_upper = np.zeros(upper.shape, np.result_type(d, b))
    scaled_rhs = np.zeros(b.shape, scaled_upper.dtype)
    for i in range(size):
        pivot = main[..., i, :] - (lower[..., i, :] * scaled_upper[..., i - 1, :] if i else 0)
        scaled_upper[..., i, :] = upper[..., i, :] / pivot
        previous = lower[..., i, :] * scaled_rhs[..., i - 1, :] if i else 0
        scaled_rhs[..., i, :] = (b[..., i, :] - previous) / pivot
    out = scaled_rhs.copy()
    for i in range(size - 2, -1, -1):
        out[..., i, :] -= scaled_upper[..., i, :] * out[..., i + 1, :]
    return out.astype(b.dtype, copy=False)


@kernel("TridiagonalMatMul")
def tridiagonal_mat_mul(superdiag: Array, maindiag: Array, subdiag: Array, rhs: Array,
                        **_) -> tuple[Array]:
    """T @ rhs for T given by its three diagonals, each [..., 1, M]."""
    b = np.asarray(rhs)
    diagonals = [np.asarray(v) for v in (superdiag, maindiag, subdiag)]
    for name, v in zip(("superdiag", "maindiag", "subdiag"), diagonals):
        if v.ndim != b.ndim or v.shape[-2] != 1 or v.shape[-1] != b.shape[-2]:
            raise KernelError(f"TridiagonalMatMul: {name} must be [..., 1, M] for rhs "
                              f"{shape_text(b)}, got {shape_text(v)}")
    upper, main, lower = (np.swapaxes(v, -1, -2) for v in diagonals)
    out = main * b
    out[..., :-1, :] += upper[..., :-1, :] * b[..., 1:, :]
    out[..., 1:, :] += lower[..., 1:, :] * b[..., :-1, :]
    return (out,)


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
