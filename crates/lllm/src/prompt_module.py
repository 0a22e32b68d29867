# Switchyard's reader of LLLM prompt modules, defined in the Python bridge as module
# `switchyard_lllm` (crates/lllm/src/prompt.rs sends it with the bridge's `define` op).
#
# load(file, module, path):  import the prompt module `file` (as LLLM's discovery does: by file,
#   under the name `module`) and describe the `Prompt` object whose `path` is `path`: its
#   template, parser tags, output format (a JSON Schema), handler messages and declared tools.
#   Import failures and a missing prompt are returned as {"error": ...}, positioned.
# discover(folders, key):  a prompt no module declares by name (`path="..."`): import every module
#   of the prompt folders ([[folder, prefix], ...]) as LLLM's discovery does and find the `Prompt`
#   registered under `key`; then as `load`, with the module found ("file", "module", "path").
# parse(file, module, path, content):  a reply parsed by the prompt's own parser class (one that is
#   not DefaultTagParser): {"errors": [...]} (what it raised) and {"parsed": ...}.
# call_function(file, module, path, function, args):  call a function the prompt declares
#   (`function_list`), its result put in words by the function's processor, as LLLM feeds it back.
#
# When the real `lllm` package is importable it is used; otherwise a small stand-in (`lllm`,
# `lllm.core.prompt`, `lllm.models`, ...) captures `Prompt(...)` declarations, so prompt modules
# load without upstream installed.

import importlib.util
import inspect
import os
import re
import sys
import traceback
import types

_LOADED = {}


# ---- the stand-in `lllm` package ---------------------------------------------------------------

_EXCEPTION_MSG = "Error: {error_message}. Please fix."
_INTERRUPT_MSG = "{call_results}"
_INTERRUPT_FINAL_MSG = "You are reaching the limit of tool calls. Provide the final response."


class _Fields(object):
    _defaults = {}

    def __init__(self, *args, **kwargs):
        for k, v in self._defaults.items():
            setattr(self, k, list(v) if isinstance(v, list) else v)
        for k, v in kwargs.items():
            setattr(self, k, v)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join("%s=%r" % kv for kv in sorted(vars(self).items())))


class ParseError(Exception):
    def __init__(self, message, detail=""):
        Exception.__init__(self, message)
        self.message = message
        self.detail = detail


def find_xml_blocks(text, tag):
    return re.findall(r"<%s>(.*?)</%s>" % (tag, tag), text, re.DOTALL)


def find_md_blocks(text, tag):
    return [m.strip() for m in re.findall(r"```%s(.*?)```" % re.escape(tag), text, re.DOTALL)]


class BaseParser(_Fields):
    def parse(self, content, **runtime_args):
        raise NotImplementedError


class DefaultTagParser(BaseParser):
    _defaults = {"xml_tags": [], "md_tags": [], "signal_tags": [], "required_xml_tags": [], "required_md_tags": [], "parser_args": {}}

    def parse(self, content, **runtime_args):
        errors, xml, md = [], {}, {}
        for tag in self.xml_tags:
            xml[tag] = find_xml_blocks(content, tag)
            if not xml[tag]:
                errors.append("No %s tags found, it should be provided as <%s>...</%s>" % (tag, tag, tag))
        for tag in self.md_tags:
            md[tag] = find_md_blocks(content, tag)
            if not md[tag]:
                errors.append("No %s tags found, it should be provided as ```%s ... ```" % (tag, tag))
        for tag in self.required_xml_tags:
            if tag not in xml:
                errors.append("Missing required XML tag: <%s>" % tag)
        for tag in self.required_md_tags:
            if tag not in md:
                errors.append("Missing required markdown section: %s" % tag)
        if errors:
            raise ParseError("Parsing errors:\n" + "\n".join(errors))
        return {"raw": content, "xml_tags": xml, "md_tags": md, "signal_tags": {k: "<%s>" % k in content for k in self.signal_tags}}


class BaseHandler(_Fields):
    pass


class DefaultSimpleHandler(BaseHandler):
    _defaults = {"exception_msg": _EXCEPTION_MSG, "interrupt_msg": _INTERRUPT_MSG, "interrupt_final_msg": _INTERRUPT_FINAL_MSG}


def _default_processor(result, function_call):
    return "Return of calling function %s with arguments %s:\n---\n%s\n---\n" % (
        function_call.name,
        function_call.arguments,
        result,
    )


class Function(_Fields):
    _defaults = {"required": [], "additional_properties": False, "strict": True, "function": None, "processor": _default_processor}

    def link_function(self, fn):
        self.function = fn

    @classmethod
    def from_callable(cls, fn, name=None, description=None, prop_desc=None, strict=True, processor=_default_processor):
        simple = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}
        props, required = {}, []
        for pname, p in inspect.signature(fn).parameters.items():
            if pname in ("self", "cls") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            prop = {"type": simple.get(p.annotation, "string")}
            if prop_desc and pname in prop_desc:
                prop["description"] = prop_desc[pname]
            if p.default is p.empty:
                required.append(pname)
            props[pname] = prop
        return cls(
            name=name or fn.__name__,
            description=description or inspect.getdoc(fn) or fn.__name__,
            properties=props,
            required=required,
            strict=strict,
            function=fn,
            processor=processor,
        )


def tool(description=None, prop_desc=None, name=None, strict=True, processor=_default_processor):
    def decorator(fn):
        return Function.from_callable(fn, name=name, description=description, prop_desc=prop_desc, strict=strict, processor=processor)

    return decorator


class MCP(_Fields):
    pass


class Prompt(_Fields):
    _defaults = {
        "metadata": {},
        "parser": None,
        "format": None,
        "function_list": [],
        "mcp_servers_list": [],
        "addon_args": {},
        "handler": None,
    }

    def __init__(self, *args, **kwargs):
        _Fields.__init__(self, **kwargs)
        if self.handler is None:
            self.handler = DefaultSimpleHandler()

    def extend(self, **overrides):
        fields = dict(vars(self))
        fields.update(overrides)
        return Prompt(**fields)


PROMPT_REGISTRY = {}


def register_prompt(prompt, overwrite=True):
    PROMPT_REGISTRY[prompt.path] = prompt


def load_prompt(path, runtime=None):
    return PROMPT_REGISTRY[path]


def _real_lllm():
    mod = sys.modules.get("lllm")
    if mod is not None:
        return not getattr(mod, "__switchyard_standin__", False)
    try:
        return importlib.util.find_spec("lllm") is not None
    except (ImportError, ValueError):
        return False


def _install_standin():
    if "lllm" in sys.modules:
        return
    names = ["lllm", "lllm.core", "lllm.core.prompt", "lllm.core.models", "lllm.core.const", "lllm.models", "lllm.llm", "lllm.utils"]
    mods = {}
    for n in names:
        m = types.ModuleType(n)
        m.__switchyard_standin__ = True
        if n in ("lllm", "lllm.core"):
            m.__path__ = []
        for attr in (
            "Prompt",
            "DefaultTagParser",
            "DefaultSimpleHandler",
            "BaseParser",
            "BaseHandler",
            "Function",
            "MCP",
            "tool",
            "register_prompt",
            "load_prompt",
            "PROMPT_REGISTRY",
            "ParseError",
            "find_xml_blocks",
            "find_md_blocks",
        ):
            setattr(m, attr, globals()[attr])
        mods[n] = m
    mods["lllm"].core = mods["lllm.core"]
    mods["lllm"].models = mods["lllm.models"]
    mods["lllm"].llm = mods["lllm.llm"]
    mods["lllm"].utils = mods["lllm.utils"]
    mods["lllm.core"].const = mods["lllm.core.const"]
    mods["lllm.core"].prompt = mods["lllm.core.prompt"]
    mods["lllm.core"].models = mods["lllm.core.models"]
    sys.modules.update(mods)


# ---- loading a prompt module -------------------------------------------------------------------


def _message(e):
    text = str(e)
    return "%s: %s" % (type(e).__name__, text) if text else type(e).__name__


def _import(file, module):
    st = os.stat(file)
    key = (file, module, st.st_mtime_ns, st.st_size)
    hit = _LOADED.get(key)
    if hit is not None:
        return hit, None
    if not _real_lllm():
        _install_standin()
    try:
        spec = importlib.util.spec_from_file_location(module, file)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[module] = mod
        spec.loader.exec_module(mod)
    except BaseException as e:  # noqa: B902 - whatever the module raises while importing
        sys.modules.pop(module, None)
        frames = traceback.extract_tb(e.__traceback__)
        line = None
        for f in frames:
            if os.path.abspath(f.filename) == os.path.abspath(file):
                line = f.lineno
        if isinstance(e, SyntaxError) and e.filename and os.path.abspath(e.filename) == os.path.abspath(file):
            line = e.lineno
        inner = frames[-1] if frames else None
        return None, {
            "error": "import",
            "type": type(e).__name__,
            "message": _message(e),
            "line": line,
            "missing": getattr(e, "name", None) if isinstance(e, ModuleNotFoundError) else None,
            "at": "%s:%d" % (inner.filename, inner.lineno) if inner is not None else None,
        }
    _LOADED[key] = mod
    return mod, None


def _is_prompt(v):
    if inspect.isclass(v) or type(v).__name__ != "Prompt":
        return False
    return isinstance(getattr(v, "path", None), str) and isinstance(getattr(v, "prompt", None), str)


def _find(file, module, path):
    mod, err = _import(file, module)
    if err is not None:
        return None, err
    found = None
    paths = []
    for _, v in vars(mod).items():
        if _is_prompt(v):
            paths.append(v.path)
            if v.path == path:
                found = v  # the last one wins, as LLLM's registry overwrites
    if found is None:
        return None, {"error": "missing", "prompts": paths}
    return found, None


def _strings(v):
    if not v:
        return []
    if isinstance(v, str):
        return [v]
    return [str(x) for x in v]


def _text(h):
    if h is None or isinstance(h, str):
        return h
    if _is_prompt(h):
        return h.prompt
    return None


def _schema(fmt, warnings):
    if fmt is None:
        return None
    if isinstance(fmt, dict):
        return fmt
    if isinstance(fmt, str) and fmt.lower() == "json":
        return "json"
    for m in ("model_json_schema", "schema"):
        f = getattr(fmt, m, None)
        if callable(f):
            try:
                r = f()
                if isinstance(r, dict):
                    return r
            except Exception as e:  # noqa: B902
                warnings.append("the prompt's format %r gave no JSON Schema (%s); replies are checked as JSON only" % (fmt, _message(e)))
                return "json"
    warnings.append("the prompt's format %r is not a pydantic model or a JSON Schema; replies are checked as JSON only" % (fmt,))
    return "json"


def _functions(p):
    # `function_list` today, `functions_list` in LLLM 2025-11 (`lllm.models`).
    return list(getattr(p, "function_list", None) or getattr(p, "functions_list", None) or [])


def _tool(f):
    params = {"type": "object", "properties": getattr(f, "properties", None) or {}, "required": list(getattr(f, "required", None) or [])}
    return {"name": str(f.name), "description": str(getattr(f, "description", "") or ""), "parameters": params}


def load(file, module, path):
    p, err = _find(file, module, path)
    if err is not None:
        return err
    warnings = []
    parser = getattr(p, "parser", None)
    tags = parser if parser is not None and hasattr(parser, "xml_tags") else p
    front = {}
    for k in ("xml_tags", "md_tags", "signal_tags", "required_xml_tags", "required_md_tags"):
        front[k] = _strings(getattr(tags, k, None))
    custom = None
    if parser is not None and type(parser).__name__ != "DefaultTagParser":
        if callable(getattr(parser, "parse", None)):
            custom = type(parser).__name__
        else:
            warnings.append("the prompt's parser %r has no parse method: replies are checked with the tags it declares" % (parser,))
    front["format"] = _schema(getattr(p, "format", None), warnings)
    h = getattr(p, "handler", None)
    if hasattr(p, "exception_prompt"):
        # LLLM 2025-11: the handler messages are fields of the Prompt.
        msgs = (p.exception_prompt, getattr(p, "interrupt_prompt", None), getattr(p, "interrupt_final_prompt", None))
    elif h is not None and hasattr(h, "exception_msg"):
        msgs = (h.exception_msg, getattr(h, "interrupt_msg", None), getattr(h, "interrupt_final_msg", None))
    else:
        msgs = (None, None, None)
        if h is not None:
            warnings.append("the prompt's handler %s is its own code: LLLM's default handler messages are used" % type(h).__name__)
    for k, m in zip(("on_exception", "on_interrupt", "on_interrupt_final"), msgs):
        t = _text(m)
        if t is not None:
            front[k] = t
    tools = []
    for f in _functions(p):
        if getattr(f, "name", None):
            tools.append(_tool(f))
            if getattr(f, "function", None) is None:
                warnings.append("the prompt's function `%s` is declared without an implementation (link_function): calling it fails" % f.name)
    if getattr(p, "mcp_servers_list", None):
        warnings.append("the prompt's MCP servers (provider-hosted MCP) are not offered")
    real = _real_lllm()
    return {
        "template": p.prompt,
        "front": front,
        "tools": tools,
        "parser": custom,
        "warnings": warnings,
        "lllm": "the installed lllm package" if real else "Switchyard's stand-in for lllm",
    }


_MAX_MODULES = 500


def _module_name(file):
    return "_lllm_prompts.d_" + "".join(c if c.isalnum() else "_" for c in os.path.abspath(file))


def discover(folders, key):
    failures = []
    found = None
    seen = 0
    for root, prefix in folders:
        if not os.path.isdir(root):
            continue
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__" and not x.startswith("."))
            files.extend(os.path.join(d, n) for n in sorted(names) if n.endswith(".py") and not n.startswith("_"))
        for f in files:
            seen += 1
            if seen > _MAX_MODULES:
                break
            rel = os.path.relpath(f, root)[: -len(".py")].replace(os.sep, "/")
            module = _module_name(f)
            mod, err = _import(f, module)
            if err is not None:
                err["file"] = f
                failures.append(err)
                continue
            for v in vars(mod).values():
                if not _is_prompt(v):
                    continue
                # LLLM's key (prefix/module/path), and the one Switchyard's reading of a
                # declaration gives (a path with a "/" taken as it is).
                keys = {"/".join(x for x in (prefix, rel, v.path) if x)}
                own = v.path if "/" in v.path else rel + "/" + v.path
                keys.add(prefix + "/" + own if prefix else own)
                if key in keys:
                    found = (f, module, v.path)
    if found is None:
        return {"error": "undiscovered", "modules": seen, "failures": failures}
    out = load(found[0], found[1], found[2])
    out.update({"file": found[0], "module": found[1], "path": found[2]})
    for e in failures:
        out.setdefault("warnings", []).append(
            "the prompt module %s:%s did not import (%s); LLLM skips it too" % (e["file"], e.get("line") or 1, e.get("message"))
        )
    return out


def parse(file, module, path, content):
    p, err = _find(file, module, path)
    if err is not None:
        raise RuntimeError("prompt `%s` of %s cannot be loaded: %s" % (path, file, err.get("message") or err))
    try:
        whole = getattr(p, "parse", None)
        parsed = whole(content) if callable(whole) else p.parser.parse(content)
    except Exception as e:  # noqa: B902 - LLLM's invoker records any exception of the parser
        return {"errors": [str(e) or type(e).__name__], "parsed": None}
    if isinstance(parsed, dict) and "raw" not in parsed:
        parsed["raw"] = content
    return {"errors": [], "parsed": parsed}


class _Call(object):
    def __init__(self, name, arguments):
        self.name = name
        self.arguments = arguments
        self.result = None
        self.result_str = None
        self.error_message = None


def call_function(file, module, path, function, args):
    p, err = _find(file, module, path)
    if err is not None:
        raise RuntimeError("prompt `%s` of %s cannot be loaded: %s" % (path, file, err.get("message") or err))
    for f in _functions(p):
        if getattr(f, "name", None) == function:
            fn = getattr(f, "function", None)
            if fn is None:
                raise RuntimeError("function `%s` of prompt `%s` has no implementation (link_function)" % (function, path))
            result = fn(**(args or {}))
            processor = getattr(f, "processor", None) or _default_processor
            try:
                return str(processor(result, _Call(function, args)))
            except Exception:  # noqa: B902 - a processor written for LLLM's own FunctionCall
                return _default_processor(result, _Call(function, args))
    raise RuntimeError("prompt `%s` declares no function `%s`" % (path, function))
