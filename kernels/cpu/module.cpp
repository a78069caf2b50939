// The Python module turbogelu._C. It holds no Python functions: importing it loads the shared
// library, whose static initializers register the operators (TORCH_LIBRARY) with PyTorch.
#include <Python.h>

extern "C" {
PyMODINIT_FUNC PyInit__C(void) {
  static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C",
                                      "turbogelu operators (registered as torch.ops.turbogelu)", -1,
                                      nullptr};
  return PyModule_Create(&module);
}
}
