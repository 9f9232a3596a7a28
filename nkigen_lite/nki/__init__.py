"""NKI dialect: explicit memory (HBM / SBUF / PSUM), DMA, tiled loops and NISA compute ops."""
