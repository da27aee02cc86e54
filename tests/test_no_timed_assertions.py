"""No assertion reads a wall clock (issue 55): a test asserts behaviour, and a busy machine's seconds
are no behaviour of the code. Speed is a benchmark's (benchmarks/, docs/benchmarks.md).

The check reads every test module's syntax tree: a value is *timed* when it comes from
``time.monotonic()`` or ``time.perf_counter()`` (or their ``_ns`` forms), from a name given a timed
value, or from a call of a function of the same module that returns one (position by position for a
function returning a tuple, as ``answer, took = _arrive(...)``). An ``assert`` whose comparison has a
timed side fails the check. ``time.time()`` is left out: tests use it as a timestamp to sign or to
date (webhook signatures, a token's age), which is data, not a measured duration. A bounded wait for
something to happen (``while ... and time.monotonic() < deadline``) is no assertion either; the
assertion after it states what happened. Durations recorded by a fake server (when each call came)
are not seen: the reviewer's part.

What still times itself is listed in :data:`KNOWN` with its count of timed assertions; the counts
may only fall, and a module not listed may have none.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"monotonic", "perf_counter", "monotonic_ns", "perf_counter_ns"}

#: Timed assertions not yet replaced, per module (relative to tests/): none left (issue 55). Only ever lower these.
KNOWN: dict[str, int] = {}


def _is_clock(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in CLOCKS
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "time"
    )


class _Module:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        self.returns: dict[str, bool | tuple[bool, ...] | None] = {}
        for _ in range(3):  # a function returning another's timed value
            for function in self.functions:
                self.returns[function.name] = self._returns(function)

    def _timed(self, node: ast.AST, names: set[str]) -> bool:
        for sub in ast.walk(node):
            if _is_clock(sub) or (isinstance(sub, ast.Name) and sub.id in names):
                return True
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and self.returns.get(sub.func.id) is True:
                return True
        return False

    def _mark(self, target: ast.AST, value: ast.AST, names: set[str]) -> None:
        returned = None
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            returned = self.returns.get(value.func.id)
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(returned, tuple) and len(returned) == len(target.elts):
                names.update(
                    t.id for t, timed in zip(target.elts, returned, strict=True) if timed and isinstance(t, ast.Name)
                )
            elif isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts, strict=True):
                    self._mark(t, v, names)
            elif returned is True or self._timed(value, names):
                names.update(t.id for t in target.elts if isinstance(t, ast.Name))
        elif isinstance(target, ast.Name) and (returned is True or self._timed(value, names)):
            names.add(target.id)

    def _names(self, function: ast.AST) -> set[str]:
        names: set[str] = set()
        for _ in range(4):  # until the chain of assignments settles
            for node in ast.walk(function):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        self._mark(target, node.value, names)
                elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                    self._mark(node.target, node.value, names)
        return names

    def _returns(self, function: ast.AST) -> bool | tuple[bool, ...] | None:
        names, found = self._names(function), None
        for node in ast.walk(function):
            if isinstance(node, ast.Return) and node.value is not None:
                if isinstance(node.value, ast.Tuple):
                    each = tuple(self._timed(e, names) for e in node.value.elts)
                    found = each if any(each) else found
                elif self._timed(node.value, names):
                    found = True
        return found

    def timed_assertions(self) -> list[int]:
        lines = set()
        for function in self.functions:
            names = self._names(function)
            for node in ast.walk(function):
                if isinstance(node, ast.Assert) and any(
                    isinstance(c, ast.Compare) and any(self._timed(side, names) for side in (c.left, *c.comparators))
                    for c in ast.walk(node.test)
                ):
                    lines.add(node.lineno)
        return sorted(lines)


def timed_assertions(source: str) -> list[int]:
    """The lines of ``source``'s assertions that compare a timed value."""
    return _Module(ast.parse(source)).timed_assertions()


def test_the_check_sees_a_timed_assertion_and_not_a_timestamp():
    timed = """
import time
def _arrive(client):
    started = time.monotonic()
    answer = client.get("/")
    return answer, time.monotonic() - started
def test_a(client):
    started = time.perf_counter()
    work()
    elapsed = time.perf_counter() - started
    assert elapsed < 4.0
def test_b(client):
    answer, took = _arrive(client)
    assert answer.status_code == 202
    assert took < 2
def test_c(server):
    deadline = time.monotonic() + 10
    while not server.done and time.monotonic() < deadline:
        pass
    assert server.done
    assert sign(payload, int(time.time()) - 301) == "stale"
"""
    assert timed_assertions(timed) == [11, 15]


def test_no_test_asserts_on_a_wall_clock():
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if not any(clock in source for clock in CLOCKS):  # no clock read: nothing to parse
            continue
        lines = timed_assertions(source)
        if lines:
            found[path.relative_to(TESTS).as_posix()] = lines
    over = {module: lines for module, lines in found.items() if len(lines) > KNOWN.get(module, 0)}
    assert not over, (
        "assertions on a wall-clock time (assert behaviour: counts, calls, states; time it in benchmarks/): "
        + "; ".join(f"{module}: lines {lines}" for module, lines in over.items())
    )
    fallen = {
        module: len(found.get(module, [])) for module, count in KNOWN.items() if len(found.get(module, [])) < count
    }
    assert not fallen, f"fewer timed assertions than KNOWN says: lower it to {fallen}"
