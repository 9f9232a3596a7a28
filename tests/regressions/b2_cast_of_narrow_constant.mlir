// B2: x + cast(full(0.1, bf16), f32). NumPy adds bf16(0.1) = 0.10009765625; constant folding
// of the cast dropped the rounding to bf16 and the kernel added f32(0.1).
// INPUT x: np.zeros(4, np.float32)
// REF y: x + np.float32(ml_dtypes.bfloat16(0.1))
graph @b2(%x: tensor<4xf32>) {
  %c = tensor.full {value = 0.1} : tensor<bf16>
  %f = tensor.cast %c {dtype = f32} : tensor<f32>
  %y = tensor.add %x, %f : tensor<4xf32>
  return y = %y
}
