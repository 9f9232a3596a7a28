// RUN: canonicalize
// A matmul on gather_rows of a stacked table (the experts of a mixture of experts) reads each
// selected matrix once (canonical/gathered_matmul.py); a short weighted sum over a middle axis
// becomes a sum of slices (canonical/small_axis_sum.py).
// (uint32 ids: the driver feeds unsigned ints in [0, 10), all valid rows of the 10-matrix tables)

// n <= E selections, one row each → gathered_matmul
graph @few(%a: tensor<6x1x32xf32>, %t: tensor<10x32x16xf32>, %ids: tensor<6xu32>) {
  %g = tensor.gather_rows %t, %ids : tensor<6x32x16xf32>
  %m = tensor.matmul %a, %g : tensor<6x1x16xf32>
  return y = %m
}
// CHECK: %gathered_matmul = tensor.gathered_matmul %a, %t, %ids : tensor<6x1x16xf32>
// CHECK-NEXT: return y = %gathered_matmul

// -----
// a token's row broadcast over its k selections is passed once (group = k); the cast to f32 of
// the bf16 products is folded into the op (astype)
graph @shared_rows(%x: tensor<3x32xbf16>, %t: tensor<10x32x16xbf16>, %ids: tensor<6xu32>) {
  %g = tensor.gather_rows %t, %ids : tensor<6x32x16xbf16>
  %r = tensor.reshape %x {shape = [3, 1, 32]} : tensor<3x1x32xbf16>
  %b = tensor.broadcast_to %r {shape = [3, 2, 32]} : tensor<3x2x32xbf16>
  %a = tensor.reshape %b {shape = [6, 1, 32]} : tensor<6x1x32xbf16>
  %m = tensor.matmul %a, %g : tensor<6x1x16xbf16>
  %c = tensor.cast %m {dtype = f32} : tensor<6x1x16xf32>
  return y = %c
}
// CHECK: %gathered_matmul{{\w*}} = tensor.gathered_matmul %r, %t, %ids {group = 2, astype = "float32"} : tensor<6x1x16xf32>
// CHECK-NOT: tensor.gather_rows

// -----
// n > E selections of a topk: every matrix once, applied to every token, rows picked after
graph @many(%x: tensor<4x32xf32>, %l: tensor<4x10xf32>, %t: tensor<10x32x16xf32>) {
  %v, %i = tensor.topk %l {k = 3, axis = 1} : tensor<4x3xf32>, tensor<4x3xi32>
  %ids = tensor.reshape %i {shape = [12]} : tensor<12xi32>
  %g = tensor.gather_rows %t, %ids : tensor<12x32x16xf32>
  %r = tensor.reshape %x {shape = [4, 1, 32]} : tensor<4x1x32xf32>
  %b = tensor.broadcast_to %r {shape = [4, 3, 32]} : tensor<4x3x32xf32>
  %a = tensor.reshape %b {shape = [12, 1, 32]} : tensor<12x1x32xf32>
  %m = tensor.matmul %a, %g : tensor<12x1x16xf32>
  return y = %m
}
// CHECK: tensor.iota {axis = 0} : tensor<10xi32>
// CHECK: tensor.gathered_matmul %{{\w+}}, %t, %{{\w+}} {group = 10} : tensor<10x4x16xf32>
// CHECK: tensor.gather_rows %{{\w+}}, %{{\w+}} : tensor<12x1x16xf32>

// -----
// n > E with per-selection rows: scattered into a zero (E·t, 1, K) buffer at ids·t + token
graph @many_rows(%a: tensor<12x1x32xf32>, %l: tensor<4x10xf32>, %t: tensor<10x32x16xf32>) {
  %v, %i = tensor.topk %l {k = 3, axis = 1} : tensor<4x3xf32>, tensor<4x3xi32>
  %ids = tensor.reshape %i {shape = [12]} : tensor<12xi32>
  %g = tensor.gather_rows %t, %ids : tensor<12x32x16xf32>
  %m = tensor.matmul %a, %g : tensor<12x1x16xf32>
  return y = %m
}
// CHECK: tensor.scatter_rows %{{\w+}}, %{{\w+}}, %a {unique = true} : tensor<40x1x32xf32>
// CHECK: tensor.gathered_matmul %{{\w+}}, %t, %{{\w+}} : tensor<10x4x16xf32>
// CHECK: tensor.gather_rows %{{\w+}}, %{{\w+}} : tensor<12x1x16xf32>

// -----
// n > E with ids not from a topk (a token's ids may repeat): the gather stays
graph @many_free(%a: tensor<12x1x32xf32>, %t: tensor<10x32x16xf32>, %ids: tensor<12xu32>) {
  %g = tensor.gather_rows %t, %ids : tensor<12x32x16xf32>
  %m = tensor.matmul %a, %g : tensor<12x1x16xf32>
  return y = %m
}
// CHECK: %g = tensor.gather_rows %t, %ids : tensor<12x32x16xf32>
// CHECK-NEXT: %m = tensor.matmul %a, %g : tensor<12x1x16xf32>

// -----
// sum(Y * w, axis=1) over 4 experts of rows read from HBM → slices added left to right
graph @combine(%y: tensor<2x4x128xf32>, %w: tensor<2x4x1xf32>) {
  %m = tensor.mul %y, %w : tensor<2x4x128xf32>
  %s = tensor.reduce %m {axes = [1], kind = sum, keepdims = false} : tensor<2x128xf32>
  return y = %s
}
// CHECK-NOT: tensor.reduce
// CHECK: tensor.slice %y {starts = [0, 0, 0], stops = [2, 1, 128], strides = [1, 1, 1]} : tensor<2x1x128xf32>
// CHECK: tensor.slice %y {starts = [0, 3, 0], stops = [2, 4, 128], strides = [1, 1, 1]} : tensor<2x1x128xf32>
// CHECK: tensor.reshape %{{\w+}} {shape = [2, 128]} : tensor<2x128xf32>
