// Native replay of recorded Triton launches (kernels/native.py builds and loads this file).
//
// kernels/replay.py cuts a repeated call of `auto` to one allocation and Triton's C launch, but from Python: the
// allocation (torch.empty_like) and the launch's argument parsing alone take as long as torch.softmax's whole call.
// Here one C call does the call's whole host path: find the launch recorded for this input (device, dtype, sizes),
// allocate the output with at::empty, put the two pointers into the recorded kernel parameters and call
// cuLaunchKernelEx on the current stream. `run(x)` returns None whenever it cannot take the call (no entry, not
// contiguous, an unaligned pointer, autograd, a Triton launch hook installed, another current device, no current
// context): the caller then takes its Python path, which records what this module replays.
//
// Built against torch's headers and libraries only: the current stream comes through c10's device-guard
// interface and the CUDA driver through dlopen, so no CUDA toolkit is needed to build it (cuda.h is Triton's copy).

#include <Python.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/GradMode.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/autograd/python_variable.h>

#include "cuda.h"

namespace {

constexpr int kMaxDims = 8;
constexpr size_t kMaxParamBytes = 1024;
constexpr size_t kMaxParams = 64;
constexpr size_t kMaxEntries = 4096;

using LaunchKernelEx = CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**);
using CtxGetCurrent = CUresult (*)(CUcontext*);
using GetErrorName = CUresult (*)(CUresult, const char**);
using FuncSetAttribute = CUresult (*)(CUfunction, CUfunction_attribute, int);
using FuncGetParamInfo = CUresult (*)(CUfunction, size_t, size_t*, size_t*);

struct Driver {
  LaunchKernelEx launch_kernel_ex = nullptr;
  CtxGetCurrent ctx_get_current = nullptr;
  GetErrorName get_error_name = nullptr;
  FuncSetAttribute func_set_attribute = nullptr;
  FuncGetParamInfo func_get_param_info = nullptr;  // CUDA 12.4+: checks the packed parameters at registration
};

Driver driver;

struct Key {
  int32_t device;
  int32_t dtype;
  int32_t ndim;
  int64_t sizes[kMaxDims];

  bool operator==(const Key& other) const {
    return device == other.device && dtype == other.dtype && ndim == other.ndim &&
           std::memcmp(sizes, other.sizes, sizeof(int64_t) * ndim) == 0;
  }
};

struct KeyHash {
  size_t operator()(const Key& key) const {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(static_cast<uint64_t>(key.device));
    mix(static_cast<uint64_t>(key.dtype));
    for (int i = 0; i < key.ndim; ++i) mix(static_cast<uint64_t>(key.sizes[i]));
    return static_cast<size_t>(h);
  }
};

struct Entry {
  CUfunction function = nullptr;
  unsigned grid[3] = {1, 1, 1};
  unsigned block = 32;
  unsigned shared = 0;
  unsigned num_ctas = 1;
  bool cooperative = false;
  bool pdl = false;
  std::vector<uint8_t> blob;      // every kernel parameter's bytes, each at an offset aligned to its size
  std::vector<uint32_t> offsets;  // parameter i starts at blob[offsets[i]]
  std::vector<uint32_t> x_slots;  // offsets that take the input's pointer
  std::vector<uint32_t> y_slots;  // offsets that take the output's pointer
  PyObject* keepalive = nullptr;  // the CompiledKernel (its module stays loaded while the entry exists)
};

std::unordered_map<Key, Entry, KeyHash> entries;

// Triton's launch hooks (proton installs some): a replay must not skip them, so while one is live run() declines.
PyObject* hook_owner = nullptr;   // triton.knobs.runtime
PyObject* enter_hook = nullptr;   // its launch_enter_hook at registration
PyObject* exit_hook = nullptr;
PyObject* enter_calls = nullptr;  // a HookChain's list of calls (live), or an empty tuple
PyObject* exit_calls = nullptr;
PyObject* enter_name = nullptr;
PyObject* exit_name = nullptr;

bool load_driver(std::string* error) {
  if (driver.launch_kernel_ex != nullptr) return true;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) {
    *error = "libcuda.so.1 not found (no NVIDIA driver)";
    return false;
  }
  driver.ctx_get_current = reinterpret_cast<CtxGetCurrent>(dlsym(lib, "cuCtxGetCurrent"));
  driver.get_error_name = reinterpret_cast<GetErrorName>(dlsym(lib, "cuGetErrorName"));
  driver.func_set_attribute = reinterpret_cast<FuncSetAttribute>(dlsym(lib, "cuFuncSetAttribute"));
  driver.func_get_param_info = reinterpret_cast<FuncGetParamInfo>(dlsym(lib, "cuFuncGetParamInfo"));
  auto launch = reinterpret_cast<LaunchKernelEx>(dlsym(lib, "cuLaunchKernelEx"));
  if (launch == nullptr || driver.ctx_get_current == nullptr || driver.get_error_name == nullptr ||
      driver.func_set_attribute == nullptr) {
    *error = "this driver lacks cuLaunchKernelEx (CUDA 11.8+)";
    return false;
  }
  driver.launch_kernel_ex = launch;
  return true;
}

const char* error_name(CUresult status) {
  const char* name = nullptr;
  if (driver.get_error_name == nullptr || driver.get_error_name(status, &name) != CUDA_SUCCESS || name == nullptr)
    return "unknown CUresult";
  return name;
}

bool make_key(const at::Tensor& x, Key* key) {
  const int64_t ndim = x.dim();
  if (ndim < 1 || ndim > kMaxDims) return false;
  key->device = x.device().index();
  key->dtype = static_cast<int32_t>(x.scalar_type());
  key->ndim = static_cast<int32_t>(ndim);
  const auto sizes = x.sizes();
  for (int64_t i = 0; i < ndim; ++i) key->sizes[i] = sizes[i];
  return true;
}

// True while a Triton launch hook would run: the hook objects were replaced, or their chains hold calls.
bool hooks_live() {
  if (hook_owner == nullptr) return false;
  if ((enter_calls != nullptr && PyObject_Length(enter_calls) != 0) ||
      (exit_calls != nullptr && PyObject_Length(exit_calls) != 0))
    return true;
  PyObject* enter = PyObject_GetAttr(hook_owner, enter_name);
  PyObject* exit = PyObject_GetAttr(hook_owner, exit_name);
  const bool replaced = enter != enter_hook || exit != exit_hook;
  Py_XDECREF(enter);
  Py_XDECREF(exit);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return true;
  }
  return replaced;
}

const at::Tensor* unpack(PyObject* obj) {
  if (!THPVariable_CheckExact(obj)) return nullptr;  // subclasses (FakeTensor, ...) keep their own dispatch
  return &THPVariable_Unpack(obj);
}

// run(x) -> softmax rows of x by its recorded launch, or None (the caller takes its Python path).
PyObject* run_unchecked(PyObject* obj) {
  const at::Tensor* xp = unpack(obj);
  if (xp == nullptr) Py_RETURN_NONE;
  const at::Tensor& x = *xp;
  if (!x.is_cuda() || x.layout() != c10::kStrided || (x.requires_grad() && c10::GradMode::is_enabled()))
    Py_RETURN_NONE;
  Key key;
  if (!make_key(x, &key) || !x.is_contiguous()) Py_RETURN_NONE;
  auto found = entries.find(key);
  if (found == entries.end()) Py_RETURN_NONE;
  const Entry& entry = found->second;
  if (hooks_live()) Py_RETURN_NONE;
  const c10::impl::DeviceGuardImplInterface* guard = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  if (guard->getDevice().index() != key.device) Py_RETURN_NONE;  // the function belongs to x's device's context
  CUcontext context = nullptr;
  if (driver.ctx_get_current(&context) != CUDA_SUCCESS || context == nullptr) Py_RETURN_NONE;
  const uint64_t x_ptr = reinterpret_cast<uint64_t>(x.const_data_ptr());
  if (x_ptr & 15) Py_RETURN_NONE;  // Triton specialized the kernel on 16-byte aligned pointers
  at::Tensor y = at::empty(x.sizes(), x.options());  // write y: the only allocation
  const uint64_t y_ptr = reinterpret_cast<uint64_t>(y.const_data_ptr());
  if (y_ptr & 15) Py_RETURN_NONE;

  alignas(16) uint8_t storage[kMaxParamBytes];
  void* params[kMaxParams];
  std::memcpy(storage, entry.blob.data(), entry.blob.size());
  for (uint32_t offset : entry.x_slots) std::memcpy(storage + offset, &x_ptr, sizeof(x_ptr));
  for (uint32_t offset : entry.y_slots) std::memcpy(storage + offset, &y_ptr, sizeof(y_ptr));
  for (size_t i = 0; i < entry.offsets.size(); ++i) params[i] = storage + entry.offsets[i];

  CUlaunchAttribute attributes[4];
  unsigned count = 0;
  if (entry.pdl) {
    attributes[count].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attributes[count++].value.programmaticStreamSerializationAllowed = 1;
  }
  if (entry.cooperative) {
    attributes[count].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attributes[count++].value.cooperative = 1;
  }
  if (entry.num_ctas != 1) {  // a thread-block cluster of num_ctas programs along x, as Triton's launcher forms it
    attributes[count].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attributes[count].value.clusterDim.x = entry.num_ctas;
    attributes[count].value.clusterDim.y = 1;
    attributes[count++].value.clusterDim.z = 1;
    attributes[count].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
    attributes[count++].value.clusterSchedulingPolicyPreference = CU_CLUSTER_SCHEDULING_POLICY_SPREAD;
  }
  CUlaunchConfig config;
  std::memset(&config, 0, sizeof(config));
  config.gridDimX = entry.grid[0] * entry.num_ctas;
  config.gridDimY = entry.grid[1];
  config.gridDimZ = entry.grid[2];
  config.blockDimX = entry.block;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.sharedMemBytes = entry.shared;
  config.hStream = static_cast<CUstream>(guard->getStream(x.device()).native_handle());
  config.attrs = attributes;
  config.numAttrs = count;
  const CUresult status = driver.launch_kernel_ex(&config, entry.function, params, nullptr);
  if (status != CUDA_SUCCESS) {
    PyErr_Format(PyExc_RuntimeError, "native launch: cuLaunchKernelEx failed with %s", error_name(status));
    return nullptr;
  }
  return THPVariable_Wrap(std::move(y));
}

PyObject* run(PyObject*, PyObject* obj) {
  try {
    return run_unchecked(obj);
  } catch (...) {  // a C++ error (out of memory, ...): the Python path repeats the call and raises torch's own error
    if (PyErr_Occurred()) PyErr_Clear();
    Py_RETURN_NONE;
  }
}

bool read_offsets(PyObject* sequence, std::vector<uint32_t>* out, size_t limit, const char* what) {
  PyObject* fast = PySequence_Fast(sequence, what);
  if (fast == nullptr) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  for (Py_ssize_t i = 0; i < n; ++i) {
    const unsigned long value = PyLong_AsUnsignedLong(PySequence_Fast_GET_ITEM(fast, i));
    if (PyErr_Occurred() || value >= limit) {
      Py_DECREF(fast);
      if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "native register: %s offset %lu out of range", what, value);
      return false;
    }
    out->push_back(static_cast<uint32_t>(value));
  }
  Py_DECREF(fast);
  return true;
}

// register(x, function, (gx, gy, gz), block, shared, num_ctas, cooperative, pdl, blob, offsets, sizes, x_slots,
//          y_slots, keepalive): the launch that later calls of an input like x (device, dtype, sizes) replay.
// `sizes` are the parameters' byte sizes, checked against the compiled function's own (cuFuncGetParamInfo).
PyObject* register_launch(PyObject*, PyObject* args) {
  PyObject *x_obj, *blob_obj, *offsets_obj, *sizes_obj, *x_slots_obj, *y_slots_obj, *keepalive;
  unsigned long long function;
  unsigned gx, gy, gz, block, shared, num_ctas;
  int cooperative, pdl;
  if (!PyArg_ParseTuple(args, "OK(III)IIIppOOOOOO", &x_obj, &function, &gx, &gy, &gz, &block, &shared, &num_ctas,
                        &cooperative, &pdl, &blob_obj, &offsets_obj, &sizes_obj, &x_slots_obj, &y_slots_obj,
                        &keepalive))
    return nullptr;
  std::string error;
  if (!load_driver(&error)) {
    PyErr_Format(PyExc_RuntimeError, "native register: %s", error.c_str());
    return nullptr;
  }
  const at::Tensor* xp = unpack(x_obj);
  Key key;
  if (xp == nullptr || !xp->is_cuda() || !make_key(*xp, &key)) {
    PyErr_SetString(PyExc_ValueError, "native register: x must be a CUDA torch.Tensor of 1 to 8 dimensions");
    return nullptr;
  }
  char* blob_data;
  Py_ssize_t blob_size;
  if (PyBytes_AsStringAndSize(blob_obj, &blob_data, &blob_size) != 0) return nullptr;
  if (blob_size < 16 || blob_size > static_cast<Py_ssize_t>(kMaxParamBytes)) {
    PyErr_Format(PyExc_ValueError, "native register: %zd parameter bytes; allowed: 16 to %zu", blob_size,
                 kMaxParamBytes);
    return nullptr;
  }
  if (gx == 0 || gy == 0 || gz == 0 || block == 0 || block > 1024 || num_ctas == 0 || num_ctas > 16) {
    PyErr_SetString(PyExc_ValueError, "native register: grid, block (1..1024) and num_ctas (1..16) must be positive");
    return nullptr;
  }
  Entry entry;
  entry.function = reinterpret_cast<CUfunction>(static_cast<uintptr_t>(function));
  entry.grid[0] = gx;
  entry.grid[1] = gy;
  entry.grid[2] = gz;
  entry.block = block;
  entry.shared = shared;
  entry.num_ctas = num_ctas;
  entry.cooperative = cooperative != 0;
  entry.pdl = pdl != 0;
  entry.blob.assign(blob_data, blob_data + blob_size);
  std::vector<uint32_t> sizes;
  if (!read_offsets(offsets_obj, &entry.offsets, static_cast<size_t>(blob_size) + 1, "parameter") ||
      !read_offsets(sizes_obj, &sizes, kMaxParamBytes + 1, "size") ||
      !read_offsets(x_slots_obj, &entry.x_slots, static_cast<size_t>(blob_size) - 7, "input") ||
      !read_offsets(y_slots_obj, &entry.y_slots, static_cast<size_t>(blob_size) - 7, "output"))
    return nullptr;
  if (entry.offsets.size() > kMaxParams || sizes.size() != entry.offsets.size() || entry.x_slots.empty() ||
      entry.y_slots.empty()) {
    PyErr_SetString(PyExc_ValueError, "native register: one size per parameter (at most 64) and at least one "
                                      "input and one output slot are needed");
    return nullptr;
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (entry.offsets[i] + sizes[i] > static_cast<size_t>(blob_size)) {
      PyErr_Format(PyExc_ValueError, "native register: parameter %zu ends past the blob", i);
      return nullptr;
    }
  }
  if (driver.func_get_param_info != nullptr) {  // the compiled function's own parameter list must match
    for (size_t i = 0; i <= sizes.size(); ++i) {
      size_t offset = 0, size = 0;
      const CUresult status = driver.func_get_param_info(entry.function, i, &offset, &size);
      if (i == sizes.size()) {
        if (status == CUDA_SUCCESS) {
          PyErr_Format(PyExc_ValueError, "native register: the kernel takes more than %zu parameters", sizes.size());
          return nullptr;
        }
      } else if (status != CUDA_SUCCESS || size != sizes[i]) {
        PyErr_Format(PyExc_ValueError, "native register: kernel parameter %zu is %zu bytes (%s), packed as %u", i,
                     size, status == CUDA_SUCCESS ? "ok" : error_name(status), sizes[i]);
        return nullptr;
      }
    }
  }
  if (num_ctas == 16 &&  // a non-portable cluster size, as Triton's launcher allows it
      driver.func_set_attribute(entry.function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1) != CUDA_SUCCESS) {
    PyErr_SetString(PyExc_RuntimeError, "native register: a cluster of 16 is not allowed for this kernel");
    return nullptr;
  }
  if (entries.size() >= kMaxEntries && entries.find(key) == entries.end()) {
    for (auto& item : entries) Py_XDECREF(item.second.keepalive);
    entries.clear();
  }
  Py_INCREF(keepalive);
  entry.keepalive = keepalive;
  auto existing = entries.find(key);
  if (existing != entries.end()) {
    Py_XDECREF(existing->second.keepalive);
    existing->second = std::move(entry);
  } else {
    entries.emplace(key, std::move(entry));
  }
  Py_RETURN_NONE;
}

// hooks(owner, enter, exit, enter_calls, exit_calls): where Triton keeps its launch hooks and what they were.
PyObject* set_hooks(PyObject*, PyObject* args) {
  PyObject *owner, *enter, *exit, *enter_list, *exit_list;
  if (!PyArg_ParseTuple(args, "OOOOO", &owner, &enter, &exit, &enter_list, &exit_list)) return nullptr;
  PyObject* kept[] = {owner, enter, exit, enter_list, exit_list};
  for (PyObject* item : kept) Py_INCREF(item);
  Py_XDECREF(hook_owner);
  Py_XDECREF(enter_hook);
  Py_XDECREF(exit_hook);
  Py_XDECREF(enter_calls);
  Py_XDECREF(exit_calls);
  hook_owner = owner;
  enter_hook = enter;
  exit_hook = exit;
  enter_calls = enter_list;
  exit_calls = exit_list;
  Py_RETURN_NONE;
}

PyObject* clear(PyObject*, PyObject*) {
  for (auto& item : entries) Py_XDECREF(item.second.keepalive);
  entries.clear();
  Py_RETURN_NONE;
}

PyObject* size(PyObject*, PyObject*) { return PyLong_FromSize_t(entries.size()); }

PyMethodDef methods[] = {
    {"run", run, METH_O, "run(x) -> y, or None where the recorded launch cannot take x"},
    {"register", register_launch, METH_VARARGS, "register a recorded launch for inputs like x"},
    {"hooks", set_hooks, METH_VARARGS, "hooks(owner, enter, exit, enter_calls, exit_calls)"},
    {"clear", clear, METH_NOARGS, "forget every registered launch"},
    {"size", size, METH_NOARGS, "number of registered launches"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_blockscope_native", "Native replay of recorded Triton launches", -1,
                      methods};

}  // namespace

PyMODINIT_FUNC PyInit__blockscope_native() {
  enter_name = PyUnicode_InternFromString("launch_enter_hook");
  exit_name = PyUnicode_InternFromString("launch_exit_hook");
  return PyModule_Create(&module);
}
