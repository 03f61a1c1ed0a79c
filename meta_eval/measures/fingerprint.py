"""The code a measure runs, as a hash: what a cache of the measure's results is keyed on.

A measure's values depend on its function, on the module around it (constants, helpers) and on the modules it
imports. Hashing the function's own source misses all but the first, so this module hashes *modules*: a module's
file and, transitively, every module it imports that is *local* (found by reading its ``import`` statements,
including those inside functions, without importing anything): a module outside the standard library and
site-packages, or inside the same top-level package as the module hashed. Other packages enter with their
version. meta-eval's own code is hashed the same way (:func:`meta_eval_fingerprint`), because an editable install
keeps its version number across commits.

What cannot be keyed soundly is said so (:func:`measure_fingerprint` returns None and the reason): a function
defined in ``__main__`` or a notebook, a lambda, a closure or callable object made at run time (their state is in
no file). A function loaded from a plug-in specification is keyed by its module, which creates it, lambdas and
closures included.

Not seen by any hash: files a plug-in reads (data, weights) and code it loads dynamically (``importlib``,
``exec``); a module edited after the process imported it is keyed by the file on disk.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import inspect
import marshal
import os
import re
import sys
import sysconfig
import types
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

#: meta-eval's modules whose code a solved MEM distribution depends on (their imports are followed).
MEM_ROOTS = ("meta_eval.statistics.maxent.pr_inference", "meta_eval.statistics.maxent.solver", "meta_eval.statistics.maxent.forms", "meta_eval.measures")


@lru_cache(maxsize=1)
def _system_roots() -> tuple[Path, ...]:
    """The folders of the standard library and of installed packages."""
    import site

    paths = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths |= set(site.getsitepackages()) | {site.getusersitepackages()}
    return tuple(Path(p).resolve() for p in paths if p)


def module_file(name: str) -> Path | None:
    """The file of module ``name`` (imported or not: nothing is imported to find it); None for a built-in,
    namespace or unknown module."""
    parts = name.split(".")
    search, origin = None, None
    for i in range(1, len(parts) + 1):
        full = ".".join(parts[:i])
        module = sys.modules.get(full)
        if module is not None:
            origin, search = getattr(module, "__file__", None), getattr(module, "__path__", None)
        else:
            try:
                spec = importlib.machinery.PathFinder.find_spec(full, search)
            except (ImportError, ValueError, AttributeError):
                return None
            if spec is None:
                return None
            origin = spec.origin if spec.has_location else None
            search = spec.submodule_search_locations
        if i < len(parts) and search is None:
            return None
    return Path(origin).resolve() if origin and os.path.isfile(origin) else None


_TYPE_CHECKING = re.compile(r"if\s+(?:typing\.)?TYPE_CHECKING\s*:")
_FROM = re.compile(r"from\s+(\.*[\w.]*)\s+import\s+(.*)")
_IMPORT = re.compile(r"import\s+(.*)")


def _imported_names(source: bytes, package: str) -> set[str]:
    """Every module name an import statement of the source may load (``a.b`` gives ``a`` and ``a.b``; ``from a
    import b`` also ``a.b``, which is kept only if it is a module), imports inside functions included and those
    under ``if TYPE_CHECKING:`` left out.

    Read line by line rather than with :mod:`ast`, which takes about a hundred times longer (meta-eval's own key
    would cost a second per process): a line of a docstring that reads like an import only adds a module to the
    key, which is safe."""
    names: set[str] = set()
    lines = source.decode("utf-8", "replace").splitlines()
    skip_below = None  # indentation of an "if TYPE_CHECKING:" whose block is being skipped
    i = 0
    while i < len(lines):
        stripped = lines[i].lstrip()
        indent = len(lines[i]) - len(stripped)
        i += 1
        if skip_below is not None and (not stripped or indent > skip_below):
            continue
        skip_below = None
        if _TYPE_CHECKING.match(stripped):
            skip_below = indent
            continue
        match = _FROM.match(stripped) or _IMPORT.match(stripped)
        if match is None:
            continue
        listed = match.groups()[-1]
        if listed.lstrip().startswith("(") and ")" not in listed:  # from a import (b,\n c)
            while i < len(lines) and ")" not in listed:
                listed += " " + lines[i]
                i += 1
        items = [item.split()[0] for item in re.sub(r"#.*", "", listed).strip("()\\ ").split(",") if item.split()]
        if match.re is _IMPORT:
            bases = items
        else:
            base = match[1]
            if base.startswith("."):
                if not package:
                    continue
                try:
                    base = importlib.util.resolve_name(base, package)
                except (ImportError, ValueError):
                    continue
            bases = [base] + [f"{base}.{item}" for item in items if item != "*"]
        for base in bases:
            parts = base.strip("()").split(".")
            names.update(".".join(parts[:k]) for k in range(1, len(parts) + 1))
    return {n for n in names if n and all(part.isidentifier() for part in n.split("."))}


@lru_cache(maxsize=None)
def installed_version(package: str) -> str:
    """The installed version of the distribution named like an import (whether or not it is imported yet, so the
    key is the same in every process); "" when there is none by that name."""
    from importlib import metadata

    try:
        return metadata.version(package)
    except (metadata.PackageNotFoundError, ValueError):
        return ""


def _is_local(path: Path, name: str, top: str) -> bool:
    first = name.split(".")[0]
    if first == top:
        return True
    if first == "meta_eval":  # meta-eval's own code is keyed by meta_eval_fingerprint
        return False
    return not any(path.is_relative_to(root) for root in _system_roots())


@dataclass(frozen=True)
class Closure:
    """The files of a module and of its local imports (transitively), and the other packages' versions.

    Attributes
    ----------
    files : dict
        Module name (the root under its label) -> (file, sha256 of its bytes).
    versions : dict
        Top-level package (not of the standard library) -> the version of the distribution of that name ("" if
        none).
    """

    files: dict
    versions: dict

    @property
    def digest(self) -> str:
        """sha256 (hex) of the module names, their files' hashes and the versions (not of where the files lie)."""
        h = hashlib.sha256()
        for key in sorted(self.files):
            h.update(f"{key}\0{self.files[key][1]}\n".encode())
        for key in sorted(self.versions):
            h.update(f"version {key}\0{self.versions[key]}\n".encode())
        return h.hexdigest()

    def changed(self) -> list[str]:
        """The modules whose file no longer holds what was hashed (edited, or gone)."""
        out = []
        for key, (path, digest) in self.files.items():
            try:
                now = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            except OSError:
                now = ""
            if now != digest:
                out.append(key)
        return out


def closure(name: str, path: Path, package: str = "", root_label: str | None = None, seen: dict | None = None
            ) -> Closure:
    """The :class:`Closure` of a module.

    Parameters
    ----------
    name : str
        The module's name (its top-level package decides what else is local).
    path : Path
        Its file.
    package : str
        Its package, for relative imports ("" for a file loaded on its own).
    root_label : str, optional
        The name the module's own file is hashed under (default ``name``; a plug-in file loaded under a name made
        from its path is hashed under a fixed label, so the key does not depend on where the folder lies).
    seen : dict, optional
        Modules already hashed (not followed again): the files of an earlier closure.
    """
    top = name.split(".")[0]
    files: dict[str, tuple[str, str]] = {}
    versions: dict[str, str] = {}
    queue = [(name, Path(path), package)]
    done: set[Path] = {Path(p) for p, _ in (seen or {}).values()}
    while queue:
        mod_name, mod_path, mod_package = queue.pop()
        if mod_path in done:
            continue
        done.add(mod_path)
        data = mod_path.read_bytes()
        label = root_label if mod_name == name and root_label else mod_name
        files[label] = (str(mod_path), hashlib.sha256(data).hexdigest())
        if mod_path.suffix != ".py":
            continue
        for dep in sorted(_imported_names(data, mod_package)):
            dep_path = module_file(dep)
            if dep_path is None:
                continue
            if _is_local(dep_path, dep, top):
                queue.append((dep, dep_path, dep if dep_path.name == "__init__.py" else dep.rpartition(".")[0]))
            elif dep.split(".")[0] not in sys.stdlib_module_names:
                versions[dep.split(".")[0]] = installed_version(dep.split(".")[0])
    return Closure(files, versions)


def module_fingerprint(name: str, path: Path, package: str = "", root_label: str | None = None) -> str:
    """sha256 (hex) of a module's :func:`closure`."""
    return closure(name, path, package, root_label).digest


@lru_cache(maxsize=1)
def meta_eval_fingerprint() -> str:
    """meta-eval's own code behind a MEM result (:data:`MEM_ROOTS` and everything they import within meta-eval,
    ``TYPE_CHECKING`` imports aside), with the versions of the packages it uses and of Python; once per process."""
    import importlib

    files: dict = {}
    versions: dict = {}
    for root in MEM_ROOTS:
        if root in files:
            continue
        module = importlib.import_module(root)
        path = Path(module.__file__).resolve()
        found = closure(root, path, root if path.name == "__init__.py" else root.rpartition(".")[0], seen=files)
        files.update(found.files)
        versions.update(found.versions)
    versions["python"] = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return Closure(files, versions).digest


def function_fingerprint(func) -> tuple[str | None, str]:
    """(hash, "") of a function made by importable code in this process — its module's fingerprint and its own
    compiled code — or (None, why it cannot be keyed soundly)."""
    func = inspect.unwrap(getattr(func, "per_list", func))
    func = inspect.unwrap(getattr(func, "py_func", func))  # a numba dispatcher's Python function
    label = getattr(func, "__qualname__", type(func).__name__)
    if not isinstance(func, types.FunctionType):
        return None, f"{label} is a {type(func).__name__} object, whose state is in no file"
    if func.__name__ == "<lambda>":
        return None, "it is a lambda (name the function and put it in a module)"
    if func.__closure__:
        return None, f"{label} is a closure: the values it captured are in no file"
    module = sys.modules.get(func.__module__)
    file = getattr(module, "__file__", None)
    if module is None or func.__module__ == "__main__" or not file or not os.path.isfile(file):
        return None, f"{label} is defined in {func.__module__} (a script or notebook), not in a module file"
    path = Path(file).resolve()
    package = module.__name__ if path.name == "__init__.py" else module.__name__.rpartition(".")[0]
    h = hashlib.sha256(module_fingerprint(module.__name__, path, package).encode())
    h.update(f"{func.__qualname__}\0".encode())
    h.update(marshal.dumps(func.__code__))
    return h.hexdigest(), ""
