// RUN: canonicalize
// Grouped-query attention written with np.repeat: the repeats of k and v become stride-0
// batch dims of the matmuls (each query head of a group reads its KV head), the casts and the
// transpose move onto the unrepeated k / v, and the merge of (group, repeat) sinks through the
// softmax to after the second matmul.

graph @gqa(%q: tensor<4x8x16xbf16>, %k: tensor<2x8x16xbf16>, %v: tensor<2x8x16xbf16>) {
  %reshape = tensor.reshape %k {shape = [2, 1, 8, 16]} : tensor<2x1x8x16xbf16>
  %broadcast_to = tensor.broadcast_to %reshape {shape = [2, 2, 8, 16]} : tensor<2x2x8x16xbf16>
  %reshape_1 = tensor.reshape %broadcast_to {shape = [4, 8, 16]} : tensor<4x8x16xbf16>
  %cast = tensor.cast %reshape_1 {dtype = f32} : tensor<4x8x16xf32>
  %reshape_2 = tensor.reshape %v {shape = [2, 1, 8, 16]} : tensor<2x1x8x16xbf16>
  %broadcast_to_1 = tensor.broadcast_to %reshape_2 {shape = [2, 2, 8, 16]} : tensor<2x2x8x16xbf16>
  %reshape_3 = tensor.reshape %broadcast_to_1 {shape = [4, 8, 16]} : tensor<4x8x16xbf16>
  %cast_1 = tensor.cast %reshape_3 {dtype = f32} : tensor<4x8x16xf32>
  %cast_2 = tensor.cast %q {dtype = f32} : tensor<4x8x16xf32>
  %transpose = tensor.transpose %cast {perm = [0, 2, 1]} : tensor<4x16x8xf32>
  %matmul = tensor.matmul %cast_2, %transpose : tensor<4x8x8xf32>
  %max = tensor.reduce %matmul {axes = [2], kind = max, keepdims = true} : tensor<4x8x1xf32>
  %sub = tensor.sub %matmul, %max : tensor<4x8x8xf32>
  %exp = tensor.exp %sub : tensor<4x8x8xf32>
  %sum = tensor.reduce %exp {axes = [2], kind = sum, keepdims = true} : tensor<4x8x1xf32>
  %div = tensor.div %exp, %sum : tensor<4x8x8xf32>
  %matmul_1 = tensor.matmul %div, %cast_1 : tensor<4x8x16xf32>
  return y = %matmul_1
}
// CHECK: %cast = tensor.cast %k {dtype = f32} : tensor<2x8x16xf32>
// CHECK-NEXT: %cast_1 = tensor.cast %v {dtype = f32} : tensor<2x8x16xf32>
// CHECK-NEXT: %cast_2 = tensor.cast %q {dtype = f32} : tensor<4x8x16xf32>
// CHECK-NEXT: %transpose = tensor.transpose %cast {perm = [0, 2, 1]} : tensor<2x16x8xf32>
// CHECK-NEXT: %reshape = tensor.reshape %cast_2 {shape = [2, 2, 8, 16]} : tensor<2x2x8x16xf32>
// CHECK-NEXT: %reshape_1 = tensor.reshape %transpose {shape = [2, 1, 16, 8]} : tensor<2x1x16x8xf32>
// CHECK-NEXT: %matmul = tensor.matmul %reshape, %reshape_1 : tensor<2x2x8x8xf32>
// CHECK-NEXT: %reduce = tensor.reduce %matmul {axes = [3], kind = max, keepdims = true} : tensor<2x2x8x1xf32>
// CHECK-NEXT: %sub = tensor.sub %matmul, %reduce : tensor<2x2x8x8xf32>
// CHECK-NEXT: %exp = tensor.exp %sub : tensor<2x2x8x8xf32>
// CHECK-NEXT: %reduce_1 = tensor.reduce %exp {axes = [3], kind = sum, keepdims = true} : tensor<2x2x8x1xf32>
// CHECK-NEXT: %div = tensor.div %exp, %reduce_1 : tensor<2x2x8x8xf32>
// CHECK-NEXT: %reshape_2 = tensor.reshape %cast_1 {shape = [2, 1, 8, 16]} : tensor<2x1x8x16xf32>
// CHECK-NEXT: %matmul_1 = tensor.matmul %div, %reshape_2 : tensor<2x2x8x16xf32>
// CHECK-NEXT: %reshape_3 = tensor.reshape %matmul_1 {shape = [4, 8, 16]} : tensor<4x8x16xf32>
// CHECK-NEXT: return y = %reshape_3

// -----
// A layer's layout: k (1, S, KV, D) repeated along the heads axis, then heads moved before the
// sequence: the repeat moves below both transposes; the (S, S) mask broadcasts as it is.
graph @gqa_heads_axis(%q: tensor<1x8x4x16xf32>, %k: tensor<1x8x2x16xf32>, %m: tensor<8x8xf32>) {
  %reshape = tensor.reshape %k {shape = [1, 8, 2, 1, 16]} : tensor<1x8x2x1x16xf32>
  %broadcast_to = tensor.broadcast_to %reshape {shape = [1, 8, 2, 2, 16]} : tensor<1x8x2x2x16xf32>
  %reshape_1 = tensor.reshape %broadcast_to {shape = [1, 8, 4, 16]} : tensor<1x8x4x16xf32>
  %transpose = tensor.transpose %q {perm = [0, 2, 1, 3]} : tensor<1x4x8x16xf32>
  %transpose_1 = tensor.transpose %reshape_1 {perm = [0, 2, 1, 3]} : tensor<1x4x8x16xf32>
  %transpose_2 = tensor.transpose %transpose_1 {perm = [0, 1, 3, 2]} : tensor<1x4x16x8xf32>
  %matmul = tensor.matmul %transpose, %transpose_2 : tensor<1x4x8x8xf32>
  %add = tensor.add %matmul, %m : tensor<1x4x8x8xf32>
  %max = tensor.reduce %add {axes = [3], kind = max, keepdims = true} : tensor<1x4x8x1xf32>
  %sub = tensor.sub %add, %max : tensor<1x4x8x8xf32>
  %exp = tensor.exp %sub : tensor<1x4x8x8xf32>
  return y = %exp
}
// CHECK: %transpose = tensor.transpose %q {perm = [0, 2, 1, 3]} : tensor<1x4x8x16xf32>
// CHECK-NEXT: %transpose_1 = tensor.transpose %k {perm = [0, 2, 3, 1]} : tensor<1x2x16x8xf32>
// CHECK-NEXT: %reshape = tensor.reshape %transpose {shape = [1, 2, 2, 8, 16]} : tensor<1x2x2x8x16xf32>
// CHECK-NEXT: %reshape_1 = tensor.reshape %transpose_1 {shape = [1, 2, 1, 16, 8]} : tensor<1x2x1x16x8xf32>
// CHECK-NEXT: %matmul = tensor.matmul %reshape, %reshape_1 : tensor<1x2x2x8x8xf32>
// CHECK-NEXT: %add = tensor.add %matmul, %m : tensor<1x2x2x8x8xf32>
// CHECK-NEXT: %reduce = tensor.reduce %add {axes = [4], kind = max, keepdims = true} : tensor<1x2x2x8x1xf32>
// CHECK-NEXT: %sub = tensor.sub %add, %reduce : tensor<1x2x2x8x8xf32>
// CHECK-NEXT: %exp = tensor.exp %sub : tensor<1x2x2x8x8xf32>
// CHECK-NEXT: %reshape_2 = tensor.reshape %exp {shape = [1, 4, 8, 8]} : tensor<1x4x8x8xf32>
// CHECK-NEXT: return y = %reshape_2
