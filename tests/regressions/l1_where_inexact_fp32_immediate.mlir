// L1 (long fuzz run, 2026-11-27): where(x > 0, x, 0.1) in f32. The emitted source writes the
// immediate as the shortest text of its fp32 value ("0.1"), which the simulator rejected as
// "not a float32 number" although the engines read every immediate as fp32.
// INPUT x: rng.standard_normal((4, 8)).astype(np.float32)
// REF y: np.where(x > 0, x, np.float32(0.1))
graph @l1(%x: tensor<4x8xf32>) {
  %c = tensor.full {value = 0.0} : tensor<f32>
  %greater = tensor.greater %x, %c : tensor<4x8xbool>
  %c_1 = tensor.full {value = 0.1} : tensor<f32>
  %where = tensor.where %greater, %x, %c_1 : tensor<4x8xf32>
  return y = %where
}
