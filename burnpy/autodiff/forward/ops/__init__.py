"""The ForwardAD op mixins, one module per op family, mirroring ``burnpy.autodiff.ops``."""
