// RUN: canonicalize
// A fused gate/up projection split after the matmul (np.split of x @ w_gu): each column slice
// of the product becomes a matmul on the matching column view of the weight.

graph @gate_up(%x: tensor<8x16xf32>, %w: tensor<16x12xf32>) {
  %matmul = tensor.matmul %x, %w : tensor<8x12xf32>
  %slice = tensor.slice %matmul {starts = [0, 0], stops = [8, 6], strides = [1, 1]} : tensor<8x6xf32>
  %slice_1 = tensor.slice %matmul {starts = [0, 6], stops = [8, 12], strides = [1, 1]} : tensor<8x6xf32>
  %mul = tensor.mul %slice, %slice_1 : tensor<8x6xf32>
  return y = %mul
}
// CHECK: tensor.slice %w {starts = [0, 0], stops = [16, 6], strides = [1, 1]} : tensor<16x6xf32>
// CHECK-NEXT: tensor.matmul %x, %{{\w+}} : tensor<8x6xf32>
// CHECK: tensor.slice %w {starts = [0, 6], stops = [16, 12], strides = [1, 1]} : tensor<16x6xf32>
// CHECK-NEXT: tensor.matmul %x, %{{\w+}} : tensor<8x6xf32>
// CHECK-NOT: tensor.matmul %x, %w

// -----

// A product also used whole is kept (the slices read it).

graph @used_whole(%x: tensor<8x16xf32>, %w: tensor<16x12xf32>) {
  %matmul = tensor.matmul %x, %w : tensor<8x12xf32>
  %slice = tensor.slice %matmul {starts = [0, 0], stops = [8, 6], strides = [1, 1]} : tensor<8x6xf32>
  %reduce = tensor.reduce %matmul {axes = [1], kind = sum, keepdims = true} : tensor<8x1xf32>
  %add = tensor.add %slice, %reduce : tensor<8x6xf32>
  return y = %add
}
// CHECK: %matmul = tensor.matmul %x, %w : tensor<8x12xf32>
// CHECK-NEXT: %slice = tensor.slice %matmul
