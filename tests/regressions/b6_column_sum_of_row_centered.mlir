// B6: "reductions over free-dim chunks are not supported" for sum(x - max(x, axis=1), axis=0)
// at 256x256.
// INPUT x: rng.uniform(-1, 1, (256, 256)).astype(np.float32)
// REF y: (x - x.max(axis=1, keepdims=True)).sum(axis=0)
graph @b6a(%x: tensor<256x256xf32>) {
  %m = tensor.reduce %x {axes = [1], kind = max, keepdims = true} : tensor<256x1xf32>
  %d = tensor.sub %x, %m : tensor<256x256xf32>
  %y = tensor.reduce %d {axes = [0], kind = sum} : tensor<256xf32>
  return y = %y
}
