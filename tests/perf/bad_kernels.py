# ruff: noqa: E501
"""Today's lowering of the issue's bad cases, as NKI IR text (kept here so the warning tests do not
change when the lowering improves): ``x.sum()`` of 512x512 f32 on one partition; ``x.sum(0)`` of
1024x256 f32 through an element-wise transposing DMA; matmul 1024x4096x1024 bf16 reloading B per
128-row tile of A; ``q.astype(f32) @ np.repeat(k, 2, axis=0).astype(f32).transpose(0, 2, 1)``
(16 / 8 heads, 128x128 bf16) with the repeat and the casts materialised in HBM."""

X_SUM = """\
graph @_lambda_(%x: hbm<512x512xf32>) {
  %scratch0 = nki.alloc : hbm<1x1xf32> loc("fusion group over 512x512: %sum")
  %acc = nki.alloc : tile<1x1x1xf32, sbuf> loc("tensor.reduce %sum")
  nki.memset %acc {value = 0.0, engine = vector} loc("tensor.reduce %sum")
  nki.fori_loop {lower = 0, upper = 6, step = 1} loc("fusion group over 512x512: %sum") (%i: index) {
    %x_1 = nki.alloc : tile<1x77x512xf32, sbuf> loc("load %x")
    nki.dma_copy %x_1, %x[ds(%i*77, 77), 0:512] loc("load %x")
    %tmp = nki.alloc : tile<1x1x1xf32, sbuf> loc("tensor.reduce %sum")
    nki.tensor_reduce %tmp, %x_1 {op = add, axis = [1, 2], keepdims = true, engine = vector} loc("tensor.reduce %sum")
    nki.dealloc %x_1
    nki.tensor_tensor %acc, %acc, %tmp {op = add, engine = vector} loc("tensor.reduce %sum")
    nki.dealloc %tmp
  }
  %x_2 = nki.alloc : tile<1x50x512xf32, sbuf> loc("load %x")
  nki.dma_copy %x_2, %x[462:512, 0:512] loc("load %x")
  %tmp_1 = nki.alloc : tile<1x1x1xf32, sbuf> loc("tensor.reduce %sum")
  nki.tensor_reduce %tmp_1, %x_2 {op = add, axis = [1, 2], keepdims = true, engine = vector} loc("tensor.reduce %sum")
  nki.dealloc %x_2
  nki.tensor_tensor %acc, %acc, %tmp_1 {op = add, engine = vector} loc("tensor.reduce %sum")
  nki.dealloc %tmp_1
  %sum = nki.alloc : tile<1x1x1xf32, sbuf> loc("tensor.reduce %sum")
  nki.tensor_copy %sum, %acc {engine = vector} loc("tensor.reduce %sum")
  nki.dealloc %acc
  nki.dma_copy %scratch0, %sum loc("store %sum")
  nki.dealloc %sum
  %y = nki.alloc : hbm<f32> loc("output y")
  %view = nki.hbm_view %scratch0 {strides = []} : hbm<f32> loc("output y")
  nki.dma_copy %y, %view loc("output y")
  return y = %y
}
"""

COLUMN_SUM = """\
graph @_lambda_(%x: hbm<1024x256xf32>) {
  %view = nki.hbm_view %x {strides = [1, 256]} : hbm<256x1024xf32> loc("fusion group over 1024x256: %sum")
  %scratch0 = nki.alloc : hbm<1x256xf32> loc("fusion group over 1024x256: %sum")
  %view_1 = nki.hbm_view %scratch0 {strides = [1, 256]} : hbm<256x1xf32> loc("fusion group over 1024x256: %sum")
  nki.fori_loop {lower = 0, upper = 2, step = 1} loc("fusion group over 1024x256: %sum") (%i: index) {
    %x_1 = nki.alloc : tile<128x1024xf32, sbuf> loc("load %x")
    nki.dma_copy %x_1, %view[ds(%i*128, 128), 0:1024] loc("load %x")
    %sum = nki.alloc : tile<128x1xf32, sbuf> loc("tensor.reduce %sum")
    nki.tensor_reduce %sum, %x_1 {op = add, axis = [1], keepdims = true, engine = vector} loc("tensor.reduce %sum")
    nki.dealloc %x_1
    nki.dma_copy %view_1[ds(%i*128, 128), 0:1], %sum loc("store %sum")
    nki.dealloc %sum
  }
  %y = nki.alloc : hbm<256xf32> loc("output y")
  %view_2 = nki.hbm_view %scratch0 {strides = [1]} : hbm<256xf32> loc("output y")
  nki.dma_copy %y, %view_2 loc("output y")
  return y = %y
}
"""

MATMUL_RELOAD = """\
graph @_lambda_(%a: hbm<1024x4096xbf16>, %b: hbm<4096x1024xbf16>) {
  %y = nki.alloc : hbm<1024x1024xbf16> loc("output y")
  nki.fori_loop {lower = 0, upper = 8, step = 1} loc("tensor.matmul %matmul") (%i: index) {
    %a_t = nki.alloc : tile<128x32x128xbf16, sbuf> loc("tensor.matmul %matmul")
    nki.fori_loop {lower = 0, upper = 32, step = 1} loc("tensor.matmul %matmul") (%j: index) {
      %a_nat = nki.alloc : tile<128x128xbf16, sbuf> loc("tensor.matmul %matmul")
      nki.dma_copy %a_nat, %a[ds(%i*128, 128), ds(%j*128, 128)] loc("tensor.matmul %matmul")
      %ps_t = nki.alloc : tile<128x128xbf16, psum> loc("tensor.matmul %matmul")
      nki.nc_transpose %ps_t, %a_nat {engine = tensor} loc("tensor.matmul %matmul")
      nki.dealloc %a_nat
      nki.tensor_copy %a_t[0:128, ds(%j, 1), 0:128], %ps_t {engine = vector} loc("tensor.matmul %matmul")
      nki.dealloc %ps_t
    }
    %acc = nki.alloc : tile<128x512xf32, psum> loc("tensor.matmul %matmul")
    %acc_1 = nki.alloc : tile<128x512xf32, psum> loc("tensor.matmul %matmul")
    %b_k = nki.alloc : tile<128x1024xbf16, sbuf> loc("tensor.matmul %matmul")
    nki.dma_copy %b_k, %b[0:128, 0:1024] loc("tensor.matmul %matmul")
    nki.nc_matmul %acc, %a_t[0:128, 0:1, 0:128], %b_k[0:128, 0:512] {engine = tensor} loc("tensor.matmul %matmul")
    nki.nc_matmul %acc_1, %a_t[0:128, 0:1, 0:128], %b_k[0:128, 512:1024] {engine = tensor} loc("tensor.matmul %matmul")
    nki.dealloc %b_k
    nki.fori_loop {lower = 1, upper = 32, step = 1} loc("tensor.matmul %matmul") (%j_1: index) {
      %b_k_1 = nki.alloc : tile<128x1024xbf16, sbuf> loc("tensor.matmul %matmul")
      nki.dma_copy %b_k_1, %b[ds(%j_1*128, 128), 0:1024] loc("tensor.matmul %matmul")
      nki.nc_matmul %acc, %a_t[0:128, ds(%j_1, 1), 0:128], %b_k_1[0:128, 0:512] {accumulate = true, engine = tensor} loc("tensor.matmul %matmul")
      nki.nc_matmul %acc_1, %a_t[0:128, ds(%j_1, 1), 0:128], %b_k_1[0:128, 512:1024] {accumulate = true, engine = tensor} loc("tensor.matmul %matmul")
      nki.dealloc %b_k_1
    }
    nki.dealloc %a_t
    %c = nki.alloc : tile<128x1024xbf16, sbuf> loc("tensor.matmul %matmul")
    nki.tensor_copy %c[0:128, 0:512], %acc {engine = vector} loc("tensor.matmul %matmul")
    nki.dealloc %acc
    nki.tensor_copy %c[0:128, 512:1024], %acc_1 {engine = vector} loc("tensor.matmul %matmul")
    nki.dealloc %acc_1
    nki.dma_copy %y[ds(%i*128, 128), 0:1024], %c loc("tensor.matmul %matmul")
    nki.dealloc %c
  }
  return y = %y
}
"""

GQA_REPEAT = """\
graph @_lambda_(%q: hbm<16x128x128xbf16>, %k: hbm<8x128x128xbf16>) {
  %y = nki.alloc : hbm<16x128x128xf32> loc("output y")
  %view = nki.hbm_view %q {strides = [16384, 1, 128]} : hbm<16x128x128xbf16> loc("fusion group over 16x128x128: %cast")
  %scratch0 = nki.alloc : hbm<16x128x128xf32> loc("fusion group over 16x128x128: %cast")
  %view_1 = nki.hbm_view %scratch0 {strides = [16384, 1, 128]} : hbm<16x128x128xf32> loc("fusion group over 16x128x128: %cast")
  nki.fori_loop {lower = 0, upper = 16, step = 1} loc("fusion group over 16x128x128: %cast") (%i: index) {
    %q_1 = nki.alloc : tile<128x128xbf16, sbuf> loc("load %q")
    nki.dma_copy %q_1, %view[ds(%i, 1), 0:128, 0:128] loc("load %q")
    nki.dma_copy %view_1[ds(%i, 1), 0:128, 0:128], %q_1 loc("store %cast")
    nki.dealloc %q_1
  }
  %scratch1 = nki.alloc : hbm<16x128x128xbf16> loc("tensor.reshape %reshape_1")
  %view_2 = nki.hbm_view %k {strides = [16384, 0, 128, 1]} : hbm<8x2x128x128xbf16> loc("tensor.reshape %reshape_1")
  nki.dma_copy %scratch1, %view_2 loc("tensor.reshape %reshape_1")
  %view_3 = nki.hbm_view %scratch1 {strides = [16384, 1, 128]} : hbm<16x128x128xbf16> loc("fusion group over 16x128x128: %cast_1")
  %scratch2 = nki.alloc : hbm<16x128x128xf32> loc("fusion group over 16x128x128: %cast_1")
  %view_4 = nki.hbm_view %scratch2 {strides = [16384, 1, 128]} : hbm<16x128x128xf32> loc("fusion group over 16x128x128: %cast_1")
  nki.fori_loop {lower = 0, upper = 16, step = 1} loc("fusion group over 16x128x128: %cast_1") (%i_1: index) {
    %reshape_1 = nki.alloc : tile<128x128xbf16, sbuf> loc("load %reshape_1")
    nki.dma_copy %reshape_1, %view_3[ds(%i_1, 1), 0:128, 0:128] loc("load %reshape_1")
    nki.dma_copy %view_4[ds(%i_1, 1), 0:128, 0:128], %reshape_1 loc("store %cast_1")
    nki.dealloc %reshape_1
  }
  nki.fori_loop {lower = 0, upper = 16, step = 1} loc("tensor.matmul %matmul") (%i_2: index) {
    %a_t = nki.alloc : tile<128x1x128xf32, sbuf> loc("tensor.matmul %matmul")
    %a_nat = nki.alloc : tile<128x128xf32, sbuf> loc("tensor.matmul %matmul")
    nki.dma_copy %a_nat, %scratch0[ds(%i_2, 1), 0:128, 0:128] loc("tensor.matmul %matmul")
    %ps_t = nki.alloc : tile<128x128xf32, psum> loc("tensor.matmul %matmul")
    nki.nc_transpose %ps_t, %a_nat {engine = tensor} loc("tensor.matmul %matmul")
    nki.dealloc %a_nat
    nki.tensor_copy %a_t, %ps_t {engine = vector} loc("tensor.matmul %matmul")
    nki.dealloc %ps_t
    %acc = nki.alloc : tile<128x512xf32, psum> loc("tensor.matmul %matmul")
    %b_k = nki.alloc : tile<128x128xf32, sbuf> loc("tensor.matmul %matmul")
    %b_nat = nki.alloc : tile<128x128xf32, sbuf> loc("tensor.matmul %matmul")
    nki.dma_copy %b_nat, %scratch2[ds(%i_2, 1), 0:128, 0:128] loc("tensor.matmul %matmul")
    %ps_t_1 = nki.alloc : tile<128x128xf32, psum> loc("tensor.matmul %matmul")
    nki.nc_transpose %ps_t_1, %b_nat {engine = tensor} loc("tensor.matmul %matmul")
    nki.dealloc %b_nat
    nki.tensor_copy %b_k, %ps_t_1 {engine = vector} loc("tensor.matmul %matmul")
    nki.dealloc %ps_t_1
    nki.nc_matmul %acc[0:128, 0:128], %a_t, %b_k {engine = tensor} loc("tensor.matmul %matmul")
    nki.dealloc %b_k
    nki.dealloc %a_t
    %c = nki.alloc : tile<128x128xf32, sbuf> loc("tensor.matmul %matmul")
    nki.tensor_copy %c, %acc[0:128, 0:128] {engine = vector} loc("tensor.matmul %matmul")
    nki.dealloc %acc
    nki.dma_copy %y[ds(%i_2, 1), 0:128, 0:128], %c loc("tensor.matmul %matmul")
    nki.dealloc %c
  }
  return y = %y
}
"""
