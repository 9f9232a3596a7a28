// RUN: canonicalize
// Neutral elements and involutions; each fires only when x already has the result type.

// neg(neg(x)) → x
graph @negneg(%x: tensor<8xf32>) {
  %a = tensor.neg %x : tensor<8xf32>
  %b = tensor.neg %a : tensor<8xf32>
  return y = %b
}
// CHECK: graph @negneg
// CHECK-NEXT: return y = %x

// -----
// logical_not(logical_not(x)) → x;  bitwise_not(bitwise_not(x)) → x
graph @nots(%x: tensor<8xbool>, %i: tensor<8xu8>) {
  %a = tensor.logical_not %x : tensor<8xbool>
  %b = tensor.logical_not %a : tensor<8xbool>
  %c = tensor.bitwise_not %i : tensor<8xu8>
  %d = tensor.bitwise_not %c : tensor<8xu8>
  return y = %b, z = %d
}
// CHECK: return y = %x, z = %i

// -----
// x + (-0.0) → x, (-0.0) + x → x, x - 0.0 → x: exact for every float x, signed zeros included
graph @add_zero(%x: tensor<4x8xf32>) {
  %n = tensor.full {value = -0.0} : tensor<f32>
  %z = tensor.full {value = 0.0} : tensor<f32>
  %a = tensor.add %x, %n : tensor<4x8xf32>
  %b = tensor.add %n, %a : tensor<4x8xf32>
  %c = tensor.sub %b, %z : tensor<4x8xf32>
  return y = %c
}
// CHECK: graph @add_zero
// CHECK-NEXT: return y = %x

// -----
// x + 0.0 and x - (-0.0) stay for float x (-0.0 + 0.0 is +0.0); for integers any zero folds
graph @add_plus_zero(%x: tensor<8xf32>, %i: tensor<8xi32>) {
  %z = tensor.full {value = 0.0} : tensor<f32>
  %n = tensor.full {value = -0.0} : tensor<f32>
  %k = tensor.full {value = 0} : tensor<i32>
  %a = tensor.add %x, %z : tensor<8xf32>
  %b = tensor.sub %a, %n : tensor<8xf32>
  %c = tensor.add %k, %i : tensor<8xi32>
  %d = tensor.sub %c, %k : tensor<8xi32>
  return y = %b, z = %d
}
// CHECK: %a = tensor.add %x, %z
// CHECK: %b = tensor.sub %a, %n
// CHECK: return y = %b, z = %i

// -----
// x * 1 → x, 1 * x → x, x / 1 → x (a splat 1 of x's shape works too)
graph @mul_one(%x: tensor<4x8xi32>) {
  %one = tensor.full {value = 1} : tensor<4x8xi32>
  %a = tensor.mul %one, %x : tensor<4x8xi32>
  %b = tensor.mul %a, %one : tensor<4x8xi32>
  return y = %b
}
// CHECK: graph @mul_one
// CHECK-NEXT: return y = %x

// -----
graph @div_one(%x: tensor<4xf16>) {
  %one = tensor.full {value = 1.0} : tensor<f16>
  %a = tensor.div %x, %one : tensor<4xf16>
  return y = %a
}
// CHECK: return y = %x

// -----
// int32 * 1.0 (f32) is f32: folding it to x would change the dtype
graph @mul_one_promotes(%x: tensor<8xi32>) {
  %one = tensor.full {value = 1.0} : tensor<f32>
  %a = tensor.mul %x, %one : tensor<8xf32>
  return y = %a
}
// CHECK: tensor.mul %x, %one : tensor<8xf32>

// -----
// x + 0 where 0 is bigger than x changes the shape: no rewrite
graph @add_zero_broadcasts(%x: tensor<8xf32>) {
  %z = tensor.full {value = 0.0} : tensor<4x8xf32>
  %a = tensor.add %x, %z : tensor<4x8xf32>
  return y = %a
}
// CHECK: tensor.add %x, %z : tensor<4x8xf32>

// -----
// x + 2 is not an identity
graph @add_two(%x: tensor<8xf32>) {
  %c = tensor.full {value = 2.0} : tensor<f32>
  %a = tensor.add %x, %c : tensor<8xf32>
  return y = %a
}
// CHECK: tensor.add %x, %c : tensor<8xf32>

// -----
// a reduction over no axes is elementwise: a cast (sum of int8 is int32), or x != 0 for any/all
graph @reduce_no_axes(%x: tensor<4xi8>, %f: tensor<4xf32>) {
  %s = tensor.reduce %x {axes = [], kind = sum} : tensor<4xi32>
  %m = tensor.reduce %f {axes = [], kind = max, keepdims = true} : tensor<4xf32>
  %a = tensor.reduce %f {axes = [], kind = any} : tensor<4xbool>
  %v = tensor.reduce %f {axes = [], kind = var} : tensor<4xf32>
  return s = %s, m = %m, a = %a, v = %v
}
// CHECK: %cast = tensor.cast %x {dtype = i32} : tensor<4xi32>
// CHECK-NEXT: %c = tensor.full {value = 0.0} : tensor<f32>
// CHECK-NEXT: %not_equal = tensor.not_equal %f, %c : tensor<4xbool>
// CHECK-NEXT: %v = tensor.reduce %f {axes = [], kind = var} : tensor<4xf32>
// CHECK-NEXT: return s = %cast, m = %f, a = %not_equal, v = %v
