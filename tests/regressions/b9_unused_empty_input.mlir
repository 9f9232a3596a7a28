// B9: an unused (or only-returned, or only-reduced) empty input was refused at compile time
// ("NKI tensors need positive dimensions").
// INPUT x: rng.uniform(-1, 1, (3, 5)).astype(np.float32)
// INPUT e: np.zeros((0, 5), np.float32)
// REF y: x + np.float32(1)
// REF f: e
// REF s: x + e.sum(axis=0)
graph @b9b(%x: tensor<3x5xf32>, %e: tensor<0x5xf32>) {
  %c = tensor.full {value = 1.0} : tensor<f32>
  %y = tensor.add %x, %c : tensor<3x5xf32>
  %r = tensor.reduce %e {axes = [0], kind = sum} : tensor<5xf32>
  %s = tensor.add %x, %r : tensor<3x5xf32>
  return y = %y, f = %e, s = %s
}
