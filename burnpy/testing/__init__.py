"""burnpy's backend conformance suite: every op case checked against torch on any backend.

Run the whole suite on your own backend from a test file of yours (needs pytest and torch)::

    from burnpy.testing import conformance_tests
    from my_package import MyBackend

    test_my_backend = conformance_tests(MyBackend)

or, to choose cases and seeds yourself::

    import pytest
    from burnpy.testing import parametrize_cases, run_case

    @pytest.mark.parametrize(("case", "dtype"), parametrize_cases(MyBackend))
    def test_op(case, dtype):
        run_case(case, MyBackend, dtype, seed=0)

Test ids are ``"<case>-<dtype>"`` (``pytest -k matmul`` runs the matmul cases); dtypes that
``MyBackend.supports_dtype`` refuses are skipped with the reason.
"""

from burnpy.testing import op_cases as _op_cases  # noqa: F401 - registers the cases
from burnpy.testing.cases import CASES, FLOAT_DTYPES, Arg, B, F, I, OpCase, case
from burnpy.testing.conformance import (
    TOLERANCES,
    backends_available,
    conformance_tests,
    parametrize_cases,
    run_case,
    supported,
)

__all__ = [
    "CASES", "FLOAT_DTYPES", "TOLERANCES", "Arg", "B", "F", "I", "OpCase", "backends_available",
    "case", "conformance_tests", "parametrize_cases", "run_case", "supported",
]
