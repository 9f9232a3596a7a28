// B8: nk.simulate dropped zero-size outputs that nk.run and Kernel.run return.
// INPUT x: rng.uniform(-1, 1, (3, 5)).astype(np.float32)
// REF e: x[1:1]
// REF z: x + np.float32(1)
graph @b8(%x: tensor<3x5xf32>) {
  %e = tensor.slice %x {starts = [1, 0], stops = [1, 5], strides = [1, 1]} : tensor<0x5xf32>
  %c = tensor.full {value = 1.0} : tensor<f32>
  %z = tensor.add %x, %c : tensor<3x5xf32>
  return e = %e, z = %z
}
