// RUN: canonicalize
// gpt-oss attention with per-head sink logits as the model writes it (the sink joins the max and
// the denominator, grouped query heads as a reshape of q by KV head): the scaled scores, the
// causal and sliding-window masks (folded to bool constants at this size), the softmax and the
// value product become one tensor.sink_attention of q, k, v and the sinks.

graph @sink_window(%q: tensor<4x16x8xbf16>, %k: tensor<2x16x8xbf16>, %v: tensor<2x16x8xbf16>, %sinks: tensor<4xf32>) {
  %reshape = tensor.reshape %q {shape = [2, 32, 8]} : tensor<2x32x8xbf16>
  %transpose = tensor.transpose %k {perm = [0, 2, 1]} : tensor<2x8x16xbf16>
  %matmul = tensor.matmul %reshape, %transpose : tensor<2x32x16xbf16>
  %cast = tensor.cast %matmul {dtype = f32} : tensor<2x32x16xf32>
  %c = tensor.full {value = 0.35355339059327373} : tensor<f32>
  %mul = tensor.mul %cast, %c : tensor<2x32x16xf32>
  %reshape_1 = tensor.reshape %mul {shape = [2, 2, 16, 16]} : tensor<2x2x16x16xf32>
  %iota = tensor.iota {axis = 0} : tensor<16x16xi32>
  %iota_1 = tensor.iota {axis = 1} : tensor<16x16xi32>
  %less_equal = tensor.less_equal %iota_1, %iota : tensor<16x16xbool>
  %c_1 = tensor.full {value = -inf} : tensor<f32>
  %where = tensor.where %less_equal, %reshape_1, %c_1 : tensor<2x2x16x16xf32>
  %sub = tensor.sub %iota, %iota_1 : tensor<16x16xi32>
  %c_2 = tensor.full {value = 4} : tensor<i32>
  %less = tensor.less %sub, %c_2 : tensor<16x16xbool>
  %c_3 = tensor.full {value = -inf} : tensor<f32>
  %where_1 = tensor.where %less, %where, %c_3 : tensor<2x2x16x16xf32>
  %reshape_2 = tensor.reshape %sinks {shape = [2, 2, 1, 1]} : tensor<2x2x1x1xf32>
  %max = tensor.reduce %where_1 {axes = [3], kind = max, keepdims = true} : tensor<2x2x16x1xf32>
  %maximum = tensor.maximum %max, %reshape_2 : tensor<2x2x16x1xf32>
  %sub_1 = tensor.sub %where_1, %maximum : tensor<2x2x16x16xf32>
  %exp = tensor.exp %sub_1 : tensor<2x2x16x16xf32>
  %sum = tensor.reduce %exp {axes = [3], kind = sum, keepdims = true} : tensor<2x2x16x1xf32>
  %sub_2 = tensor.sub %reshape_2, %maximum : tensor<2x2x16x1xf32>
  %exp_1 = tensor.exp %sub_2 : tensor<2x2x16x1xf32>
  %add = tensor.add %sum, %exp_1 : tensor<2x2x16x1xf32>
  %div = tensor.div %exp, %add : tensor<2x2x16x16xf32>
  %cast_1 = tensor.cast %div {dtype = bf16} : tensor<2x2x16x16xbf16>
  %reshape_3 = tensor.reshape %cast_1 {shape = [2, 32, 16]} : tensor<2x32x16xbf16>
  %matmul_1 = tensor.matmul %reshape_3, %v : tensor<2x32x8xbf16>
  %reshape_4 = tensor.reshape %matmul_1 {shape = [4, 16, 8]} : tensor<4x16x8xbf16>
  return o = %reshape_4
}
// CHECK: %sink_attention = tensor.sink_attention %q, %k, %v, %sinks {scale = 0.35355339059327373, window = 4, rounded = true} : tensor<4x16x8xbf16>
// CHECK-NEXT: return o = %sink_attention

// -----
// Causal only: no window attribute.
graph @sink_causal(%q: tensor<4x16x8xbf16>, %k: tensor<2x16x8xbf16>, %v: tensor<2x16x8xbf16>, %sinks: tensor<4xf32>) {
  %reshape = tensor.reshape %q {shape = [2, 32, 8]} : tensor<2x32x8xbf16>
  %transpose = tensor.transpose %k {perm = [0, 2, 1]} : tensor<2x8x16xbf16>
  %matmul = tensor.matmul %reshape, %transpose : tensor<2x32x16xbf16>
  %cast = tensor.cast %matmul {dtype = f32} : tensor<2x32x16xf32>
  %c = tensor.full {value = 0.35355339059327373} : tensor<f32>
  %mul = tensor.mul %cast, %c : tensor<2x32x16xf32>
  %reshape_1 = tensor.reshape %mul {shape = [2, 2, 16, 16]} : tensor<2x2x16x16xf32>
  %iota = tensor.iota {axis = 0} : tensor<16x16xi32>
  %iota_1 = tensor.iota {axis = 1} : tensor<16x16xi32>
  %less_equal = tensor.less_equal %iota_1, %iota : tensor<16x16xbool>
  %c_1 = tensor.full {value = -inf} : tensor<f32>
  %where = tensor.where %less_equal, %reshape_1, %c_1 : tensor<2x2x16x16xf32>
  %reshape_2 = tensor.reshape %sinks {shape = [2, 2, 1, 1]} : tensor<2x2x1x1xf32>
  %max = tensor.reduce %where {axes = [3], kind = max, keepdims = true} : tensor<2x2x16x1xf32>
  %maximum = tensor.maximum %max, %reshape_2 : tensor<2x2x16x1xf32>
  %sub = tensor.sub %where, %maximum : tensor<2x2x16x16xf32>
  %exp = tensor.exp %sub : tensor<2x2x16x16xf32>
  %sum = tensor.reduce %exp {axes = [3], kind = sum, keepdims = true} : tensor<2x2x16x1xf32>
  %sub_1 = tensor.sub %reshape_2, %maximum : tensor<2x2x16x1xf32>
  %exp_1 = tensor.exp %sub_1 : tensor<2x2x16x1xf32>
  %add = tensor.add %sum, %exp_1 : tensor<2x2x16x1xf32>
  %div = tensor.div %exp, %add : tensor<2x2x16x16xf32>
  %cast_1 = tensor.cast %div {dtype = bf16} : tensor<2x2x16x16xbf16>
  %reshape_3 = tensor.reshape %cast_1 {shape = [2, 32, 16]} : tensor<2x32x16xbf16>
  %matmul_1 = tensor.matmul %reshape_3, %v : tensor<2x32x8xbf16>
  %reshape_4 = tensor.reshape %matmul_1 {shape = [4, 16, 8]} : tensor<4x16x8xbf16>
  return o = %reshape_4
}
// CHECK: %sink_attention = tensor.sink_attention %q, %k, %v, %sinks {scale = 0.35355339059327373, rounded = true} : tensor<4x16x8xbf16>
// CHECK-NEXT: return o = %sink_attention
