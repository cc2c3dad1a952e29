"""One hypothesis profile for the property tests: few examples, no deadline (the first call of
an op compiles nothing but may import torch's kernels), derandomized so CI is reproducible,
and no example database written into the work tree."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "burnpy", max_examples=30, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("burnpy")
