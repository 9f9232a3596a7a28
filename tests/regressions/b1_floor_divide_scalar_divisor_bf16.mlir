// B1 (bf16): random bf16 inputs divided by a weak 0.1; 4.5% of the quotients were off by one.
// INPUT x: (rng.uniform(-8, 8, (16, 64))).astype(ml_dtypes.bfloat16)
// REF q: (x.astype(np.float32) // np.float32(ml_dtypes.bfloat16(0.1))).astype(ml_dtypes.bfloat16)
graph @b1_bf16(%x: tensor<16x64xbf16>) {
  %c = tensor.full {value = 0.1} : tensor<bf16>
  %q = tensor.floor_divide %x, %c : tensor<16x64xbf16>
  return q = %q
}
