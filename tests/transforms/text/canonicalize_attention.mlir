// RUN: canonicalize
// Attention over more than 4096 keys: the scaled scores, softmax and value product become one
// tensor.flash_attention (lowered with an online softmax over key blocks).

graph @long_attention(%q: tensor<2x16xf32>, %k: tensor<4100x16xf32>, %v: tensor<4100x8xf32>) {
  %transpose = tensor.transpose %k {perm = [1, 0]} : tensor<16x4100xf32>
  %matmul = tensor.matmul %q, %transpose : tensor<2x4100xf32>
  %c = tensor.full {value = 0.25} : tensor<f32>
  %mul = tensor.mul %matmul, %c : tensor<2x4100xf32>
  %max = tensor.reduce %mul {axes = [1], kind = max, keepdims = true} : tensor<2x1xf32>
  %sub = tensor.sub %mul, %max : tensor<2x4100xf32>
  %exp = tensor.exp %sub : tensor<2x4100xf32>
  %sum = tensor.reduce %exp {axes = [1], kind = sum, keepdims = true} : tensor<2x1xf32>
  %reciprocal = tensor.reciprocal %sum : tensor<2x1xf32>
  %mul_1 = tensor.mul %exp, %reciprocal : tensor<2x4100xf32>
  %matmul_1 = tensor.matmul %mul_1, %v : tensor<2x8xf32>
  return o = %matmul_1
}
// CHECK: %flash_attention = tensor.flash_attention %q, %k, %v {scale = 0.25} : tensor<2x8xf32>
// CHECK-NEXT: return o = %flash_attention
