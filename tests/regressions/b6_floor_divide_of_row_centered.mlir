// B6: (x - mean(x, axis=1, keepdims=True)) // 3.0 at 128x1024 was "not supported". Inputs are
// multiples of 1/8 with row means that are multiples of 1/8 too (a row holds k and -k pairs
// plus a constant), so every quotient is exact in f32 and far from a floor boundary except
// at exact multiples of 3, which NumPy and the kernel both compute exactly.
// INPUT x: (np.concatenate([np.arange(512), -np.arange(512)]).astype(np.float32)[None, :] / 8 + rng.integers(-8, 8, (128, 1)).astype(np.float32) / 8).astype(np.float32)
// REF y: (x - x.astype(np.float64).mean(axis=1, keepdims=True)) // 3.0
graph @b6c(%x: tensor<128x1024xf32>) {
  %m = tensor.reduce %x {axes = [1], kind = mean, keepdims = true} : tensor<128x1xf32>
  %d = tensor.sub %x, %m : tensor<128x1024xf32>
  %c = tensor.full {value = 3.0} : tensor<f32>
  %y = tensor.floor_divide %d, %c : tensor<128x1024xf32>
  return y = %y
}
