#include "bindings/sealed_guards.h"

#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/python_variable.h>

#include <string>
#include <type_traits>

namespace graphdispatch::bindings {

namespace {

// Dicts carry ma_version_tag (PEP 509) up to Python 3.13; 3.12 deprecates reading it.
constexpr bool kDictTags = PY_VERSION_HEX < 0x030E0000;

std::uint64_t dict_tag(PyObject* dict) {
#if PY_VERSION_HEX < 0x030E0000
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  return reinterpret_cast<PyDictObject*>(dict)->ma_version_tag;
#pragma GCC diagnostic pop
#else
  (void)dict;
  return 0;
#endif
}

// A type's tag, 0 while it has none (never assigned, or reset by a change to it or a base).
std::uint64_t type_tag(PyTypeObject* type) {
  if (!PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG)) return 0;
  return type->tp_version_tag;
}

PyObject* instance_dict(PyObject* obj) {
  PyObject** slot = _PyObject_GetDictPtr(obj);
  return slot == nullptr ? nullptr : *slot;
}

// A new reference to `obj`, which may be null.
py::object kept(PyObject* obj) { return py::reinterpret_borrow<py::object>(obj); }

[[noreturn]] void wrong_kind(const char* record, const char* expected, py::handle given) {
  throw py::type_error(std::string("SealedGuards.") + record + ": expected " + expected + ", got " +
                       Py_TYPE(given.ptr())->tp_name);
}

PyTypeObject* parameter_type() {
  // Kept for the process's life, as torch keeps its own classes.
  static PyTypeObject* type = reinterpret_cast<PyTypeObject*>(
      py::object(py::module_::import("torch.nn").attr("Parameter")).release().ptr());
  return type;
}

}  // namespace

bool SealedGuards::supported() { return kDictTags; }

SealedGuards::SealedGuards() {
  const auto tls = c10::impl::tls_local_dispatch_key_set();
  tls_included_ = tls.included_.raw_repr();
  tls_excluded_ = tls.excluded_.raw_repr();
}

void SealedGuards::add_dict(py::handle dict) {
  if (!PyDict_Check(dict.ptr())) wrong_kind("add_dict", "a dict", dict);
  dicts_.push_back({kept(dict.ptr()), dict_tag(dict.ptr())});
}

void SealedGuards::add_type_of(py::handle obj) {
  types_of_.push_back({kept(obj.ptr()), kept(reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr())))});
}

bool SealedGuards::add_type_tag(py::handle type) {
  if (!PyType_Check(type.ptr())) wrong_kind("add_type_tag", "a type", type);
  auto* t = reinterpret_cast<PyTypeObject*>(type.ptr());
  // A lookup through the attribute cache gives the type a tag when it has none.
  static PyObject* probe = PyUnicode_InternFromString("__graphdispatch_seal__");
  _PyType_Lookup(t, probe);
  const std::uint64_t tag = type_tag(t);
  if (tag == 0) return false;
  type_tags_.push_back({kept(type.ptr()), tag});
  return true;
}

void SealedGuards::add_dict_pointer(py::handle obj) {
  dict_pointers_.push_back({kept(obj.ptr()), kept(instance_dict(obj.ptr()))});
}

void SealedGuards::add_function(py::handle function) {
  PyObject* f = function.ptr();
  if (!PyFunction_Check(f)) wrong_kind("add_function", "a Python function", function);
  functions_.push_back({kept(f), kept(PyFunction_GET_CODE(f)), kept(PyFunction_GET_DEFAULTS(f)),
                        kept(PyFunction_GET_KW_DEFAULTS(f)), kept(PyFunction_GET_CLOSURE(f))});
}

void SealedGuards::add_cell(py::handle cell) {
  if (!PyCell_Check(cell.ptr())) wrong_kind("add_cell", "a cell", cell);
  cells_.push_back({kept(cell.ptr()), kept(PyCell_GET(cell.ptr()))});
}

bool SealedGuards::add_tensor(py::handle tensor) {
  PyObject* obj = tensor.ptr();
  if (!THPVariable_Check(obj)) wrong_kind("add_tensor", "a tensor", tensor);
  PyTypeObject* type = Py_TYPE(obj);
  if (type != reinterpret_cast<PyTypeObject*>(THPVariableClass) && type != parameter_type()) {
    return false;
  }
  const at::Tensor& t = THPVariable_Unpack(obj);
  if (t.unsafeGetTensorImpl()->has_symbolic_sizes_strides() || t.layout() != at::kStrided) {
    return false;
  }
  tensors_.push_back({kept(obj), type, t.key_set().raw_repr(), t.scalar_type(), t.device(),
                      t.requires_grad(), t.sizes().vec(), t.strides().vec()});
  return true;
}

bool SealedGuards::unchanged() const {
  if (cleared_) return false;
  const auto tls = c10::impl::tls_local_dispatch_key_set();
  if (tls.included_.raw_repr() != tls_included_ || tls.excluded_.raw_repr() != tls_excluded_) {
    return false;
  }
  for (const Tag& d : dicts_) {
    if (dict_tag(d.owner.ptr()) != d.tag) return false;
  }
  for (const Pointer& o : types_of_) {
    if (reinterpret_cast<PyObject*>(Py_TYPE(o.owner.ptr())) != o.held.ptr()) return false;
  }
  for (const Tag& t : type_tags_) {
    if (type_tag(reinterpret_cast<PyTypeObject*>(t.owner.ptr())) != t.tag) return false;
  }
  for (const Pointer& o : dict_pointers_) {
    if (instance_dict(o.owner.ptr()) != o.held.ptr()) return false;
  }
  for (const Function& f : functions_) {
    PyObject* p = f.function.ptr();
    if (PyFunction_GET_CODE(p) != f.code.ptr() || PyFunction_GET_DEFAULTS(p) != f.defaults.ptr() ||
        PyFunction_GET_KW_DEFAULTS(p) != f.kwdefaults.ptr() ||
        PyFunction_GET_CLOSURE(p) != f.closure.ptr()) {
      return false;
    }
  }
  for (const Pointer& c : cells_) {
    if (PyCell_GET(c.owner.ptr()) != c.held.ptr()) return false;
  }
  for (const TensorRecord& r : tensors_) {
    PyObject* obj = r.tensor.ptr();
    if (Py_TYPE(obj) != r.type) return false;
    const at::Tensor& t = THPVariable_Unpack(obj);
    if (t.key_set().raw_repr() != r.keys || t.scalar_type() != r.dtype || t.device() != r.device ||
        t.requires_grad() != r.requires_grad ||
        t.unsafeGetTensorImpl()->has_symbolic_sizes_strides() ||
        t.sizes() != c10::IntArrayRef(r.sizes) || t.strides() != c10::IntArrayRef(r.strides)) {
      return false;
    }
  }
  return true;
}

std::size_t SealedGuards::size() const {
  return dicts_.size() + types_of_.size() + type_tags_.size() + dict_pointers_.size() +
         functions_.size() + cells_.size() + tensors_.size();
}

int SealedGuards::traverse(visitproc visit, void* arg) const {
  auto visit_pointers = [&](const std::vector<Pointer>& records) {
    for (const Pointer& o : records) {
      Py_VISIT(o.owner.ptr());
      Py_VISIT(o.held.ptr());
    }
    return 0;
  };
  for (const Tag& d : dicts_) Py_VISIT(d.owner.ptr());
  for (const Tag& t : type_tags_) Py_VISIT(t.owner.ptr());
  for (const Function& f : functions_) {
    for (const py::object* o : {&f.function, &f.code, &f.defaults, &f.kwdefaults, &f.closure}) {
      Py_VISIT(o->ptr());
    }
  }
  for (const TensorRecord& r : tensors_) Py_VISIT(r.tensor.ptr());
  if (int error = visit_pointers(types_of_)) return error;
  if (int error = visit_pointers(dict_pointers_)) return error;
  return visit_pointers(cells_);
}

void SealedGuards::clear() {
  cleared_ = true;
  // Each vector is emptied before its references drop (the swapped-out temporary dies at the
  // end of the statement): a dropped reference can run Python code that reads the records.
  auto drop = [](auto& records) { std::remove_reference_t<decltype(records)>().swap(records); };
  drop(dicts_);
  drop(types_of_);
  drop(type_tags_);
  drop(dict_pointers_);
  drop(functions_);
  drop(cells_);
  drop(tensors_);
}

namespace {

SealedGuards* constructed(PyObject* self) {
  // The collector can meet an instance whose __init__ has not run (no C++ object yet).
  if (!py::detail::is_holder_constructed(self)) return nullptr;
  return reinterpret_cast<py::detail::instance*>(self)
      ->get_value_and_holder()
      .value_ptr<SealedGuards>();
}

int traverse_records(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));  // a heap type's instances hold their type
  SealedGuards* records = constructed(self);
  return records == nullptr ? 0 : records->traverse(visit, arg);
}

int clear_records(PyObject* self) {
  if (SealedGuards* records = constructed(self)) records->clear();
  return 0;
}

}  // namespace

void init_sealed_guards(py::module_& m) {
  py::class_<SealedGuards>(m, "SealedGuards", py::custom_type_setup([](PyHeapTypeObject* heap) {
                             heap->ht_type.tp_flags |= Py_TPFLAGS_HAVE_GC;
                             heap->ht_type.tp_traverse = traverse_records;
                             heap->ht_type.tp_clear = clear_records;
                           }))
      .def(py::init<>())
      .def_static("supported", &SealedGuards::supported)
      .def("add_dict", &SealedGuards::add_dict, py::arg("dict"))
      .def("add_type_of", &SealedGuards::add_type_of, py::arg("obj"))
      .def("add_type_tag", &SealedGuards::add_type_tag, py::arg("type"))
      .def("add_dict_pointer", &SealedGuards::add_dict_pointer, py::arg("obj"))
      .def("add_function", &SealedGuards::add_function, py::arg("function"))
      .def("add_cell", &SealedGuards::add_cell, py::arg("cell"))
      .def("add_tensor", &SealedGuards::add_tensor, py::arg("tensor"))
      .def("unchanged", &SealedGuards::unchanged)
      .def("size", &SealedGuards::size);
}

}  // namespace graphdispatch::bindings
