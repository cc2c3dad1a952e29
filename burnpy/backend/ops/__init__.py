"""The Backend protocol's op families, one module per tensor kind, as in Burn."""
