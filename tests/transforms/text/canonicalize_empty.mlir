// RUN: canonicalize
// Empty tensors (a zero-size dim) fold away; iota of extent 1 is a zero splat.

// an op with an empty result is a full(0) of that type; the empty input is left unused
graph @empty_result(%x: tensor<0x4xf32>) {
  %e = tensor.exp %x : tensor<0x4xf32>
  return y = %e
}
// CHECK: %c = tensor.full {value = 0.0} : tensor<0x4xf32>
// CHECK-NOT: tensor.exp
// CHECK: return y = %c

// -----
// a sum over an empty axis is 0
graph @empty_sum(%x: tensor<0x3xf32>) {
  %s = tensor.reduce %x {axes = [0], kind = sum} : tensor<3xf32>
  return s = %s
}
// CHECK: tensor.full {value = 0.0} : tensor<3xf32>
// CHECK-NOT: tensor.reduce

// -----
// a prod over an empty axis is 1
graph @empty_prod(%x: tensor<0x3xi32>) {
  %p = tensor.reduce %x {axes = [0], kind = prod} : tensor<3xi32>
  return p = %p
}
// CHECK: tensor.full {value = 1} : tensor<3xi32>
// CHECK-NOT: tensor.reduce

// -----
// a mean over an empty axis is NaN (as NumPy's)
graph @empty_mean(%x: tensor<3x0xf32>) {
  %m = tensor.reduce %x {axes = [1], kind = mean} : tensor<3xf32>
  return m = %m
}
// CHECK: tensor.full {value = nan} : tensor<3xf32>
// CHECK-NOT: tensor.reduce

// -----
// a K = 0 matmul is zeros
graph @empty_k(%a: tensor<2x0xf32>, %b: tensor<0x5xf32>) {
  %c = tensor.matmul %a, %b : tensor<2x5xf32>
  return c = %c
}
// CHECK: tensor.full {value = 0.0} : tensor<2x5xf32>
// CHECK-NOT: tensor.matmul

// -----
// empty concat operands are dropped
graph @empty_concat(%x: tensor<2x3xf32>, %e: tensor<0x3xf32>) {
  %c = tensor.concat %x, %e {axis = 0} : tensor<2x3xf32>
  %y = tensor.exp %c : tensor<2x3xf32>
  return y = %y
}
// CHECK: %y = tensor.exp %x : tensor<2x3xf32>
// CHECK-NOT: tensor.concat

// -----
// an iota with extent 1 along its axis holds index 0 everywhere (int: x + 0 is x)
graph @unit_iota(%x: tensor<8x16xi32>) {
  %i = tensor.iota {axis = 0} : tensor<1xi32>
  %y = tensor.add %x, %i : tensor<8x16xi32>
  return y = %y
}
// CHECK-NOT: tensor.iota
// CHECK: return y = %x
