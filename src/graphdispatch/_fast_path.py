"""The serving call: a compiled module's call runs Dynamo's compiled code without Dynamo's frame
handling.

Note [Fast path]
A call through ``torch.compile`` pays Dynamo's frame handling on every call: the eval-frame
callback, its context managers, the cache lookup and the guard check, 1.7-2x what the replay
itself costs on a small model (case C79, bench/call_cost.py). Once Dynamo has compiled a
module's ``forward``, everything a call needs is in Dynamo's cache entries for that code
object: each entry's guard manager (the check Dynamo would run) and its transformed bytecode
(which gathers the graph's inputs, calls the compiled function and rebuilds the outputs).

``FastPath`` takes the place of the Dynamo-wrapped callable on the module (an
``OptimizedModule``'s ``forward``, or ``_compiled_call_impl`` after ``module.compile()``, the
form regional compilation uses). The frame Dynamo compiled is ``forward``'s, or, for a torch.nn
module compiled whole (its ``forward`` in Dynamo's skipped files), the wrapper of its
``__call__`` that ``OptimizedModule`` compiles instead. ``torch.compile``'s wrapper goes to
the fast path from its own call, without the context manager and nn.Module call path in front of
``forward`` (``serve_wrapper_calls``). Per call it:

1. sends the call through Dynamo when anything outside the guards' view could differ: the
   module has hooks (its ``_call_impl`` would run them), ``forward`` (its code, its defaults)
   or nn.Module's call path was replaced (on the class, or ``forward`` or ``_call_impl`` on
   the instance), a stance other than the default is set, a trace is running, another
   compile's Dynamo callback is set around the call (Python it did not trace calls the
   module: its callback would compile what the call runs; this frame is marked for Dynamo to
   skip so that the check is reached), or an entry armed is no longer Dynamo's (invalidated,
   ``torch._dynamo.reset()``: Dynamo unsets its guard manager's ``cache_entry`` then); the
   entries are listed again after every call that went through Dynamo, since only such a call
   adds or reorders them (a recompile);
2. binds the arguments to ``forward``'s parameters, as the frame's locals Dynamo's guards read;
3. runs each cache entry's guard check in Dynamo's order (the module's and globals' part of
   the tree sealed after it passed, Note [Sealed guards] in _sealed_guards.py); the first
   that passes has its transformed bytecode called as a function, in the module's globals
   and closure;
4. no entry passes: the call goes through Dynamo (recompile, or its cached code), counted.

So every change Dynamo's guards catch (a parameter, buffer or submodule replaced, an
attribute the trace read changed, other non-tensor arguments, train/eval, grad mode, autocast,
``.to()``, LoRA adapters, attention processors) sends the call back to Dynamo: the guards are
Dynamo's own. What the guards do not cover and a call must not skip is step 1. A frame whose
code calls a resume function (a graph break: Python runs between graphs) is never armed, since
only Dynamo's callback compiles the resume function: Dynamo stays for that module, and
``explain()`` says so. Dynamo's per-code skip mark (set when a later call's trace is empty
or holds no tensor; from then on Dynamo runs the frame eagerly) has no Python reader: the fast
path keeps running the entries it armed, whose guards and code stay valid. The cost left per
call is the binding, the residual guard check and the bytecode's input gathering
(bench/fast_path.py).
"""

from __future__ import annotations

import inspect
import sys
import threading
import types
from collections.abc import Callable
from typing import Any, NamedTuple

import torch
import torch.nn.modules.module as _module

from ._once import RunOnce
from ._sealed_guards import PASSED_ON_WHOLE_TREE, SealedCheck

# Why a call went through Dynamo instead of the fast path (stats()["fast_path"]).
NOT_ARMED = "not_armed"  # no cache entry yet, or a graph break (explain() says which)
GUARDS = "guards"  # no entry's guards passed: Dynamo recompiles or runs another entry
HOOKS = "hooks"  # module or global forward/backward hooks: _call_impl must run them
# The frame Dynamo compiled is no longer what a call reaches: forward, its code or defaults
# replaced, the module's __call__, _wrapped_call_impl or _call_impl no longer nn.Module's, or
# a forward or _call_impl set on the instance.
FORWARD_REPLACED = "forward_replaced"
STANCE = "stance"  # torch.compiler.set_stance(...) other than the default
COMPILING = "compiling"  # Dynamo is tracing in this process (its flag is not per thread)
# Called from Python another torch.compile's frame handling runs (its callback is set): the
# module's own Dynamo wrapper sets the module's callback, as a call without the fast path does.
UNDER_DYNAMO = "under_dynamo"

# nn.Module's own call path: the fast path stands for exactly these, hooks aside.
_MODULE_CALL = (
    torch.nn.Module.__call__,
    torch.nn.Module._wrapped_call_impl,
    torch.nn.Module._call_impl,
)

_COUNTS_LOCK = threading.Lock()
_CALLS = 0
_WHOLE_CHECKS = 0
_THROUGH_DYNAMO: dict[str, int] = {}


def counts() -> dict[str, Any]:
    """``{"calls": fast-path calls, "whole_checks": those that ran Dynamo's whole guard tree
    (no seal held, or a record changed), "through_dynamo": {reason: calls}}`` since the last
    reset."""
    with _COUNTS_LOCK:
        return {
            "calls": _CALLS,
            "whole_checks": _WHOLE_CHECKS,
            "through_dynamo": dict(_THROUGH_DYNAMO),
        }


def reset_counts() -> None:
    global _CALLS, _WHOLE_CHECKS
    with _COUNTS_LOCK:
        _CALLS = _WHOLE_CHECKS = 0
        _THROUGH_DYNAMO.clear()


def _count_fast(whole_check: bool) -> None:
    global _CALLS, _WHOLE_CHECKS
    with _COUNTS_LOCK:
        _CALLS += 1
        _WHOLE_CHECKS += whole_check


def _count_slow(reason: str) -> None:
    with _COUNTS_LOCK:
        _THROUGH_DYNAMO[reason] = _THROUGH_DYNAMO.get(reason, 0) + 1


def _has_hooks(module: torch.nn.Module) -> bool:
    """The condition under which ``Module._call_impl`` does more than call ``forward``."""
    return bool(
        module._backward_hooks
        or module._backward_pre_hooks
        or module._forward_hooks
        or module._forward_pre_hooks
        or _module._global_backward_pre_hooks
        or _module._global_backward_hooks
        or _module._global_forward_hooks
        or _module._global_forward_pre_hooks
    )


def _binder(func: types.FunctionType) -> Callable[..., dict[str, Any]]:
    """A function with ``func``'s parameters and defaults returning ``{name: value}``: the
    frame's locals as Dynamo's guards read them (the arguments, then ``func``'s closure
    variables that are not empty, read from their cells at each call), bound by the
    interpreter (inspect's ``Signature.bind`` costs ten times as much). Built from the code
    object, which is what the frame binds (a ``__signature__`` may say otherwise)."""
    code = func.__code__
    names = code.co_varnames
    positional = code.co_argcount
    keyword_only = code.co_kwonlyargcount
    params = list(names[:positional])
    if code.co_posonlyargcount:
        params.insert(code.co_posonlyargcount, "/")
    end = positional + keyword_only
    if code.co_flags & inspect.CO_VARARGS:
        params.append("*" + names[end])
        end += 1
    elif keyword_only:
        params.append("*")
    params += names[positional : positional + keyword_only]
    if code.co_flags & inspect.CO_VARKEYWORDS:
        params.append("**" + names[end])
        end += 1
    bound = names[:end]
    # Names of the binder's own that no parameter can shadow.
    own = "_gd_"
    while any(n.startswith(own) for n in names):
        own += "_"
    items = ", ".join(f"{n!r}: {n}" for n in bound)
    source = (
        f"def bind({', '.join(params)}):\n"
        f"    {own}locals = {{{items}}}\n"
        f"    for {own}name, {own}cell in {own}cells:\n"
        f"        try:\n"
        f"            {own}locals[{own}name] = {own}cell.cell_contents\n"
        f"        except ValueError:  # an empty cell is not among the frame's locals\n"
        f"            pass\n"
        f"    return {own}locals\n"
    )
    scope: dict[str, Any] = {f"{own}cells": tuple(zip(code.co_freevars, func.__closure__ or ()))}
    exec(source, scope)  # noqa: S102
    bind = scope["bind"]
    # A call that does not bind raises the frame's TypeError, which names the function.
    bind.__name__, bind.__qualname__ = func.__name__, func.__qualname__
    bind.__defaults__ = func.__defaults__
    bind.__kwdefaults__ = func.__kwdefaults__
    return bind


def _inline_frame(slow: Callable) -> types.FunctionType | None:
    """The function whose frame Dynamo compiles for ``slow`` when it is not ``forward``'s: for a
    torch.nn module (``nn.Sequential``, ``nn.Linear``), whose ``forward`` Dynamo's trace rules
    skip, ``OptimizedModule`` compiles a wrapper of the module's ``__call__``
    (``torch._dynamo.external_utils.wrap_inline``) and keeps it in ``slow``'s closure."""
    from torch._dynamo import external_utils

    inline_code = external_utils.wrap_inline(len).__code__
    for cell in getattr(slow, "__closure__", None) or ():
        try:
            held = cell.cell_contents
        except ValueError:
            continue
        if isinstance(held, types.FunctionType) and held.__code__ is inline_code:
            return held
    return None


def _graph_break(code: types.CodeType) -> bool:
    return any(name.startswith("__resume_at") for name in code.co_names)


class Armed(NamedTuple):
    """What a call can run: one (``SealedCheck``, transformed forward) pair per cache entry of
    this compile's, in Dynamo's order, and why there is none ("" when there are); ``managers``:
    those entries' guard managers, whose ``cache_entry`` Dynamo unsets when it drops or
    invalidates the entry."""

    fast: list[tuple[SealedCheck, types.FunctionType]]
    reason: str
    managers: tuple[Any, ...]


class FastPath:
    """The callable put in place of Dynamo's wrapper on ``module`` (Note [Fast path]).

    ``slow``: the Dynamo-wrapped callable it replaces, called for every call the fast path does
    not take. ``module``: the module whose ``forward`` Dynamo compiled. ``backend``: the one
    Dynamo stores on the cache entries this compile makes. ``armed``: an ``Armed``, replaced
    whole so that threads read one consistent tuple; ``stale``: set by every call through
    Dynamo, the entries are listed again at the next call.
    """

    def __init__(self, module: torch.nn.Module, slow: Callable, backend: Any) -> None:
        from torch._dynamo import eval_frame  # loaded: Dynamo is compiling

        self.eval_frame = eval_frame  # its _stance is rebound by set_stance: read per call
        self.callback = torch._C._dynamo.eval_frame.get_eval_frame_callback
        # Under another compile's callback (a frame of it Dynamo skipped runs as Python and
        # calls the module), the callback would compile this frame with its own backend and
        # guards; with these frames skipped, the call reaches the check in attempt and the
        # module's own wrapper.
        for frame in (FastPath.__call__, FastPath.attempt, FastPath._through_dynamo):
            eval_frame.skip_code(frame.__code__)
        self.entries_of = eval_frame._debug_get_cache_entry_list
        self.backend = backend
        self.module = module
        self.slow = slow
        self.forward = type(module).forward
        # The binder and the transformed functions hold these: new ones are another frame.
        self.forward_code = self.forward.__code__
        self.forward_defaults = (self.forward.__defaults__, self.forward.__kwdefaults__)
        # The frame Dynamo compiled: forward's, or (Note [Fast path]) the wrapper Dynamo puts
        # around a torch.nn module's __call__, whose frame takes no module argument; that
        # wrapper is Dynamo's own, held only by ``slow``, so forward's checks cover both.
        inline = _inline_frame(slow)
        self.func = inline if inline is not None else self.forward
        self.self_arg = () if inline is not None else (module,)
        self.code = self.func.__code__
        self.bind = _binder(self.func)
        # Armed at the first call: Dynamo's entries are only made once this compile returns.
        self.armed = Armed([], "", ())
        self.stale = True
        self.checks: dict[Any, SealedCheck] = {}  # per entry's guard manager

    def _arm(self, entries: list[Any]) -> Armed:
        """What a call can run, from Dynamo's cache ``entries`` for the frame."""
        func, fast, managers = self.func, [], []
        # Dynamo moves the entry it runs to the front: the checks (and their seals) of entries
        # still there are kept across arming.
        kept, self.checks = self.checks, {}
        for entry in entries:
            if entry.code is None or entry.backend != self.backend:
                continue  # invalidated, or another torch.compile's (Dynamo skips both)
            code = entry.code
            if _graph_break(code):
                reason = (
                    "a graph break: Python runs between graphs, and only Dynamo compiles the"
                    " code after the break"
                )
                return Armed([], reason, ())
            if code.co_freevars != func.__code__.co_freevars:
                return Armed([], "Dynamo's code for forward has other closure variables", ())
            fn = types.FunctionType(
                code, func.__globals__, func.__name__, func.__defaults__, func.__closure__
            )
            fn.__kwdefaults__ = func.__kwdefaults__
            manager = entry.guard_manager
            check = kept.get(manager) or SealedCheck(manager.root, func, self.self_arg)
            self.checks[manager] = check
            fast.append((check, fn))
            managers.append(manager)
        if fast:
            return Armed(fast, "", tuple(managers))
        others = " (its entries there are other compiles')" if entries else ""
        reason = (
            f"Dynamo holds no compiled code of this compile's for this frame{others}: none"
            " compiled yet, or a graph break in a call below it (Dynamo then runs the frame"
            " itself and compiles the frames it calls, each on its own)"
        )
        return Armed([], reason, ())

    def _reaches_forward(self) -> bool:
        """Whether a call reaches the frame Dynamo compiled through nn.Module's call path, with
        the ``forward`` it compiled."""
        cls, forward = type(self.module), self.forward
        impl = self.module._compiled_call_impl
        return (
            cls.forward is forward
            and forward.__code__ is self.forward_code
            and forward.__defaults__ is self.forward_defaults[0]
            and forward.__kwdefaults__ is self.forward_defaults[1]
            # nn.Module's _wrapped_call_impl reads self._call_impl, so the instance's own
            # stands between the call and forward as much as the class's does.
            and "forward" not in self.module.__dict__
            and "_call_impl" not in self.module.__dict__
            and (cls.__call__, cls._wrapped_call_impl, cls._call_impl) == _MODULE_CALL
            # nn.Module's call runs the module's _compiled_call_impl instead of _call_impl:
            # none, or module.compile()'s, which this path stands for (installed or not yet).
            and (impl is None or impl is self or impl is self.slow)
        )

    def _current(self) -> Armed:
        armed = self.armed
        # Listing the entries costs a Python object per entry (9 µs for nine on the tiny Flux,
        # after a replay); a call that did not go through Dynamo changed none but by dropping
        # or invalidating one (an object its guards hold by id died: the id can be reused).
        if self.stale or any(manager.cache_entry is None for manager in armed.managers):
            self.stale = False  # before listing: a concurrent call through Dynamo sets it again
            armed = self.armed = self._arm(self.entries_of(self.code))
        return armed

    def state(self) -> str:
        """ "" when the next call can take the fast path, else why not (explain() prints it)."""
        return self._current().reason

    def _through_dynamo(self, reason: str, args: tuple, kwargs: dict[str, Any]) -> Any:
        _count_slow(reason)
        try:
            return self.slow(*args, **kwargs)
        finally:
            self.stale = True  # Dynamo may have compiled, reordered or dropped an entry

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        reason, out = self.attempt(args, kwargs)
        return out if reason is None else self._through_dynamo(reason, args, kwargs)

    def attempt(self, args: tuple, kwargs: dict[str, Any]) -> tuple[str | None, Any]:
        """``(None, the call's result)`` on the fast path, else ``(why not, None)`` with nothing
        run: the caller sends the call through Dynamo."""
        if torch.compiler.is_compiling():
            return COMPILING, None
        if self.callback() is not None:
            return UNDER_DYNAMO, None
        if self.eval_frame._stance.stance != "default":
            return STANCE, None
        if not self._reaches_forward():
            return FORWARD_REPLACED, None
        if _has_hooks(self.module):
            return HOOKS, None
        fast = self._current().fast
        if not fast:
            return NOT_ARMED, None
        frame_locals = self.bind(*self.self_arg, *args, **kwargs)
        for check, fn in fast:
            verdict = check(frame_locals)
            if verdict:
                _count_fast(verdict == PASSED_ON_WHOLE_TREE)
                return None, fn(*self.self_arg, *args, **kwargs)
        return GUARDS, None


_DECLINED = object()  # the wrapper's fast call did not run: OptimizedModule.__call__ does


def _serve_wrapper_calls() -> None:
    """Puts the fast path in front of ``OptimizedModule.__call__``, once per process: that call
    enters a context manager and nn.Module's call path before reaching the wrapper's
    ``forward`` (36-46 µs a call on the tiny Flux and SD3 after a replay, bench/fast_path.py).
    A wrapper whose ``forward`` is a ``FastPath`` goes to it directly when nothing that path
    runs could differ: nn.Module's call path on the wrapper (its class's and instance's
    ``_call_impl``), no hooks on it nor global ones, no jit trace, no ``compile()`` of the
    wrapper itself. Every other call, and every call the fast path does not take, runs torch's
    ``__call__``, with no frame of ours between it and the caller (``_C.frameless_method``):
    its warnings name the caller's line, as before. Left alone when someone else replaced
    torch's ``__call__`` already (theirs must keep running). The class itself stays: Dynamo
    inlines a wrapper met inside another compile only when its type is exactly
    ``OptimizedModule``."""
    from torch._dynamo.eval_frame import OptimizedModule, skip_code

    from . import _C

    optimized_call = OptimizedModule.__call__
    if getattr(optimized_call, "__module__", None) != OptimizedModule.__module__:
        return

    def attempt(self: Any, *args: Any, **kwargs: Any) -> Any:
        fast = self.__dict__.get("forward")
        if (
            type(fast) is FastPath
            and self._compiled_call_impl is None
            # torch's __call__ calls nn.Module's, which calls self._call_impl.
            and torch.nn.Module.__call__ is _MODULE_CALL[0]
            and type(self)._call_impl is _MODULE_CALL[2]
            and "_call_impl" not in self.__dict__
            and not torch._C._get_tracing_state()
            and not _has_hooks(self)
            and not _module._has_any_global_hook()
        ):
            reason, out = fast.attempt(args, kwargs)
            if reason is None:
                return out
        return _DECLINED

    skip_code(attempt.__code__)  # as FastPath's frames
    OptimizedModule.__call__ = _C.frameless_method(attempt, optimized_call, _DECLINED)


serve_wrapper_calls = RunOnce("serve OptimizedModule calls", _serve_wrapper_calls)


def _compiled_owners(frame: types.FrameType | None) -> list[tuple[torch.nn.Module, str]]:
    """The modules whose Dynamo-wrapped callable runs below ``frame``, with the attribute
    holding it: the ``OptimizedModule`` whose ``forward`` it is; or, for a module compiled in
    place (``module.compile()``, as regional compilation compiles each repeated block), that
    module first, then every module of its class so compiled under the outermost module
    being called. Dynamo compiles a block class's
    ``forward`` once and serves the other blocks from that cache entry, without calling the
    backend again: they get their fast path here, with the first."""
    from torch._dynamo.eval_frame import OptimizedModule

    wrapped_call = torch.nn.Module._wrapped_call_impl.__code__
    compiled_in_place, outermost = None, None
    while frame is not None:
        owner = frame.f_locals.get("self") if frame.f_code is wrapped_call else None
        if isinstance(owner, OptimizedModule) and compiled_in_place is None:
            return [(owner, "forward")]
        if isinstance(owner, torch.nn.Module):
            outermost = owner
            if compiled_in_place is None and owner._compiled_call_impl is not None:
                compiled_in_place = owner
        frame = frame.f_back
    if compiled_in_place is None:
        return []
    siblings = [
        (m, "_compiled_call_impl")
        for m in outermost.modules()
        if m is not compiled_in_place
        and m._compiled_call_impl is not None
        and type(m) is type(compiled_in_place)
    ]
    return [(compiled_in_place, "_compiled_call_impl"), *siblings]


def install_for_caller() -> None:
    """Called by the backend while Dynamo compiles: puts a ``FastPath`` on the compiled modules
    being called (``_compiled_owners``) whose Dynamo context has this compile's backend, once
    each. A compile not under a module call (``torch.compile(fn)``) is left to Dynamo."""
    backend = None
    for owner, attr in _compiled_owners(sys._getframe(1)):
        slow = owner.__dict__.get(attr)
        module = owner._orig_mod if attr == "forward" else owner
        # A lazy module's forward first initialises it; a forward that is no Python function
        # of the class (an instance attribute, a classmethod) is not the frame Dynamo compiled.
        if (
            slow is None
            or isinstance(slow, FastPath)
            or hasattr(module, "_initialize_hook")
            or not isinstance(getattr(module, "forward", None), types.MethodType)
            or not isinstance(type(module).forward, types.FunctionType)
        ):
            continue
        # The first owner is the one being compiled; blocks compiled apart with other
        # options or another backend keep their own.
        own = _backend_of(owner, slow)
        backend = own if backend is None else backend
        if own is None or own != backend:
            continue
        fast = FastPath(module, slow, own)
        if fast._reaches_forward():
            setattr(owner, attr, fast)
            if attr == "forward":
                serve_wrapper_calls()


def _backend_of(owner: torch.nn.Module, slow: Callable) -> Any:
    """The backend of the Dynamo context behind ``slow`` (the one Dynamo stores on the cache
    entries it compiles for it), or None."""
    from torch._dynamo.eval_frame import _TorchDynamoContext, innermost_backend

    context = getattr(owner, "dynamo_ctx", None)
    if context is None:  # module.compile(): the context is a free variable of its wrapper
        cells = getattr(slow, "__closure__", None) or ()
        contexts = [c.cell_contents for c in cells]
        context = next((c for c in contexts if isinstance(c, _TorchDynamoContext)), None)
    return None if context is None else innermost_backend(context.callback)


def fast_path_of(compiled: Any) -> FastPath | None:
    """The ``FastPath`` on a compiled module (``torch.compile(module)`` or ``module.compile()``),
    or None."""
    if not isinstance(compiled, torch.nn.Module):
        return None
    for attr in ("forward", "_compiled_call_impl"):
        found = compiled.__dict__.get(attr)
        if isinstance(found, FastPath):
            return found
    return None
