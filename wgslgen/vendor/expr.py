"""Kernel expressions → small JSON trees that every language evaluates without a parser.

A kernel's dispatch, count, derived and precondition expressions are Jinja expressions
(``(history_len + chunk - 1) // chunk``, ``[1, wg // ([1, out_cols] | max)] | max``). For one
variant the axis values are known, so they are folded in; what is left only names problem
sizes and derived values. The text is parsed by Jinja's sandboxed parser into its AST and
walked here: nothing is ever evaluated by Python's ``eval``.

Tree nodes: ``{"op": "const", "value": int}``, ``{"op": "fconst", "value": float}``,
``{"op": "var", "name": str}`` and ``{"op": OP, "args": [...]}`` with OP one of add, sub, mul,
div (floor, ``//``), fdiv (true division, ``/``), mod, ceil_div, min, max, abs, int (Python's
``int()``: toward zero), float, lt, le, gt, ge, eq, ne, and, or, not, select (cond, then, else).

Values are integers or floats, as in Python (and so in Jinja, which wgslgen evaluates the
same expressions with): ``fconst``, ``fdiv`` and ``float`` give a float, ``int`` an integer,
comparisons and logic 0 or 1, and every other op a float when an operand is one (``//`` and
``%`` on floats floor like Python's). A var is a float when it names a float size (a shape
value such as eps = 1e-5, the variant's ``float_sizes``) or a float derived value. ``is_float``
gives this static type: the Rust binding declares its variables with it; the others follow
the values. A tree of integers only is exactly what it was before floats existed.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any

import jinja2
import jinja2.nodes as jn
import jinja2.sandbox

from wgslgen.errors import WgslgenError

_ENV = jinja2.sandbox.ImmutableSandboxedEnvironment()

BINARY = {
    jn.Add: "add", jn.Sub: "sub", jn.Mul: "mul", jn.FloorDiv: "div", jn.Div: "fdiv", jn.Mod: "mod",
}  # fmt: skip
COMPARE = {"lt": "lt", "lteq": "le", "gt": "gt", "gteq": "ge", "eq": "eq", "ne": "ne"}
UNARY_FILTERS = ("abs", "int", "float")  # x|abs, x|int, x|float
OPS = (
    "const", "var", "add", "sub", "mul", "div", "mod", "ceil_div", "min", "max",
    "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "not", "select",
    "fconst", "fdiv", "abs", "int", "float",
)  # fmt: skip
_INT_RESULT = ("const", "int", "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "not")

Tree = dict[str, Any]


def const(value: int) -> Tree:
    """A constant node."""
    return {"op": "const", "value": int(value)}


def is_float(tree: Tree, floats: Collection[str] = ()) -> bool:
    """Whether ``tree`` gives a float (``floats``: the var names that hold floats)."""
    op = tree["op"]
    if op in ("fconst", "fdiv", "float"):
        return True
    if op in _INT_RESULT:
        return False
    if op == "var":
        return tree["name"] in floats
    args = tree["args"][1:] if op == "select" else tree["args"]
    return any(is_float(a, floats) for a in args)


def _fold(op: str, values: list[Any]) -> Any:
    """Python's result of ``op`` on constants (ints, bools or axis strings)."""
    a = values[0]
    b = values[1] if len(values) > 1 else None
    table = {
        "add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
        "div": lambda: a // b, "mod": lambda: a % b, "ceil_div": lambda: -(-a // b),
        "fdiv": lambda: a / b, "abs": lambda: abs(a), "int": lambda: int(a),
        "float": lambda: float(a), "min": lambda: min(values), "max": lambda: max(values),
        "lt": lambda: a < b, "le": lambda: a <= b, "gt": lambda: a > b,
        "ge": lambda: a >= b, "eq": lambda: a == b, "ne": lambda: a != b,
        "not": lambda: not a,
    }  # fmt: skip
    return table[op]()


def _tree(value: Any, where: str) -> Tree:
    """A folded value as a tree; strings cannot leave the variant (no node holds text)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, bool | int):
        return const(int(value))
    if isinstance(value, float) and math.isfinite(value):
        return {"op": "fconst", "value": value}
    raise WgslgenError(f"{where}: value {value!r} is not a finite number; it cannot be vendored")


def as_tree(value: Any, where: str) -> Tree:
    """A folded value (int, bool, finite float) or a tree, as a tree."""
    return _tree(value, where)


class _Converter:
    """Walks one expression's Jinja AST, folding the known names (axis values) in."""

    def __init__(
        self, known: Mapping[str, Any], text: str, where: str, floats: Collection[str] = ()
    ) -> None:
        self.known = known
        self.floats = floats
        self.where = f"{where}: expression {text!r}"

    def fail(self, what: str) -> WgslgenError:
        return WgslgenError(f"{self.where}: {what} cannot be vendored")

    def node(self, n: jn.Node) -> Any:
        """A constant (int/bool/str) when everything folded, else a tree."""
        if isinstance(n, jn.Const):
            if isinstance(n.value, float) and not math.isfinite(n.value):
                raise self.fail(f"float constant {n.value!r}")
            return n.value
        if isinstance(n, jn.Name):
            return self.known.get(n.name, {"op": "var", "name": n.name})
        if isinstance(n, jn.FloorDiv) and self._is_ceil(n):
            a, b = self.node(n.left.left.left), self.node(n.right)
            if not self._float(a) and not self._float(b):  # on floats it is not a ceiling
                return self._apply("ceil_div", [a, b])
        if type(n) in BINARY:
            return self.op(BINARY[type(n)], [n.left, n.right])
        if isinstance(n, jn.Neg):
            return self.op("sub", [jn.Const(0), n.node])
        if isinstance(n, jn.Pos):
            return self.node(n.node)
        if isinstance(n, jn.Compare):
            return self.compare(n)
        if isinstance(n, jn.And | jn.Or):
            return self.logic("and" if isinstance(n, jn.And) else "or", n.left, n.right)
        if isinstance(n, jn.Not):
            return self.op("not", [n.node])
        if isinstance(n, jn.CondExpr):
            return self.cond(n)
        if isinstance(n, jn.Filter) and n.name in ("min", "max") and not n.args:
            if not isinstance(n.node, jn.List | jn.Tuple) or not n.node.items:
                raise self.fail(f"| {n.name} on something other than a list literal")
            return self.op(n.name, list(n.node.items))
        if isinstance(n, jn.Filter) and n.name in UNARY_FILTERS and not n.args and n.node:
            if n.kwargs or n.dyn_args or n.dyn_kwargs:
                raise self.fail(f"| {n.name} with arguments")
            return self.op(n.name, [n.node])
        raise self.fail(f"{type(n).__name__}")

    def _float(self, value: Any) -> bool:
        if isinstance(value, dict):
            return is_float(value, self.floats)
        return isinstance(value, float)

    @staticmethod
    def _is_ceil(n: jn.FloorDiv) -> bool:
        # (a + b - 1) // b is a ceiling division: say so, every language has a cheap one.
        left = n.left
        return (
            isinstance(left, jn.Sub)
            and isinstance(left.right, jn.Const)
            and left.right.value == 1
            and isinstance(left.left, jn.Add)
            and left.left.right == n.right
        )

    def op(self, name: str, nodes: list[jn.Node]) -> Any:
        return self._apply(name, [self.node(x) for x in nodes])

    def _apply(self, name: str, args: list[Any]) -> Any:
        if all(not isinstance(a, dict) for a in args):
            try:
                return _fold(name, args)
            except (ArithmeticError, TypeError, ValueError) as exc:
                raise self.fail(f"{name} of {args}: {exc}") from None
        if name in ("div", "mod", "ceil_div", "fdiv") and args[1] == 0:
            raise self.fail("division by zero")
        return {"op": name, "args": [_tree(a, self.where) for a in args]}

    def compare(self, n: jn.Compare) -> Any:
        parts = []
        left = n.expr
        for operand in n.ops:
            if operand.op not in COMPARE:
                raise self.fail(f"comparison {operand.op!r}")
            parts.append(self.op(COMPARE[operand.op], [left, operand.expr]))
            left = operand.expr
        result = parts[0]
        for p in parts[1:]:
            result = self._combine("and", result, p)
        return result

    def logic(self, name: str, left: jn.Node, right: jn.Node) -> Any:
        return self._combine(name, self.node(left), self.node(right))

    def _combine(self, name: str, a: Any, b: Any) -> Any:
        if not isinstance(a, dict):  # Python's short circuit, on a folded left side
            if name == "and":
                return b if a else a
            return a if a else b
        if not isinstance(b, dict):
            if name == "and":
                return a if b else False
            return True if b else a
        return {"op": name, "args": [a, b]}

    def cond(self, n: jn.CondExpr) -> Any:
        if n.expr2 is None:
            raise self.fail("an `if` without `else`")
        test = self.node(n.test)
        if not isinstance(test, dict):
            return self.node(n.expr1 if test else n.expr2)
        then, other = self.node(n.expr1), self.node(n.expr2)
        return {"op": "select", "args": [test, _tree(then, self.where), _tree(other, self.where)]}


def to_tree(text: str, known: Mapping[str, Any], where: str, floats: Collection[str] = ()) -> Tree:
    """The tree of expression ``text`` with the ``known`` names (axis values) folded in;
    ``floats`` names the variables that hold floats."""
    return _tree(to_value(text, known, where, floats), f"{where}: expression {text!r}")


def to_int_tree(
    text: str, known: Mapping[str, Any], where: str, floats: Collection[str] = ()
) -> Tree:
    """The tree of ``int(text)``: what wgslgen takes of a dispatch or element count (an
    integer expression stays as to_tree gives it)."""
    value = to_value(text, known, where, floats)
    if isinstance(value, float):
        value = _tree(value, f"{where}: expression {text!r}")  # refuses inf and nan
        return const(int(value["value"]))
    tree = _tree(value, f"{where}: expression {text!r}")
    return {"op": "int", "args": [tree]} if is_float(tree, floats) else tree


def to_value(text: str, known: Mapping[str, Any], where: str, floats: Collection[str] = ()) -> Any:
    """Like to_tree, but a fully folded expression stays a Python constant."""
    try:
        template = _ENV.parse("{{ " + str(text) + " }}")
    except jinja2.TemplateSyntaxError as exc:
        raise WgslgenError(f"{where}: expression {text!r} is not valid: {exc.message}") from None
    outputs = list(template.find_all(jn.Output))
    if len(outputs) != 1 or len(outputs[0].nodes) != 1:
        raise WgslgenError(f"{where}: expression {text!r} is not a single expression")
    return _Converter(known, str(text), where, floats).node(outputs[0].nodes[0])


def evaluate(tree: Tree, scope: Mapping[str, int | float]) -> int | float:
    """The value of ``tree`` with the variables of ``scope`` (the reference evaluator): Python's
    arithmetic, so an integer stays one unless a float enters."""
    op = tree["op"]
    if op == "const":
        return int(tree["value"])
    if op == "fconst":
        return float(tree["value"])
    if op == "var":
        value = scope[tree["name"]]
        return value if isinstance(value, float) else int(value)
    args = tree["args"]
    if op == "select":
        return evaluate(args[1] if evaluate(args[0], scope) else args[2], scope)
    if op == "and":
        return int(bool(evaluate(args[0], scope)) and bool(evaluate(args[1], scope)))
    if op == "or":
        return int(bool(evaluate(args[0], scope)) or bool(evaluate(args[1], scope)))
    value = _fold(op, [evaluate(a, scope) for a in args])
    return int(value) if isinstance(value, bool) else value


def variables(tree: Tree) -> set[str]:
    """The names a tree reads."""
    if tree["op"] == "var":
        return {tree["name"]}
    return set().union(*(variables(a) for a in tree.get("args", [])))
