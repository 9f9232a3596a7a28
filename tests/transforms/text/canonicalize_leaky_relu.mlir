// RUN: canonicalize
// Leaky ReLU written as a select becomes a maximum (0 < a < 1) or a minimum (a > 1).

// where(x > 0, x, 0.01 x) -> maximum(x, 0.01 x)
graph @leaky(%x: tensor<4x8xf32>) {
  %zero = tensor.full {value = 0.0} : tensor<f32>
  %gt = tensor.greater %x, %zero : tensor<4x8xbool>
  %a = tensor.full {value = 0.01} : tensor<f32>
  %mul = tensor.mul %a, %x : tensor<4x8xf32>
  %where = tensor.where %gt, %x, %mul : tensor<4x8xf32>
  return y = %where
}
// CHECK: %mul = tensor.mul %a, %x : tensor<4x8xf32>
// CHECK-NEXT: %maximum = tensor.maximum %x, %mul : tensor<4x8xf32>
// CHECK-NEXT: return y = %maximum
// CHECK-NOT: tensor.where

// -----

// where(x <= 0, x * 3, x) -> minimum(x, x * 3)
graph @steep(%x: tensor<4x8xf32>) {
  %zero = tensor.full {value = 0.0} : tensor<f32>
  %le = tensor.less_equal %x, %zero : tensor<4x8xbool>
  %a = tensor.full {value = 3.0} : tensor<f32>
  %mul = tensor.mul %x, %a : tensor<4x8xf32>
  %where = tensor.where %le, %mul, %x : tensor<4x8xf32>
  return y = %where
}
// CHECK: %minimum = tensor.minimum %x, %mul : tensor<4x8xf32>
// CHECK-NOT: tensor.where

// -----

// a = 0 is kept: 0 * inf is NaN where the select keeps inf
graph @zero_slope(%x: tensor<4x8xf32>) {
  %zero = tensor.full {value = 0.0} : tensor<f32>
  %gt = tensor.greater %x, %zero : tensor<4x8xbool>
  %mul = tensor.mul %zero, %x : tensor<4x8xf32>
  %where = tensor.where %gt, %x, %mul : tensor<4x8xf32>
  return y = %where
}
// CHECK: tensor.where
