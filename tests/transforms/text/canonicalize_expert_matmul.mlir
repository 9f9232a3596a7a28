// RUN: canonicalize
// Batched matmuls over a stacked table of expert matrices given as a kernel input (an
// expert-parallel rank's dense-form experts) become gathered_matmuls over ids 0 … E-1, each
// matrix read by one DMA (canonical/expert_matmul.py).

// the same rows into every expert (group = E), then the activations of that product into each
// expert's down projection (group 1); the casts to f32 fold into the ops (astype)
graph @experts(%x: tensor<1x4x32xbf16>, %wg: tensor<3x32x32xbf16>, %wd: tensor<3x32x32xbf16>) {
  %g = tensor.matmul %x, %wg : tensor<3x4x32xbf16>
  %c = tensor.cast %g {dtype = f32} : tensor<3x4x32xf32>
  %e = tensor.tanh %c : tensor<3x4x32xf32>
  %a = tensor.cast %e {dtype = bf16} : tensor<3x4x32xbf16>
  %d = tensor.matmul %a, %wd : tensor<3x4x32xbf16>
  %y = tensor.cast %d {dtype = f32} : tensor<3x4x32xf32>
  return y = %y
}
// CHECK: tensor.iota {axis = 0} : tensor<3xi32>
// CHECK: tensor.gathered_matmul %x, %wg, %{{\w+}} {group = 3, astype = "float32"} : tensor<3x4x32xf32>
// CHECK: tensor.gathered_matmul %{{\w+}}, %wd, %{{\w+}} {astype = "float32"} : tensor<3x4x32xf32>
// CHECK-NOT: tensor.matmul

// -----
// a batched matmul by a 3-D input whose left operand is not an expert product (attention's
// P @ V) stays a matmul
graph @pv(%p: tensor<3x4x32xbf16>, %v: tensor<3x32x32xbf16>) {
  %e = tensor.exp %p : tensor<3x4x32xbf16>
  %o = tensor.matmul %e, %v : tensor<3x4x32xbf16>
  return y = %o
}
// CHECK: %o = tensor.matmul %e, %v : tensor<3x4x32xbf16>
// CHECK-NOT: gathered_matmul
