// RUN: canonicalize
// Shape ops: no-ops vanish, chains compose, elementwise ops absorb explicit broadcasts.

// transpose(x, identity), reshape to the same shape, broadcast_to the same shape, a slice of
// everything and a cast to the same dtype are all x
graph @noops(%x: tensor<4x8xf32>) {
  %t = tensor.transpose %x {perm = [0, 1]} : tensor<4x8xf32>
  %r = tensor.reshape %t {shape = [4, 8]} : tensor<4x8xf32>
  %b = tensor.broadcast_to %r {shape = [4, 8]} : tensor<4x8xf32>
  %s = tensor.slice %b {starts = [0, 0], stops = [4, 8], strides = [1, 1]} : tensor<4x8xf32>
  %c = tensor.cast %s {dtype = f32} : tensor<4x8xf32>
  return y = %c
}
// CHECK: graph @noops
// CHECK-NEXT: return y = %x

// -----
// a strided slice is not a no-op
graph @strided(%x: tensor<8xf32>) {
  %s = tensor.slice %x {starts = [0], stops = [8], strides = [2]} : tensor<4xf32>
  return y = %s
}
// CHECK: tensor.slice %x

// -----
// transpose(transpose(x, p), q) → transpose(x, p∘q)
graph @tt(%x: tensor<2x3x4xf32>) {
  %a = tensor.transpose %x {perm = [1, 2, 0]} : tensor<3x4x2xf32>
  %b = tensor.transpose %a {perm = [1, 0, 2]} : tensor<4x3x2xf32>
  return y = %b
}
// CHECK: %transpose = tensor.transpose %x {perm = [2, 1, 0]} : tensor<4x3x2xf32>
// CHECK-NEXT: return y = %transpose

// -----
// ... and to nothing when the composition is the identity
graph @tt_id(%x: tensor<2x3xf32>) {
  %a = tensor.transpose %x {perm = [1, 0]} : tensor<3x2xf32>
  %b = tensor.transpose %a {perm = [1, 0]} : tensor<2x3xf32>
  return y = %b
}
// CHECK: return y = %x

// -----
// reshape(reshape(x)) → reshape(x)
graph @rr(%x: tensor<4x6xf32>) {
  %a = tensor.reshape %x {shape = [24]} : tensor<24xf32>
  %b = tensor.reshape %a {shape = [2, 12]} : tensor<2x12xf32>
  return y = %b
}
// CHECK: %reshape = tensor.reshape %x {shape = [2, 12]} : tensor<2x12xf32>
// CHECK-NEXT: return y = %reshape

// -----
// broadcast_to(broadcast_to(x)) → broadcast_to(x)
graph @bb(%x: tensor<8xf32>) {
  %a = tensor.broadcast_to %x {shape = [3, 8]} : tensor<3x8xf32>
  %b = tensor.broadcast_to %a {shape = [2, 3, 8]} : tensor<2x3x8xf32>
  return y = %b
}
// CHECK: %broadcast_to = tensor.broadcast_to %x {shape = [2, 3, 8]} : tensor<2x3x8xf32>

// -----
// f(x, broadcast_to(w)) → f(x, w): elementwise ops broadcast by themselves
graph @absorb(%x: tensor<4x8xf32>, %w: tensor<8xf32>) {
  %b = tensor.broadcast_to %w {shape = [4, 8]} : tensor<4x8xf32>
  %a = tensor.mul %x, %b : tensor<4x8xf32>
  return y = %a
}
// CHECK: %mul = tensor.mul %x, %w : tensor<4x8xf32>
// CHECK-NOT: broadcast_to

// -----
// ... but not when the broadcast also sets the result shape
graph @absorb_no(%x: tensor<8xf32>, %w: tensor<8xf32>) {
  %b = tensor.broadcast_to %w {shape = [4, 8]} : tensor<4x8xf32>
  %a = tensor.add %x, %b : tensor<4x8xf32>
  return y = %a
}
// CHECK: tensor.broadcast_to %w
// CHECK: tensor.add %x, %b

// -----
// a broadcast scalar constant is folded into its consumer as a rank-0 constant
graph @scalar_bcast(%x: tensor<4x8xf32>, %c: tensor<4x8xbool>) {
  %two = tensor.full {value = 2.0} : tensor<f32>
  %b = tensor.broadcast_to %two {shape = [4, 8]} : tensor<4x8xf32>
  %a = tensor.sub %b, %x : tensor<4x8xf32>
  %z = tensor.full {value = 0.0} : tensor<4x8xf32>
  %w = tensor.where %c, %a, %z : tensor<4x8xf32>
  return y = %w
}
// CHECK: %c_1 = tensor.full {value = 2.0} : tensor<f32>
// CHECK-NEXT: %sub = tensor.sub %c_1, %x : tensor<4x8xf32>
// CHECK-NEXT: %c_2 = tensor.full {value = 0.0} : tensor<f32>
// CHECK-NEXT: %where = tensor.where %c, %sub, %c_2 : tensor<4x8xf32>
// CHECK-NOT: broadcast_to
