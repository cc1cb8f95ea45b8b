"""Kernel cases for ops that move values without computing."""
import numpy as np

CASES = [
    case("Identity", input=np.array([[1.5, -2.0]], np.float32)),
    case("Identity", name="string", input=np.array([b"a", b"\xff"], dtype=object)),
    case("IdentityN", input=[np.array(1, np.int32), np.array([True])]),
    case("StopGradient", input=np.array([1.0, 2.0])),
]
