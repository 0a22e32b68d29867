# Switchyard's Python tool bridge (embedded in the engine by src/run/pybridge.rs).
#
# Started as `python3 -u -c <this file> [sys.path entries...]`. Speaks JSON lines on private
# duplicates of fd 0 / fd 1; the real fd 0 becomes /dev/null and fd 1 becomes stderr, so a
# tool's prints (Python, C or subprocess) never reach the protocol.
#
# Requests:  {"id": N, "op": "describe" | "call", "path": "pkg.mod.attr", "args": {...}}
#            {"id": N, "op": "hook", "path": "pkg.mod.HookClass", "args": {"method": "before_llm_call",
#             "ctx": {...}}} -> result {"defined": false} or {"defined": true, "ctx": {...}}
#            {"id": N, "op": "define", "path": "module_name", "args": {"source": "..."}}: a module of
#             the engine's own (e.g. the LLLM prompt reader) run from `source` and kept in
#             sys.modules; defining it again with the same source does nothing
# Responses: {"id": N, "ok": true, "result": ...}
#            {"id": N, "ok": false, "kind": "import" | "call", "type", "message",
#             "traceback", "module", "sys_path"}
# First line after start-up: {"ready": true, "python": "3.x.y", "executable": "..."}

import asyncio
import dataclasses
import importlib
import inspect
import json
import os
import select
import sys
import time
import traceback
import typing

_BRIDGE_FILE = inspect.currentframe().f_code.co_filename
_TRACEBACK_LINES = 40


def _channels():
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout.flush()
    os.dup2(2, 1)
    return proto_in, proto_out


class ImportFail(Exception):
    def __init__(self, module, exc=None, message=None):
        Exception.__init__(self, message or _exc_message(exc))
        self.module = module
        self.exc = exc


def _exc_message(e):
    t = type(e)
    name = t.__qualname__
    if t.__module__ not in ("builtins", "__main__"):
        name = t.__module__ + "." + name
    text = str(e)
    return name + ": " + text if text else name


def _traceback_tail(e):
    tb = e.__traceback__ if e is not None else None
    # Drop the bridge's own leading frames: the user wants their code.
    while tb is not None and tb.tb_frame.f_code.co_filename == _BRIDGE_FILE:
        tb = tb.tb_next
    lines = "".join(traceback.format_exception(type(e), e, tb)).rstrip("\n").split("\n")
    return "\n".join(lines[-_TRACEBACK_LINES:])


_RESOLVED = {}


def resolve(path):
    # Modules are imported once per process anyway; remember what a path named.
    hit = _RESOLVED.get(path)
    if hit is not None:
        return hit
    obj = _resolve(path)
    _RESOLVED[path] = obj
    return obj


def _resolve(path):
    parts = path.split(".")
    if len(parts) < 2 or not all(p.isidentifier() for p in parts):
        raise ImportFail(
            path,
            message="'%s' is not an import path; expected 'package.module.attribute'" % path,
        )
    first = None
    for i in range(len(parts) - 1, 0, -1):
        modname = ".".join(parts[:i])
        try:
            mod = importlib.import_module(modname)
        except ModuleNotFoundError as e:
            missing = e.name or ""
            if missing and (modname == missing or modname.startswith(missing + ".")):
                # This module (or a package above it) does not exist: maybe the path names
                # a class attribute, so try a shorter module prefix.
                if first is None:
                    first = ImportFail(modname, e)
                continue
            raise ImportFail(modname, e)
        except BaseException as e:  # noqa: B902 - a module's import-time failure of any kind
            raise ImportFail(modname, e)
        obj = mod
        for attr in parts[i:]:
            try:
                obj = getattr(obj, attr)
            except AttributeError as e:
                if first is not None:
                    raise first
                raise ImportFail(modname, e)
        return obj
    raise first


def _is_lc_tool(obj):
    if inspect.isclass(obj):
        return False
    return hasattr(obj, "name") and (hasattr(obj, "invoke") or hasattr(obj, "ainvoke"))


def _safe_getattr(obj, name):
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def _model_schema(s):
    if isinstance(s, dict):
        return s
    for m in ("model_json_schema", "schema"):
        f = _safe_getattr(s, m)
        if callable(f):
            try:
                r = f()
                if isinstance(r, dict):
                    return r
            except Exception:
                pass
    return None


def _lc_schema(t):
    for attr in ("tool_call_schema", "args_schema"):
        s = _safe_getattr(t, attr)
        if s is not None:
            r = _model_schema(s)
            if r is not None:
                return to_json(r)
    args = _safe_getattr(t, "args")
    if isinstance(args, dict):
        return {"type": "object", "properties": to_json(args)}
    return {"type": "object", "properties": {}}


_SIMPLE = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    tuple: "array",
    set: "array",
    frozenset: "array",
    dict: "object",
    type(None): "null",
}


def _ann_schema(a, depth=0):
    if a is inspect.Parameter.empty or a is typing.Any or depth > 20:
        return {}
    try:
        if a in _SIMPLE:
            return {"type": _SIMPLE[a]}
    except TypeError:
        pass
    origin = typing.get_origin(a)
    targs = typing.get_args(a)
    if origin in (list, set, frozenset, tuple):
        out = {"type": "array"}
        if targs and targs[-1] is not Ellipsis and origin is not tuple:
            out["items"] = _ann_schema(targs[0], depth + 1)
        elif origin is tuple and len(targs) == 2 and targs[1] is Ellipsis:
            out["items"] = _ann_schema(targs[0], depth + 1)
        return out
    if origin is dict:
        out = {"type": "object"}
        if len(targs) == 2 and targs[1] is not typing.Any:
            out["additionalProperties"] = _ann_schema(targs[1], depth + 1)
        return out
    if origin is typing.Literal:
        return {"enum": [to_json(x) for x in targs]}
    if origin is typing.Union or type(a).__name__ == "UnionType":
        rest = [t for t in targs if t is not type(None)]
        if len(rest) == 1:
            return _ann_schema(rest[0], depth + 1)
        return {"anyOf": [_ann_schema(t, depth + 1) for t in targs]}
    s = _model_schema(a) if inspect.isclass(a) and hasattr(a, "model_json_schema") else None
    return to_json(s) if s is not None else {}


def _func_schema(f):
    sig = inspect.signature(f)
    try:
        hints = typing.get_type_hints(f)
    except Exception:
        try:
            hints = typing.get_type_hints(f.__call__)
        except Exception:
            hints = {}
    props = {}
    required = []
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        s = dict(_ann_schema(hints.get(name, p.annotation)))
        if p.default is p.empty:
            required.append(name)
        else:
            try:
                json.dumps(p.default, allow_nan=False)
                s["default"] = p.default
            except (TypeError, ValueError):
                pass
        props[name] = s
    return {"type": "object", "properties": props, "required": required}


def describe(path):
    obj = resolve(path)
    if _is_lc_tool(obj):
        return {
            "name": str(_safe_getattr(obj, "name") or path.rsplit(".", 1)[1]),
            "description": str(_safe_getattr(obj, "description") or ""),
            "schema": _lc_schema(obj),
        }
    if not callable(obj):
        raise ImportFail(
            path.rsplit(".", 1)[0],
            message="'%s' is a %s, not a function or a LangChain tool"
            % (path, type(obj).__name__),
        )
    try:
        schema = _func_schema(obj)
    except (TypeError, ValueError):
        schema = {"type": "object", "properties": {}}
    return {
        "name": str(getattr(obj, "__name__", None) or path.rsplit(".", 1)[1]),
        "description": inspect.getdoc(obj) or "",
        "schema": schema,
    }


async def _await(x):
    return await x


def _finish(x):
    if inspect.isawaitable(x):
        return asyncio.run(_await(x))
    return x


def call(path, args):
    obj = resolve(path)
    if not isinstance(args, dict):
        raise TypeError("tool arguments must be a JSON object, got %s" % type(args).__name__)
    if _is_lc_tool(obj):
        invoke = _safe_getattr(obj, "invoke")
        ainvoke = _safe_getattr(obj, "ainvoke")
        # A LangChain StructuredTool made from a coroutine has no sync function.
        async_only = (
            _safe_getattr(obj, "coroutine") is not None and _safe_getattr(obj, "func") is None
        )
        if ainvoke is not None and (invoke is None or async_only):
            return _finish(ainvoke(args))
        try:
            return _finish(invoke(args))
        except NotImplementedError:
            if ainvoke is None:
                raise
            return _finish(ainvoke(args))
    if not callable(obj):
        raise ImportFail(
            path.rsplit(".", 1)[0],
            message="'%s' is a %s, not a function or a LangChain tool"
            % (path, type(obj).__name__),
        )
    return _finish(obj(**args))


# ---- hooks (sherma hook executors: `hooks: - import_path: pkg.mod.HookClass`) ----------------

_CONTEXT_TYPES = {
    "before_llm_call": "BeforeLLMCallContext",
    "after_llm_call": "AfterLLMCallContext",
    "before_tool_call": "BeforeToolCallContext",
    "after_tool_call": "AfterToolCallContext",
    "before_agent_call": "BeforeAgentCallContext",
    "after_agent_call": "AfterAgentCallContext",
    "before_skill_load": "BeforeSkillLoadContext",
    "after_skill_load": "AfterSkillLoadContext",
    "before_skill_unload": "BeforeSkillUnloadContext",
    "after_skill_unload": "AfterSkillUnloadContext",
    "node_enter": "NodeEnterContext",
    "node_execute": "NodeExecuteContext",
    "node_exit": "NodeExitContext",
    "before_interrupt": "BeforeInterruptContext",
    "after_interrupt": "AfterInterruptContext",
    "on_chat_model_create": "ChatModelCreateContext",
    "before_graph_invoke": "GraphInvokeContext",
    "after_graph_invoke": "AfterGraphInvokeContext",
    "on_node_error": "OnNodeErrorContext",
    "on_error": "OnErrorContext",
}


class _Obj(dict):
    """A JSON object that also reads and writes as attributes (`msg.content`, `tc["name"]`)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value


class _Context(object):
    """Base of the hook context classes: plain attributes, one per context field."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join(sorted(self.__dict__)))


_CTX_CLASSES = {}


def _ctx_class(name):
    cls = _CTX_CLASSES.get(name)
    if cls is None:
        cls = type(name, (_Context,), {})
        _CTX_CLASSES[name] = cls
    return cls


class _BaseHookExecutor(object):
    """Stand-in for sherma.BaseHookExecutor when sherma is not installed: every hook passes."""


for _m in _CONTEXT_TYPES:
    setattr(_BaseHookExecutor, _m, None)


def _install_sherma_shim():
    """Make `from sherma import BaseHookExecutor` and `from sherma.hooks.types import ...` work
    for hook modules when the real sherma package is not importable."""
    if "sherma" in sys.modules:
        return
    try:
        import importlib.util

        if importlib.util.find_spec("sherma") is not None:
            return
    except (ImportError, ValueError):
        pass
    import types

    sherma = types.ModuleType("sherma")
    sherma.__path__ = []
    hooks = types.ModuleType("sherma.hooks")
    hooks.__path__ = []
    htypes = types.ModuleType("sherma.hooks.types")
    executor = types.ModuleType("sherma.hooks.executor")
    sherma.BaseHookExecutor = _BaseHookExecutor
    executor.BaseHookExecutor = _BaseHookExecutor
    hooks.BaseHookExecutor = _BaseHookExecutor
    for name in set(_CONTEXT_TYPES.values()) | {"NodeContext"}:
        setattr(htypes, name, _ctx_class(name))
    sherma.hooks = hooks
    hooks.types = htypes
    hooks.executor = executor
    sys.modules.update(
        {"sherma": sherma, "sherma.hooks": hooks, "sherma.hooks.types": htypes, "sherma.hooks.executor": executor}
    )


def _objects(x):
    if isinstance(x, dict):
        return _Obj((k, _objects(v)) for k, v in x.items())
    if isinstance(x, list):
        return [_objects(v) for v in x]
    return x


def _error_class(name):
    base = {"ValueError": ValueError, "TypeError": TypeError, "KeyError": KeyError, "RuntimeError": RuntimeError}
    return base.get(name) or type(str(name or "Exception"), (Exception,), {})


_HOOK_INSTANCES = {}


def hook(path, args):
    _install_sherma_shim()
    inst = _HOOK_INSTANCES.get(path)
    if inst is None:
        obj = resolve(path)
        inst = obj() if inspect.isclass(obj) else obj
        _HOOK_INSTANCES[path] = inst
    method = str(args.get("method", ""))
    fn = getattr(inst, method, None)
    base = getattr(_BaseHookExecutor, method, None)
    real_base = getattr(sys.modules.get("sherma"), "BaseHookExecutor", None)
    inherited = real_base is not None and getattr(type(inst), method, None) is getattr(real_base, method, object())
    if fn is None or fn is base or inherited or not callable(fn):
        return {"defined": False}
    fields = {}
    for k, v in (args.get("ctx") or {}).items():
        if k == "error" and isinstance(v, dict):
            v = _error_class(v.get("type"))(v.get("message", ""))
        elif k == "state" and isinstance(v, dict):
            v = dict(v)
            if isinstance(v.get("messages"), list):
                v["messages"] = _objects(v["messages"])
        elif isinstance(v, (dict, list)):
            v = _objects(v)
        fields[k] = v
    ctx = _ctx_class(_CONTEXT_TYPES.get(method, "HookContext"))(**fields)
    returned = _finish(fn(ctx))
    if returned is not None:
        ctx = returned
    out = {}
    for k, v in vars(ctx).items():
        if k.startswith("_"):
            continue
        if k == "error":
            out[k] = None if v is None else {"type": type(v).__name__, "message": str(v)}
        elif k == "chat_model" and v is not None:
            out[k] = "%s object" % type(v).__name__
        else:
            out[k] = to_json(v)
    return {"defined": True, "returned": returned is not None, "ctx": out}


def define(name, source):
    if not name or not all(p.isidentifier() for p in name.split(".")):
        raise ValueError("%r is not a module name" % (name,))
    mod = sys.modules.get(name)
    if mod is not None and getattr(mod, "__switchyard_source__", None) == source:
        return {"defined": name}
    import types

    mod = types.ModuleType(name)
    mod.__file__ = "<switchyard:%s>" % name
    mod.__switchyard_source__ = source
    sys.modules[name] = mod
    try:
        exec(compile(source, mod.__file__, "exec"), mod.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    for k in [k for k in _RESOLVED if k.startswith(name + ".")]:
        del _RESOLVED[k]
    return {"defined": name}


def to_json(x, depth=0):
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return x if x == x and x not in (float("inf"), float("-inf")) else str(x)
    if depth > 100:
        return str(x)
    if isinstance(x, dict):
        return {k if isinstance(k, str) else str(k): to_json(v, depth + 1) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_json(v, depth + 1) for v in x]
    dump = _safe_getattr(x, "model_dump")
    if callable(dump) and not inspect.isclass(x):
        try:
            return to_json(dump(), depth + 1)
        except Exception:
            pass
    legacy = _safe_getattr(x, "dict")
    if callable(legacy) and not inspect.isclass(x) and hasattr(x, "__fields__"):
        try:
            return to_json(legacy(), depth + 1)
        except Exception:
            pass
    if dataclasses.is_dataclass(x) and not inspect.isclass(x):
        try:
            return to_json(dataclasses.asdict(x), depth + 1)
        except Exception:
            pass
    try:
        return str(x)
    except Exception as e:
        return "<%s: str() failed: %s>" % (type(x).__name__, _exc_message(e))


def _error(rid, kind, e, module=None, message=None):
    return {
        "id": rid,
        "ok": False,
        "kind": kind,
        "type": type(e).__name__ if e is not None else "",
        "message": message if message is not None else _exc_message(e),
        "traceback": _traceback_tail(e) if e is not None else "",
        "module": module,
        "missing": getattr(e, "name", None) if isinstance(e, ModuleNotFoundError) else None,
        "sys_path": list(sys.path),
    }


def handle(req):
    rid = req.get("id")
    op = req.get("op")
    path = str(req.get("path", ""))
    try:
        if op == "describe":
            result = describe(path)
        elif op == "call":
            result = to_json(call(path, req.get("args")))
        elif op == "hook":
            result = hook(path, req.get("args") or {})
        elif op == "define":
            result = define(path, str((req.get("args") or {}).get("source", "")))
        else:
            return _error(rid, "call", None, message="unknown bridge op %r" % (op,))
    except ImportFail as e:
        return _error(rid, "import", e.exc, module=e.module, message=str(e))
    except BaseException as e:  # noqa: B902 - SystemExit etc. from a tool must not end the bridge
        return _error(rid, "call", e)
    return {"id": rid, "ok": True, "result": result}


# After a reply the next request often follows within microseconds (several tool calls of one
# model answer, a tool loop): look for it briefly before sleeping in `readline`, which saves the
# wake-up of a sleeping process (tens of µs, more on a VM). The engine side does the same.
_SPIN_SECONDS = 0.0003


def _await_request(fd):
    end = time.perf_counter() + _SPIN_SECONDS
    try:
        while time.perf_counter() < end:
            if select.select([fd], [], [], 0)[0]:
                return
    except (OSError, ValueError):
        pass


def main():
    proto_in, proto_out = _channels()
    if sys.path and sys.path[0] == "":
        del sys.path[0]
    sys.path[:0] = [p for p in sys.argv[1:] if p not in sys.path]

    def send(obj):
        try:
            data = json.dumps(obj, ensure_ascii=True, allow_nan=False)
        except (TypeError, ValueError) as e:
            data = json.dumps(_error(obj.get("id"), "call", e))
        proto_out.write(data.encode("ascii") + b"\n")
        proto_out.flush()

    send(
        {
            "ready": True,
            "python": "%d.%d.%d" % sys.version_info[:3],
            "executable": sys.executable,
        }
    )
    fd = proto_in.fileno()
    while True:
        _await_request(fd)
        line = proto_in.readline()
        if not line:
            return
        try:
            req = json.loads(line)
        except ValueError as e:
            send(_error(None, "call", e))
            continue
        resp = handle(req)
        sys.stdout.flush()
        sys.stderr.flush()
        send(resp)


main()
