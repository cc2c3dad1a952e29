"""Backend ops written once against an array module ``xp`` (NumPy here, CuPy for CUDA)."""
