#pragma once

// The records behind a sealed guard verdict (Note [Sealed guards] in
// src/graphdispatch/_sealed_guards.py): the Python objects a sealed part of Dynamo's guard
// tree reads, each with what it held when the tree last passed. While every record holds,
// every manager of the sealed part sees the object it saw then, and every leaf guard there
// gives the verdict it gave then. Python objects, so it lives in the bindings, not the runtime.

#include <torch/csrc/utils/pybind.h>

#include <cstdint>
#include <vector>

namespace graphdispatch::bindings {

namespace py = pybind11;

/// Append-only records, checked together by unchanged(). Each add_* reads the object's state
/// now and keeps a strong reference to it. Raises TypeError when the object is not of the kind
/// the record is for (named in the message). The references are shown to Python's cycle
/// collector (traverse, clear): a module compiled in place holds its records, which hold it.
class SealedGuards final {
 public:
  /// Whether this Python exposes what the records read: dict version tags (PEP 509) and type
  /// version tags. False from Python 3.14, where dicts no longer carry a version tag.
  static bool supported();

  SealedGuards();
  /// A dict's contents: any insertion, deletion or assignment changes its version tag.
  void add_dict(py::handle dict);
  /// The object's type (`obj.__class__ = other` changes it).
  void add_type_of(py::handle obj);
  /// The type's attribute cache tag, which any change to the type or a base resets. False when
  /// the type has none and cannot be given one (records nothing then).
  bool add_type_tag(py::handle type);
  /// The object's instance dict: which dict object it is, or that it has none yet.
  void add_dict_pointer(py::handle obj);
  /// A function's __code__, __defaults__, __kwdefaults__ and __closure__ (each assignable).
  void add_function(py::handle function);
  /// A closure cell's contents.
  void add_cell(py::handle cell);
  /// A strided tensor's type, dispatch keys, dtype, device, requires_grad, sizes and strides:
  /// what Dynamo's TENSOR_MATCH reads. False (nothing recorded) for symbolic sizes, other
  /// layouts or a Python subclass.
  bool add_tensor(py::handle tensor);
  /// Whether every record holds, and the thread's local dispatch key set (which TENSOR_MATCH
  /// reads beside the tensor's own keys) is the one at construction.
  bool unchanged() const;
  std::size_t size() const;
  /// Visits every object the records hold (the collector's tp_traverse).
  int traverse(visitproc visit, void* arg) const;
  /// Drops every record (the collector's tp_clear, breaking a cycle); unchanged() is false from
  /// then on.
  void clear();

 private:
  // What a record compares is kept alive with it: a freed object's address is soon another's
  // (the free lists hand it to the next object of its size), and would compare equal.
  struct Pointer {  // an object and what it held (null for no instance dict yet)
    py::object owner;
    py::object held;
  };
  struct Tag {  // a dict or type and its version tag
    py::object owner;
    std::uint64_t tag;
  };
  struct Function {
    py::object function;
    py::object code;
    py::object defaults;
    py::object kwdefaults;
    py::object closure;
  };
  struct TensorRecord {
    py::object tensor;
    const void* type;
    std::uint64_t keys;
    c10::ScalarType dtype;
    c10::Device device;
    bool requires_grad;
    std::vector<std::int64_t> sizes;
    std::vector<std::int64_t> strides;
  };

  std::vector<Tag> dicts_;
  std::vector<Pointer> types_of_;
  std::vector<Tag> type_tags_;
  std::vector<Pointer> dict_pointers_;
  std::vector<Function> functions_;
  std::vector<Pointer> cells_;
  std::vector<TensorRecord> tensors_;
  std::uint64_t tls_included_;
  std::uint64_t tls_excluded_;
  bool cleared_ = false;
};

/// Registers SealedGuards on `m`.
void init_sealed_guards(py::module_& m);

}  // namespace graphdispatch::bindings
