// B3: an iota of extent 1 broadcast onto a partition dim was lowered as a real iota: the
// kernel added the partition index (0, 8, 16, ...) instead of 0.
// INPUT x: rng.uniform(-1, 1, (8, 16)).astype(np.float32)
// REF y: (x + np.float32(0)).sum(axis=0)
graph @b3(%x: tensor<8x16xf32>) {
  %i = tensor.iota {axis = 0} : tensor<1xf32>
  %a = tensor.add %x, %i : tensor<8x16xf32>
  %y = tensor.reduce %a {axes = [0], kind = sum} : tensor<16xf32>
  return y = %y
}
