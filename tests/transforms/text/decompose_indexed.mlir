// RUN: decompose
// The indexed ops onto gather_rows / scatter_rows (indirect DMA) and integer compares.
// Numerics against the original ops are checked by the driver.

// one_hot(ids, depth) → cast(ids[..., None] == iota(depth))
graph @one_hot(%i: tensor<4xi32>) {
  %o = tensor.one_hot %i {depth = 6, dtype = bf16} : tensor<4x6xbf16>
  return y = %o
}
// CHECK: %reshape = tensor.reshape %i {shape = [4, 1]} : tensor<4x1xi32>
// CHECK-NEXT: %iota = tensor.iota {axis = 1} : tensor<1x6xi32>
// CHECK-NEXT: %equal = tensor.equal %reshape, %iota : tensor<4x6xbool>
// CHECK-NEXT: %cast = tensor.cast %equal {dtype = bf16} : tensor<4x6xbf16>
// CHECK-NOT: tensor.one_hot

// -----
// take_along_axis gathers single elements of x viewed as (N, 1) rows
graph @take_along_axis(%x: tensor<4x8xf32>) {
  %idx = tensor.iota {axis = 1} : tensor<4x3xi32>
  %t = tensor.take_along_axis %x, %idx {axis = 1} : tensor<4x3xf32>
  return y = %t
}
// CHECK: tensor.reshape %x {shape = [32, 1]} : tensor<32x1xf32>
// CHECK-NEXT: tensor.gather_rows
// CHECK-SAME: tensor<4x3x1xf32>
// CHECK-NOT: tensor.take_along_axis

// -----
// dynamic_slice: the trailing dim is whole at start 0, so rows of 4 elements are gathered
graph @dynamic_slice(%x: tensor<6x8x4xf32>) {
  %s0 = tensor.full {value = 2} : tensor<i32>
  %s1 = tensor.full {value = 1} : tensor<i32>
  %s2 = tensor.full {value = 0} : tensor<i32>
  %d = tensor.dynamic_slice %x, %s0, %s1, %s2 {sizes = [2, 3, 4]} : tensor<2x3x4xf32>
  return y = %d
}
// CHECK: tensor.reshape %x {shape = [48, 4]} : tensor<48x4xf32>
// CHECK-NEXT: tensor.gather_rows
// CHECK-SAME: tensor<2x3x4xf32>
// CHECK-NOT: tensor.dynamic_slice

// -----
// dynamic_update_slice (a KV-cache append at a runtime position) scatters the updated rows
graph @dynamic_update_slice(%c: tensor<2x16x8xf32>, %k: tensor<2x1x8xf32>) {
  %z = tensor.full {value = 0} : tensor<i32>
  %p = tensor.full {value = 5} : tensor<i32>
  %u = tensor.dynamic_update_slice %c, %k, %z, %p, %z : tensor<2x16x8xf32>
  return y = %u
}
// CHECK: tensor.reshape %c {shape = [32, 8]} : tensor<32x8xf32>
// CHECK: tensor.scatter_rows
// CHECK-SAME: {unique = true} : tensor<32x8xf32>
// CHECK-NOT: tensor.dynamic_update_slice

// -----
// scatter_rows with repeated ids: each id writes the rows of its last occurrence (the K x K
// compare and max fold here: ids 1, 3, 1, 0 take rows 2, 1, 2, 3)
graph @scatter_rows(%d: tensor<5x3xf32>, %r: tensor<4x3xf32>) {
  %i = tensor.constant {value = dense<4xi32, "01000000030000000100000000000000">} : tensor<4xi32>
  %s = tensor.scatter_rows %d, %i, %r : tensor<5x3xf32>
  return y = %s
}
// CHECK: %constant = tensor.constant {value = dense<4xi32, "02000000010000000200000003000000">}
// CHECK-NEXT: %gather_rows = tensor.gather_rows %r, %constant : tensor<4x3xf32>
// CHECK-NEXT: tensor.scatter_rows %d, %i, %gather_rows {unique = true} : tensor<5x3xf32>
