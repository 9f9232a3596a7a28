// RUN: canonicalize
// A reshape that regroups a row gather's index dims moves onto the ids (canonical/gather_shapes.py).
// (uint32 ids: the driver feeds unsigned ints in [0, 10), all valid rows of the 10-row tables)

// reshape(gather_rows(t, ids), lead + row) → gather_rows(t, reshape(ids, lead))
graph @lookup(%t: tensor<10x4xf32>, %ids: tensor<6xu32>) {
  %g = tensor.gather_rows %t, %ids : tensor<6x4xf32>
  %r = tensor.reshape %g {shape = [2, 3, 4]} : tensor<2x3x4xf32>
  return y = %r
}
// CHECK: %reshape = tensor.reshape %ids {shape = [2, 3]} : tensor<2x3xu32>
// CHECK-NEXT: %gather_rows = tensor.gather_rows %t, %reshape : tensor<2x3x4xf32>
// CHECK-NEXT: return y = %gather_rows

// -----
// a reshape that changes the row shape stays after the gather
graph @rows_change(%t: tensor<10x4xf32>, %ids: tensor<6xu32>) {
  %g = tensor.gather_rows %t, %ids : tensor<6x4xf32>
  %r = tensor.reshape %g {shape = [12, 2]} : tensor<12x2xf32>
  return y = %r
}
// CHECK: %g = tensor.gather_rows %t, %ids : tensor<6x4xf32>
// CHECK-NEXT: %r = tensor.reshape %g {shape = [12, 2]} : tensor<12x2xf32>

// -----
// so does one of a gather with another use (the gathered rows are written anyway)
graph @shared(%t: tensor<10x4xf32>, %ids: tensor<6xu32>) {
  %g = tensor.gather_rows %t, %ids : tensor<6x4xf32>
  %r = tensor.reshape %g {shape = [2, 3, 4]} : tensor<2x3x4xf32>
  return y = %r, z = %g
}
// CHECK: %g = tensor.gather_rows %t, %ids : tensor<6x4xf32>
// CHECK-NEXT: %r = tensor.reshape %g {shape = [2, 3, 4]} : tensor<2x3x4xf32>
