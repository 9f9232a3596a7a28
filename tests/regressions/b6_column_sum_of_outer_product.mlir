// B6: sum(x(255, 1) * y(129,), axis=0) was "not supported".
// INPUT x: rng.uniform(-1, 1, (255, 1)).astype(np.float32)
// INPUT y: rng.uniform(-1, 1, (129,)).astype(np.float32)
// REF z: (x * y).sum(axis=0)
graph @b6b(%x: tensor<255x1xf32>, %y: tensor<129xf32>) {
  %p = tensor.mul %x, %y : tensor<255x129xf32>
  %z = tensor.reduce %p {axes = [0], kind = sum} : tensor<129xf32>
  return z = %z
}
