"""Every op's derivative, for both decorators: the one place to look for "where is reshape's
derivative?".

- Elementwise ops state their local partials once, in ``burnpy.ir.elementwise``;
  ``elementwise.py`` generates both decorators' ops from that table.
- Every other op is declared once, in the table of its family's module, with its reverse
  rule and its tangent rule side by side (``table.py`` has the declaration and the
  conventions): ``layout.py`` (cast, reshape, permute, cat...), ``indexing.py`` (slice,
  gather, scatter, select, mask_where), ``reduction.py`` (sum, mean, prod, max/min, the
  ``*_with_indices`` family, cumsum, cumprod), ``linalg.py`` (matmul, linear, attention),
  ``activation.py`` (softmax, log_softmax), ``conv.py``, ``pool.py`` (pools, embedding,
  interpolate), ``norm.py`` (batch_norm, layer_norm, rms_norm,
  cross_entropy), ``recurrent.py`` (the LSTM recurrence), ``quantized.py``, and
  ``no_derivative.py`` (creation ops, non-float results).
- ``reverse.py`` builds Autodiff's recording methods from a declaration, ``tangent.py``
  ForwardAD's, with one factory per signature kind of the same name on both sides.

The rule conventions, the same argument order in both modes:

- reverse ``rule(B, grad, inputs, output, params, parents) -> one gradient per float input``;
- tangent ``rule(B, tangents, inputs, output, params) -> tangent or None``, or ``LINEAR``.

Both are written with the inner backend ``B``'s ops only, so each is itself differentiable
when ``B`` is a decorator (second order, HVPs). Gradients may keep the output's broadcast
shape: the graph un-broadcasts them once, centrally. An op absent from every table runs the
protocol's provided composition on the decorator, which differentiates its parts.

The ``*Rules`` classes gathering each decorator's families are in ``families.py``.
"""
