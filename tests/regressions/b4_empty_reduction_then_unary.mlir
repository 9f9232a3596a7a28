// B4 via empty-tensor folding: abs(sum(x[1:1], axis=0, keepdims=True)) crashed ("no tile for
// %c"): the empty sum became a constant after canonicalize had run.
// INPUT x: rng.uniform(-1, 1, (3, 5)).astype(np.float32)
// REF y: np.abs(x[1:1].sum(axis=0, keepdims=True))
graph @b4_empty(%x: tensor<3x5xf32>) {
  %s = tensor.slice %x {starts = [1, 0], stops = [1, 5], strides = [1, 1]} : tensor<0x5xf32>
  %r = tensor.reduce %s {axes = [0], kind = sum, keepdims = true} : tensor<1x5xf32>
  %y = tensor.abs %r : tensor<1x5xf32>
  return y = %y
}
