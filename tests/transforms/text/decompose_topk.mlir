// RUN: decompose

// topk expands into k selection rounds: the maximum in play, the lowest index holding it,
// that element taken out of play (an i32 operand: no NaN handling; its max is WideIntExtreme's
// high / low split, exact beyond 2**24; the index reductions, within 2**24, stay one reduction)
graph @topk(%x: tensor<4x8xi32>) {
  %v, %i = tensor.topk %x {k = 2, axis = 1} : tensor<4x2xi32>, tensor<4x2xi32>
  return v = %v, i = %i
}
// CHECK: %iota = tensor.iota {axis = 1} : tensor<4x8xi32>
// CHECK: %bitwise_or = tensor.bitwise_or %cast_2, %cast_3 : tensor<4x1xi32>
// CHECK-NEXT: %equal_1 = tensor.equal %x, %bitwise_or : tensor<4x8xbool>
// CHECK: %min = tensor.reduce %where_1 {axes = [1], kind = min, keepdims = true} : tensor<4x1xi32>
// CHECK-NEXT: %not_equal = tensor.not_equal %iota, %min : tensor<4x8xbool>
// CHECK: %where_2 = tensor.where %not_equal, %x, %c_4 : tensor<4x8xi32>
// CHECK: %logical_and = tensor.logical_and %not_equal, %equal_3 : tensor<4x8xbool>
// CHECK: %min_1 = tensor.reduce %where_4 {axes = [1], kind = min, keepdims = true} : tensor<4x1xi32>
// CHECK: %concat = tensor.concat %bitwise_or, %bitwise_or_1 {axis = 1} : tensor<4x2xi32>
// CHECK-NEXT: %concat_1 = tensor.concat %min, %min_1 {axis = 1} : tensor<4x2xi32>
// CHECK-NOT: tensor.topk

// -----
// a float operand: a NaN still in play wins the round (and is the round's value)
graph @topk_f(%x: tensor<3x5xbf16>) {
  %v, %i = tensor.topk %x {k = 1, axis = 0} : tensor<1x5xbf16>, tensor<1x5xi32>
  return v = %v, i = %i
}
// CHECK: %not_equal = tensor.not_equal %x, %x : tensor<3x5xbool>
// CHECK: tensor.reduce %not_equal {axes = [0], kind = any, keepdims = true} : tensor<1x5xbool>
// CHECK-NOT: tensor.topk

// -----
// the native lowering (transforms/lower/topk.py) takes an f32 row of 8+ elements with k <= 8:
// decompose keeps the op
graph @topk_native(%x: tensor<4x64xf32>) {
  %v, %i = tensor.topk %x {k = 3, axis = 1} : tensor<4x3xf32>, tensor<4x3xi32>
  return v = %v, i = %i
}
// CHECK: tensor.topk %x {k = 3, axis = 1} : tensor<4x3xf32>, tensor<4x3xi32>
// CHECK-NOT: tensor.reduce

// -----
// f32 with k > 8 is native too (topk_wide.py: NaN-free keys plus a code selection): kept
graph @topk_f32_k9(%x: tensor<2x64xf32>) {
  %v, %i = tensor.topk %x {k = 9, axis = 1} : tensor<2x9xf32>, tensor<2x9xi32>
  return v = %v, i = %i
}
// CHECK: tensor.topk %x {k = 9, axis = 1} : tensor<2x9xf32>, tensor<2x9xi32>
// CHECK-NOT: tensor.reduce

// -----
// u32 values are not all exact in fp32 (the top-8 instructions compare in fp32): expanded
graph @topk_u32_k9(%x: tensor<2x64xu32>) {
  %v, %i = tensor.topk %x {k = 9, axis = 1} : tensor<2x9xu32>, tensor<2x9xi32>
  return v = %v, i = %i
}
// CHECK: tensor.reduce
// CHECK-NOT: tensor.topk

// -----
// argmax over an axis the native topk takes: the index of topk(x, 1), the axis dropped
graph @argmax(%x: tensor<4x64xbf16>) {
  %a = tensor.argmax %x : tensor<4xi32>
  return y = %a
}
// CHECK: %argmax_topk, %argmax_topk_1 = tensor.topk %x {k = 1, axis = 1} : tensor<4x1xbf16>, tensor<4x1xi32>
// CHECK-NEXT: %reshape = tensor.reshape %argmax_topk_1 {shape = [4]} : tensor<4xi32>
// CHECK-NOT: tensor.argmax
