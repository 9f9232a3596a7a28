// Row softmax in the tensor dialect (docs/text_format.md):
//   nkigen-lite opt examples/softmax.mlir -p canonicalize,decompose --print-ir-after-all
graph @softmax(%x: tensor<256x512xf32>) {
  %m = tensor.reduce %x {axes = [1], kind = max, keepdims = true} : tensor<256x1xf32>
  %d = tensor.sub %x, %m : tensor<256x512xf32>
  %e = tensor.exp %d : tensor<256x512xf32>
  %s = tensor.reduce %e {axes = [1], kind = sum, keepdims = true} : tensor<256x1xf32>
  %y = tensor.div %e, %s : tensor<256x512xf32>
  return y = %y
}
