// RUN: canonicalize
// Causal attention in a decoder layer's 16-bit form: bf16 scores cast to f32, scaled and
// masked, an f32 softmax cast back to bf16 before the value product. It becomes one
// tensor.causal_attention of q, k, v (Kᵀ's transpose undone).

graph @layer_causal(%q: tensor<2x256x16xbf16>, %k: tensor<2x256x16xbf16>, %v: tensor<2x256x16xbf16>) {
  %transpose = tensor.transpose %k {perm = [0, 2, 1]} : tensor<2x16x256xbf16>
  %matmul = tensor.matmul %q, %transpose : tensor<2x256x256xbf16>
  %cast = tensor.cast %matmul {dtype = f32} : tensor<2x256x256xf32>
  %c = tensor.full {value = 0.25} : tensor<f32>
  %mul = tensor.mul %cast, %c : tensor<2x256x256xf32>
  %iota = tensor.iota {axis = 1} : tensor<1x256x256xi32>
  %iota_1 = tensor.iota {axis = 2} : tensor<1x256x256xi32>
  %sub = tensor.sub %iota_1, %iota : tensor<1x256x256xi32>
  %c_1 = tensor.full {value = 0} : tensor<i32>
  %less_equal = tensor.less_equal %sub, %c_1 : tensor<1x256x256xbool>
  %c_2 = tensor.full {value = 0.0} : tensor<f32>
  %c_3 = tensor.full {value = -10000.0} : tensor<f32>
  %where = tensor.where %less_equal, %c_2, %c_3 : tensor<1x256x256xf32>
  %add = tensor.add %mul, %where : tensor<2x256x256xf32>
  %max = tensor.reduce %add {axes = [2], kind = max, keepdims = true} : tensor<2x256x1xf32>
  %sub_1 = tensor.sub %add, %max : tensor<2x256x256xf32>
  %exp = tensor.exp %sub_1 : tensor<2x256x256xf32>
  %sum = tensor.reduce %exp {axes = [2], kind = sum, keepdims = true} : tensor<2x256x1xf32>
  %reciprocal = tensor.reciprocal %sum : tensor<2x256x1xf32>
  %mul_1 = tensor.mul %exp, %reciprocal : tensor<2x256x256xf32>
  %cast_1 = tensor.cast %mul_1 {dtype = bf16} : tensor<2x256x256xbf16>
  %matmul_1 = tensor.matmul %cast_1, %v : tensor<2x256x16xbf16>
  return y = %matmul_1
}
// CHECK: %causal_attention = tensor.causal_attention %q, %k, %v {scale = 0.25} : tensor<2x256x16xbf16>
// CHECK-NEXT: return y = %causal_attention

// -----
// A mask of -10 does not make the blocks above the diagonal vanish: left alone.
graph @weak_mask(%q: tensor<2x256x16xbf16>, %k: tensor<2x256x16xbf16>, %v: tensor<2x256x16xbf16>) {
  %transpose = tensor.transpose %k {perm = [0, 2, 1]} : tensor<2x16x256xbf16>
  %matmul = tensor.matmul %q, %transpose : tensor<2x256x256xbf16>
  %cast = tensor.cast %matmul {dtype = f32} : tensor<2x256x256xf32>
  %c = tensor.full {value = 0.25} : tensor<f32>
  %mul = tensor.mul %cast, %c : tensor<2x256x256xf32>
  %iota = tensor.iota {axis = 1} : tensor<1x256x256xi32>
  %iota_1 = tensor.iota {axis = 2} : tensor<1x256x256xi32>
  %sub = tensor.sub %iota_1, %iota : tensor<1x256x256xi32>
  %c_1 = tensor.full {value = 0} : tensor<i32>
  %less_equal = tensor.less_equal %sub, %c_1 : tensor<1x256x256xbool>
  %c_2 = tensor.full {value = 0.0} : tensor<f32>
  %c_3 = tensor.full {value = -10.0} : tensor<f32>
  %where = tensor.where %less_equal, %c_2, %c_3 : tensor<1x256x256xf32>
  %add = tensor.add %mul, %where : tensor<2x256x256xf32>
  %max = tensor.reduce %add {axes = [2], kind = max, keepdims = true} : tensor<2x256x1xf32>
  %sub_1 = tensor.sub %add, %max : tensor<2x256x256xf32>
  %exp = tensor.exp %sub_1 : tensor<2x256x256xf32>
  %sum = tensor.reduce %exp {axes = [2], kind = sum, keepdims = true} : tensor<2x256x1xf32>
  %reciprocal = tensor.reciprocal %sum : tensor<2x256x1xf32>
  %mul_1 = tensor.mul %exp, %reciprocal : tensor<2x256x256xf32>
  %cast_1 = tensor.cast %mul_1 {dtype = bf16} : tensor<2x256x256xbf16>
  %matmul_1 = tensor.matmul %cast_1, %v : tensor<2x256x16xbf16>
  return y = %matmul_1
}
// CHECK-NOT: tensor.causal_attention
// CHECK: %matmul_1 = tensor.matmul %cast_1, %v
