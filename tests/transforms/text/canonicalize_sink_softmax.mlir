// RUN: canonicalize
// A softmax over scores with a sink column appended and then sliced off (gpt-oss writes its
// attention so): the same softmax without the column, the sink joining the max and the sum.

graph @sink_column(%x: tensor<2x4x8xf32>, %c: tensor<2x1x1xf32>) {
  %broadcast_to = tensor.broadcast_to %c {shape = [2, 4, 1]} : tensor<2x4x1xf32>
  %concat = tensor.concat %x, %broadcast_to {axis = 2} : tensor<2x4x9xf32>
  %max = tensor.reduce %concat {axes = [2], kind = max, keepdims = true} : tensor<2x4x1xf32>
  %sub = tensor.sub %concat, %max : tensor<2x4x9xf32>
  %exp = tensor.exp %sub : tensor<2x4x9xf32>
  %sum = tensor.reduce %exp {axes = [2], kind = sum, keepdims = true} : tensor<2x4x1xf32>
  %div = tensor.div %exp, %sum : tensor<2x4x9xf32>
  %slice = tensor.slice %div {starts = [0, 0, 0], stops = [2, 4, 8], strides = [1, 1, 1]} : tensor<2x4x8xf32>
  return y = %slice
}
// CHECK: %reduce = tensor.reduce %x {axes = [2], kind = max, keepdims = true} : tensor<2x4x1xf32>
// CHECK-NEXT: %maximum = tensor.maximum %reduce, %c : tensor<2x4x1xf32>
// CHECK-NEXT: %sub = tensor.sub %x, %maximum : tensor<2x4x8xf32>
// CHECK-NEXT: %exp = tensor.exp %sub : tensor<2x4x8xf32>
// CHECK-NEXT: %reduce_1 = tensor.reduce %exp {axes = [2], kind = sum, keepdims = true} : tensor<2x4x1xf32>
// CHECK-NEXT: %sub_1 = tensor.sub %c, %maximum : tensor<2x4x1xf32>
// CHECK-NEXT: %exp_1 = tensor.exp %sub_1 : tensor<2x4x1xf32>
// CHECK-NEXT: %add = tensor.add %reduce_1, %exp_1 : tensor<2x4x1xf32>
// CHECK-NEXT: %div = tensor.div %exp, %add : tensor<2x4x8xf32>
// CHECK-NEXT: return y = %div

// -----
// The full softmax (sink column included) is also an output: it has to exist, nothing changes.
graph @column_used(%x: tensor<2x4x8xf32>, %c: tensor<2x4x1xf32>) {
  %concat = tensor.concat %x, %c {axis = 2} : tensor<2x4x9xf32>
  %max = tensor.reduce %concat {axes = [2], kind = max, keepdims = true} : tensor<2x4x1xf32>
  %sub = tensor.sub %concat, %max : tensor<2x4x9xf32>
  %exp = tensor.exp %sub : tensor<2x4x9xf32>
  %sum = tensor.reduce %exp {axes = [2], kind = sum, keepdims = true} : tensor<2x4x1xf32>
  %div = tensor.div %exp, %sum : tensor<2x4x9xf32>
  %slice = tensor.slice %div {starts = [0, 0, 0], stops = [2, 4, 8], strides = [1, 1, 1]} : tensor<2x4x8xf32>
  return y = %slice, full = %div
}
// CHECK: %concat = tensor.concat %x, %c {axis = 2} : tensor<2x4x9xf32>
// CHECK: %slice = tensor.slice %div
