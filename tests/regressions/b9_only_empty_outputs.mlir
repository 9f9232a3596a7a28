// B9: a graph whose outputs are all empty was refused at compile time ("there is no kernel to
// build") while nk.run accepts it.
// INPUT x: rng.uniform(-1, 1, (3, 5)).astype(np.float32)
// REF e: np.exp(x[2:2])
graph @b9a(%x: tensor<3x5xf32>) {
  %s = tensor.slice %x {starts = [2, 0], stops = [2, 5], strides = [1, 1]} : tensor<0x5xf32>
  %e = tensor.exp %s : tensor<0x5xf32>
  return e = %e
}
