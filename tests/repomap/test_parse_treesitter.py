"""Definitions read through the tree-sitter tags queries."""

from __future__ import annotations

from durable_navigator.repomap.parse_treesitter import parse_treesitter

EXPRESS_STYLE = b"""var res = module.exports = {};

res.status = function status(code) {
  this.statusCode = code;
  return this;
};

res.send = function send(body) {
  function inner() { return body; }
  return inner();
};

exports.json = function(obj) {
  return JSON.stringify(obj);
};
"""


def test_an_assigned_named_function_is_one_definition() -> None:
    """``res.send = function send() {...}`` is tagged twice by the JavaScript query (the assignment
    and the function expression, same name, same lines); the map lists it once, under its own name
    (it was ``send`` plus ``send.send``: outlines printed every such method twice)."""
    lines = EXPRESS_STYLE.decode().splitlines()
    got = [(s.qualname, s.start, s.end, s.signature) for s in parse_treesitter("javascript", EXPRESS_STYLE, lines).symbols]
    assert got == [
        ("status", 3, 6, "res.status = function status(code)"),
        ("send", 8, 11, "res.send = function send(body)"),
        ("send.inner", 9, 9, "function inner()"),
        ("json", 13, 15, "exports.json = function(obj)"),
    ]
