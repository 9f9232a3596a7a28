// Expected errors, checked with:
//   nkigen-lite opt examples/errors.mlir --split-input-file --verify-diagnostics
graph @unknown_op(%x: tensor<4xf32>) {
  // expected-error@+1 {{unknown op 'tensor.nope'}}
  %y = tensor.nope %x : tensor<4xf32>
  return y = %y
}

// -----

graph @shapes(%a: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error@+1 {{shapes (4,) and (8,) do not broadcast}}
  %y = tensor.add %a, %b : tensor<4xf32>
  return y = %y
}
