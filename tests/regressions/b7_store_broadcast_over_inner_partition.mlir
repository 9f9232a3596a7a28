// B7: a = x(3,3,3) + y(3,1,3) * 2; return a, y * 2 failed: "cannot store %mul: it is
// broadcast over an inner partition dim of its fusion group".
// INPUT x: rng.uniform(-1, 1, (3, 3, 3)).astype(np.float32)
// INPUT y: rng.uniform(-1, 1, (3, 1, 3)).astype(np.float32)
// REF a: x + y * np.float32(2)
// REF b: y * np.float32(2)
graph @b7(%x: tensor<3x3x3xf32>, %y: tensor<3x1x3xf32>) {
  %c = tensor.full {value = 2.0} : tensor<f32>
  %m = tensor.mul %y, %c : tensor<3x1x3xf32>
  %a = tensor.add %x, %m : tensor<3x3x3xf32>
  return a = %a, b = %m
}
