// RUN: canonicalize
// Recomposition rules: primitive chains become the ops the hardware has.

// 1 / x → reciprocal(x)
graph @recip(%x: tensor<4x8xf32>) {
  %one = tensor.full {value = 1.0} : tensor<f32>
  %d = tensor.div %one, %x : tensor<4x8xf32>
  return y = %d
}
// CHECK: %reciprocal = tensor.reciprocal %x : tensor<4x8xf32>
// CHECK-NEXT: return y = %reciprocal
// CHECK-NOT: tensor.div

// -----
// 1 / x with an int x is a float result: reciprocal(int) would also be float, so it fires
// only when the types agree; here 1 is f32 and x i32 -> f32, reciprocal(i32) -> f32 too.
graph @recip_keep_bigger(%x: tensor<8xf32>) {
  %one = tensor.full {value = 1.0} : tensor<4x8xf32>
  %d = tensor.div %one, %x : tensor<4x8xf32>
  return y = %d
}
// CHECK: tensor.full {value = 1.0} : tensor<4x8xf32>
// CHECK: tensor.div
// CHECK-NOT: tensor.reciprocal

// -----
// 1 / sqrt(x) → rsqrt(x)
graph @rsqrt(%x: tensor<16xf32>) {
  %one = tensor.full {value = 1.0} : tensor<f32>
  %s = tensor.sqrt %x : tensor<16xf32>
  %d = tensor.div %one, %s : tensor<16xf32>
  return y = %d
}
// CHECK: %rsqrt = tensor.rsqrt %x : tensor<16xf32>
// CHECK-NEXT: return y = %rsqrt

// -----
// a / sqrt(x) → a * rsqrt(x)
graph @div_sqrt(%a: tensor<4x16xf32>, %x: tensor<4x1xf32>) {
  %s = tensor.sqrt %x : tensor<4x1xf32>
  %d = tensor.div %a, %s : tensor<4x16xf32>
  return y = %d
}
// CHECK: %rsqrt = tensor.rsqrt %x : tensor<4x1xf32>
// CHECK-NEXT: %mul = tensor.mul %a, %rsqrt : tensor<4x16xf32>
// CHECK-NOT: tensor.sqrt

// -----
// 0 - x → neg(x)
graph @neg(%x: tensor<8xi32>) {
  %z = tensor.full {value = 0} : tensor<i32>
  %d = tensor.sub %z, %x : tensor<8xi32>
  return y = %d
}
// CHECK: %neg = tensor.neg %x : tensor<8xi32>
// CHECK-NOT: tensor.sub

// -----
// float: -0.0 - x → neg(x) exactly; 0.0 - x stays (0.0 - 0.0 is +0.0, neg(0.0) is -0.0)
graph @neg_float(%x: tensor<8xf32>) {
  %n = tensor.full {value = -0.0} : tensor<f32>
  %z = tensor.full {value = 0.0} : tensor<f32>
  %a = tensor.sub %n, %x : tensor<8xf32>
  %b = tensor.sub %z, %x : tensor<8xf32>
  return y = %a, z = %b
}
// CHECK: %neg = tensor.neg %x : tensor<8xf32>
// CHECK: tensor.sub %z, %x

// -----
// x * -1 → neg(x), either operand order
graph @mul_m1(%x: tensor<8xf32>) {
  %m = tensor.full {value = -1.0} : tensor<f32>
  %a = tensor.mul %m, %x : tensor<8xf32>
  return y = %a
}
// CHECK: %neg = tensor.neg %x
// CHECK-NOT: tensor.mul

// -----
// 1 / (1 + exp(-x)) → sigmoid(x)
graph @sigmoid(%x: tensor<4x8xf32>) {
  %one = tensor.full {value = 1.0} : tensor<f32>
  %n = tensor.neg %x : tensor<4x8xf32>
  %e = tensor.exp %n : tensor<4x8xf32>
  %den = tensor.add %e, %one : tensor<4x8xf32>
  %s = tensor.div %one, %den : tensor<4x8xf32>
  return y = %s
}
// CHECK: %sigmoid = tensor.sigmoid %x : tensor<4x8xf32>
// CHECK-NEXT: return y = %sigmoid

// -----
// x * sigmoid(x) → silu(x)
graph @silu(%x: tensor<4x8xbf16>) {
  %s = tensor.sigmoid %x : tensor<4x8xbf16>
  %m = tensor.mul %s, %x : tensor<4x8xbf16>
  return y = %m
}
// CHECK: %silu = tensor.silu %x : tensor<4x8xbf16>
// CHECK-NEXT: return y = %silu

// -----
// x / (1 + exp(-x)) → silu(x); exp(-x) written as exp(x * -1) is recomposed too
graph @silu_div(%x: tensor<64xf32>) {
  %one = tensor.full {value = 1.0} : tensor<f32>
  %m1 = tensor.full {value = -1.0} : tensor<f32>
  %n = tensor.mul %x, %m1 : tensor<64xf32>
  %e = tensor.exp %n : tensor<64xf32>
  %den = tensor.add %one, %e : tensor<64xf32>
  %s = tensor.div %x, %den : tensor<64xf32>
  return y = %s
}
// CHECK: %silu = tensor.silu %x : tensor<64xf32>
// CHECK-NEXT: return y = %silu

// -----
// x * sigmoid(y) with y != x stays
graph @not_silu(%x: tensor<8xf32>, %z: tensor<8xf32>) {
  %s = tensor.sigmoid %z : tensor<8xf32>
  %m = tensor.mul %x, %s : tensor<8xf32>
  return y = %m
}
// CHECK: tensor.sigmoid %z
// CHECK-NEXT: tensor.mul %x, %s
// CHECK-NOT: silu

// -----
// x * x → square(x)
graph @square(%x: tensor<8xi16>) {
  %m = tensor.mul %x, %x : tensor<8xi16>
  return y = %m
}
// CHECK: %square = tensor.square %x : tensor<8xi16>

// -----
// bool * bool is logical and (bool) but square(bool) is int8: no rewrite
graph @square_bool(%x: tensor<8xbool>) {
  %m = tensor.mul %x, %x : tensor<8xbool>
  return y = %m
}
// CHECK: tensor.mul %x, %x : tensor<8xbool>
// CHECK-NOT: square
