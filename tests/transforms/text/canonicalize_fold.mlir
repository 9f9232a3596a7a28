// RUN: canonicalize
// Constant folding and CSE.

// constant-only subgraphs fold; splat results become tensor.full
graph @fold_splat(%x: tensor<4xf32>) {
  %a = tensor.full {value = 2.0} : tensor<f32>
  %b = tensor.full {value = 3.0} : tensor<4xf32>
  %c = tensor.mul %a, %b : tensor<4xf32>
  %e = tensor.exp %c : tensor<4xf32>
  %y = tensor.add %x, %e : tensor<4xf32>
  return y = %y
}
// CHECK: %c = tensor.full {value = 403.42877197265625} : tensor<f32>
// CHECK-NEXT: %add = tensor.add %x, %c : tensor<4xf32>

// -----
// a uniform dense constant is a full
graph @const_splat(%x: tensor<3xi32>) {
  %k = tensor.constant {value = dense<3xi32, "070000000700000007000000">} : tensor<3xi32>
  %y = tensor.add %x, %k : tensor<3xi32>
  return y = %y
}
// CHECK: tensor.full {value = 7} : tensor<i32>
// CHECK-NOT: tensor.constant

// -----
// shape ops of a splat are a splat of the new shape
graph @shape_of_splat(%x: tensor<2x3xf32>) {
  %a = tensor.full {value = 1.5} : tensor<3x2xf32>
  %t = tensor.transpose %a {perm = [1, 0]} : tensor<2x3xf32>
  %r = tensor.reshape %t {shape = [6]} : tensor<6xf32>
  %s = tensor.slice %r {starts = [0], stops = [6], strides = [2]} : tensor<3xf32>
  %y = tensor.add %x, %s : tensor<2x3xf32>
  return y = %y
}
// CHECK: tensor.full {value = 1.5} : tensor<f32>
// CHECK-NOT: transpose
// CHECK-NOT: slice

// -----
// non-uniform results fold into a dense constant while small
graph @fold_dense(%x: tensor<4xf32>) {
  %i = tensor.iota {axis = 0} : tensor<4xf32>
  %two = tensor.full {value = 2.0} : tensor<f32>
  %m = tensor.mul %i, %two : tensor<4xf32>
  %y = tensor.add %x, %m : tensor<4xf32>
  return y = %y
}
// CHECK: tensor.constant {value = dense<4xf32, "0000000000000040000080400000c040">} : tensor<4xf32>
// CHECK-NOT: tensor.iota

// -----
// reductions and matmuls of constants fold too
graph @fold_reduce(%x: tensor<2xf32>) {
  %a = tensor.full {value = 0.5} : tensor<2x4xf32>
  %s = tensor.reduce %a {axes = [1], kind = sum} : tensor<2xf32>
  %y = tensor.mul %x, %s : tensor<2xf32>
  return y = %y
}
// CHECK: tensor.full {value = 2.0} : tensor<f32>
// CHECK-NOT: tensor.reduce

// -----
// but iota(4096) * 2 would turn a cheap iota into 16 KiB of constant data: it stays
graph @no_big_fold(%x: tensor<4096xi32>) {
  %i = tensor.iota {axis = 0} : tensor<4096xi32>
  %two = tensor.full {value = 2} : tensor<i32>
  %m = tensor.mul %i, %two : tensor<4096xi32>
  %y = tensor.add %x, %m : tensor<4096xi32>
  return y = %y
}
// CHECK: tensor.iota {axis = 0} : tensor<4096xi32>
// CHECK-NEXT: tensor.full {value = 2} : tensor<i32>
// CHECK-NEXT: tensor.mul
// CHECK-NOT: tensor.constant

// -----
// folding follows the dtype: 300 + 300 in int16 wraps nowhere, in int8 cast it wraps
graph @fold_int(%x: tensor<2xi8>) {
  %a = tensor.full {value = 100} : tensor<i16>
  %b = tensor.mul %a, %a : tensor<i16>
  %c = tensor.cast %b {dtype = i8} : tensor<i8>
  %y = tensor.add %x, %c : tensor<2xi8>
  return y = %y
}
// CHECK: tensor.full {value = 16} : tensor<i8>

// -----
// CSE merges identical pure ops, commutative operands in either order
graph @cse(%x: tensor<8xf32>, %w: tensor<8xf32>) {
  %a = tensor.exp %x : tensor<8xf32>
  %b = tensor.exp %x : tensor<8xf32>
  %c = tensor.mul %a, %w : tensor<8xf32>
  %d = tensor.mul %w, %b : tensor<8xf32>
  %e = tensor.sub %c, %d : tensor<8xf32>
  return y = %e
}
// CHECK: %a = tensor.exp %x
// CHECK-NEXT: %c = tensor.mul %a, %w
// CHECK-NEXT: %e = tensor.sub %c, %c
// CHECK-NOT: tensor.exp

// -----
// non-commutative operands in another order, or other attributes, are different ops
graph @cse_no(%x: tensor<8xf32>, %w: tensor<8xf32>) {
  %a = tensor.sub %x, %w : tensor<8xf32>
  %b = tensor.sub %w, %x : tensor<8xf32>
  %c = tensor.add %a, %b : tensor<8xf32>
  return y = %c
}
// CHECK: %a = tensor.sub %x, %w
// CHECK-NEXT: %b = tensor.sub %w, %x

// -----
// full(0.0) and full(-0.0) differ (1/x tells them apart); two full(nan) are the same
graph @cse_floats(%x: tensor<4xf32>) {
  %p = tensor.full {value = 0.0} : tensor<4xf32>
  %n = tensor.full {value = -0.0} : tensor<4xf32>
  %a = tensor.full {value = nan} : tensor<4xf32>
  %b = tensor.full {value = nan} : tensor<4xf32>
  %s = tensor.maximum %x, %a : tensor<4xf32>
  %t = tensor.maximum %x, %b : tensor<4xf32>
  %u = tensor.concat %p, %n, %s, %t {axis = 0} : tensor<16xf32>
  return y = %u
}
// CHECK: value = 0.0
// CHECK: value = -0.0
// CHECK: value = nan
// CHECK-NOT: value = nan
