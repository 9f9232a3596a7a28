// RUN: canonicalize
// One decode step's attention as a decoder writes it (bf16 scores of q against the cache,
// scaled in f32, keys after the runtime position masked with -inf, softmax, bf16 probabilities,
// the value product): one tensor.decode_attention of q, the caches and pos.

graph @decode(%q: tensor<2x2x16xbf16>, %k: tensor<2x128x16xbf16>, %v: tensor<2x128x16xbf16>, %pos: tensor<i32>) {
  %transpose = tensor.transpose %k {perm = [0, 2, 1]} : tensor<2x16x128xbf16>
  %matmul = tensor.matmul %q, %transpose : tensor<2x2x128xbf16>
  %cast = tensor.cast %matmul {dtype = f32} : tensor<2x2x128xf32>
  %c = tensor.full {value = 0.25} : tensor<f32>
  %mul = tensor.mul %cast, %c : tensor<2x2x128xf32>
  %iota = tensor.iota {axis = 2} : tensor<2x2x128xi32>
  %less_equal = tensor.less_equal %iota, %pos : tensor<2x2x128xbool>
  %c_1 = tensor.full {value = -inf} : tensor<f32>
  %where = tensor.where %less_equal, %mul, %c_1 : tensor<2x2x128xf32>
  %max = tensor.reduce %where {axes = [2], kind = max, keepdims = true} : tensor<2x2x1xf32>
  %sub = tensor.sub %where, %max : tensor<2x2x128xf32>
  %exp = tensor.exp %sub : tensor<2x2x128xf32>
  %sum = tensor.reduce %exp {axes = [2], kind = sum, keepdims = true} : tensor<2x2x1xf32>
  %div = tensor.div %exp, %sum : tensor<2x2x128xf32>
  %cast_1 = tensor.cast %div {dtype = bf16} : tensor<2x2x128xbf16>
  %matmul_1 = tensor.matmul %cast_1, %v : tensor<2x2x16xbf16>
  return y = %matmul_1
}
// CHECK: %decode_attention = tensor.decode_attention %q, %k, %v, %pos {scale = 0.25} : tensor<2x2x16xbf16>
// CHECK-NEXT: return y = %decode_attention

// -----

// 200 keys (not a multiple of 128): the kernel does not take it, the program stays as written.

graph @decode_200(%q: tensor<2x2x16xbf16>, %k: tensor<2x200x16xbf16>, %v: tensor<2x200x16xbf16>, %pos: tensor<i32>) {
  %transpose = tensor.transpose %k {perm = [0, 2, 1]} : tensor<2x16x200xbf16>
  %matmul = tensor.matmul %q, %transpose : tensor<2x2x200xbf16>
  %cast = tensor.cast %matmul {dtype = f32} : tensor<2x2x200xf32>
  %c = tensor.full {value = 0.25} : tensor<f32>
  %mul = tensor.mul %cast, %c : tensor<2x2x200xf32>
  %iota = tensor.iota {axis = 2} : tensor<2x2x200xi32>
  %less_equal = tensor.less_equal %iota, %pos : tensor<2x2x200xbool>
  %c_1 = tensor.full {value = -inf} : tensor<f32>
  %where = tensor.where %less_equal, %mul, %c_1 : tensor<2x2x200xf32>
  %max = tensor.reduce %where {axes = [2], kind = max, keepdims = true} : tensor<2x2x1xf32>
  %sub = tensor.sub %where, %max : tensor<2x2x200xf32>
  %exp = tensor.exp %sub : tensor<2x2x200xf32>
  %sum = tensor.reduce %exp {axes = [2], kind = sum, keepdims = true} : tensor<2x2x1xf32>
  %div = tensor.div %exp, %sum : tensor<2x2x200xf32>
  %cast_1 = tensor.cast %div {dtype = bf16} : tensor<2x2x200xbf16>
  %matmul_1 = tensor.matmul %cast_1, %v : tensor<2x2x16xbf16>
  return y = %matmul_1
}
// CHECK-NOT: tensor.decode_attention
// CHECK: tensor.exp
