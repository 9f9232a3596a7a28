// B4: exp(x(1,) + full(2.0, shape=(4,))) crashed: "lowering bug: no tile for %c" (the fold
// plan made the constant the activation's data and x its bias).
// INPUT x: np.array([0.5], np.float32)
// REF y: np.exp(x + np.full(4, 2.0, np.float32))
graph @b4(%x: tensor<1xf32>) {
  %c = tensor.full {value = 2.0} : tensor<4xf32>
  %a = tensor.add %x, %c : tensor<4xf32>
  %y = tensor.exp %a : tensor<4xf32>
  return y = %y
}
