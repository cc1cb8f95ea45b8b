"""Kernel cases for linear algebra: inverses, solves, Cholesky, determinants, Cross and the
first versions of the matrix-diagonal ops.

Matrices are well conditioned (random plus a multiple of the identity), so TensorFlow's and
LAPACK's roundings differ by a few ulps times the condition number: single precision cases allow
1e-4 relative. Qr, Svd and SelfAdjointEigV2, whose vectors are unique only up to sign or phase,
are recorded separately (tests/data/linalg) and compared by invariants.
"""
import numpy as np

_rng = np.random.default_rng(14)
FLOATS = (np.float32, np.float64)
COMPLEX = (np.complex64, np.complex128)
_SINGLE = {"rtol": 1e-4, "atol": 1e-5}


def _tolerance(dtype) -> dict:
    return _SINGLE if np.dtype(dtype) in (np.float32, np.complex64, np.float16) else {
        "rtol": 1e-9, "atol": 1e-11}


def _random(*shape, dtype=np.float32):
    values = _rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        values = values + 1j * _rng.standard_normal(shape)
    return values.astype(dtype)


def _invertible(*shape, dtype=np.float32):
    """Random matrices plus n times the identity: condition numbers of a few units."""
    size = shape[-1]
    return (_random(*shape, dtype=dtype) + 2 * size * np.eye(size)).astype(dtype)


def _positive_definite(*shape, dtype=np.float32):
    a = _random(*shape, dtype=dtype)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _name(dtype) -> str:
    return np.dtype(dtype).name


def _inverse_cases():
    found = [case("MatrixInverse", name=_name(d), input=_invertible(2, 3, 3, dtype=d),
                  **_tolerance(d)) for d in FLOATS + COMPLEX + (np.float16,)]
    found[-1]["rtol"], found[-1]["atol"] = 2e-3, 1e-3
    found += [
        case("MatrixInverse", name="adjoint", input=_invertible(3, 3, dtype=np.complex64),
             adjoint=True, **_SINGLE),
        case("MatrixInverse", name="matrix", input=_invertible(4, 4, dtype=np.float64)),
        case("MatrixInverse", name="empty", input=_random(0, 0)),
        case("MatrixInverse", name="empty_batch", input=_random(0, 3, 3)),
        case("MatrixInverse", name="singular", error=True, input=np.array(
            [[[1, 2], [2, 4]], [[1, 0], [0, 1]]], np.float32)),
        case("MatrixInverse", name="not_square", error=True, dynamic=True, input=_random(2, 3)),
    ]
    return found


def _solve_cases():
    found = [case("MatrixSolve", name=_name(d), matrix=_invertible(2, 3, 3, dtype=d),
                  rhs=_random(2, 3, 2, dtype=d), **_tolerance(d)) for d in FLOATS + COMPLEX]
    found += [
        case("MatrixSolve", name="adjoint", matrix=_invertible(3, 3, dtype=np.complex128),
             rhs=_random(3, 1, dtype=np.complex128), adjoint=True),
        case("MatrixSolve", name="empty", matrix=_random(0, 0), rhs=_random(0, 2)),
        case("MatrixSolve", name="no_columns", matrix=_invertible(3, 3), rhs=_random(3, 0)),
        case("MatrixSolve", name="singular", error=True,
             matrix=np.array([[1, 2], [2, 4]], np.float64), rhs=_random(2, 1, dtype=np.float64)),
        case("MatrixSolve", name="rows_mismatch", error=True, dynamic=True,
             matrix=_invertible(3, 3), rhs=_random(2, 1)),
    ]
    return found


def _triangular_cases():
    found = [case("MatrixTriangularSolve", name=_name(d), matrix=_invertible(2, 3, 3, dtype=d),
                  rhs=_random(2, 3, 2, dtype=d), **_tolerance(d)) for d in FLOATS + COMPLEX]
    for lower in (True, False):
        for adjoint in (False, True):
            found.append(case("MatrixTriangularSolve", name=f"lower_{lower}_adjoint_{adjoint}",
                              matrix=_invertible(4, 4, dtype=np.complex128),
                              rhs=_random(4, 3, dtype=np.complex128), lower=lower,
                              adjoint=adjoint))
    found += [
        case("MatrixTriangularSolve", name="broadcast", matrix=_invertible(2, 1, 3, 3),
             rhs=_random(4, 3, 2), **_SINGLE),
        case("MatrixTriangularSolve", name="broadcast_rhs", matrix=_invertible(2, 3, 3),
             rhs=_random(3, 1), lower=False, **_SINGLE),
        case("MatrixTriangularSolve", name="zero_diagonal", matrix=np.array(
            [[0, 0], [1, 1]], np.float64), rhs=np.ones((2, 1))),
        case("MatrixTriangularSolve", name="empty", matrix=_random(0, 0), rhs=_random(0, 2)),
        case("MatrixTriangularSolve", name="empty_batch", matrix=_random(0, 2, 2),
             rhs=_random(2, 1)),
        case("MatrixTriangularSolve", name="rows_mismatch", error=True, dynamic=True,
             matrix=_invertible(3, 3), rhs=_random(2, 1)),
    ]
    return found


def _bands(*shape, dtype=np.float32, lower=True):
    """[.., K, M] bands with a dominant main diagonal (row 0 for lower, row K-1 for upper)."""
    bands = _random(*shape, dtype=dtype)
    bands[..., 0 if lower else -1, :] += 4
    return bands


def _banded_cases():
    found = [case("BandedTriangularSolve", name=_name(d), matrix=_bands(2, 3, 5, dtype=d),
                  rhs=_random(2, 5, 2, dtype=d), **_tolerance(d))
             for d in FLOATS + COMPLEX]
    for lower in (True, False):
        for adjoint in (False, True):
            found.append(case("BandedTriangularSolve", name=f"lower_{lower}_adjoint_{adjoint}",
                              matrix=_bands(3, 6, dtype=np.complex128, lower=lower),
                              rhs=_random(6, 2, dtype=np.complex128), lower=lower,
                              adjoint=adjoint))
    found += [
        case("BandedTriangularSolve", name="diagonal_only", matrix=_bands(1, 4, dtype=np.float64),
             rhs=_random(4, 3, dtype=np.float64)),
        case("BandedTriangularSolve", name="broadcast", matrix=_bands(2, 1, 2, 4),
             rhs=_random(3, 4, 1), **_SINGLE),
        case("BandedTriangularSolve", name="zero_diagonal", error=True, matrix=np.array(
            [[0, 1, 1], [0, 1, 1]], np.float64), rhs=np.ones((3, 1))),
        case("BandedTriangularSolve", name="empty_bands", error=True, matrix=_bands(0, 2, 3),
             rhs=_random(3, 1)),
        case("BandedTriangularSolve", name="extra_bands_ignored", dynamic=True,
             matrix=_bands(3, 2), rhs=_random(2, 1)),
    ]
    return found


def _cholesky_cases():
    found = [case("Cholesky", name=_name(d), input=_positive_definite(2, 4, 4, dtype=d),
                  **_tolerance(d)) for d in FLOATS + COMPLEX]
    mixed = _positive_definite(3, 3, 3, dtype=np.float64)
    mixed[1] = -mixed[1]
    found += [
        case("Cholesky", name="not_positive_definite", input=mixed),
        case("Cholesky", name="upper_ignored", input=np.triu(_random(3, 3), 1) * 100
             + _positive_definite(3, 3), **_SINGLE),
        case("Cholesky", name="empty", input=_random(0, 0)),
        case("Cholesky", name="empty_batch", input=_random(2, 0, 0)),
    ]
    return found


def _determinant_cases():
    found = []
    for op in ("MatrixDeterminant", "LogMatrixDeterminant"):
        found += [case(op, name=_name(d), input=_invertible(2, 3, 3, dtype=d) - 3 * np.eye(3)
                       .astype(d), **_tolerance(d)) for d in FLOATS + COMPLEX]
        found += [
            case(op, name="singular", input=np.array([[1, 2], [2, 4]], np.float64)),
            case(op, name="negative", input=np.array([[0, 1], [1, 0]], np.float32)),
            case(op, name="scalar_matrix", input=np.array([[-2.5]], np.float64)),
            case(op, name="large", input=(30 * np.eye(40)).astype(np.float32), **_SINGLE),
            case(op, name="empty", input=_random(0, 0)),
            case(op, name="empty_batch", input=_random(0, 2, 2)),
            case(op, name="not_square", error=True, dynamic=True, input=_random(2, 3)),
        ]
    return found


def _cross_cases():
    found = []
    for dtype in (np.float32, np.float64, np.float16, np.int32, np.int64, np.int8, np.uint8):
        values = _rng.integers(-5, 6, (2, 4, 3)) if np.dtype(dtype).kind == "i" else (
            _rng.integers(0, 6, (2, 4, 3)) if np.dtype(dtype).kind == "u" else
            _rng.standard_normal((2, 4, 3)))
        other = _rng.integers(0, 6, (2, 4, 3))
        found.append(case("Cross", name=_name(dtype), a=values.astype(dtype),
                          b=other.astype(dtype)))
    found += [
        case("Cross", name="vector", a=np.array([1, 0, 0], np.float32),
             b=np.array([0, 1, 0], np.float32)),
        case("Cross", name="empty", a=_random(0, 3), b=_random(0, 3)),
        case("Cross", name="specials", a=np.array([[np.inf, 1, 0], [np.nan, 0, 1]], np.float32),
             b=np.array([[1, 1, 1], [1, 1, 1]], np.float32)),
        case("Cross", name="shape_mismatch", error=True, dynamic=True, a=_random(2, 3),
             b=_random(3, 3)),
    ]
    return found


def _lu_cases():
    found = [case("Lu", name=_name(d), input=_random(2, 4, 4, dtype=d), **_tolerance(d))
             for d in FLOATS + COMPLEX]
    found += [
        case("Lu", name="int64_indices", input=_random(3, 3, dtype=np.float64),
             output_idx_type=np.int64),
        case("Lu", name="needs_pivoting", input=np.array([[0, 1, 2], [3, 4, 5], [6, 7, 9]],
                                                         np.float64)),
        case("Lu", name="empty", input=_random(0, 0)),
        case("Lu", name="empty_batch", input=_random(0, 2, 2)),
        case("Lu", name="singular", error=True, input=np.array([[1, 2], [2, 4]], np.float64)),
    ]
    return found


def _matrix_function_cases():
    spd = _positive_definite(2, 3, 3, dtype=np.float64)
    rotation = np.array([[0, -1], [1, 0]], np.float64)
    found = [case("MatrixSquareRoot", name=_name(d), input=_positive_definite(2, 3, 3, dtype=d),
                  **_tolerance(d)) for d in FLOATS + COMPLEX]
    found += [
        case("MatrixSquareRoot", name="general", input=_invertible(4, 4, dtype=np.float64)),
        case("MatrixSquareRoot", name="complex_pair", input=rotation),
        case("MatrixSquareRoot", name="negative_eigenvalue", input=np.diag([-4.0, 9.0])),
        case("MatrixSquareRoot", name="complex_negative", input=np.diag([-4.0, 9.0])
             .astype(np.complex128)),
        case("MatrixSquareRoot", name="empty", input=_random(0, 0)),
        case("MatrixSquareRoot", name="spd_batch", input=spd),
    ]
    found += [case("MatrixLogarithm", name=_name(d), input=_invertible(2, 3, 3, dtype=d),
                   **_tolerance(d)) for d in COMPLEX]
    found += [
        case("MatrixLogarithm", name="rotation", input=rotation.astype(np.complex128)),
        case("MatrixLogarithm", name="empty", input=_random(0, 0, dtype=np.complex64)),
    ]
    return found


def _least_squares_cases():
    regularizer = np.float64(0)
    found = [case("MatrixSolveLs", name=_name(d), matrix=_random(2, 5, 3, dtype=d),
                  rhs=_random(2, 5, 2, dtype=d), l2_regularizer=regularizer, **_tolerance(d))
             for d in FLOATS + COMPLEX]
    found += [
        case("MatrixSolveLs", name="wide", matrix=_random(2, 4, dtype=np.float64),
             rhs=_random(2, 1, dtype=np.float64), l2_regularizer=regularizer),
        case("MatrixSolveLs", name="regularized", matrix=_random(4, 3, dtype=np.float64),
             rhs=_random(4, 2, dtype=np.float64), l2_regularizer=np.float64(0.5)),
        case("MatrixSolveLs", name="minimum_norm", matrix=_random(5, 3, dtype=np.float64),
             rhs=_random(5, 2, dtype=np.float64), l2_regularizer=regularizer, fast=False),
        case("MatrixSolveLs", name="rank_deficient", error=True,
             matrix=np.array([[1, 2], [2, 4], [3, 6]], np.float64), rhs=np.ones((3, 1)),
             l2_regularizer=regularizer),
        case("MatrixSolveLs", name="empty_batch", matrix=_random(0, 3, 2), rhs=_random(0, 3, 2),
             l2_regularizer=regularizer),
    ]
    return found


def _tridiagonal(*batch, size=5, dtype=np.float64):
    diagonals = _random(*batch, 3, size, dtype=dtype)
    diagonals[..., 1, :] += 4
    return diagonals


def _tridiagonal_cases():
    found = [case("TridiagonalSolve", name=_name(d), diagonals=_tridiagonal(2, dtype=d),
                  rhs=_random(2, 5, 3, dtype=d), **_tolerance(d)) for d in FLOATS + COMPLEX]
    zero_first = _tridiagonal()
    zero_first[1, 0] = 0
    found += [
        case("TridiagonalSolve", name="pivoting", diagonals=zero_first, rhs=_random(5, 2,
                                                                                 dtype=np.float64)),
        case("TridiagonalSolve", name="no_pivoting", diagonals=_tridiagonal(), partial_pivoting=False,
             rhs=_random(5, 2, dtype=np.float64)),
        case("TridiagonalSolve", name="singular", diagonals=np.array(
            [[[1, 2, 0], [4, 5, 6], [0, 8, 9]], [[1, 0, 0], [2, 2, 2], [0, 1, 1]]], np.float64),
            rhs=np.ones((2, 3, 1))),
        case("TridiagonalSolve", name="one_by_one", diagonals=np.array([[0], [2], [0]], np.float32),
             rhs=np.ones((1, 2), np.float32)),
        case("TridiagonalSolve", name="empty", diagonals=_random(0, 3, 4), rhs=_random(0, 4, 1)),
    ]
    for d in FLOATS + COMPLEX:
        diagonals = _random(2, 3, 1, 4, dtype=d)
        found.append(case("TridiagonalMatMul", name=_name(d), superdiag=diagonals[:, 0],
                          maindiag=diagonals[:, 1], subdiag=diagonals[:, 2],
                          rhs=_random(2, 4, 3, dtype=d), **_tolerance(d)))
    found.append(case("TridiagonalMatMul", name="one_row", superdiag=_random(1, 1),
                      maindiag=_random(1, 1), subdiag=_random(1, 1), rhs=_random(1, 2)))
    return found


def _int(value):
    return np.array(value, np.int32)


def _diagonal_cases():
    """V1 (main diagonal) and V2 (V3's arguments, diagonals packed LEFT_LEFT): a band of
    diagonals of unequal lengths shows the packing."""
    band = _random(2, 3, 4)
    matrix = _random(2, 4, 5)
    return [
        case("MatrixDiag", name="float32", diagonal=_random(2, 3)),
        case("MatrixDiag", name="int32", diagonal=np.arange(4, dtype=np.int32)),
        case("MatrixDiag", name="empty", diagonal=_random(2, 0)),
        case("MatrixDiagV2", name="band", diagonal=band, k=_int([-1, 1]), num_rows=_int(-1),
             num_cols=_int(-1), padding_value=np.float32(9)),
        case("MatrixDiagV2", name="rectangle", diagonal=_random(3), k=_int(1), num_rows=_int(3),
             num_cols=_int(-1), padding_value=np.float32(0)),
        case("MatrixDiagPart", name="wide", input=matrix),
        case("MatrixDiagPart", name="tall", input=_random(5, 3).astype(np.float64)),
        case("MatrixDiagPart", name="empty", input=_random(2, 0, 3)),
        case("MatrixDiagPartV2", name="band", input=matrix, k=_int([-2, 1]),
             padding_value=np.float32(7)),
        case("MatrixDiagPartV2", name="out_of_bound", error=True, input=matrix, k=_int(5),
             padding_value=np.float32(0)),
        case("MatrixSetDiag", name="wide", input=matrix, diagonal=_random(2, 4)),
        case("MatrixSetDiag", name="tall", input=_random(5, 3), diagonal=_random(3)),
        case("MatrixSetDiag", name="wrong_length", error=True, dynamic=True, input=matrix,
             diagonal=_random(2, 3)),
        case("MatrixSetDiagV2", name="band", input=matrix, diagonal=_random(2, 3, 4),
             k=_int([-1, 1])),
    ]


CASES = (_inverse_cases() + _solve_cases() + _triangular_cases() + _banded_cases()
         + _cholesky_cases()
         + _determinant_cases() + _cross_cases() + _diagonal_cases() + _lu_cases()
         + _matrix_function_cases() + _least_squares_cases() + _tridiagonal_cases())
