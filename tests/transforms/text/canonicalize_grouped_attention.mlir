// RUN: canonicalize
// Causal grouped-query attention written with np.repeat and f32 casts (the form the trace
// gives): after the GQA rules the scaled, masked scores, the softmax and the value product
// become one tensor.grouped_attention of the uncast bf16 q, k, v (KV heads unrepeated).

graph @gqa_causal(%q: tensor<4x8x16xbf16>, %k: tensor<2x8x16xbf16>, %v: tensor<2x8x16xbf16>) {
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
  %c = tensor.full {value = 0.25} : tensor<f32>
  %mul = tensor.mul %matmul, %c : tensor<4x8x8xf32>
  %iota = tensor.iota {axis = 1} : tensor<1x8x8xi32>
  %iota_1 = tensor.iota {axis = 2} : tensor<1x8x8xi32>
  %sub = tensor.sub %iota_1, %iota : tensor<1x8x8xi32>
  %c_1 = tensor.full {value = 0} : tensor<i32>
  %less_equal = tensor.less_equal %sub, %c_1 : tensor<1x8x8xbool>
  %c_2 = tensor.full {value = 0.0} : tensor<f32>
  %c_3 = tensor.full {value = -10000.0} : tensor<f32>
  %where = tensor.where %less_equal, %c_2, %c_3 : tensor<1x8x8xf32>
  %add = tensor.add %mul, %where : tensor<4x8x8xf32>
  %max = tensor.reduce %add {axes = [2], kind = max, keepdims = true} : tensor<4x8x1xf32>
  %sub_1 = tensor.sub %add, %max : tensor<4x8x8xf32>
  %exp = tensor.exp %sub_1 : tensor<4x8x8xf32>
  %sum = tensor.reduce %exp {axes = [2], kind = sum, keepdims = true} : tensor<4x8x1xf32>
  %reciprocal = tensor.reciprocal %sum : tensor<4x8x1xf32>
  %mul_1 = tensor.mul %exp, %reciprocal : tensor<4x8x8xf32>
  %matmul_1 = tensor.matmul %mul_1, %cast_1 : tensor<4x8x16xf32>
  %cast_3 = tensor.cast %matmul_1 {dtype = bf16} : tensor<4x8x16xbf16>
  return y = %cast_3
}
// CHECK: %grouped_attention = tensor.grouped_attention %q, %k, %v {scale = 0.25, causal = true, mask_value = -10000.0} : tensor<4x8x16xbf16>
// CHECK-NEXT: return y = %grouped_attention

// -----
// The scores are also an output: they have to exist, so the pattern is left alone.
graph @scores_used(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xf32>, %v: tensor<2x8x16xf32>) {
  %transpose = tensor.transpose %k {perm = [0, 2, 1]} : tensor<2x16x8xf32>
  %matmul = tensor.matmul %q, %transpose : tensor<2x8x8xf32>
  %c = tensor.full {value = 0.25} : tensor<f32>
  %mul = tensor.mul %matmul, %c : tensor<2x8x8xf32>
  %iota = tensor.iota {axis = 1} : tensor<1x8x8xi32>
  %iota_1 = tensor.iota {axis = 2} : tensor<1x8x8xi32>
  %sub = tensor.sub %iota_1, %iota : tensor<1x8x8xi32>
  %c_1 = tensor.full {value = 0} : tensor<i32>
  %less_equal = tensor.less_equal %sub, %c_1 : tensor<1x8x8xbool>
  %c_2 = tensor.full {value = 0.0} : tensor<f32>
  %c_3 = tensor.full {value = -10000.0} : tensor<f32>
  %where = tensor.where %less_equal, %c_2, %c_3 : tensor<1x8x8xf32>
  %add = tensor.add %mul, %where : tensor<2x8x8xf32>
  %max = tensor.reduce %add {axes = [2], kind = max, keepdims = true} : tensor<2x8x1xf32>
  %sub_1 = tensor.sub %add, %max : tensor<2x8x8xf32>
  %exp = tensor.exp %sub_1 : tensor<2x8x8xf32>
  %sum = tensor.reduce %exp {axes = [2], kind = sum, keepdims = true} : tensor<2x8x1xf32>
  %div = tensor.div %exp, %sum : tensor<2x8x8xf32>
  %matmul_1 = tensor.matmul %div, %v : tensor<2x8x16xf32>
  return y = %matmul_1, s = %add
}
// CHECK-NOT: tensor.grouped_attention
